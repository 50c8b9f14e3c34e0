/**
 * The planner against DynamoDB Local and local-aws-sqs: concurrent planners, crash safety, and
 * cost that grows with due slots rather than with jobs.
 */
import { KEY_SPREAD } from '../../shared/core/resources.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CountingMiddleware } from '../support/counting.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { NO_HISTORY, type HistoryEvent } from '../../shared/core/history.js';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import { Ledger } from '../../shared/store/ledger.js';
import { faultyClient } from '../support/faults.js';
import { RecordingQueue } from '../support/lab.js';
import { partitionOf } from '../../shared/core/partition.js';
import { drain, ManualClock, metrics, silentLogger, testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

// startLead of a minute makes every message immediately visible whatever the manual clock says,
// so the test can count them without waiting for SQS delays.
const JOBS = testJobs([
  { name: 'every-10s', schedule: '*/10 * * * * *', handler: 'noop', startLead: '60s' },
  { name: 'every-minute', schedule: '* * * * *', handler: 'noop', startLead: '60s' },
]);
const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);
// The expectations below count slots in one-minute windows; the default horizon (one tick + the
// largest startLead + a margin) has its own tests in test/unit/plan.test.ts.
const LOOKAHEAD_MS = 60_000;

describe('planner', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('five concurrent planners over the same minutes create one run per slot and one message per run', async () => {
    const clock = new ManualClock(T0);
    const deps = {
      ledger: box.ledger,
      queue: box.queue,
      jobs: JOBS,
      clock: clock.read,
      logger: silentLogger(),
      metrics: metrics(),
      options: { lookaheadMs: LOOKAHEAD_MS },
    };
    for (let minute = 0; minute < 3; minute++) {
      // Overlapping invocations, as EventBridge retries and slow ticks produce.
      await Promise.all(Array.from({ length: 5 }, () => runPlannerTick(deps, { partition: 0, of: 1 })));
      clock.advance(60_000);
    }
    // First tick starts at T0 (exclusive) and each plans 60 s ahead: (T0, T0 + 180 s].
    const expectedTen = 18;
    const expectedMinute = 3;
    const tens = await box.ledger.listRuns('every-10s', { ascending: true });
    const minutes = await box.ledger.listRuns('every-minute', { ascending: true });
    expect(tens.map((r) => r.slot)).toEqual(Array.from({ length: expectedTen }, (_, i) => T0 + (i + 1) * 10_000));
    expect(minutes.map((r) => r.slot)).toEqual(Array.from({ length: expectedMinute }, (_, i) => T0 + (i + 1) * 60_000));

    const messages = await drain(box.clients.sqs, box.endpoints.runQueueUrl, { expected: expectedTen + expectedMinute + 1, idleMs: 2_000 });
    const keys = messages.map((m) => JSON.parse(m.Body!).runKey as string);
    expect(keys).toHaveLength(expectedTen + expectedMinute);
    expect(new Set(keys).size).toBe(keys.length);
    expect(new Set(keys)).toEqual(new Set([...tens, ...minutes].map((r) => r.runKey)));
  });

  it('a new job starts at its first slot after it appears, not at the epoch', async () => {
    const own = await sandbox();
    const clock = new ManualClock(T0 + 7_000);
    await runPlannerTick(
      {
        ledger: own.ledger,
        queue: own.queue,
        jobs: JOBS,
        clock: clock.read,
        logger: silentLogger(),
        metrics: metrics(),
        options: { lookaheadMs: LOOKAHEAD_MS },
      },
      { partition: 0, of: 1 },
    );
    const runs = await own.ledger.listRuns('every-10s', { ascending: true });
    expect(runs[0]!.slot).toBe(T0 + 10_000);
    own.destroy();
  });

  it('a planner that dies after creating runs but before sending leaves work a later tick completes', async () => {
    const own = await sandbox();
    const clock = new ManualClock(T0);
    const failingQueue = Object.assign(Object.create(Object.getPrototypeOf(own.queue)), own.queue, {
      send: async () => {
        throw new Error('crash between put and send');
      },
    });
    const base = { ledger: own.ledger, jobs: JOBS, clock: clock.read, logger: silentLogger(), metrics: metrics(), history: NO_HISTORY };
    await expect(
      runPlannerTick({ ...base, queue: failingQueue, options: { lookaheadMs: LOOKAHEAD_MS } }, { partition: 0, of: 1 }),
    ).rejects.toThrow('crash between put and send');
    const created = await own.ledger.listRuns('every-10s', { ascending: true });
    expect(created.length).toBe(6);
    expect(created.every((r) => r.status === RunStatus.READY)).toBe(true);
    // The watermark did not move, so nothing was lost; the sweeper re-sends once the slots are overdue.
    clock.advance(60_000 + 121_000);
    const report = await runPlannerTick(
      { ...base, queue: own.queue, options: { sweepGraceMs: 120_000, lookaheadMs: LOOKAHEAD_MS } },
      { partition: 0, of: 1 },
    );
    expect(report.swept).toBeGreaterThanOrEqual(6);
    const messages = await drain(own.clients.sqs, own.endpoints.runQueueUrl, { idleMs: 2_000 });
    const keys = new Set(messages.map((m) => JSON.parse(m.Body!).runKey as string));
    for (const run of created) expect(keys.has(run.runKey)).toBe(true);
    // A second sweep within the grace period sends nothing more.
    const again = await runPlannerTick(
      { ...base, queue: own.queue, options: { sweepGraceMs: 120_000, lookaheadMs: LOOKAHEAD_MS } },
      { partition: 0, of: 1 },
    );
    expect(again.swept).toBe(0);
    own.destroy();
  });

  it('a tick that fails in its sweep, after its watermark moved, still tells its history sink how far it planned; one that fails before the watermark tells nothing', async () => {
    // The model tester learns from this how far a failed tick planned: without it, it owed the
    // slots a schedule change put behind the watermark (model seed 20284961, a false alarm).
    const own = await sandbox();
    try {
      const clock = new ManualClock(T0);
      const events: HistoryEvent[] = [];
      const history = { record: (e: HistoryEvent) => events.push(e) };
      const failingSweep = Object.assign(Object.create(Object.getPrototypeOf(own.ledger)), own.ledger, {
        watchedPage: async () => {
          throw new Error('sweep read refused');
        },
      });
      const base = {
        jobs: JOBS,
        clock: clock.read,
        logger: silentLogger(),
        metrics: metrics(),
        history,
        options: { lookaheadMs: LOOKAHEAD_MS },
      };
      await expect(runPlannerTick({ ...base, ledger: failingSweep, queue: own.queue }, { partition: 0, of: 1 })).rejects.toThrow(
        'sweep read refused',
      );
      expect(events.filter((e) => e.type === 'partition-planned')).toEqual([
        { type: 'partition-planned', at: T0, runKey: '', partition: 0, of: 1, plannedUntil: T0 + LOOKAHEAD_MS },
      ]);
      // Told before the write, too: a write whose response is lost may land although the tick fails.
      expect(events.filter((e) => e.type === 'partition-planning')).toEqual([
        { type: 'partition-planning', at: T0, runKey: '', partition: 0, of: 1, plannedUntil: T0 + LOOKAHEAD_MS },
      ]);
      expect((await own.ledger.planning.readLayout())?.partitions.get(0)?.plannedUntil).toBe(T0 + LOOKAHEAD_MS);
      events.length = 0;
      clock.advance(60_000);
      const failingQueue = Object.assign(Object.create(Object.getPrototypeOf(own.queue)), own.queue, {
        send: async () => {
          throw new Error('crash between put and send');
        },
      });
      await expect(runPlannerTick({ ...base, ledger: own.ledger, queue: failingQueue }, { partition: 0, of: 1 })).rejects.toThrow(
        'crash between put and send',
      );
      expect(events.filter((e) => e.type === 'partition-planned')).toEqual([]);
      expect(events.filter((e) => e.type === 'partition-planning')).toEqual([]);
    } finally {
      own.destroy();
    }
  });

  it("a run put by a tick that then failed (its put's response lost), found by the next tick, is watched: the sweeper re-sends it even after its job's schedule changed so that no window sweep reads its slot (model seed 20261207)", async () => {
    // Before: the next tick found the run existing and sent nothing (only the planner whose put
    // created a run sends); the window sweep queries a job only for windows holding one of its
    // current slots, so once the job became hourly the run's slot was never swept: READY for good.
    const own = await sandbox();
    try {
      const clock = new ManualClock(T0 + 5_000);
      const every20s = testJobs([{ name: 'changing', schedule: '*/20 * * * * *', handler: 'noop', startLead: 0 }]);
      const hourly = testJobs([{ name: 'changing', schedule: '0 * * * *', handler: 'noop', startLead: 0 }]);
      const queue = new RecordingQueue();
      const base = {
        queue,
        clock: clock.read,
        logger: silentLogger(),
        metrics: metrics(),
        options: { lookaheadMs: LOOKAHEAD_MS, sweepGraceMs: 120_000 },
      };
      const lostSlot = T0 + 40_000;
      const isItsPut = (command: string, input: Record<string, unknown>) =>
        command === 'PutItemCommand' && JSON.stringify(input).includes(new Date(lostSlot).toISOString());
      const faulty = faultyClient(own.endpoints.dynamoEndpoint, [{ when: isItsPut, fault: 'lost-response' }], 1);
      try {
        await expect(
          runPlannerTick(
            { ...base, jobs: every20s, ledger: new Ledger(faulty.doc, { tableName: own.endpoints.ledgerTable }) },
            { partition: 0, of: 1 },
          ),
        ).rejects.toThrow();
      } finally {
        faulty.destroy();
      }
      expect((await own.ledger.getRun({ job: 'changing', slot: lostSlot, shard: 0 }))?.status).toBe(RunStatus.READY);
      expect(queue.sent.map((s) => s.message.slot)).not.toContain(lostSlot);
      // The next tick finds it; then the job becomes hourly, and the planner ticks on for ten minutes.
      clock.advance(1_000);
      await runPlannerTick({ ...base, jobs: every20s, ledger: own.ledger }, { partition: 0, of: 1 });
      for (let minute = 0; minute < 10; minute++) {
        clock.advance(60_000);
        await runPlannerTick({ ...base, jobs: hourly, ledger: own.ledger }, { partition: 0, of: 1 });
      }
      // Re-sent by the watch sweep (again each grace period while nobody claims it: no worker runs here).
      expect([...new Set(queue.sent.filter((s) => s.message.slot === lostSlot).map((s) => s.message.runKey))]).toEqual([
        runKeyOf('changing', lostSlot, 0, 1),
      ]);
    } finally {
      own.destroy();
    }
  });

  it("a partition's first tick that fails half-way through a slot's shards: the next tick plans from the first tick's now, so the slot is whole (model seed 20269141)", async () => {
    // Before: with no watermark recorded yet, every tick started at its own `now`; the first tick
    // put shards 1 and 2 of 12:01, its put of shard 0 was refused, and the next tick (a minute
    // later) planned from 12:01:05 on: shard 0 of 12:01 never existed while shards 1 and 2 ran.
    const own = await sandbox();
    try {
      const clock = new ManualClock(T0 + 5_000);
      const sharded = testJobs([
        { name: 'sharded', schedule: '* * * * *', handler: 'noop', startLead: 0, shards: 3, misfire: { after: '5m', policy: 'all' } },
      ]);
      const queue = new RecordingQueue();
      const base = {
        jobs: sharded,
        queue,
        clock: clock.read,
        logger: silentLogger(),
        metrics: metrics(),
        options: { lookaheadMs: LOOKAHEAD_MS },
      };
      const slot = T0 + 60_000;
      const isShard0 = (command: string, input: Record<string, unknown>) =>
        command === 'PutItemCommand' && JSON.stringify(input).includes(runKeyOf('sharded', slot, 0, 3));
      const faulty = faultyClient(own.endpoints.dynamoEndpoint, [{ when: isShard0, fault: 'refused' }], 1);
      try {
        await expect(
          runPlannerTick({ ...base, ledger: new Ledger(faulty.doc, { tableName: own.endpoints.ledgerTable }) }, { partition: 0, of: 1 }),
        ).rejects.toThrow();
        // A slot's shard 0 is put first (it fixes the slot's shard count): the others were never tried.
      } finally {
        faulty.destroy();
      }
      for (const shard of [0, 1, 2]) expect(await own.ledger.getRun({ job: 'sharded', slot, shard })).toBeUndefined();
      clock.advance(60_000);
      await runPlannerTick({ ...base, ledger: own.ledger }, { partition: 0, of: 1 });
      for (const shard of [0, 1, 2])
        expect((await own.ledger.getRun({ job: 'sharded', slot, shard }))?.status, `shard ${shard}`).toBe(RunStatus.READY);
    } finally {
      own.destroy();
    }
  });

  it('cost grows with due slots, not with jobs: 2,000 hourly jobs with none due cost the same requests as none', async () => {
    const own = await sandbox();
    const hourly = testJobs(
      Array.from({ length: 2_000 }, (_, i) => ({ name: `hourly-${i}`, schedule: `${i % 60} 3 * * *`, handler: 'noop' })),
    );
    const counter = new CountingMiddleware();
    counter.attach(own.clients.doc);
    const clock = new ManualClock(Date.UTC(2026, 10, 29, 12, 0, 0));
    const deps = { ledger: own.ledger, queue: own.queue, jobs: hourly, clock: clock.read, logger: silentLogger(), metrics: metrics() };
    await runPlannerTick(deps, { partition: 0, of: 1 });
    counter.reset();
    clock.advance(60_000);
    await runPlannerTick(deps, { partition: 0, of: 1 });
    // One batch read (layout + exception lists), the watermark advance, the sweep cursor, one
    // watch-index query per bucket and one count of its DEAD key (the runs-dead gauge):
    // independent of the 2,000 jobs.
    expect(counter.byCommand()).toEqual({ BatchGetItemCommand: 1, UpdateItemCommand: 2, QueryCommand: 2 * KEY_SPREAD.openBuckets });
    own.destroy();
  });
});

