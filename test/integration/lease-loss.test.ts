/**
 * What a lease lost or held by someone else does to a worker, against the real local stack, with
 * clocks the test controls so that the outcome does not depend on the machine's load:
 * - a holder whose heartbeat is refused stops its handler through ctx.signal at that very
 *   heartbeat, long before its own lease (much longer than the heartbeat) would have ended;
 * - a message whose run another owner leases live is not dropped: it comes back, and once that
 *   owner is gone the run is taken over and completes;
 * - a handler's fenced write still held back when its attempt's lease ends is aborted, not sent
 *   late (it would land after a takeover reconciled, before the newer attempt wrote the item);
 * - an attempt that timed out with a write in flight, which then comes back fenced out by a newer
 *   slot, ends SUPERSEDED (its result unknown), not UNKNOWN or DEAD.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoFencedStore } from '../../shared/store/fenced-store.js';
import { Ledger } from '../../shared/store/ledger.js';
import { initialFence } from '../../shared/core/fence.js';
import { takeoverVisibilitySeconds } from '../../shared/core/lease.js';
import type { HistorySink } from '../../shared/core/history.js';
import { RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { AttemptAbort, AttemptAbortedError, type JobHandler, type RunContext } from '../../shared/handler-api.js';
import { InMemoryMetrics } from '../../shared/runtime/observability.js';
import { messageFor } from '../../shared/planner/planner.js';
import { processBatch, type WorkerDeps } from '../../shared/worker/batch.js';
import { localClientConfig } from '../../tools/local-stack.js';
import { LocalPoller } from '../../tools/local-poller.js';
import { testJobs, VirtualTime, waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { readyRun, workerDeps } from '../support/worker-harness.js';

const LEASE = 20_000;
const HEARTBEAT = 300;

function deps(
  box: Sandbox,
  jobs: ReturnType<typeof testJobs>,
  handlers: Record<string, JobHandler>,
  owner: string,
  metrics = new InMemoryMetrics(),
): WorkerDeps {
  return workerDeps(box, jobs, handlers, owner, { metrics });
}

const unique = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * A worker-side client whose writes to the business table are held before they reach the network
 * (a stalled connection, a frozen container) until `release()`, and, with `hangHeartbeats`, whose
 * heartbeats get no answer.
 */
function holdingClient(box: Sandbox, options: { hangHeartbeats: boolean }) {
  const dynamo = new DynamoDBClient(localClientConfig(box.endpoints.dynamoEndpoint));
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let writesHeld = 0;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        UpdateExpression?: string;
        TableName?: string;
        TransactItems?: Array<Record<string, { TableName?: string }>>;
      };
      if (
        options.hangHeartbeats &&
        context.commandName === 'UpdateItemCommand' &&
        input.UpdateExpression === 'SET leaseUntil = :leaseUntil'
      )
        return new Promise<never>(() => undefined);
      const business = (table: string | undefined) => table === box.endpoints.paymentsTable;
      const toBusiness =
        business(input.TableName) || (input.TransactItems ?? []).some((item) => Object.values(item).some((op) => business(op.TableName)));
      if (toBusiness && ['PutItemCommand', 'UpdateItemCommand', 'TransactWriteItemsCommand'].includes(context.commandName ?? '')) {
        writesHeld++;
        await held;
      }
      return next(args);
    },
    { step: 'initialize', name: 'hold-business-writes' },
  );
  const doc = DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } });
  return { dynamo, doc, ledger: new Ledger(doc, { tableName: box.endpoints.ledgerTable }), release, writesHeld: () => writesHeld };
}

/** A handler that holds its run until ctx.signal aborts; `started` resolves with its ctx, `abortedAt()` is when (virtual time). */
function waitingHandler(time: VirtualTime) {
  let running!: (ctx: RunContext) => void;
  const started = new Promise<RunContext>((resolve) => (running = resolve));
  let abortedAt: number | undefined;
  const wait: JobHandler = {
    async run(ctx) {
      ctx.signal.addEventListener('abort', () => (abortedAt = time.now), { once: true });
      running(ctx);
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
    },
  };
  return { wait, started, abortedAt: () => abortedAt };
}

