/**
 * Config changes between planner ticks (issue 30, points 1, 2 and 4): `maxRuns` raised or its
 * schedule changed, `shards` changed while runs of the old count are in flight, a job added (or
 * its schedule changed) with a slot inside the partition's watermark. Each test is named for the
 * hazard it guards against.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runPlannerTick, type PlannerDeps } from '../../shared/planner/planner.js';
import type { Job, JobInput } from '../../shared/schedule/job-schema.js';
import { RunOrigin, RunStatus, type Run } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { processRecord } from '../../shared/worker/batch.js';
import { backfill } from '../../shared/operations/backfill.js';
import { Lab, RecordingQueue } from '../support/lab.js';
import { ManualClock, metrics, silentLogger, testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);

/** Ticks of one partition whose config the test changes between them. */
class Planner {
  readonly clock: ManualClock;
  readonly queue = new RecordingQueue();
  jobs: Job[];

  constructor(
    readonly box: Sandbox,
    inputs: readonly JobInput[],
    now: number,
    private readonly lookaheadMs?: number,
  ) {
    this.clock = new ManualClock(now);
    this.jobs = testJobs(inputs);
  }

  configure(inputs: readonly JobInput[]): void {
    this.jobs = testJobs(inputs);
  }

  tick(at?: number) {
    if (at !== undefined) this.clock.now = at;
    const deps: PlannerDeps = {
      ledger: this.box.ledger,
      queue: this.queue,
      jobs: this.jobs,
      clock: this.clock.read,
      logger: silentLogger(),
      metrics: metrics(),
      options: this.lookaheadMs === undefined ? {} : { lookaheadMs: this.lookaheadMs },
    };
    return runPlannerTick(deps, { partition: 0, of: 1 });
  }

  async runs(job: string): Promise<Run[]> {
    return this.box.ledger.listRuns(job, { ascending: true });
  }

  async slots(job: string): Promise<number[]> {
    return [
      ...new Set(
        (await this.runs(job))
          .filter(
            (r) =>
              r.origin === undefined ||
              r.origin === RunOrigin.PLANNED ||
              r.origin === RunOrigin.PLANNED_LATE ||
              r.origin === RunOrigin.CATCH_UP,
          )
          .map((r) => r.slot),
      ),
    ];
  }
}

describe('maxRuns across config changes', () => {
  let box: Sandbox;
  beforeEach(async () => {
    box = await sandbox();
  });
  afterEach(() => box.destroy());

  it('raising maxRuns 3 -> 6 between ticks plans 6 scheduled runs, not the 3 of the first bound', async () => {
    const job = { name: 'raised', schedule: '*/10 * * * * *', handler: 'noop', startLead: '60s' } as const;
    const p = new Planner(box, [{ ...job, maxRuns: 3 }], T0, MIN);
    await p.tick();
    expect(await p.slots('raised')).toEqual([T0 + 10 * SEC, T0 + 20 * SEC, T0 + 30 * SEC]);
    p.configure([{ ...job, maxRuns: 6 }]);
    for (let k = 1; k <= 3; k++) await p.tick(T0 + k * MIN);
    const slots = await p.slots('raised');
    expect(slots).toHaveLength(6);
    expect(slots.slice(0, 3)).toEqual([T0 + 10 * SEC, T0 + 20 * SEC, T0 + 30 * SEC]);
  });

  it('maxRuns 3 on an hourly schedule changed to every minute ends after 3 scheduled runs, not at the old third hour', async () => {
    const job = { name: 'hourly-to-minutely', handler: 'noop', startLead: '60s', maxRuns: 3 } as const;
    const p = new Planner(box, [{ ...job, schedule: '0 * * * *' }], T0 + 59 * MIN, MIN);
    await p.tick();
    expect(await p.slots('hourly-to-minutely')).toEqual([T0 + 60 * MIN]);
    p.configure([{ ...job, schedule: '* * * * *' }]);
    for (let k = 1; k <= 6; k++) await p.tick(T0 + (59 + k) * MIN);
    expect(await p.slots('hourly-to-minutely')).toEqual([T0 + 60 * MIN, T0 + 61 * MIN, T0 + 62 * MIN]);
  });

  it('duplicate and concurrent ticks count each slot of a maxRuns job once: exactly N scheduled runs', async () => {
    const p = new Planner(
      box,
      [{ name: 'counted-once', schedule: '*/10 * * * * *', handler: 'noop', startLead: '60s', maxRuns: 8 }],
      T0,
      MIN,
    );
    for (let k = 0; k < 3; k++) {
      p.clock.now = T0 + k * MIN;
      await Promise.all(Array.from({ length: 4 }, () => p.tick()));
    }
    expect(await p.slots('counted-once')).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((i) => T0 + i * 10 * SEC));
  });

  it('a maxRuns job removed and re-added under the same name keeps its count: it plans nothing more until maxRuns is raised', async () => {
    const job = { name: 'readded', schedule: '*/10 * * * * *', handler: 'noop', startLead: '60s' } as const;
    const other = { name: 'bystander', schedule: '0 0 1 1 *', handler: 'noop' } as const;
    const p = new Planner(box, [{ ...job, maxRuns: 3 }, other], T0, MIN);
    await p.tick();
    p.configure([other]);
    await p.tick(T0 + MIN);
    p.configure([{ ...job, maxRuns: 3 }, other]);
    await p.tick(T0 + 2 * MIN);
    expect(await p.slots('readded')).toEqual([T0 + 10 * SEC, T0 + 20 * SEC, T0 + 30 * SEC]);
    p.configure([{ ...job, maxRuns: 5 }, other]);
    await p.tick(T0 + 3 * MIN);
    const slots = await p.slots('readded');
    expect(slots).toHaveLength(5);
    expect(slots.slice(3).every((slot) => slot > T0 + 2 * MIN)).toBe(true);
  });
});

