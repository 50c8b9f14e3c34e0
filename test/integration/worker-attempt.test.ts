/**
 * One attempt of a claimed run (shared/worker/attempt.ts), step by step on virtual time (the
 * worker's clock and timers), against DynamoDB Local; the queue records the worker's visibility
 * changes and sends (test/support/lab.ts). What is asserted is what the worker does, at which
 * virtual instant: the history it records (claimed, handler-started, heartbeat, outcome), the
 * metrics it emits, the message visibility it asks for, when it stops the handler and why, how it
 * retries an outcome write that fails, and whether it hands its lane on. Nothing here depends on
 * the machine's speed: time moves only when the worker waits on a timer (ledger calls take real
 * time, none of it virtual).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoFencedStore } from '../../shared/store/fenced-store.js';
import { Ledger } from '../../shared/store/ledger.js';
import { initialFence } from '../../shared/core/fence.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import { takeoverVisibilitySeconds } from '../../shared/core/lease.js';
import { RunOrigin, RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import type { Timers } from '../../shared/core/concurrency.js';
import {
  AttemptAbort,
  AttemptAbortedError,
  PermanentError,
  RetryableError,
  type JobHandler,
  type RunContext,
} from '../../shared/handler-api.js';
import { faultyClient } from '../support/faults.js';
import { testJobs, VirtualTime, waitFor } from '../support/helpers.js';
import { Lab, RecordingQueue } from '../support/lab.js';
import { sandbox, uniqueName as unique, type Sandbox } from '../support/stack.js';

const MIN = 60_000;

/** The heartbeat's lease extension (the only UpdateItem that sets just leaseUntil). */
const isHeartbeat = (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItemCommand' && input.UpdateExpression === 'SET leaseUntil = :leaseUntil';
/** The outcome write (it sets the status to the outcome). */
const isOutcome = (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItemCommand' && String(input.UpdateExpression).includes('#status = :outcome');

/** A queue that keeps, with the virtual instant, every visibility change the worker asks for. */
class TimedQueue extends RecordingQueue {
  readonly changes: { at: number; seconds: number }[] = [];
  constructor(private readonly time: VirtualTime) {
    super();
  }
  override async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    this.changes.push({ at: this.time.now, seconds });
    return super.changeVisibility(receiptHandle, seconds);
  }
}

/** A handler that holds its run until the test lets it finish or ctx.signal aborts. */
function heldHandler(time: VirtualTime, first?: (ctx: RunContext) => Promise<void>) {
  let running!: (ctx: RunContext) => void;
  const started = new Promise<RunContext>((resolve) => (running = resolve));
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let abortedAt: number | undefined;
  const handler: JobHandler = {
    async run(ctx) {
      ctx.signal.addEventListener('abort', () => (abortedAt = time.now), { once: true });
      await first?.(ctx);
      running(ctx);
      await Promise.race([finished, new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }))]);
    },
  };
  return { handler, started, finish, abortedAt: () => abortedAt };
}