/** `target` with some of its methods replaced, the others as they are. */
function overriding<T extends object>(target: T, methods: Partial<T>): T {
  return Object.assign(Object.create(target) as T, methods);
}

/** Moves virtual time `step` at a time, each once the worker has had a moment to act, until `done()`. */
async function advanceUntil(time: VirtualTime, step: number, done: () => boolean, maxSteps = 200): Promise<void> {
  for (let i = 0; !done() && i < maxSteps; i++) {
    time.advance(step);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('lease loss', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox({ visibilityTimeoutSeconds: 2 });
  });
  afterAll(() => box.destroy());

  // Both ways a live holder loses its run: a successor's claim (its clock says the lease is over:
  // the holder froze, or its clock is slow) and overlap `replace` advancing the fence.
  // Virtual time (the worker's clock and timers): time moves one heartbeat at a time, and only once
  // the heartbeat of the step before has had its answer, so how soon the holder stops is counted
  // in heartbeats, whatever the machine's load (ledger calls take real time, no virtual time).
  it.each([
    [
      'a successor claims the run',
      (id: RunId, now: number) => box.ledger.claim(id, 'successor', now + LEASE + 10_000, LEASE, 2_000).then((c) => c.kind === 'claimed'),
      { status: RunStatus.RUNNING, owner: 'successor' },
    ],
    [
      'overlap replace advances its fence',
      async (id: RunId, now: number) => box.ledger.replaceRunning((await box.ledger.getRun(id))!, 'a newer run', now),
      { status: RunStatus.SUPERSEDED },
    ],
  ] as const)(
    "%s: the holder's ctx.signal aborts at the first refused heartbeat, one heartbeat after the loss, long before its lease ends",
    async (_how, takeOver, after) => {
      const name = unique('lost');
      const jobs = testJobs(
        [{ name, schedule: '* * * * *', handler: 'wait', lease: LEASE, heartbeatEvery: HEARTBEAT, startLead: 0, timeout: '60s' }],
        ['wait'],
      );
      const time = new VirtualTime(Date.now());
      const slot = Math.floor(time.now / 1000) * 1000 - 60_000;
      const id = { job: name, slot, shard: 0 };
      await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, time.now);
      const { wait, started, abortedAt } = waitingHandler(time);
      const heartbeats: Array<{ at: number; ok: boolean }> = [];
      const history: HistorySink = {
        record: (e) => void (e.type === 'heartbeat' && e.runKey.startsWith(`${name}@`) && heartbeats.push({ at: e.at, ok: e.ok })),
      };
      const metrics = new InMemoryMetrics();
      const record = {
        messageId: `m-${name}`,
        receiptHandle: `r-${name}`,
        body: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })),
      };
      const holder = processBatch({ ...deps(box, jobs, { wait }, 'holder', metrics), clock: time.read, timers: time.port, history }, [
        record,
      ]);
      const ctx = await started;
      try {
        // One accepted heartbeat first: the holder is live and heartbeating.
        time.advance(HEARTBEAT);
        await waitFor(async () => heartbeats.length >= 1 || undefined, 120_000, 'the first heartbeat to be answered');
        expect(heartbeats).toEqual([{ at: time.now, ok: true }]);
        expect(ctx.signal.aborted).toBe(false);

        expect(await takeOver(id, time.now)).toBe(true);
        const lostAt = time.now;
        time.advance(HEARTBEAT);
        await waitFor(async () => heartbeats.length >= 2 || undefined, 120_000, 'the heartbeat after the loss to be answered');
        // The very heartbeat that was refused stops the handler: one heartbeat after the loss, with
        // ~66 heartbeats of the holder's own lease left. A holder that only logs the refusal, or
        // ignores it, is still running here.
        expect(heartbeats[1]).toEqual({ at: lostAt + HEARTBEAT, ok: false });
        expect(ctx.signal.aborted, 'ctx.signal did not abort on the refused heartbeat').toBe(true);
        expect(abortedAt()).toBe(lostAt + HEARTBEAT);
        expect(ctx.signal.reason).toBeInstanceOf(AttemptAbortedError);
        expect((ctx.signal.reason as AttemptAbortedError).why).toBe(AttemptAbort.LEASE_LOST);
      } finally {
        // Whatever happened above, let the holder's lease run out so its invocation ends.
        if (!ctx.signal.aborted) time.advance(LEASE);
      }
      const result = await holder;
      // Nothing recorded: the message is left to come back, the run is the new holder's.
      expect(result.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
      expect(metrics.get('LeaseLost')).toBe(1);
      expect(metrics.get('RunsSucceeded')).toBe(0);
      expect(heartbeats).toHaveLength(2);
      expect(await box.ledger.getRun(id)).toMatchObject(after);
    },
  );

  it('a hung visibility change holds back neither the lease renewals nor the later visibility changes: it is given up after a heartbeat period, and the newest lease is sent', async () => {
    // The message's visibility follows the lease after each heartbeat. If the heartbeat waited for
    // SQS, a slow ChangeMessageVisibility would make the next beat find one still in flight and
    // skip: a renewal lost per slow SQS call (under load, this file's "first heartbeat answered,
    // then advance" raced it and hung). And if a hung change blocked the later ones, the message
    // would keep the queue's long visibility: a crash would be taken over minutes late.
    const { name, jobs, time, id, record } = await readyRun(box, 'slow-sqs', 'wait', { timeout: '2s' });
    const { wait, started } = waitingHandler(time);
    // The first change hangs until it is given up (as the SDK does, it fails on its signal); later ones are answered at once.
    const changes: Array<{ at: number; seconds: number; signal?: AbortSignal }> = [];
    const queue: typeof box.queue = overriding(box.queue, {
      changeVisibility: (_handle: string, seconds: number, signal?: AbortSignal) => {
        changes.push({ at: time.now, seconds, signal });
        if (changes.length > 1) return Promise.resolve();
        return new Promise<void>((_, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
      },
    });
    let renewals = 0;
    const ledger: typeof box.ledger = overriding(box.ledger, {
      heartbeat: (run: Run, leaseUntil: number) => {
        renewals++;
        return box.ledger.heartbeat(run, leaseUntil);
      },
    });
    const heartbeats: Array<{ at: number; ok: boolean }> = [];
    const history: HistorySink = {
      record: (e) => void (e.type === 'heartbeat' && e.runKey.startsWith(`${name}@`) && heartbeats.push({ at: e.at, ok: e.ok })),
    };
    const holder = processBatch({ ...deps(box, jobs, { wait }, 'holder'), ledger, queue, clock: time.read, timers: time.port, history }, [
      record,
    ]);
    await started;
    const t0 = time.now;
    for (let beat = 1; beat <= 3; beat++) {
      time.advance(HEARTBEAT);
      // The timer fired inside advance(): the renewal has been sent, or it was skipped.
      expect(renewals, `heartbeat ${beat} was not sent while SQS still had not answered`).toBe(beat);
      await waitFor(async () => heartbeats.length >= beat || undefined, 120_000, `heartbeat ${beat} to be answered`);
    }
    expect(heartbeats).toEqual([1, 2, 3].map((n) => ({ at: t0 + n * HEARTBEAT, ok: true })));
    // The first change (one heartbeat after the start) hung and was given up one period later;
    // the change wanted meanwhile then went out, and the later heartbeats' changes too.
    expect(changes[0]).toMatchObject({ at: t0 + HEARTBEAT });
    expect(changes[0]!.signal?.aborted).toBe(true);
    expect(changes.length).toBeGreaterThanOrEqual(2);
    expect(changes[1]!.at).toBeGreaterThanOrEqual(t0 + 2 * HEARTBEAT);
    // The attempt's 2 s timeout ends it (its result unknown: the handler may have acted), recorded
    // under the lease it kept all along.
    let done = false;
    const finished = holder.finally(() => (done = true));
    await advanceUntil(time, HEARTBEAT, () => done);
    await finished;
    expect(await box.ledger.getRun(id)).toMatchObject({ status: RunStatus.UNKNOWN, lastError: { code: 'TIMEOUT' } });
  });

  it('a visibility change asked for while one is in flight goes out as soon as that one is answered, with the newest lease, not a heartbeat later', async () => {
    const { name, jobs, time, record } = await readyRun(box, 'wanted', 'wait', { timeout: '2s' });
    const { wait, started } = waitingHandler(time);
    // The first change is answered only when the test says so; later ones at once.
    let answerFirst!: () => void;
    const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
    const changes: Array<{ at: number; seconds: number }> = [];
    const queue: typeof box.queue = overriding(box.queue, {
      changeVisibility: (_handle: string, seconds: number) => {
        changes.push({ at: time.now, seconds });
        return changes.length > 1 ? Promise.resolve() : firstAnswered;
      },
    });
    const heartbeats: number[] = [];
    const history: HistorySink = {
      record: (e) => void (e.type === 'heartbeat' && e.runKey.startsWith(`${name}@`) && heartbeats.push(e.at)),
    };
    const holder = processBatch({ ...deps(box, jobs, { wait }, 'holder'), queue, clock: time.read, timers: time.port, history }, [record]);
    await started;
    const t0 = time.now;
    // One heartbeat period in: the early change goes out (and waits for SQS), and the heartbeat's
    // renewal, once answered, asks for another while it is in flight.
    time.advance(HEARTBEAT);
    await waitFor(async () => heartbeats.length >= 1 || undefined, 120_000, 'the first heartbeat to be answered');
    expect(changes).toHaveLength(1);
    // SQS answers the first: the one asked for goes out now, with the renewed lease, not at the next heartbeat.
    answerFirst();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(changes).toHaveLength(2);
    // The default clock allowance here is half a heartbeat (clockSkewFor).
    expect(changes[1]).toEqual({
      at: t0 + HEARTBEAT,
      seconds: takeoverVisibilitySeconds(t0 + HEARTBEAT + LEASE, HEARTBEAT / 2, t0 + HEARTBEAT),
    });
    let done = false;
    const finished = holder.finally(() => (done = true));
    await advanceUntil(time, HEARTBEAT, () => done);
    await finished;
  });

  it("a heartbeat answered after its attempt ended changes nothing of the message: the outcome's own visibility is the last word", async () => {
    // The renewal reached DynamoDB before the outcome; its answer comes back after the attempt
    // recorded RETRY and hid the message until the retry is due. A late visibility change here
    // would hold the retry back by up to a lease, or move a successor's message.
    const { jobs, time, id, record } = await readyRun(box, 'late-beat', 'fail', {
      retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s', jitter: 'none' } },
    });
    let fail!: () => void;
    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    const handler: JobHandler = {
      run: () =>
        new Promise<void>((_, reject) => {
          fail = () => reject(new Error('upstream 503'));
          running();
        }),
    };
    const changes: Array<{ at: number; seconds: number }> = [];
    const queue: typeof box.queue = overriding(box.queue, {
      changeVisibility: async (_handle: string, seconds: number) => void changes.push({ at: time.now, seconds }),
    });
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let applied = false;
    const ledger: typeof box.ledger = overriding(box.ledger, {
      heartbeat: async (run: Run, leaseUntil: number) => {
        const check = await box.ledger.heartbeat(run, leaseUntil);
        applied = true;
        await answered;
        return check;
      },
    });
    const holder = processBatch({ ...deps(box, jobs, { fail: handler }, 'holder'), ledger, queue, clock: time.read, timers: time.port }, [
      record,
    ]);
    await started;
    // The first heartbeat is applied by DynamoDB, its answer held back; the early visibility
    // change at the same moment goes out as usual.
    time.advance(HEARTBEAT);
    await waitFor(async () => applied || undefined, 120_000, 'the renewal to be applied');
    fail();
    const result = await holder;
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(await box.ledger.getRun(id)).toMatchObject({ status: RunStatus.RETRY, attempt: 1 });
    const before = changes.length;
    expect(changes.at(-1)?.seconds, 'the outcome hides the message until its retry is due').toBe(1);
    answer();
    await new Promise((resolve) => setTimeout(resolve, 50));
    time.advance(10 * HEARTBEAT);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(changes.slice(before), 'a visibility change after the attempt ended').toEqual([]);
  });

  it('a message that finds its run leased by a live owner comes back: once that owner is gone, the run is taken over and completes', async () => {
    const name = unique('leased');
    // heartbeatEvery 500 ms → clock allowance 250 ms.
    const lease = 2_000;
    const allowance = 250;
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'count', lease, heartbeatEvery: 500, startLead: 0 }], ['count']);
    const slot = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    const id = { job: name, slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, Date.now());
    // Another worker holds the run, then vanishes without a heartbeat (its invocation was killed).
    const claimedAt = Date.now();
    const held = await box.ledger.claim(id, 'vanished', claimedAt, lease, allowance);
    if (held.kind !== 'claimed') throw new Error(`setup: claim refused (${held.kind})`);
    const leaseUntil = held.run.leaseUntil!;
    // The successor's clock stands at the claim until its first delivery has been answered, so that
    // delivery finds the lease live however long the machine takes to get there; then it tells
    // the time again, at least the lease's end (SQS's redelivery is real time throughout).
    let clock = () => claimedAt;
    await box.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: box.endpoints.runQueueUrl,
        MessageBody: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })),
      }),
    );
    const startedAt: number[] = [];
    const count: JobHandler = { run: async () => void startedAt.push(clock()) };
    const metrics = new InMemoryMetrics();
    // What each delivery answered: a message left out of batchItemFailures is deleted.
    const answers: Array<{ conflict: boolean; acked: boolean }> = [];
    const poller = new LocalPoller(
      box.clients.sqs,
      async (records) => {
        const conflicts = metrics.get('ClaimConflicts');
        const result = await processBatch({ ...deps(box, jobs, { count }, 'successor', metrics), clock: () => clock() }, records);
        answers.push({
          conflict: metrics.get('ClaimConflicts') > conflicts,
          acked: !result.batchItemFailures.some((f) => records.some((r) => r.messageId === f.itemIdentifier)),
        });
        clock = () => Math.max(Date.now(), leaseUntil + allowance + 1);
        return result;
      },
      { queueUrl: box.endpoints.runQueueUrl },
    );
    poller.start();
    let done: Run | null;
    try {
      // A worker that acknowledged the message instead leaves the run RUNNING forever (nothing
      // brings the message back): stop waiting as soon as a delivery was acknowledged and the run
      // is still not done.
      done = await waitFor(
        async () => {
          const acked = answers.some((a) => a.acked);
          const run = await box.ledger.getRun(id);
          if (run?.status === RunStatus.SUCCEEDED) return run;
          return acked ? null : undefined;
        },
        300_000,
        'the run to be taken over and completed',
      );
    } finally {
      await poller.stop();
    }
    expect(answers[0], 'the delivery that found a live lease acknowledged its message').toEqual({ conflict: true, acked: false });
    expect(done, 'a message was acknowledged while its run was still RUNNING').not.toBeNull();
    expect(done).toMatchObject({ owner: 'successor', claimedFrom: RunStatus.RUNNING });
    expect(startedAt).toHaveLength(1);
    // Never before the live owner's lease (plus the allowance) was over, by the successor's clock.
    expect(startedAt[0]!).toBeGreaterThan(leaseUntil + allowance);
  });

  // A call that never answers is a fault a local server cannot produce: middleware on a real
  // client holds the heartbeat's request forever (the ledger's other calls pass).
  it("a holder whose heartbeats get no answer stops its handler before its lease ends (LEASE_EXPIRING), in the lease's last moment, not at the next heartbeat", async () => {
    const name = unique('hung');
    // The watchdog checks every BEAT / 2; with these numbers one check falls exactly min(1 s, BEAT) before the lease's end.
    const BEAT = 400;
    const jobs = testJobs(
      [{ name, schedule: '* * * * *', handler: 'wait', lease: LEASE, heartbeatEvery: BEAT, startLead: 0, timeout: '60s' }],
      ['wait'],
    );
    const dynamo = new DynamoDBClient(localClientConfig(box.endpoints.dynamoEndpoint));
    const hung: string[] = [];
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { UpdateExpression?: string };
        if (context.commandName === 'UpdateItemCommand' && input.UpdateExpression === 'SET leaseUntil = :leaseUntil') {
          hung.push(input.UpdateExpression);
          return new Promise<never>(() => undefined);
        }
        return next(args);
      },
      { step: 'initialize', name: 'hang-heartbeats' },
    );
    const doc = DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } });
    const ledger = new Ledger(doc, { tableName: box.endpoints.ledgerTable });
    const time = new VirtualTime(Date.now());
    const slot = Math.floor(time.now / 1000) * 1000 - 60_000;
    const id = { job: name, slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, time.now);
    const { wait, started, abortedAt } = waitingHandler(time);
    const metrics = new InMemoryMetrics();
    const record = {
      messageId: `m-${name}`,
      receiptHandle: `r-${name}`,
      body: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })),
    };
    const holder = processBatch({ ...deps(box, jobs, { wait }, 'holder', metrics), ledger, clock: time.read, timers: time.port }, [record]);
    const ctx = await started;
    const leaseUntil = (await box.ledger.getRun(id))!.leaseUntil!;
    try {
      // The whole lease passes without one heartbeat answered.
      time.advance(LEASE);
      expect(hung.length).toBeGreaterThanOrEqual(1);
      expect(ctx.signal.aborted, 'ctx.signal did not abort before the lease ended').toBe(true);
      expect((ctx.signal.reason as AttemptAbortedError).why).toBe(AttemptAbort.LEASE_EXPIRING);
      // Stopped with less than min(1 s, heartbeat) of the lease left, but before its end: a
      // successor may claim only after the lease (and its clock allowance), so nothing overlaps.
      expect(leaseUntil - abortedAt()!).toBeGreaterThan(0);
      expect(leaseUntil - abortedAt()!).toBeLessThan(Math.min(1_000, BEAT));
    } finally {
      if (!ctx.signal.aborted) time.advance(60_000);
    }
    time.advance(LEASE);
    const result = await holder;
    // Nothing recorded: the run stays RUNNING under the holder's token, for a takeover that reconciles.
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(metrics.get('LeaseLost')).toBe(1);
    expect(await box.ledger.getRun(id)).toMatchObject({ status: RunStatus.RUNNING, owner: 'holder', leaseUntil });
    dynamo.destroy();
  });

  it.each(['put', 'update', 'transact'] as const)(
    "a fenced write (%s) still held back when its attempt's lease ends is aborted, not sent after it (it would land after a takeover reconciled: model seed 20269049)",
    async (kind) => {
      const name = unique('late');
      const BEAT = 400;
      const jobs = testJobs(
        [{ name, schedule: '* * * * *', handler: 'write', lease: LEASE, heartbeatEvery: BEAT, startLead: 0, timeout: '60s' }],
        ['write'],
      );
      // Heartbeats get no answer (the lease runs out); the handler's write to the business table is
      // held before it reaches the network until the test lets it go, after the attempt has ended.
      const { dynamo, doc, ledger, release, writesHeld } = holdingClient(box, { hangHeartbeats: true });
      const time = new VirtualTime(Date.now());
      const slot = Math.floor(time.now / 1000) * 1000 - 60_000;
      const id = { job: name, slot, shard: 0 };
      await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, time.now);
      const item = { pk: `LATE#${name}`, sk: 'ITEM' };
      let written!: Promise<string>;
      let running!: () => void;
      const started = new Promise<void>((resolve) => (running = resolve));
      const write: JobHandler = {
        async run(ctx) {
          const put = { table: ctx.tables.payments, item: { ...item, by: ctx.fencingToken } };
          const update = {
            table: ctx.tables.payments,
            key: item,
            set: { expression: '#by = :by', names: { '#by': 'by' }, values: { ':by': ctx.fencingToken } },
          };
          const sent =
            kind === 'put'
              ? ctx.fenced.put(put)
              : kind === 'update'
                ? ctx.fenced.update(update)
                : ctx.fenced.transact([{ kind: 'update', ...update }]);
          written = sent.then(
            () => 'landed',
            (error: unknown) => (error instanceof Error ? error.name : String(error)),
          );
          running();
          await written;
        },
      };
      const metrics = new InMemoryMetrics();
      const record = {
        messageId: `m-${name}`,
        receiptHandle: `r-${name}`,
        body: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })),
      };
      const holder = processBatch({ ...deps(box, jobs, { write }, 'holder', metrics), doc, ledger, clock: time.read, timers: time.port }, [
        record,
      ]);
      await started;
      await waitFor(async () => (writesHeld() === 1 ? true : undefined), 30_000, "the handler's write to be held");
      // The lease passes unrenewed (the watchdog ends the attempt), then the worker's wait for the
      // calls in flight gives up at the lease's end: time moves a heartbeat at a time, each step
      // once the worker has had the chance to act on the last (its timers are set as it goes).
      let done = false;
      const finished = holder.finally(() => (done = true));
      await advanceUntil(time, BEAT, () => done);
      const result = await finished;
      expect(result.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
      expect(metrics.get('LeaseLost')).toBe(1);
      // Only now does the held write move on: it must not be sent.
      release();
      expect(await written).toBe('AbortError');
      const { Item } = await box.clients.doc.send(
        new GetCommand({ TableName: box.endpoints.paymentsTable, Key: item, ConsistentRead: true }),
      );
      expect(Item).toBeUndefined();
      dynamo.destroy();
    },
  );

  it('an attempt that timed out with a write in flight, which a newer slot then fences out, ends SUPERSEDED with its result unknown, not UNKNOWN (model seed 20269049 path 5)', async () => {
    const name = unique('late-sup');
    const BEAT = 400;
    const jobs = testJobs(
      [
        {
          name,
          schedule: '* * * * *',
          handler: 'write',
          lease: LEASE,
          heartbeatEvery: BEAT,
          startLead: 0,
          timeout: '5s',
          retry: { maxAttempts: 3 },
        },
      ],
      ['write'],
    );
    const { dynamo, doc, ledger, release, writesHeld } = holdingClient(box, { hangHeartbeats: false });
    const time = new VirtualTime(Date.now());
    const slot = Math.floor(time.now / 60_000) * 60_000 - 120_000;
    const id = { job: name, slot, shard: 0 };
    await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, time.now);
    const item = { pk: `LATE#${name}`, sk: 'ITEM' };
    let written!: Promise<string>;
    let aborted = false;
    const write: JobHandler = {
      async run(ctx) {
        ctx.signal.addEventListener('abort', () => (aborted = true), { once: true });
        written = ctx.fenced.put({ table: ctx.tables.payments, item: { ...item, by: ctx.fencingToken } }).then(
          () => 'landed',
          (error: unknown) => (error instanceof Error ? error.name : String(error)),
        );
        await written;
      },
    };
    const record = {
      messageId: `m-${name}`,
      receiptHandle: `r-${name}`,
      body: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })),
    };
    const holder = processBatch({ ...deps(box, jobs, { write }, 'holder'), doc, ledger, clock: time.read, timers: time.port }, [record]);
    await waitFor(async () => (writesHeld() === 1 ? true : undefined), 30_000, "the handler's write to be held");
    // Meanwhile the next slot's run writes the item (its fence is of a newer slot).
    await new DynamoFencedStore(box.clients.doc, initialFence(slot + 60_000) + 1).put({
      table: box.endpoints.paymentsTable,
      item: { ...item, by: 'newer slot' },
    });
    // The attempt's 5 s timeout passes (heartbeats keep the lease); then the held write goes on.
    await advanceUntil(time, BEAT, () => aborted, 100);
    expect(aborted).toBe(true);
    release();
    expect(await written).toBe('FencedOutError');
    let done = false;
    const finished = holder.finally(() => (done = true));
    await advanceUntil(time, BEAT, () => done);
    await finished;
    expect(await box.ledger.getRun(id)).toMatchObject({
      status: RunStatus.SUPERSEDED,
      resultUnknown: true,
      lastError: { code: 'SUPERSEDED_BY_NEWER_SLOT' },
    });
    dynamo.destroy();
  });
});
