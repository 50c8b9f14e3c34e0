/**
 * States that wait for a person are gauges published every planner tick, so their alarms stay in
 * ALARM while the state lasts: a DEAD run is counted on every tick until `ops retry` or `ops
 * resolve` (and the sweeper never re-sends it); a job paused by pauseOnFailure is counted until
 * `ops resume`, a job an operator paused is not; the cleared state publishes 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LedgerOps } from '../../shared/store/repairs.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { PermanentError, type JobHandler } from '../../shared/handler-api.js';
import { resolveRun } from '../../tools/ops/resolve.js';
import { InMemoryMetrics, MetricName } from '../../shared/runtime/observability.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { PAUSED_BY_FAILURE } from '../../shared/core/pause.js';
import { silentLogger, testJobs } from '../support/helpers.js';
import { Lab, RecordingQueue } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('operator gauges', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  const tickGauges = async (jobs: ReturnType<typeof testJobs>, now: number, queue = new RecordingQueue()) => {
    const metrics = new InMemoryMetrics();
    await runPlannerTick({ ledger: box.ledger, queue, jobs, clock: () => now, logger: silentLogger(), metrics }, { partition: 0, of: 1 });
    return { paused: metrics.observations.get(MetricName.JobsPausedByFailure), dead: metrics.observations.get(MetricName.OpenDeadRuns) };
  };
  const tick = async (jobs: ReturnType<typeof testJobs>, now: number) => (await tickGauges(jobs, now)).paused;

  it('runs-dead does not clear itself a minute later: every tick counts the DEAD runs until ops retry or ops resolve, and the sweeper never re-sends them', async () => {
    let failing = true;
    const handler: JobHandler = {
      run: async () => {
        if (failing) throw new PermanentError('broken', { code: 'BROKEN' });
      },
    };
    const jobs = testJobs([{ name: 'dies', schedule: '0 0 1 1 *', handler: 'h', startLead: 0 }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, T0 + 5_000);
    const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
    // Two DEAD runs: one ended by its worker, one watched from the start (a catch-up run) and ended the same way.
    await lab.create('dies', T0);
    await lab.create('dies', T0 + MIN, { watch: true });
    expect(await lab.deliver('dies', T0)).toBe('ack');
    expect(await lab.deliver('dies', T0 + MIN)).toBe('ack');
    expect(await lab.status('dies', T0)).toBe(RunStatus.DEAD);
    expect(await lab.status('dies', T0 + MIN)).toBe(RunStatus.DEAD);
    // The state lasts: ticks well past the sweep grace still count both, and send nothing.
    for (let k = 5; k <= 8; k++) {
      const queue = new RecordingQueue();
      expect((await tickGauges(jobs, T0 + k * MIN, queue)).dead).toEqual([2]);
      expect(queue.sent.map((out) => out.message.runKey)).toEqual([]);
    }
    // A stale watch entry read by a sweep cannot take a DEAD run out of the count.
    await box.ledger.unwatch(lab.id('dies', T0 + MIN));
    expect((await tickGauges(jobs, T0 + 9 * MIN)).dead).toEqual([2]);
    // ops resolve --as dead accepts one; ops retry revives the other, which then succeeds.
    await resolveRun(
      { ledger: box.ledger, ops, clock: () => T0 + 10 * MIN },
      { id: lab.id('dies', T0), as: 'dead', reason: 'accepted', by: 'op' },
    );
    expect((await tickGauges(jobs, T0 + 10 * MIN)).dead).toEqual([1]);
    expect((await ops.reviveRun((await lab.run('dies', T0 + MIN))!, { now: T0 + 11 * MIN, by: 'op' })).ok).toBe(true);
    expect((await tickGauges(jobs, T0 + 11 * MIN)).dead).toEqual([0]);
    failing = false;
    expect(await lab.deliver('dies', T0 + MIN)).toBe('ack');
    expect(await lab.status('dies', T0 + MIN)).toBe(RunStatus.SUCCEEDED);
    expect((await tickGauges(jobs, T0 + 12 * MIN)).dead).toEqual([0]);
  });

  it('job-paused-on-failure does not clear itself a minute later: every tick publishes the jobs still paused by failure, until ops resume (then 0)', async () => {
    const jobs = testJobs([
      { name: 'fails-a', schedule: '* * * * *', handler: 'noop', pauseOnFailure: 2 },
      { name: 'fails-b', schedule: '* * * * *', handler: 'noop', pauseOnFailure: 2 },
      { name: 'held', schedule: '* * * * *', handler: 'noop' },
    ]);
    expect(await tick(jobs, T0)).toEqual([0]);
    expect(
      await box.ledger.planning.pause('fails-a', T0 + MIN, {
        by: PAUSED_BY_FAILURE,
        note: 'paused after 2 consecutive DEAD run(s)',
        at: T0 + MIN,
      }),
    ).toBe(true);
    expect(
      await box.ledger.planning.pause('fails-b', T0 + MIN, {
        by: PAUSED_BY_FAILURE,
        note: 'paused after 2 consecutive DEAD run(s)',
        at: T0 + MIN,
      }),
    ).toBe(true);
    // An operator's pause waits for nobody: not counted.
    expect(await box.ledger.planning.pause('held', T0 + MIN, { by: 'ops', note: 'vendor outage', at: T0 + MIN })).toBe(true);
    // The state lasts: every later tick still publishes it.
    for (let k = 2; k <= 4; k++) expect(await tick(jobs, T0 + k * MIN)).toEqual([2]);
    expect(await box.ledger.planning.resume('fails-a')).toBe(true);
    expect(await tick(jobs, T0 + 5 * MIN)).toEqual([1]);
    expect(await box.ledger.planning.resume('fails-b')).toBe(true);
    expect(await tick(jobs, T0 + 6 * MIN)).toEqual([0]);
  });
});
