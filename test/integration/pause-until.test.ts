/**
 * `pause --until`: a job paused until T is not planned before T, and from T on the planner plans it
 * as one resumed (its missed slots by its misfire policy, the next ones on time) and its runs run,
 * with no resume and nothing written at T; a new pause then replaces the ended one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../../shared/core/partition.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { pauseJob, resumeJob } from '../../shared/operations/pause.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { InMemoryMetrics } from '../../shared/runtime/observability.js';
import { jobPlanning } from '../../shared/store/job-planning.js';
import { silentLogger, testJobs } from '../support/helpers.js';
import { Lab, RecordingQueue } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('a pause with an until', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('plans nothing before its until, then plans and runs the slots after it without a resume; the missed ones follow the misfire policy', async () => {
    const name = 'paused-until';
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'noop', startLead: 0, misfire: { policy: 'skip', after: '2m' } }]);
    const job = jobs[0]!;
    const tick = (now: number) =>
      runPlannerTick(
        {
          ledger: box.ledger,
          queue: new RecordingQueue(),
          jobs,
          clock: () => now,
          logger: silentLogger(),
          metrics: new InMemoryMetrics(),
          options: { lookaheadMs: 65 * SEC },
        },
        { partition: 0, of: 1 },
      );
    const slotsOf = async () => (await box.ledger.listRuns(name, { ascending: true })).map((r) => ({ slot: r.slot, status: r.status }));

    await tick(T0 + 5 * SEC);
    const until = T0 + 10 * MIN;
    const paused = await pauseJob(box.ledger.planning, { job, by: 'ops', note: 'vendor window', until, now: T0 + 30 * SEC });
    expect(paused).toMatchObject({ changed: true, pause: { by: 'ops', note: 'vendor window', until } });
    const beforePause = await slotsOf();
    expect(beforePause.map((r) => r.slot)).toEqual([T0 + MIN]);

    // Before its until: nothing new, at every tick, and the job reads as paused.
    for (const at of [T0 + 2 * MIN, T0 + 5 * MIN, until - 5 * SEC]) {
      await tick(at);
      expect(await slotsOf(), new Date(at).toISOString()).toEqual(beforePause);
      expect((await jobPlanning(box.ledger.planning, [name], partitionOf, at)).get(name)!.pause?.until).toBe(until);
    }

    // From its until: planned as one resumed, with the record left as it was.
    const after = until + 5 * SEC;
    expect((await jobPlanning(box.ledger.planning, [name], partitionOf, after)).get(name)!.pause).toBeUndefined();
    await tick(after);
    const runs = await slotsOf();
    const statusOf = (slot: number) => runs.find((r) => r.slot === slot)?.status;
    // Missed more than misfire.after (2 min) before the tick: skipped by policy.
    for (let slot = T0 + 2 * MIN; slot < until - 2 * MIN; slot += MIN)
      expect(statusOf(slot), new Date(slot).toISOString()).toBe(RunStatus.SKIPPED);
    // Within misfire.after, the expiry's own slot and the next one: to run.
    for (const slot of [until - MIN, until, until + MIN]) expect(statusOf(slot), new Date(slot).toISOString()).toBe(RunStatus.READY);
    expect((await box.ledger.planning.readJobPlan(name))?.pause).toMatchObject({ by: 'ops', until });

    const lab = new Lab(box, jobs, { noop: { run: async () => undefined } }, until + MIN + SEC);
    expect(await lab.deliver(name, until + MIN)).toBe('ack');
    expect(await lab.status(name, until + MIN)).toBe(RunStatus.SUCCEEDED);

    // The next tick keeps planning it on time; it has caught up.
    await tick(until + 2 * MIN);
    expect((await slotsOf()).find((r) => r.slot === until + 3 * MIN)?.status).toBe(RunStatus.READY);
    expect((await jobPlanning(box.ledger.planning, [name], partitionOf, until + 2 * MIN)).get(name)).toMatchObject({
      behind: false,
      pause: undefined,
    });

    // A new pause replaces the ended one; resume lifts it.
    const again = await pauseJob(box.ledger.planning, { job, by: 'erin', now: until + 3 * MIN });
    expect(again).toMatchObject({ changed: true, pause: { by: 'erin' }, replacedExpired: { by: 'ops', until } });
    expect(await resumeJob(box.ledger.planning, job, until + 4 * MIN)).toMatchObject({ changed: true, pause: undefined });
  });

  it('a resume after the until says the job was not paused, and clears the ended record', async () => {
    const name = 'ended-pause';
    const job = testJobs([{ name, schedule: '* * * * *', handler: 'noop' }])[0]!;
    await pauseJob(box.ledger.planning, { job, by: 'ops', until: T0 + MIN, now: T0 });
    const resumed = await resumeJob(box.ledger.planning, job, T0 + 2 * MIN);
    expect(resumed).toMatchObject({ changed: false, expired: { by: 'ops', until: T0 + MIN } });
    expect((await box.ledger.planning.readJobPlan(name))?.pause).toBeUndefined();
  });

  it('refuses an until that is not after now', async () => {
    const job = testJobs([{ name: 'never', schedule: '* * * * *', handler: 'noop' }])[0]!;
    await expect(pauseJob(box.ledger.planning, { job, by: 'ops', until: T0, now: T0 })).rejects.toThrow(/until|future/);
  });
});