describe('worker attempt', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  /** A job and its bench; `handler` is given the bench's virtual time. */
  function setup(job: Record<string, unknown>, handler: (time: VirtualTime) => JobHandler) {
    const name = unique('att');
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, timeout: '60s', ...job }], ['h']);
    const time = new VirtualTime(Math.floor(Date.now() / MIN) * MIN + 5_000);
    const lab = new Lab(box, jobs, { h: handler(time) }, time.now);
    const queue = new TimedQueue(time);
    const of = (type: HistoryEvent['type']) => lab.events.filter((e) => e.type === type && e.runKey.startsWith(`${name}@`));
    return { name, jobs, time, lab, queue, of, deps: { clock: time.read, timers: time.port, queue } };
  }

  it('a long run: claimed, started and every heartbeat recorded and measured; the message shortened to the lease one second after the start, then moved with each heartbeat; SUCCEEDED counted once, nothing after the end', async () => {
    const LEASE = 20_000;
    const BEAT = 5_000;
    let held!: ReturnType<typeof heldHandler>;
    const { name, time, lab, queue, of, deps } = setup({ lease: LEASE, heartbeatEvery: BEAT }, (t) => (held = heldHandler(t)).handler);
    const slot = time.now - 5_000 - MIN;
    await lab.create(name, slot);
    const T = time.now;
    const runKey = runKeyOf(name, slot, 0, 1);
    const delivered = lab.deliver(name, slot, 'w1', deps);
    const ctx = await held.started;
    const token = ctx.fencingToken;
    expect(of('claimed')).toEqual([
      { type: 'claimed', at: T, runKey, owner: 'w1', token, attempt: 1, from: RunStatus.READY, leaseUntil: T + LEASE },
    ]);
    expect(of('handler-started')).toEqual([{ type: 'handler-started', at: T, runKey, owner: 'w1', token, slot }]);
    // The run was due a minute ago: an on-time first claim measures trigger lag, not late-start lag.
    expect(lab.metrics.observations.get('TriggerLag')).toEqual([T - slot]);
    expect(lab.metrics.observations.get('LateStartLag')).toBeUndefined();

    // No SQS call for the first second: a run that short leaves the queue's own timeout alone.
    time.advance(999);
    expect(queue.changes).toEqual([]);
    // Then the message comes back at the lease's end (plus the clock allowance), not minutes later.
    time.advance(1);
    const skew = Math.min(2_000, BEAT / 2);
    expect(queue.changes).toEqual([{ at: T + 1_000, seconds: takeoverVisibilitySeconds(T + LEASE, skew, T + 1_000) }]);
    expect(queue.changes[0]!.seconds).toBe(21);

    // The first heartbeat: lease and visibility move together, and the heartbeat is recorded.
    time.advance(BEAT - 1_000);
    await waitFor(async () => (queue.changes.length >= 2 ? true : undefined), 120_000, 'the visibility change after the first heartbeat');
    expect(of('heartbeat')).toEqual([
      { type: 'heartbeat', at: T + BEAT, runKey, owner: 'w1', token, ok: true, leaseUntil: T + BEAT + LEASE },
    ]);
    expect((await lab.run(name, slot))!.leaseUntil).toBe(T + BEAT + LEASE);
    expect(queue.changes[1]).toEqual({ at: T + BEAT, seconds: takeoverVisibilitySeconds(T + BEAT + LEASE, skew, T + BEAT) });
    // Latency on the worker's clock (virtual time stood still during the call).
    expect(lab.metrics.observations.get('HeartbeatLatency')).toEqual([0]);

    time.advance(2_000);
    held.finish();
    expect(await delivered).toBe('ack');
    expect(await lab.status(name, slot)).toBe(RunStatus.SUCCEEDED);
    expect(lab.metrics.observations.get('RunDuration')).toEqual([BEAT + 2_000]);
    expect(lab.metrics.get('RunsSucceeded')).toBe(1);
    expect(lab.metrics.get('RunsDead')).toBe(0);
    expect(lab.metrics.get('LeaseLost')).toBe(0);
    expect(of('outcome')).toEqual([
      {
        type: 'outcome',
        at: T + BEAT + 2_000,
        runKey,
        owner: 'w1',
        token,
        status: RunStatus.SUCCEEDED,
        accepted: true,
        nextAttemptAt: undefined,
      },
    ]);
    // Its timers are gone with it: no heartbeat and no visibility change after the outcome.
    time.advance(5 * LEASE);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(of('heartbeat')).toHaveLength(1);
    expect(queue.changes).toHaveLength(2);
  });

  it('a run that ends within its first second makes no SQS call, also after it ended (the early visibility change is cancelled with it)', async () => {
    const { name, time, lab, queue, deps } = setup({ lease: 20_000, heartbeatEvery: 5_000 }, () => ({
      run: async () => ({ evidence: { quick: true } }),
    }));
    const slot = time.now - 5_000 - MIN;
    await lab.create(name, slot);
    expect(await lab.deliver(name, slot, 'w1', deps)).toBe('ack');
    time.advance(60_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(queue.changes).toEqual([]);
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.SUCCEEDED, evidence: { quick: true } });
  });

  // The watchdog checks every min(1 s, heartbeat / 2): 750 ms here. The invocation ends 13 s
  // after the start and the margin is the default 10 s: the check at 3 s finds exactly the margin
  // left (not less: no yield), the one at 3.75 s finds less and yields.
  it('an invocation about to time out yields at the first watchdog check with less than the margin left: a handler that checkpointed goes RETRY at once without spending the attempt, counted as yielded', async () => {
    const BEAT = 1_500;
    let held!: ReturnType<typeof heldHandler>;
    const { name, time, lab, queue, deps } = setup(
      { lease: 20_000, heartbeatEvery: BEAT, retry: { maxAttempts: 3 } },
      (t) => (held = heldHandler(t, (ctx) => ctx.checkpoint({ page: 1 }))).handler,
    );
    const slot = time.now - 5_000 - MIN;
    await lab.create(name, slot);
    const T = time.now;
    const delivered = lab.deliver(name, slot, 'w1', { ...deps, remainingTimeMs: () => T + 13_000 - time.now });
    const ctx = await held.started;
    for (let t = 0; t < 3_000; t += 250) {
      time.advance(250);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(ctx.signal.aborted, 'yielded with exactly the margin left').toBe(false);
    time.advance(749);
    expect(ctx.signal.aborted).toBe(false);
    time.advance(1);
    expect(ctx.signal.aborted).toBe(true);
    expect(held.abortedAt()).toBe(T + 3_750);
    expect((ctx.signal.reason as AttemptAbortedError).why).toBe(AttemptAbort.YIELD);
    expect((ctx.signal.reason as AttemptAbortedError).message).toBe('the invocation is about to time out: yielding');
    // The attempt goes on in the next invocation, in a fresh message (a yield must not use up the
    // message's receive count): this one is acknowledged.
    expect(await delivered).toBe('ack');
    const run = (await lab.run(name, slot))!;
    // The time it ran here counts against its timeout.
    expect(run).toMatchObject({
      status: RunStatus.RETRY,
      nextAttemptAt: T + 3_750,
      checkpoint: { page: 1 },
      lastError: { code: 'YIELDED' },
      attemptElapsedMs: 3_750,
    });
    expect(lab.metrics.get('RunsYielded')).toBe(1);
    expect(lab.metrics.get('RunsRetried')).toBe(0);
    expect(lab.metrics.get('RunsUnknown')).toBe(0);
    // Due again at once: the fresh message has no delay.
    expect(queue.sent.at(-1)).toEqual({ message: expect.objectContaining({ runKey: run.runKey }), delaySeconds: 0 });
  });

  // Heartbeats fail (the ledger unreachable: a fault a local server cannot produce, injected on a
  // real client); the attempt must stop while a heartbeat period of lease is still left, through
  // the heartbeat itself, before the watchdog's last-second stop. Heartbeat 4 s, watchdog 1 s.
  it.each([
    // Lease 10 s: the failed heartbeat at 8 s leaves 2 s, less than a heartbeat: it stops the handler.
    { lease: 10_000, stopsAt: 8_000, why: 'the ledger stayed unreachable until the lease was about to run out' },
    // Lease 12 s: the failed heartbeat at 8 s leaves exactly a heartbeat (the next one still lands in
    // time): it stops nothing; at 12 s the watchdog does (it acts at once, the heartbeat due then
    // only once its call has failed).
    { lease: 12_000, stopsAt: 12_000, why: 'the lease is about to run out' },
  ])(
    'heartbeats failing with a lease of $lease ms: the handler is stopped at $stopsAt ms (LEASE_EXPIRING), nothing is recorded, the run stays RUNNING under its token',
    async ({ lease, stopsAt, why }) => {
      const BEAT = 4_000;
      let held!: ReturnType<typeof heldHandler>;
      const { name, time, lab, deps, of } = setup({ lease, heartbeatEvery: BEAT }, (t) => (held = heldHandler(t)).handler);
      const slot = time.now - 5_000 - MIN;
      await lab.create(name, slot);
      const T = time.now;
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isHeartbeat, fault: 'refused', times: 1e9 }], 1);
      const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
      const delivered = lab.deliver(name, slot, 'w1', { ...deps, ledger });
      const ctx = await held.started;
      const failed = () => lab.logs.filter((l) => l.message === 'heartbeat failed').length;
      try {
        for (let beat = 1; beat * BEAT < stopsAt; beat++) {
          for (let i = 0; i < 4; i++) time.advance(BEAT / 4);
          await waitFor(async () => (failed() >= beat ? true : undefined), 120_000, `failed heartbeat ${beat}`);
          expect(ctx.signal.aborted, `stopped after failed heartbeat ${beat}`).toBe(false);
        }
        for (let i = 0; i < 4; i++) time.advance(BEAT / 4);
        await waitFor(async () => (ctx.signal.aborted ? true : undefined), 120_000, 'the handler to be stopped');
        expect(held.abortedAt()).toBe(T + stopsAt);
        expect((ctx.signal.reason as AttemptAbortedError).why).toBe(AttemptAbort.LEASE_EXPIRING);
        expect((ctx.signal.reason as AttemptAbortedError).message).toBe(why);
      } finally {
        if (!ctx.signal.aborted) time.advance(2 * lease);
      }
      expect(await delivered).toBe('retry');
      expect(lab.metrics.get('LeaseLost')).toBe(1);
      const token = ctx.fencingToken;
      expect(of('outcome')).toEqual([expect.objectContaining({ owner: 'w1', token, status: RunStatus.RUNNING, accepted: false })]);
      expect(await lab.run(name, slot)).toMatchObject({
        status: RunStatus.RUNNING,
        owner: 'w1',
        fencingToken: token,
        leaseUntil: T + lease,
      });
      faulty.destroy();
    },
  );

  // Backoff 50, 100, 200, 400, 800 ms, then a second, and never more than half the lease left;
  // it gives up once no more than the clock allowance (here 725 ms) is left. Heartbeats fail too,
  // so the lease does not move: lease 10 s from the end of the handler.
  it('an outcome write that keeps failing is retried after 50, 100, 200, 400, 800 ms, then every second, then after half the lease left; it gives up with the clock allowance left, recording the outcome refused and hiding the message past the lease', async () => {
    const LEASE = 10_000;
    const SKEW = 725;
    const { name, time, lab, queue, deps, of } = setup({ lease: LEASE, heartbeatEvery: 4_000 }, () => ({ run: async () => undefined }));
    const slot = time.now - 5_000 - MIN;
    await lab.create(name, slot);
    const T = time.now;
    const attempts: { at: number; sleeps: number }[] = [];
    const sleeps: number[] = [];
    const timers: Timers = {
      ...time.port,
      setTimeout: (fn, ms) => {
        sleeps.push(ms);
        return time.port.setTimeout(fn, ms);
      },
    };
    const faulty = faultyClient(
      box.endpoints.dynamoEndpoint,
      [
        { when: isHeartbeat, fault: 'refused', times: 1e9 },
        {
          when: (command, input) => {
            const outcome = isOutcome(command, input);
            if (outcome) attempts.push({ at: time.now - T, sleeps: sleeps.length });
            return outcome;
          },
          fault: 'refused',
          times: 1e9,
        },
      ],
      1,
    );
    const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
    let done = false;
    const delivered = lab
      .deliver(name, slot, 'w1', { ...deps, ledger, timers, options: { clockSkewMs: SKEW } })
      .finally(() => (done = true));
    const expected = [0, 50, 150, 350, 750, 1_550, 2_550, 3_550, 4_550, 5_550, 6_550, 7_550, 8_550, 9_275];
    for (;;) {
      // The worker waits on a timer once it registered one after its last failed attempt.
      const state = await waitFor(
        async () => (done ? 'done' : attempts.length > 0 && sleeps.length > attempts.at(-1)!.sleeps ? 'sleeping' : undefined),
        120_000,
        'the next retry',
      );
      if (state === 'done') break;
      expect(attempts.length, 'more attempts than expected').toBeLessThan(expected.length);
      const before = attempts.length;
      time.advance(sleeps.at(-1)!);
      await waitFor(async () => (done || attempts.length > before ? true : undefined), 120_000, 'the retried write');
    }
    expect(await delivered).toBe('retry');
    expect(attempts.map((a) => a.at)).toEqual(expected);
    expect(lab.metrics.get('OutcomeWriteRetries')).toBe(expected.length - 1);
    expect(of('outcome')).toEqual([expect.objectContaining({ at: T + 9_275, status: RunStatus.SUCCEEDED, accepted: false })]);
    // Hidden until the lease's end plus the allowance: the takeover then reconciles.
    expect(queue.changes.at(-1)).toEqual({ at: T + 9_275, seconds: (T + LEASE + SKEW - (T + 9_275)) / 1000 });
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.RUNNING, owner: 'w1', leaseUntil: T + LEASE });
    faulty.destroy();
  });

  it('an exclusive run that fails and will be retried keeps its lane: nothing is handed on until it ends; retried counted, the message hidden until the retry', async () => {
    const { name, time, lab, queue, deps } = setup(
      { lease: 20_000, heartbeatEvery: 5_000, overlap: 'forbid-queue', retry: { maxAttempts: 3, backoff: { base: '10s', max: '10s' } } },
      () => ({
        run: async () => {
          throw new RetryableError('flaky');
        },
      }),
    );
    const slot = time.now - 5_000 - 2 * MIN;
    await lab.create(name, slot);
    await lab.create(name, slot + MIN);
    const T = time.now;
    expect(await lab.deliver(name, slot, 'w1', deps)).toBe('retry');
    const run = (await lab.run(name, slot))!;
    expect(run.status).toBe(RunStatus.RETRY);
    expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBe(slot);
    expect(queue.sent).toEqual([]);
    expect(lab.metrics.get('RunsRetried')).toBe(1);
    expect(lab.metrics.get('RunsYielded')).toBe(0);
    expect(lab.metrics.get('RunsUnknown')).toBe(0);
    expect(queue.changes).toEqual([{ at: T, seconds: (run.nextAttemptAt! - T) / 1000 }]);
    expect(lab.events.filter((e) => e.type === 'outcome')).toEqual([
      expect.objectContaining({ status: RunStatus.RETRY, accepted: true, nextAttemptAt: run.nextAttemptAt }),
    ]);
    // Its retry is late by construction: it measures no start lag (only the first claim did).
    expect(lab.metrics.observations.get('TriggerLag')).toEqual([T - slot]);
    time.advance(run.nextAttemptAt! - T);
    expect(await lab.deliver(name, slot, 'w1', deps)).toBe('retry');
    expect((await lab.run(name, slot))!.attempt).toBe(2);
    expect(lab.metrics.observations.get('TriggerLag')).toEqual([T - slot]);
    expect(lab.metrics.observations.get('LateStartLag')).toBeUndefined();
  });

  // A refused heartbeat names who holds the run now in the abort reason the handler sees, also
  // when the run is gone (its item deleted).
  it.each([
    [
      'a successor claimed it',
      async (lab: Lab, id: { job: string; slot: number; shard: number }, now: number) =>
        void (await lab.box.ledger.claim(id, 'successor', now + 60_000, 20_000, 2_000)),
      (token: number) => `is now held by successor (token ${token + 1}, status RUNNING)`,
    ],
    [
      'its item was deleted',
      async (lab: Lab, id: { job: string; slot: number; shard: number }) =>
        void (await lab.box.clients.doc.send(
          new DeleteCommand({ TableName: lab.box.endpoints.ledgerTable, Key: lab.box.ledger.runKeyOf(id) }),
        )),
      () => 'is now held by nobody (token ?, status gone)',
    ],
  ] as const)(
    'a refused heartbeat (%s) stops the handler at once, telling it who holds the run; nothing recorded but the refusal',
    async (_how, takeOver, says) => {
      const BEAT = 2_000;
      let held!: ReturnType<typeof heldHandler>;
      const { name, time, lab, deps, of } = setup({ lease: 20_000, heartbeatEvery: BEAT }, (t) => (held = heldHandler(t)).handler);
      const slot = time.now - 5_000 - MIN;
      await lab.create(name, slot);
      const T = time.now;
      const delivered = lab.deliver(name, slot, 'w1', deps);
      const ctx = await held.started;
      const runKey = runKeyOf(name, slot, 0, 1);
      try {
        await takeOver(lab, { job: name, slot, shard: 0 }, T);
        time.advance(BEAT);
        await waitFor(async () => (ctx.signal.aborted ? true : undefined), 120_000, 'the handler to be stopped');
        expect((ctx.signal.reason as AttemptAbortedError).why).toBe(AttemptAbort.LEASE_LOST);
        expect((ctx.signal.reason as AttemptAbortedError).message).toBe(`heartbeat refused: ${runKey} ${says(ctx.fencingToken)}`);
      } finally {
        if (!ctx.signal.aborted) time.advance(60_000);
      }
      expect(await delivered).toBe('retry');
      expect(of('heartbeat')).toEqual([expect.objectContaining({ at: T + BEAT, ok: false })]);
      expect(of('outcome')).toEqual([
        { type: 'outcome', at: T + BEAT, runKey, owner: 'w1', token: ctx.fencingToken, status: RunStatus.RUNNING, accepted: false },
      ]);
      expect(lab.metrics.get('LeaseLost')).toBe(1);
    },
  );

  it("a manual run's first start is measured as late-start lag, not trigger lag (an operator chose when it runs)", async () => {
    const { name, time, lab, deps } = setup({ lease: 20_000, heartbeatEvery: 5_000 }, () => ({ run: async () => undefined }));
    const slot = time.now - 5_000 - MIN;
    await box.ledger.createRun({ job: name, slot, shard: 0, shards: 1, status: RunStatus.READY, origin: RunOrigin.MANUAL }, time.now);
    expect(await lab.deliver(name, slot, 'w1', deps)).toBe('ack');
    expect(lab.metrics.observations.get('LateStartLag')).toEqual([time.now - slot]);
    expect(lab.metrics.observations.get('TriggerLag')).toBeUndefined();
  });

  it('a PermanentError ends the run DEAD: acknowledged, counted dead and nothing else', async () => {
    const { name, time, lab, queue, deps } = setup({ lease: 20_000, heartbeatEvery: 5_000 }, () => ({
      run: async () => {
        throw new PermanentError('bad input', { code: 'BAD' });
      },
    }));
    const slot = time.now - 5_000 - MIN;
    await lab.create(name, slot);
    expect(await lab.deliver(name, slot, 'w1', deps)).toBe('ack');
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.DEAD, lastError: { code: 'BAD' } });
    expect([
      lab.metrics.get('RunsDead'),
      lab.metrics.get('RunsSucceeded'),
      lab.metrics.get('RunsSuperseded'),
      lab.metrics.get('RunsRetried'),
      lab.metrics.get('RunsUnknown'),
    ]).toEqual([1, 0, 0, 0, 0]);
    expect(queue.changes).toEqual([]);
  });

  it("a handler whose write a newer slot's run already made ends SUPERSEDED (result unknown): acknowledged, counted superseded by the fence, the next due run of its lane dispatched", async () => {
    const { name, time, lab, queue, deps } = setup({ lease: 20_000, heartbeatEvery: 5_000, overlap: 'forbid-queue' }, () => ({
      run: async (ctx) =>
        void (await ctx.fenced.put({ table: ctx.tables.payments, item: { pk: `SUP#${ctx.job.name}`, sk: 'ITEM', by: ctx.fencingToken } })),
    }));
    const slot = time.now - 5_000 - 2 * MIN;
    await lab.create(name, slot);
    await lab.create(name, slot + MIN);
    // The next slot's run wrote the item first (its fence is of a newer slot).
    await new DynamoFencedStore(box.clients.doc, initialFence(slot + MIN) + 1).put({
      table: box.endpoints.paymentsTable,
      item: { pk: `SUP#${name}`, sk: 'ITEM', by: 'newer slot' },
    });
    expect(await lab.deliver(name, slot, 'w1', deps)).toBe('ack');
    const superseded = (await lab.run(name, slot))!;
    expect(superseded).toMatchObject({
      status: RunStatus.SUPERSEDED,
      resultUnknown: true,
      lastError: { code: 'SUPERSEDED_BY_NEWER_SLOT' },
    });
    // The error names the item and the run that wrote it.
    expect(superseded.lastError!.message).toBe(
      `${box.endpoints.paymentsTable} SUP#${name}/ITEM was already written with fence ${initialFence(slot + MIN) + 1} by the run of slot ${new Date(slot + MIN).toISOString()}: this older slot's work is superseded`,
    );
    expect([
      lab.metrics.get('RunsSuperseded'),
      lab.metrics.get('RunsSupersededByFence'),
      lab.metrics.get('FencingRejections'),
      lab.metrics.get('RunsRetried'),
      lab.metrics.get('RunsUnknown'),
      lab.metrics.get('LeaseLost'),
    ]).toEqual([1, 1, 1, 0, 0, 0]);
    expect(queue.changes).toEqual([]);
    expect(queue.sent.map((s) => s.message.slot)).toEqual([slot + MIN]);
  });

  it("a handler whose write a successor's claim of the same run already made records nothing: the run is the successor's, the message comes back", async () => {
    const LEASE = 20_000;
    let ids!: { job: string; slot: number; shard: number };
    const { name, time, lab, deps, of } = setup({ lease: LEASE, heartbeatEvery: 5_000 }, () => ({
      run: async (ctx) => {
        // Meanwhile (this worker froze): a successor claimed the run and wrote the item.
        const successor = await box.ledger.claim(ids, 'successor', ctx.now() + LEASE + 10_000, LEASE, 2_000);
        if (successor.kind !== 'claimed') throw new Error('setup: successor claim');
        await new DynamoFencedStore(box.clients.doc, successor.run.fencingToken).put({
          table: ctx.tables.payments,
          item: { pk: `CLAIM#${name}`, sk: 'ITEM', by: 'successor' },
        });
        await ctx.fenced.put({ table: ctx.tables.payments, item: { pk: `CLAIM#${name}`, sk: 'ITEM', by: ctx.fencingToken } });
      },
    }));
    const slot = time.now - 5_000 - MIN;
    ids = { job: name, slot, shard: 0 };
    await lab.create(name, slot);
    expect(await lab.deliver(name, slot, 'w1', deps)).toBe('retry');
    expect(of('outcome')).toEqual([expect.objectContaining({ owner: 'w1', status: RunStatus.RUNNING, accepted: false })]);
    expect(lab.metrics.get('LeaseLost')).toBe(1);
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.RUNNING, owner: 'successor' });
  });

  it('an outcome refused because a successor claimed the run meanwhile: counted lease lost, recorded refused, and the lane is not handed on (the run is not over)', async () => {
    const LEASE = 20_000;
    let ids!: { job: string; slot: number; shard: number };
    const { name, time, lab, queue, deps, of } = setup({ lease: LEASE, heartbeatEvery: 5_000, overlap: 'forbid-queue' }, () => ({
      run: async (ctx) => {
        const successor = await box.ledger.claim(ids, 'successor', ctx.now() + LEASE + 10_000, LEASE, 2_000);
        if (successor.kind !== 'claimed') throw new Error('setup: successor claim');
      },
    }));
    const slot = time.now - 5_000 - 2 * MIN;
    ids = { job: name, slot, shard: 0 };
    await lab.create(name, slot);
    await lab.create(name, slot + MIN);
    expect(await lab.deliver(name, slot, 'w1', deps)).toBe('retry');
    expect(of('outcome')).toEqual([expect.objectContaining({ owner: 'w1', status: RunStatus.SUCCEEDED, accepted: false })]);
    expect(lab.metrics.get('LeaseLost')).toBe(1);
    expect(lab.metrics.get('RunsSucceeded')).toBe(0);
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.RUNNING, owner: 'successor' });
    expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBe(slot);
    expect(queue.sent).toEqual([]);
  });

  it('an attempt past its timeout is stopped at the timeout and ends UNKNOWN (code TIMEOUT), counted unknown, the message hidden until its retry', async () => {
    let held!: ReturnType<typeof heldHandler>;
    const { name, time, lab, queue, deps } = setup(
      { lease: 20_000, heartbeatEvery: 5_000, timeout: '3s', retry: { maxAttempts: 3 } },
      (t) => (held = heldHandler(t)).handler,
    );
    const slot = time.now - 5_000 - MIN;
    await lab.create(name, slot);
    const T = time.now;
    const delivered = lab.deliver(name, slot, 'w1', deps);
    const ctx = await held.started;
    time.advance(2_999);
    expect(ctx.signal.aborted).toBe(false);
    time.advance(1);
    expect((ctx.signal.reason as AttemptAbortedError).why).toBe(AttemptAbort.TIMEOUT);
    expect(await delivered).toBe('retry');
    const run = (await lab.run(name, slot))!;
    expect(run).toMatchObject({ status: RunStatus.UNKNOWN, lastError: { code: 'TIMEOUT', message: 'attempt exceeded timeout 3000 ms' } });
    expect([lab.metrics.get('RunsUnknown'), lab.metrics.get('RunsRetried'), lab.metrics.get('RunsYielded')]).toEqual([1, 0, 0]);
    expect(queue.changes.at(-1)).toEqual({ at: T + 3_000, seconds: Math.max(1, (run.nextAttemptAt! - (T + 3_000)) / 1000) });
  });

  // A heartbeat call that hangs (a fault a local server cannot produce: middleware on a real
  // client holds it) must not be doubled by the next period's: one call in flight at a time.
  it('a heartbeat that hangs is not joined by another while it is in flight', async () => {
    const BEAT = 1_000;
    let held!: ReturnType<typeof heldHandler>;
    const { name, time, lab, deps } = setup({ lease: 20_000, heartbeatEvery: BEAT }, (t) => (held = heldHandler(t)).handler);
    const slot = time.now - 5_000 - MIN;
    await lab.create(name, slot);
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [], 1);
    let heartbeats = 0;
    let answer!: () => void;
    const hung = new Promise<void>((resolve) => (answer = resolve));
    faulty.dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (isHeartbeat(context.commandName ?? '', args.input as Record<string, unknown>)) {
          heartbeats++;
          await hung;
        }
        return next(args);
      },
      { step: 'initialize', name: 'hang-heartbeats' },
    );
    const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
    const delivered = lab.deliver(name, slot, 'w1', { ...deps, ledger });
    await held.started;
    time.advance(BEAT);
    await waitFor(async () => (heartbeats >= 1 ? true : undefined), 120_000, 'the first heartbeat to be sent');
    for (let i = 0; i < 3; i++) {
      time.advance(BEAT);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(heartbeats).toBe(1);
    answer();
    held.finish();
    expect(await delivered).toBe('ack');
    faulty.destroy();
  });
});
