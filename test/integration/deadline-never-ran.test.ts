/**
 * `deadline` and runs that never ran: a backfill asks for old slots' work now, so its runs' deadline
 * counts from their creation (as a revived run's counts from its revival); a run refused for its
 * deadline before it ever started is no failure of the job for pauseOnFailure; and a newer slot's
 * success ends a failure streak, whatever order the runs finished in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobPlanning } from '../../shared/store/job-planning.js';
import { backfill } from '../../shared/operations/backfill.js';
import { DEADLINE_BEFORE_START } from '../../shared/core/outcome.js';
import { partitionOf } from '../../shared/core/partition.js';
import { RunOrigin, RunStatus } from '../../shared/core/vocabulary.js';
import { PermanentError, type JobHandler } from '../../shared/handler-api.js';
import { testJobs } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const NOW = Date.UTC(2026, 11, 1, 12, 0, 20);
const ON_TIME = Date.UTC(2026, 11, 1, 12, 0);

describe('deadline: runs that never ran', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  const pauseOf = async (name: string) => (await jobPlanning(box.ledger.planning, [name], partitionOf, Date.now())).get(name)?.pause;

  it('backfilling 4 slots of a job with deadline 30m runs all four, and the live job is not paused', async () => {
    const name = unique('bf-deadline');
    const ran: number[] = [];
    const handler: JobHandler = { run: async (ctx) => void ran.push(ctx.slot) };
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, deadline: '30m', pauseOnFailure: 3 }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, NOW);
    const report = await backfill(
      { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read, sleep: async () => undefined },
      { job: lab.job(name), from: ON_TIME - 4 * HOUR, to: ON_TIME },
    );
    expect(report).toMatchObject({ created: 4, sent: 4 });
    // The workers get to them a few minutes later: still well inside 30 minutes of their creation.
    lab.clock.advance(5 * MIN);
    await lab.deliverSent();
    const runs = await box.ledger.listRuns(name, { ascending: true });
    expect(runs.map((r) => [r.origin, r.status])).toEqual(Array.from({ length: 4 }, () => [RunOrigin.BACKFILL, RunStatus.SUCCEEDED]));
    expect(ran).toHaveLength(4);
    expect(await pauseOf(name)).toBeUndefined();
  });

  it('a backfilled run still refuses to start once its deadline, counted from its creation, has passed', async () => {
    const name = unique('bf-late');
    let ran = 0;
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, deadline: '30m' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async () => void ran++ } }, NOW);
    await backfill(
      { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read, sleep: async () => undefined },
      { job: lab.job(name), from: ON_TIME - HOUR, to: ON_TIME },
    );
    lab.clock.advance(31 * MIN);
    await lab.deliverSent();
    expect(await lab.run(name, ON_TIME - HOUR)).toMatchObject({ status: RunStatus.DEAD, lastError: { code: DEADLINE_BEFORE_START } });
    expect(ran).toBe(0);
  });

  it('after a 4-hour planner outage, catch-up runs refused for their deadline never ran and do not pause the job whose on-time run succeeded', async () => {
    const name = unique('outage');
    const ran: number[] = [];
    const handler: JobHandler = { run: async (ctx) => void ran.push(ctx.slot) };
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, deadline: '30m', pauseOnFailure: 3 }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, NOW);
    // The planner comes back: the on-time slot and the three missed ones (misfire policy `all`).
    const missed = [ON_TIME - 3 * HOUR, ON_TIME - 2 * HOUR, ON_TIME - HOUR];
    for (const slot of missed) {
      const created = await box.ledger.createRun(
        { job: name, slot, shard: 0, shards: 1, status: RunStatus.READY, origin: RunOrigin.CATCH_UP },
        NOW,
      );
      expect(created.created).toBe(true);
    }
    await lab.create(name, ON_TIME);
    // The on-time run is claimed first and succeeds; the catch-up runs come after it.
    expect(await lab.deliver(name, ON_TIME)).toBe('ack');
    for (const slot of missed) expect(await lab.deliver(name, slot)).toBe('ack');
    expect(await lab.status(name, ON_TIME)).toBe(RunStatus.SUCCEEDED);
    for (const slot of missed)
      expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.DEAD, lastError: { code: DEADLINE_BEFORE_START } });
    expect(ran).toEqual([ON_TIME]);
    expect(await pauseOf(name)).toBeUndefined();
    expect(lab.metrics.get('JobsPausedOnFailure') ?? 0).toBe(0);
  });

  it("a newer slot's success ends a failure streak: old slots failing after it do not pause the job", async () => {
    const name = unique('newer-success');
    const handler: JobHandler = {
      async run(ctx) {
        if (ctx.slot < ON_TIME) throw new PermanentError('the old feed is gone', { code: 'GONE' });
      },
    };
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, pauseOnFailure: 3 }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, NOW);
    await lab.create(name, ON_TIME);
    expect(await lab.deliver(name, ON_TIME)).toBe('ack');
    await backfill(
      { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read, sleep: async () => undefined },
      { job: lab.job(name), from: ON_TIME - 3 * HOUR, to: ON_TIME },
    );
    await lab.deliverSent();
    const old = (await box.ledger.listRuns(name, { ascending: true })).filter((r) => r.slot < ON_TIME);
    expect(old.map((r) => r.status)).toEqual([RunStatus.DEAD, RunStatus.DEAD, RunStatus.DEAD]);
    expect(await pauseOf(name)).toBeUndefined();
  });

  it('three failures in a row with no newer success still pause the job', async () => {
    const name = unique('still-pauses');
    const handler: JobHandler = {
      run: async () => {
        throw new PermanentError('broken', { code: 'BROKEN' });
      },
    };
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, pauseOnFailure: 3 }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, NOW);
    // A newer run still open (planned ahead) neither counts nor breaks the streak.
    await lab.create(name, ON_TIME + HOUR);
    for (const slot of [ON_TIME - 2 * HOUR, ON_TIME - HOUR, ON_TIME]) {
      await lab.create(name, slot);
      await lab.deliver(name, slot);
    }
    expect(await pauseOf(name)).toMatchObject({ by: 'pauseOnFailure', note: expect.stringContaining('3 consecutive DEAD') });
  });
});
