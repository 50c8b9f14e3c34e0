/**
 * States that wait for a person are gauges published every planner tick, so their alarms stay in
 * ALARM while the state lasts: a job paused by pauseOnFailure is counted on every tick until
 * `ops resume`, a job an operator paused is not counted, and the cleared state publishes 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemoryMetrics, MetricName } from '../../shared/observability.js';
import { runPlannerTick } from '../../shared/planner.js';
import { PAUSED_BY_FAILURE } from '../../shared/worker-pause.js';
import { silentLogger, testJobs } from '../support/helpers.js';
import { RecordingQueue } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('operator gauges', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  const tick = async (jobs: ReturnType<typeof testJobs>, now: number) => {
    const metrics = new InMemoryMetrics();
    await runPlannerTick({ ledger: box.ledger, queue: new RecordingQueue(), jobs, clock: () => now, logger: silentLogger(), metrics }, { partition: 0, of: 1 });
    return metrics.observations.get(MetricName.JobsPausedByFailure);
  };

  it('job-paused-on-failure does not clear itself a minute later: every tick publishes the jobs still paused by failure, until ops resume (then 0)', async () => {
    const jobs = testJobs([
      { name: 'fails-a', schedule: '* * * * *', handler: 'noop', pauseOnFailure: 2 },
      { name: 'fails-b', schedule: '* * * * *', handler: 'noop', pauseOnFailure: 2 },
      { name: 'held', schedule: '* * * * *', handler: 'noop' },
    ]);
    expect(await tick(jobs, T0)).toEqual([0]);
    expect(await box.ledger.planning.pause('fails-a', T0 + MIN, { by: PAUSED_BY_FAILURE, note: 'paused after 2 consecutive DEAD run(s)', at: T0 + MIN })).toBe(true);
    expect(await box.ledger.planning.pause('fails-b', T0 + MIN, { by: PAUSED_BY_FAILURE, note: 'paused after 2 consecutive DEAD run(s)', at: T0 + MIN })).toBe(true);
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