describe('shards changed with runs in flight', () => {
  let box: Sandbox;
  beforeEach(async () => {
    box = await sandbox();
  });
  afterEach(() => box.destroy());

  it('runs created under an earlier shard count execute after shards change 1 -> 3 -> 1 across ticks; no slot is lost or doubled', async () => {
    const name = 'reshard';
    const job = (shards: number): JobInput => ({ name, schedule: '*/10 * * * * *', handler: 'noop', startLead: '60s', shards });
    const p = new Planner(box, [job(1)], T0, MIN);
    const executed: string[] = [];
    const handler: JobHandler = {
      async run(ctx) {
        executed.push(`${ctx.runKey}/${ctx.shards}`);
      },
    };
    const refused: string[] = [];
    let delivered = 0;
    /** Delivers messages sent so far to a worker running the planner's current config. */
    const deliver = async (count = Number.POSITIVE_INFINITY) => {
      // The worker runs when the slots have come: it never waits for a fire time.
      const lab = new Lab(box, p.jobs, { noop: handler }, T0 + 10 * MIN);
      const pending = p.queue.sent.splice(0, Math.min(count, p.queue.sent.length));
      for (const out of pending) {
        const id = `reshard-${++delivered}`;
        const outcome = await processRecord(lab.deps('worker'), {
          messageId: id,
          receiptHandle: `r-${id}`,
          body: JSON.stringify(out.message),
        });
        if (outcome !== 'ack') refused.push(out.message.runKey);
      }
    };

    await p.tick(); // slots 10..60 s, one shard each
    await deliver(2); // the rest stay in flight across the change
    p.configure([job(3)]);
    await p.tick(T0 + 30 * SEC); // 70..90 s, three shards each
    await deliver(); // the four 1-shard runs left, then the 3-shard runs, under shards: 3
    await p.tick(T0 + 60 * SEC); // 100..120 s
    await deliver(2); // two 3-shard runs of 100 s; the third stays in flight
    p.configure([job(1)]);
    await p.tick(T0 + 90 * SEC); // 130..150 s, one shard each
    await deliver(); // the 3-shard run left, then the 1-shard runs, under shards: 1

    expect(refused).toEqual([]);
    const runs = await p.runs(name);
    const bySlot = new Map<number, Run[]>();
    for (const run of runs) bySlot.set(run.slot, [...(bySlot.get(run.slot) ?? []), run]);
    const expectedShards = (slotSec: number) => (slotSec <= 60 || slotSec > 120 ? 1 : 3);
    expect([...bySlot.keys()]).toEqual(Array.from({ length: 15 }, (_, i) => T0 + (i + 1) * 10 * SEC));
    for (const [slot, ofSlot] of bySlot) {
      const n = expectedShards((slot - T0) / SEC);
      expect(
        ofSlot.map((r) => [r.shard, r.shards]),
        `slot +${(slot - T0) / SEC}s`,
      ).toEqual(Array.from({ length: n }, (_, s) => [s, n]));
      expect(ofSlot.every((r) => r.status === RunStatus.SUCCEEDED)).toBe(true);
    }
    expect(executed.sort()).toEqual(runs.map((r) => `${r.runKey}/${r.shards}`).sort());
  });
  it('a backfill over slots planned before shards changed 1 -> 3 completes each slot under its own count: no slot gets runs of two counts', async () => {
    const name = 'reshard-backfill';
    const job = (shards: number): JobInput => ({ name, schedule: '*/10 * * * * *', handler: 'noop', startLead: '60s', shards });
    const p = new Planner(box, [job(1)], T0, MIN);
    await p.tick(); // slots +10..+60 s, one shard each
    p.configure([job(3)]);
    p.clock.now = T0 + 45 * SEC;
    const report = await backfill(
      { ledger: box.ledger, queue: p.queue, clock: p.clock.read, sleep: async () => undefined },
      { job: p.jobs[0]!, from: T0 - 20 * SEC, to: T0 + 40 * SEC },
    );
    // -20, -10 and 0 s had no runs: three shards each, the new count; +10..+30 s kept their one.
    expect(report).toMatchObject({ slots: 6, runs: 12, created: 9, existing: 3, sent: 9 });
    const counts = new Map<number, string[]>();
    for (const run of await p.runs(name)) counts.set(run.slot, [...(counts.get(run.slot) ?? []), `${run.shard}/${run.shards}`]);
    expect(Object.fromEntries([...counts].map(([slot, runs]) => [(slot - T0) / SEC, runs]))).toEqual({
      '-20': ['0/3', '1/3', '2/3'],
      '-10': ['0/3', '1/3', '2/3'],
      '0': ['0/3', '1/3', '2/3'],
      '10': ['0/1'],
      '20': ['0/1'],
      '30': ['0/1'],
      '40': ['0/1'],
      '50': ['0/1'],
      '60': ['0/1'],
    });
  });
});

