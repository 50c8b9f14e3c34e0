/**
 * Schedule features through the real planner, worker and ops code: jittered fire times, manual
 * triggers (own run key, fenced in time order, overlap override, while paused), overlap `replace`
 * against a handler that ignores its signal, pauseOnFailure and maxRuns.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, watchKeys } from '../../shared/store/ledger.js';
import { jobPlanning } from '../../shared/store/job-planning.js';
import { backfill } from '../../shared/operations/backfill.js';
import { DynamoItemReader } from '../../shared/store/item-reader.js';
import { LedgerOps } from '../../shared/store/repairs.js';
import { initialFence } from '../../shared/core/fence.js';
import { fireTimeOf } from '../../shared/schedule/jitter.js';
import { partitionOf } from '../../shared/core/partition.js';
import { openBucketOf } from '../../shared/core/planner-state.js';
import { RunOrigin, RunStatus } from '../../shared/core/vocabulary.js';
import {
  AttemptEndedError,
  FencedOutError,
  PermanentError,
  RetryableError,
  type JobHandler,
  type RunContext,
} from '../../shared/handler-api.js';
import { manualSlot, triggerRun } from '../../shared/operations/trigger.js';
import { resolveRun } from '../../tools/ops/resolve.js';
import { retryRuns } from '../../shared/operations/retry.js';
import { testJobs, waitFor } from '../support/helpers.js';
import { faultyClient } from '../support/faults.js';
import { Lab, plannerTick, RecordingQueue } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const T0 = Date.UTC(2026, 11, 1, 12, 0);
const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 8)}`;

describe('schedule features', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  // Each planner test has its own table: a partition's watermark would hide an earlier `now`.
  const tick = plannerTick;

  it('jitter: each run keeps its slot (and run key) and fires at its fixed offset; the message is delayed to the fire time', async () => {
    const name = unique('jit');
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'noop', jitter: '40s', startLead: 0 }]);
    const queue = new RecordingQueue();
    const own = await sandbox();
    await tick(own, jobs, T0 + 5 * SEC, queue);
    const [run] = await own.ledger.listRuns(name);
    expect(run!.slot).toBe(T0 + MIN);
    expect(run!.runKey).toBe(`${name}@${new Date(T0 + MIN).toISOString()}`);
    const expected = fireTimeOf(jobs[0]!, T0 + MIN, T0 + 2 * MIN);
    expect(run!.fireAt).toBe(expected === T0 + MIN ? undefined : expected);
    expect(expected).toBeGreaterThanOrEqual(T0 + MIN);
    expect(expected).toBeLessThan(T0 + MIN + 40 * SEC);
    expect(queue.sent[0]!.delaySeconds).toBe(Math.ceil((expected - (T0 + 5 * SEC)) / SEC));
    // The worker starts it at its fire time, not at its slot: trigger lag counts from the fire time.
    const lab = new Lab(own, jobs, { noop: { run: async () => undefined } }, expected + 20);
    await lab.deliver(name, T0 + MIN);
    expect(lab.metrics.observations.get('TriggerLag')).toEqual([20]);
    own.destroy();
  });

  describe('ops trigger', () => {
    it('a trigger whose put committed but whose response was lost creates one run, not a second one a millisecond later', async () => {
      const name = unique('trig-lost');
      const jobs = testJobs([{ name, schedule: '0 0 1 1 *', handler: 'noop', startLead: 0 }]);
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
        { when: (c, input) => c === 'PutItemCommand' && JSON.stringify(input.Item ?? {}).includes(name), fault: 'lost-response' },
      ]);
      const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
      const queue = new RecordingQueue();
      const runs = await triggerRun({ ledger, queue, clock: () => T0 + 417 }, { job: jobs[0]!, by: 'alice' });
      expect(faulty.injected).toEqual(['PutItemCommand']);
      expect(runs.map((r) => r.slot)).toEqual([T0 + 417]);
      expect((await box.ledger.listRuns(name)).map((r) => r.slot)).toEqual([T0 + 417]);
      expect(queue.sent.map((s) => s.message.runKey)).toEqual([runs[0]!.runKey]);
      faulty.destroy();
    });

    it('a backfill put whose response was lost is still counted created and dispatched now', async () => {
      const name = unique('bf-lost');
      const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'noop', startLead: 0 }]);
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
        { when: (c, input) => c === 'PutItemCommand' && JSON.stringify(input.Item ?? {}).includes(name), fault: 'lost-response' },
      ]);
      const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
      const queue = new RecordingQueue();
      const report = await backfill(
        { ledger, queue, clock: () => T0, sleep: async () => undefined },
        { job: jobs[0]!, from: T0 - 3 * 60 * MIN, to: T0 },
      );
      expect(faulty.injected).toEqual(['PutItemCommand']);
      expect(report).toMatchObject({ slots: 3, created: 3, existing: 0, sent: 3 });
      expect(queue.sent).toHaveLength(3);
      faulty.destroy();
    });

    it('creates one run now with its own run key (a millisecond slot), dispatched at once, also while the job is paused', async () => {
      const name = unique('trig');
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'noop', startLead: 0 }]);
      const own = await sandbox();
      await tick(own, jobs, T0);
      await own.ledger.planning.pause(name, T0 + 65 * SEC, { by: 'test', at: T0 });
      const queue = new RecordingQueue();
      const [run] = await triggerRun(
        { ledger: own.ledger, queue, clock: () => T0 + MIN },
        { job: jobs[0]!, note: 'rerun after the fix', by: 'alice' },
      );
      // Exactly on a scheduled slot's second: moved off it, so it never collides with that slot's run.
      expect(run!.slot).toBe(T0 + MIN + 1);
      expect(run).toMatchObject({ origin: RunOrigin.MANUAL, note: 'rerun after the fix', triggeredBy: 'alice', status: RunStatus.READY });
      expect(await own.ledger.getRun({ job: name, slot: T0 + MIN, shard: 0 })).toMatchObject({
        origin: undefined,
        status: RunStatus.READY,
      });
      expect(queue.sent.map((s) => s.message.runKey)).toEqual([run!.runKey]);
      // Its fence sits between the two scheduled slots around it.
      expect(run!.fencingToken).toBeGreaterThan(initialFence(T0 + MIN) + 999);
      expect(run!.fencingToken).toBeLessThan(initialFence(T0 + 2 * MIN));
      expect(manualSlot(T0 + 417)).toBe(T0 + 417);
      // Two triggers in one millisecond get two runs.
      const [again] = await triggerRun({ ledger: own.ledger, queue, clock: () => T0 + MIN }, { job: jobs[0]!, by: 'bob' });
      expect(again!.slot).toBe(T0 + MIN + 2);
      own.destroy();
    });

    it('is fenced in time order: the next scheduled slot fences out a manual run that comes late', async () => {
      const name = unique('trigfence');
      const item = { pk: `STATE#${name}`, sk: 'CURRENT' };
      const handler: JobHandler = {
        run: async (ctx) => void (await ctx.fenced.put({ table: ctx.tables.ledger, item: { ...item, by: ctx.runKey } })),
      };
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0 }], ['h']);
      const lab = new Lab(box, jobs, { h: handler }, T0 + 30 * SEC);
      const [manual] = await triggerRun({ ledger: box.ledger, queue: lab.queue, clock: lab.clock.read }, { job: jobs[0]!, by: 'alice' });
      await lab.create(name, T0 + MIN);
      lab.clock.now = T0 + MIN + 10;
      await lab.deliver(name, T0 + MIN);
      await lab.deliverSent();
      expect(await lab.run(name, manual!.slot)).toMatchObject({
        status: RunStatus.SUPERSEDED,
        lastError: { code: 'SUPERSEDED_BY_NEWER_SLOT' },
      });
      expect((await new DynamoItemReader(box.clients.doc).get(box.endpoints.ledgerTable, item))?.by).toBe(
        `${name}@${new Date(T0 + MIN).toISOString()}`,
      );
    });

    it("follows the job's overlap policy unless overridden: --overlap parallel runs beside a forbid-skip holder", async () => {
      const name = unique('trigover');
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const started: number[] = [];
      const handler: JobHandler = {
        run: async (ctx: RunContext) => {
          started.push(ctx.slot);
          if (ctx.slot === T0) await held;
        },
      };
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap: 'forbid-skip' }], ['h']);
      const lab = new Lab(box, jobs, { h: handler }, T0 + 10);
      await lab.create(name, T0);
      const holder = lab.deliver(name, T0, 'a');
      await waitFor(async () => (started.length > 0 ? true : undefined), 120_000, 'the holder');
      const [skipped] = await triggerRun({ ledger: box.ledger, queue: lab.queue, clock: lab.clock.read }, { job: jobs[0]!, by: 'op' });
      const [beside] = await triggerRun(
        { ledger: box.ledger, queue: lab.queue, clock: () => lab.clock.now + 5 },
        { job: jobs[0]!, by: 'op', overlap: 'parallel' },
      );
      expect(beside!.overlap).toBe('parallel');
      await lab.deliverSent('b');
      expect(await lab.status(name, skipped!.slot)).toBe(RunStatus.SKIPPED);
      expect(await lab.status(name, beside!.slot)).toBe(RunStatus.SUCCEEDED);
      release();
      await holder;
    });
  });

  it('overlap replace: a newer due run stops the running one through the fence, even when it ignores its signal', async () => {
    const name = unique('repl');
    const item = { pk: `REPLACE#${name}`, sk: 'CURRENT' };
    const oldWrites: string[] = [];
    // Real time: the old run's heartbeats must run while the new one takes over.
    const realSlot = Math.floor(Date.now() / MIN) * MIN;
    const older = realSlot - 2 * MIN;
    const newer = realSlot - MIN;
    let oldStarted = false;
    let stopOld = false;
    const handler: JobHandler = {
      run: async (ctx) => {
        if (ctx.slot === older) {
          oldStarted = true;
          // Ignores ctx.signal: writes every 50 ms until the test says stop.
          while (!stopOld) {
            try {
              await ctx.fenced.put({ table: ctx.tables.ledger, item: { ...item, by: 'old' } });
              oldWrites.push('landed');
            } catch (error) {
              oldWrites.push(
                error instanceof FencedOutError
                  ? `fenced-out:${error.refusal}`
                  : error instanceof AttemptEndedError
                    ? 'refused'
                    : String(error),
              );
            }
            await new Promise((r) => setTimeout(r, 50));
          }
          return;
        }
        await ctx.fenced.put({ table: ctx.tables.ledger, item: { ...item, by: 'new' } });
      },
    };
    const jobs = testJobs(
      [{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap: 'replace', lease: '3s', heartbeatEvery: '200ms' }],
      ['h'],
    );
    const lab = new Lab(box, jobs, { h: handler }, Date.now());
    await lab.create(name, older);
    await lab.create(name, newer);
    const holder = (async () => {
      // The old run must not see the newer one as due before it started: deliver it with a clock before the newer slot.
      return lab.deliver(name, older, 'old', { clock: () => Date.now() - 2 * MIN });
    })();
    await waitFor(async () => (oldStarted ? true : undefined), 120_000, 'the old run');
    expect(await lab.deliver(name, newer, 'new', { clock: Date.now })).toBe('ack');
    expect(await lab.status(name, newer)).toBe(RunStatus.SUCCEEDED);
    const replaced = (await lab.run(name, older))!;
    expect(replaced).toMatchObject({
      status: RunStatus.SUPERSEDED,
      lastError: { code: 'REPLACED', message: `replaced by ${name}@${new Date(newer).toISOString()}` },
    });
    // The old worker's heartbeat is refused: its attempt ends, it records nothing; its later writes never land.
    expect(await holder).toBe('retry');
    await new Promise((r) => setTimeout(r, 200));
    stopOld = true;
    expect(oldWrites.slice(-2).every((w) => w === 'refused' || w.startsWith('fenced-out'))).toBe(true);
    expect((await new DynamoItemReader(box.clients.doc).get(box.endpoints.ledgerTable, item))?.by).toBe('new');
    expect(lab.metrics.get('RunsReplaced')).toBe(1);
  });

  describe('pauseOnFailure', () => {
    it("pauses the job after N consecutive DEAD runs (a manual run counts, an operator's resolve does not); resume clears it", async () => {
      const name = unique('pof');
      const handler: JobHandler = {
        run: async () => {
          throw new PermanentError('broken', { code: 'BROKEN' });
        },
      };
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, pauseOnFailure: 3 }], ['h']);
      const lab = new Lab(box, jobs, { h: handler }, T0 + 5 * MIN);
      const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
      const paused = async () => (await jobPlanning(box.ledger.planning, [name], partitionOf, Date.now())).get(name)!.pause;
      for (const s of [T0, T0 + MIN]) {
        await lab.create(name, s);
        await lab.deliver(name, s);
      }
      // An operator closes the next one: neither a failure nor a success.
      await lab.create(name, T0 + 2 * MIN);
      await resolveRun(
        { ledger: box.ledger, ops, clock: lab.clock.read },
        { id: lab.id(name, T0 + 2 * MIN), as: 'dead', reason: 'cancelled', by: 'op' },
      );
      expect(await paused()).toBeUndefined();
      // A manual run fails: the third consecutive failure.
      const [manual] = await triggerRun({ ledger: box.ledger, queue: lab.queue, clock: () => T0 + 3 * MIN }, { job: jobs[0]!, by: 'op' });
      await lab.deliverSent();
      expect(await lab.status(name, manual!.slot)).toBe(RunStatus.DEAD);
      expect(await paused()).toMatchObject({ by: 'pauseOnFailure', note: expect.stringContaining('3 consecutive DEAD') });
      expect(lab.metrics.get('JobsPausedOnFailure')).toBe(1);
      expect(await box.ledger.planning.resume(name)).toBe(true);
      expect(await paused()).toBeUndefined();
    });
  });

  describe('maxRuns', () => {
    it('ends the job after N scheduled runs across ticks; manual runs do not count', async () => {
      const name = unique('max');
      const jobs = testJobs([{ name, schedule: '*/10 * * * * *', handler: 'noop', maxRuns: 8 }]);
      const own = await sandbox();
      await triggerRun({ ledger: own.ledger, queue: new RecordingQueue(), clock: () => T0 + 2 * SEC }, { job: jobs[0]!, by: 'op' });
      for (let k = 0; k < 4; k++) await tick(own, jobs, T0 + 5 * SEC + k * MIN);
      const runs = await own.ledger.listRuns(name, { ascending: true });
      const scheduled = runs.filter((r) => r.origin !== RunOrigin.MANUAL);
      expect(scheduled.map((r) => r.slot)).toEqual(Array.from({ length: 8 }, (_, i) => T0 + 10 * SEC + i * 10 * SEC));
      expect(runs.filter((r) => r.origin === RunOrigin.MANUAL)).toHaveLength(1);
      const planning = (await jobPlanning(own.ledger.planning, [name], partitionOf, Date.now())).get(name)!;
      expect(planning.planned).toBe(8);
      own.destroy();
    });
  });

  describe('start lag', () => {
    it('trigger lag counts only the first on-time start of a planned run; retries, catch-up, backfilled and manual runs count as late starts', async () => {
      const name = unique('lag');
      const jobs = testJobs(
        [
          {
            name,
            schedule: '* * * * *',
            handler: 'flaky',
            startLead: 0,
            retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s', jitter: 'none' } },
          },
        ],
        ['flaky'],
      );
      let failures = 1;
      const lab = new Lab(
        box,
        jobs,
        {
          flaky: {
            run: async () => {
              if (failures-- > 0) throw new RetryableError('not yet');
            },
          },
        },
        T0 + 30,
      );
      // Planned, on time: trigger lag 30 ms; its retry a second later is not trigger lag.
      await lab.create(name, T0);
      await lab.deliver(name, T0);
      lab.clock.advance(5 * SEC);
      await lab.deliver(name, T0);
      expect(await lab.status(name, T0)).toBe(RunStatus.SUCCEEDED);
      expect(lab.metrics.observations.get('TriggerLag')).toEqual([30]);
      expect(lab.metrics.observations.get('LateStartLag') ?? []).toEqual([]);
      // A misfired slot planned late by catch-up: late by construction.
      await box.ledger.createRun(
        { job: name, slot: T0 - 10 * MIN, shard: 0, shards: 1, status: RunStatus.READY, origin: RunOrigin.CATCH_UP },
        lab.clock.now,
      );
      await lab.deliver(name, T0 - 10 * MIN);
      // A backfilled slot from an hour ago: watched by the sweeper at once (older than its window).
      const backfilled = await backfill(
        { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read, sleep: async () => undefined },
        { job: jobs[0]!, from: T0 - 60 * MIN, to: T0 - 59 * MIN },
      );
      expect(backfilled.created).toBe(1);
      const run = await lab.run(name, T0 - 60 * MIN);
      expect(run?.origin).toBe(RunOrigin.BACKFILL);
      const bucket = openBucketOf(name, T0 - 60 * MIN, 0);
      const watched = await box.ledger.watchedPage(bucket, T0, undefined, 1_000);
      expect(watched.entries.map((e) => e.openSk)).toContain(watchKeys(run!).openSk);
      await lab.deliverSent();
      // A manual run.
      await triggerRun({ ledger: box.ledger, queue: lab.queue, clock: lab.clock.read }, { job: jobs[0]!, by: 'op' });
      await lab.deliverSent();
      // A planned slot a policy skipped, run hours later by `ops retry`: its first claim is the operator's choice.
      const skipped = await box.ledger.createRun(
        { job: name, slot: T0 - 3 * 60 * MIN, shard: 0, shards: 1, status: RunStatus.SKIPPED, reason: 'forbid-skip' },
        lab.clock.now,
      );
      const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
      const retried = await retryRuns(
        { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
        lab.job(name),
        [skipped.created ? skipped.run : skipped.existing],
        { states: [RunStatus.SKIPPED] },
      );
      expect(retried.map((r) => r.action)).toEqual(['revived']);
      await lab.deliverSent();
      expect(await lab.status(name, T0 - 3 * 60 * MIN)).toBe(RunStatus.SUCCEEDED);
      expect(lab.metrics.observations.get('TriggerLag')).toEqual([30]);
      expect(lab.metrics.observations.get('LateStartLag')).toHaveLength(4);
      expect(Math.min(...lab.metrics.observations.get('LateStartLag')!)).toBeGreaterThanOrEqual(0);
    });
  });
});