describe('misfire: the planner stopped for 10 simulated minutes on a per-minute job', () => {
  const START = Date.UTC(2026, 10, 29, 9, 0, 0);
  async function scenario(policy: 'skip' | 'latest' | 'all') {
    const own = await sandbox();
    const jobs = testJobs([
      { name: 'minutely', schedule: '* * * * *', handler: 'noop', startLead: '60s', misfire: { after: '1m', policy, maxPerTick: 3 } },
    ]);
    const clock = new ManualClock(START);
    // Nothing consumes the messages here, so keep the sweeper out of the picture.
    const deps = {
      ledger: own.ledger,
      queue: own.queue,
      jobs,
      clock: clock.read,
      logger: silentLogger(),
      metrics: metrics(),
      options: { sweepGraceMs: 3_600_000, lookaheadMs: LOOKAHEAD_MS },
    };
    await runPlannerTick(deps, { partition: 0, of: 1 });
    await drain(own.clients.sqs, own.endpoints.runQueueUrl, { idleMs: 500 });
    // Planned up to START + 60 s; the planner is down until START + 11 min.
    clock.advance(11 * 60_000);
    const reports = [];
    const sentPerTick: string[][] = [];
    for (let tick = 0; tick < 4; tick++) {
      reports.push(await runPlannerTick(deps, { partition: 0, of: 1 }));
      const messages = await drain(own.clients.sqs, own.endpoints.runQueueUrl, { idleMs: 500 });
      sentPerTick.push(messages.map((m) => JSON.parse(m.Body!).runKey as string));
      clock.advance(60_000);
    }
    const runs = await own.ledger.listRuns('minutely', { ascending: true });
    own.destroy();
    return { runs, reports, sentPerTick, metrics: deps.metrics };
  }
  // Missed: START+2m … START+9m are older than `after` (1 min) at START+11m; START+10m, +11m are on time.
  const missed = Array.from({ length: 8 }, (_, i) => START + (i + 2) * 60_000);
  const onTimeAtResume = [START + 10 * 60_000, START + 11 * 60_000, START + 12 * 60_000];

  it('skip records every missed slot as a visible SKIPPED run and runs the on-time ones', async () => {
    const { runs, metrics: m } = await scenario('skip');
    const skipped = runs.filter((r) => r.status === RunStatus.SKIPPED).map((r) => r.slot);
    expect(skipped).toEqual(missed);
    for (const slot of onTimeAtResume) expect(runs.find((r) => r.slot === slot)?.status).toBe(RunStatus.READY);
    expect(m.get('SlotsSkipped')).toBe(missed.length);
  });

  it('latest creates only the newest missed slot', async () => {
    const { runs } = await scenario('latest');
    const afterOutage = runs.filter((r) => r.slot > START + 60_000).map((r) => r.slot);
    expect(afterOutage.filter((slot) => slot < START + 10 * 60_000)).toEqual([START + 9 * 60_000]);
    for (const slot of onTimeAtResume) expect(afterOutage).toContain(slot);
  });

  it('all creates every missed slot, at most maxPerTick per tick, sent after the on-time runs', async () => {
    const { runs, reports, sentPerTick } = await scenario('all');
    expect(runs.filter((r) => missed.includes(r.slot))).toHaveLength(missed.length);
    // 8 missed at 3 per tick: 3 + 3 + 2 over the first three ticks.
    const catchUpPerTick = sentPerTick.map(
      (keys) => keys.filter((k) => missed.some((slot) => k.endsWith(new Date(slot).toISOString()))).length,
    );
    expect(catchUpPerTick, JSON.stringify(sentPerTick)).toEqual([3, 3, 2, 0]);
    // On-time work is never behind catch-up: the first tick sends the on-time runs first.
    const first = sentPerTick[0]!;
    const firstCatchUp = first.findIndex((k) => missed.some((slot) => k.endsWith(new Date(slot).toISOString())));
    const onTimeKeys = first.filter((k) => onTimeAtResume.some((slot) => k.endsWith(new Date(slot).toISOString())));
    expect(onTimeKeys.length).toBeGreaterThan(0);
    for (const key of onTimeKeys) expect(first.indexOf(key)).toBeLessThan(firstCatchUp);
    expect(reports.every((r) => r.watermarkAdvanced)).toBe(true);
  });
});