describe('a job added, or its schedule changed, with a slot before the watermark', () => {
  let box: Sandbox;
  beforeEach(async () => {
    box = await sandbox();
  });
  afterEach(() => box.destroy());

  const bystander = { name: 'bystander', schedule: '*/30 * * * * *', handler: 'noop' } as const;

  it('a one-time {at} job deployed 45 s before its instant, first seen by a tick 40 s before it, runs', async () => {
    const at = T0 + 10 * MIN;
    const once = { name: 'once-45s', schedule: { at: new Date(at).toISOString() }, handler: 'noop' } as const;
    const p = new Planner(box, [bystander], at - 46 * SEC);
    await p.tick(); // plans to at + 17.5 s with the default lookahead
    p.configure([bystander, once]);
    await p.tick(at - 40 * SEC);
    expect(await p.slots('once-45s')).toEqual([at]);
  });

  it("a daily 12:01 job deployed at 12:00:30 keeps that day's run, though the first tick that sees it comes just after 12:01", async () => {
    const own = await sandbox();
    const daily = { name: 'daily-1201', schedule: '1 12 * * *', handler: 'noop' } as const;
    const p = new Planner(own, [bystander], T0);
    await p.tick(); // 12:00:00, plans to 12:01:03.5
    p.configure([bystander, daily]);
    await p.tick(T0 + MIN + 400);
    expect(await p.slots('daily-1201')).toEqual([T0 + MIN]);
    own.destroy();
  });

  it('a schedule change that moves a slot before the watermark keeps the new slot', async () => {
    const own = await sandbox();
    const job = { name: 'moved', handler: 'noop' } as const;
    const p = new Planner(own, [bystander, { ...job, schedule: '10 0 13 * * *' }], T0);
    await p.tick(); // 12:00:00, plans to 12:01:03.5
    p.configure([bystander, { ...job, schedule: '50 0 12 * * *' }]);
    await p.tick(T0 + 20 * SEC);
    expect(await p.slots('moved')).toEqual([T0 + 50 * SEC]);
    own.destroy();
  });

  it('a watermark moved by a planner that does not know the new job (earlier code still running during the deploy) does not lose its slot', async () => {
    const own = await sandbox();
    const added = { name: 'added-mid-deploy', schedule: '40 1 12 * * *', handler: 'noop' } as const;
    const p = new Planner(own, [bystander], T0);
    await p.tick();
    p.configure([bystander, added]);
    await p.tick(T0 + 30 * SEC); // plans to 12:01:33.5; the job's 12:01:40 is next
    // A tick of the earlier code at 12:00:50, without the job: it moves the watermark only.
    const layout = await own.ledger.planning.readLayout();
    expect(await own.ledger.planning.advancePartition(layout!.gen, 0, T0 + 50 * SEC + 63_500)).toBe(true);
    await p.tick(T0 + 90 * SEC);
    expect(await p.slots('added-mid-deploy')).toEqual([T0 + 100 * SEC]);
    own.destroy();
  });

  it('a tick with an unchanged config re-puts nothing: re-planning happens only when the config changed', async () => {
    const own = await sandbox();
    const p = new Planner(own, [{ name: 'steady', schedule: '*/5 * * * * *', handler: 'noop' }], T0);
    await p.tick();
    p.configure([
      { name: 'steady', schedule: '*/5 * * * * *', handler: 'noop' },
      { name: 'new-one', schedule: '*/5 * * * * *', handler: 'noop' },
    ]);
    const changed = await p.tick(T0 + MIN);
    expect(changed.existing).toBeGreaterThan(0);
    const steady = await p.tick(T0 + 2 * MIN);
    expect(steady.existing).toBe(0);
    expect(steady.created).toBeGreaterThan(0);
    own.destroy();
  });
});