describe('planner partitions', () => {
  it('P partitions together plan every job exactly once, each job only in its own partition', async () => {
    const own = await sandbox();
    const jobs = testJobs(
      Array.from({ length: 24 }, (_, i) => ({ name: `job-${i}`, schedule: '*/20 * * * * *', handler: 'noop', startLead: '60s' })),
    );
    const clock = new ManualClock(T0);
    const of = 4;
    const deps = {
      ledger: own.ledger,
      queue: own.queue,
      jobs,
      clock: clock.read,
      logger: silentLogger(),
      metrics: metrics(),
      options: { lookaheadMs: LOOKAHEAD_MS },
    };
    const created = new Map<number, number>();
    for (let round = 0; round < 2; round++) {
      // Both rounds cover the same minute: the second must create nothing.
      for (let partition = 0; partition < of; partition++) {
        const report = await runPlannerTick(deps, { partition, of });
        created.set(partition, (created.get(partition) ?? 0) + report.created);
      }
    }
    for (const job of jobs) {
      const runs = await own.ledger.listRuns(job.name, { ascending: true });
      expect(
        runs.map((r) => r.slot),
        job.name,
      ).toEqual([T0 + 20_000, T0 + 40_000, T0 + 60_000]);
    }
    const expected = new Map<number, number>();
    for (const job of jobs) expected.set(partitionOf(job.name, of), (expected.get(partitionOf(job.name, of)) ?? 0) + 3);
    expect(created).toEqual(expected);
    own.destroy();
  });
});
