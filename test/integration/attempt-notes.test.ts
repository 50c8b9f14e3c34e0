/**
 * What an attempt's entry in the run's history records beyond its outcome, through the real worker
 * and ledger on DynamoDB Local:
 * - what the handler's reconcile answered, recorded in the outcome's own write (no request more);
 * - the writes of an attempt that a newer token fenced out (its heartbeat, its outcome, its
 *   ctx.fenced effect), noted on its own claim's entry once it lost the run, and never anything
 *   that could disturb the newer holder: the run's status, owner, lease, token, write id and index
 *   keys stay as the newer holder left them, and its own heartbeat and outcome still land;
 * - the note's own conditions: never while the attempt's token still holds the run, never past
 *   the history the run keeps, and its retry after a lost response recognises its own commit.
 * Worker clocks are virtual (VirtualTime): a heartbeat fires only where a test moves time, so
 * nothing depends on how fast the machine is.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FencedWrite, ReconcileAnswer } from '../../shared/core/attempt-notes.js';
import { initialFence } from '../../shared/core/fence.js';
import { ATTEMPT_HISTORY_LIMIT } from '../../shared/core/limits.js';
import { RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { ReconcileOutcome, RetryableError, type JobHandler, type ReconcileResult, type RunContext } from '../../shared/handler-api.js';
import { messageFor } from '../../shared/planner/planner.js';
import { DynamoFencedStore } from '../../shared/store/fenced-store.js';
import { Ledger } from '../../shared/store/ledger.js';
import { processBatch, type WorkerDeps } from '../../shared/worker/batch.js';
import { CountingMiddleware } from '../support/counting.js';
import { faultyClient } from '../support/faults.js';
import { testJobs, VirtualTime } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { readyRun, workerDeps } from '../support/worker-harness.js';

const LEASE = 20_000;
const HEARTBEAT = 300;
const SKEW = 2_000;

const unique = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`;

type Item = Record<string, unknown>;

/** The item without its history: what every holder's and operator's condition rests on. */
function withoutHistory(item: Item | undefined): Item {
  return Object.fromEntries(Object.entries(item ?? {}).filter(([k]) => k !== 'attempts'));
}

describe("an attempt's notes on its entry", () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox({ visibilityTimeoutSeconds: 2 });
  });
  afterAll(() => box.destroy());

  function deps(
    jobs: ReturnType<typeof testJobs>,
    handlers: Record<string, JobHandler>,
    owner: string,
    extra: Partial<WorkerDeps> = {},
  ): WorkerDeps {
    return workerDeps(box, jobs, handlers, owner, extra);
  }

  async function rawItem(id: RunId): Promise<Item | undefined> {
    const { Item } = await box.clients.doc.send(
      new GetCommand({ TableName: box.endpoints.ledgerTable, Key: box.ledger.runKeyOf(id), ConsistentRead: true }),
    );
    return Item;
  }

  /** A handler that holds its run until `release()` (or its signal aborts); `started` resolves with its ctx. */
  function heldHandler(effect?: (ctx: RunContext) => Promise<void>) {
    let running!: (ctx: RunContext) => void;
    const started = new Promise<RunContext>((resolve) => (running = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const handler: JobHandler = {
      async run(ctx) {
        running(ctx);
        await Promise.race([
          released,
          new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true })),
        ]);
        if (!ctx.signal.aborted) await effect?.(ctx);
      },
    };
    return { handler, started, release };
  }

  describe('fenced-out writes', () => {
    it("a holder whose heartbeat a successor's claim refused notes it on its own claim's entry, and leaves the successor's hold as it was: its heartbeat and outcome still land", async () => {
      const { jobs, time, id, record } = await readyRun(box, 'hb-fenced', 'hold', { timeout: '60s' });
      const { handler, started } = heldHandler();
      const holder = processBatch({ ...deps(jobs, { hold: handler }, 'holder'), clock: time.read, timers: time.port }, [record]);
      const ctx = await started;
      const successor = await box.ledger.claim(id, 'successor', time.now + LEASE + 10_000, LEASE, SKEW);
      if (successor.kind !== 'claimed') throw new Error(`setup: successor's claim refused (${successor.kind})`);
      const before = await rawItem(id);
      time.advance(HEARTBEAT);
      const result = await holder;
      expect(ctx.signal.aborted).toBe(true);
      expect(result.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);

      const after = await rawItem(id);
      // Nothing any condition rests on moved: status, owner, lease, token, write id, index keys.
      expect(withoutHistory(after)).toEqual(withoutHistory(before));
      const holderToken = initialFence(id.slot) + 1;
      expect((after?.attempts as Item).c1).toEqual({
        claim: 1,
        token: holderToken,
        owner: 'holder',
        from: RunStatus.READY,
        claimedAt: expect.any(Number),
        fencedOut: {
          writes: [{ write: FencedWrite.HEARTBEAT, at: expect.any(Number), by: successor.run.fencingToken }],
          count: 1,
          writeId: expect.any(String),
        },
      });
      // The successor holds on as if nothing had happened.
      expect(await box.ledger.heartbeat(successor.run, successor.run.startedAt! + LEASE)).toEqual({ ok: true });
      expect(
        await box.ledger.complete(successor.run, { status: RunStatus.SUCCEEDED }, successor.run.startedAt! + 500, {
          from: RunStatus.RUNNING,
        }),
      ).toEqual({ ok: true });
      const done = await box.ledger.getRun(id);
      expect(done?.status).toBe(RunStatus.SUCCEEDED);
      expect(done?.attempts?.map((a) => [a.claim, a.owner, a.outcome, a.fencedOut?.writes[0]?.write])).toEqual([
        [1, 'holder', undefined, 'heartbeat'],
        [2, 'successor', RunStatus.SUCCEEDED, undefined],
      ]);
    });

    it("overlap replace: the replaced holder's refused heartbeat joins the REPLACED entry of its claim, which keeps its outcome", async () => {
      const { jobs, time, id, record } = await readyRun(box, 'replaced', 'hold', { timeout: '60s' });
      const { handler, started } = heldHandler();
      const holder = processBatch({ ...deps(jobs, { hold: handler }, 'holder'), clock: time.read, timers: time.port }, [record]);
      await started;
      expect(await box.ledger.replaceRunning((await box.ledger.getRun(id))!, 'a newer run', time.now)).toBe(true);
      const before = await rawItem(id);
      time.advance(HEARTBEAT);
      await holder;
      const after = await rawItem(id);
      expect(withoutHistory(after)).toEqual(withoutHistory(before));
      const entry = (after?.attempts as Item).c1 as Item;
      expect(entry).toMatchObject({ claim: 1, owner: 'holder', outcome: RunStatus.SUPERSEDED, code: 'REPLACED' });
      expect(entry.fencedOut).toMatchObject({ writes: [{ write: FencedWrite.HEARTBEAT, by: initialFence(id.slot) + 2 }], count: 1 });
    });

    it("a holder whose outcome a successor's claim refused (no heartbeat between) notes the refused outcome, and the run stays the successor's", async () => {
      const { jobs, time, id, record } = await readyRun(box, 'outcome-fenced', 'hold', { timeout: '60s' });
      const { handler, started, release } = heldHandler();
      const holder = processBatch({ ...deps(jobs, { hold: handler }, 'holder'), clock: time.read, timers: time.port }, [record]);
      await started;
      const successor = await box.ledger.claim(id, 'successor', time.now + LEASE + 10_000, LEASE, SKEW);
      if (successor.kind !== 'claimed') throw new Error(`setup: successor's claim refused (${successor.kind})`);
      const before = await rawItem(id);
      release();
      expect((await holder).batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
      const after = await rawItem(id);
      expect(withoutHistory(after)).toEqual(withoutHistory(before));
      expect(after).toMatchObject({ status: RunStatus.RUNNING, owner: 'successor', fencingToken: successor.run.fencingToken });
      expect(((after?.attempts as Item).c1 as Item).fencedOut).toMatchObject({
        writes: [{ write: FencedWrite.OUTCOME, by: successor.run.fencingToken }],
        count: 1,
      });
    });

    it("a holder whose ctx.fenced write the successor's had fenced out notes the effect and its item, and records nothing else", async () => {
      const item = { pk: `PAY#${unique('p')}`, sk: 'CURSOR' };
      const { jobs, time, id, record } = await readyRun(box, 'effect-fenced', 'hold', { timeout: '60s' });
      const { handler, started, release } = heldHandler((ctx) =>
        ctx.fenced.put({ table: ctx.tables.payments, item: { ...item, cursor: 'old' } }),
      );
      const holder = processBatch({ ...deps(jobs, { hold: handler }, 'holder'), clock: time.read, timers: time.port }, [record]);
      await started;
      const successor = await box.ledger.claim(id, 'successor', time.now + LEASE + 10_000, LEASE, SKEW);
      if (successor.kind !== 'claimed') throw new Error(`setup: successor's claim refused (${successor.kind})`);
      // The successor writes the item first, under its newer token.
      await new DynamoFencedStore(box.clients.doc, successor.run.fencingToken).put({
        table: box.endpoints.paymentsTable,
        item: { ...item, cursor: 'new' },
      });
      const before = await rawItem(id);
      release();
      await holder;
      const after = await rawItem(id);
      expect(withoutHistory(after)).toEqual(withoutHistory(before));
      expect(((after?.attempts as Item).c1 as Item).fencedOut).toMatchObject({
        writes: [
          { write: FencedWrite.EFFECT, by: successor.run.fencingToken, resource: `${box.endpoints.paymentsTable}/${item.pk}/${item.sk}` },
        ],
        count: 1,
      });
      const { Item: business } = await box.clients.doc.send(
        new GetCommand({ TableName: box.endpoints.paymentsTable, Key: item, ConsistentRead: true }),
      );
      expect(business?.cursor).toBe('new');
    });
  });

  describe("the note's own conditions", () => {
    const fencedOut = { writes: [{ write: FencedWrite.HEARTBEAT, at: 1, by: 2 }], count: 1 };

    async function claimed(stem: string, owner: string, at: number): Promise<{ id: RunId; run: Run }> {
      const id = { job: unique(stem), slot: Math.floor(at / 1000) * 1000 - 60_000, shard: 0 };
      await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, at);
      const c = await box.ledger.claim(id, owner, at, LEASE, SKEW);
      if (c.kind !== 'claimed') throw new Error(`setup: claim refused (${c.kind})`);
      return { id, run: c.run };
    }

    it("is never written while the attempt's own token still holds the run: the item is left as it was", async () => {
      const { id, run } = await claimed('still-held', 'holder', Date.now());
      const before = await rawItem(id);
      expect(await box.ledger.noteFencedOut(run, { fencedOut }, Date.now())).toBe('still-held');
      expect(await rawItem(id)).toEqual(before);
    });

    it('is never written for a claim older than the history the run keeps', async () => {
      const t0 = Date.now();
      const { id, run: first } = await claimed('past-history', 'w1', t0);
      for (let n = 2; n <= ATTEMPT_HISTORY_LIMIT + 1; n++) {
        const c = await box.ledger.claim(id, `w${n}`, t0 + n * (LEASE + SKEW + 1), LEASE, SKEW);
        expect(c.kind).toBe('claimed');
      }
      const before = await rawItem(id);
      expect(await box.ledger.noteFencedOut(first, { fencedOut }, Date.now())).toBe('not-kept');
      expect(await rawItem(id)).toEqual(before);
    });

    it('an attempt whose outcome committed (its response lost, the retry refused once a successor claimed) is not marked fenced out: the entry keeps its own outcome alone', async () => {
      const t0 = Date.now();
      const { id, run } = await claimed('own-outcome', 'w1', t0);
      await box.ledger.complete(
        run,
        { status: RunStatus.RETRY, nextAttemptAt: t0, lastError: { code: 'FLAKY', message: 'try again' } },
        t0 + 1_000,
        { from: RunStatus.READY },
      );
      expect((await box.ledger.claim(id, 'w2', t0 + 2_000, LEASE, SKEW)).kind).toBe('claimed');
      const before = await rawItem(id);
      const refusedOutcome = { writes: [{ write: FencedWrite.OUTCOME, at: t0 + 2_500, by: run.fencingToken + 1 }], count: 1 };
      expect(await box.ledger.noteFencedOut(run, { fencedOut: refusedOutcome }, t0 + 3_000)).toBe('recorded');
      expect(await rawItem(id)).toEqual(before);
    });

    it('a note whose response was lost is recognised as its own commit on the SDK retry; a second note of the same claim changes nothing', async () => {
      const { id, run } = await claimed('lost-note', 'holder', Date.now());
      await box.ledger.claim(id, 'successor', Date.now() + LEASE + SKEW + 1, LEASE, SKEW);
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
        {
          when: (command, input) => command === 'UpdateItemCommand' && String(input.UpdateExpression).startsWith('SET attempts.#entry'),
          fault: 'lost-response',
        },
      ]);
      try {
        const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
        expect(await ledger.noteFencedOut(run, { fencedOut }, Date.now(), 'note-1')).toBe('noted');
        expect(faulty.injected).toEqual(['UpdateItemCommand']);
        expect(faulty.matched).toEqual(['UpdateItemCommand', 'UpdateItemCommand']);
      } finally {
        faulty.destroy();
      }
      const noted = await rawItem(id);
      expect(((noted?.attempts as Item).c1 as Item).fencedOut).toEqual({ ...fencedOut, writeId: 'note-1' });
      expect(await box.ledger.noteFencedOut(run, { fencedOut: { ...fencedOut, count: 7 } }, Date.now(), 'note-2')).toBe('noted');
      expect(await rawItem(id)).toEqual(noted);
    });
  });

  describe('what reconcile answered', () => {
    /** Evidence nesting 29 lists: 61 JSON characters, three levels below the entry it is noted on. */
    const DEEP = Array.from({ length: 29 }).reduce<unknown>((inner) => [inner], 'x');

    /** An UNKNOWN run (its last attempt timed out mid-effect), due again now. */
    async function unknownRun(stem: string, handler: string) {
      const name = unique(stem);
      const jobs = testJobs([{ name, schedule: '* * * * *', handler, startLead: 0, lease: LEASE, heartbeatEvery: 5_000 }], [handler]);
      const now = Date.now();
      const slot = Math.floor(now / 1000) * 1000 - 120_000;
      const id = { job: name, slot, shard: 0 };
      await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, now - 60_000);
      const first = await box.ledger.claim(id, 'earlier', now - 60_000, LEASE, SKEW);
      if (first.kind !== 'claimed') throw new Error(`setup: claim refused (${first.kind})`);
      await box.ledger.complete(
        first.run,
        { status: RunStatus.UNKNOWN, nextAttemptAt: now - 30_000, lastError: { code: 'TIMEOUT', message: 'attempt timed out' } },
        now - 50_000,
        { from: RunStatus.READY },
      );
      const record = {
        messageId: `m-${name}`,
        receiptHandle: `r-${name}`,
        body: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })),
      };
      return { jobs, id, record };
    }

    it.each([
      [
        'already-done, with its evidence',
        async (): Promise<ReconcileResult> => ({ outcome: ReconcileOutcome.ALREADY_DONE, evidence: { payment: 'p-1' } }),
        RunStatus.SUCCEEDED,
        { answer: ReconcileAnswer.ALREADY_DONE, evidence: { payment: 'p-1' } },
        0,
      ],
      [
        'not-done (then the handler runs)',
        async (): Promise<ReconcileResult> => ({ outcome: ReconcileOutcome.NOT_DONE }),
        RunStatus.SUCCEEDED,
        { answer: ReconcileAnswer.NOT_DONE },
        1,
      ],
      [
        'still-unknown, with its reason',
        async (): Promise<ReconcileResult> => ({ outcome: ReconcileOutcome.STILL_UNKNOWN, reason: 'bank says maybe' }),
        RunStatus.UNKNOWN,
        { answer: ReconcileAnswer.STILL_UNKNOWN, reason: 'bank says maybe' },
        0,
      ],
      [
        'no answer (it threw), with why',
        async (): Promise<ReconcileResult> => {
          throw new RetryableError('bank API throttled', { code: 'THROTTLED' });
        },
        RunStatus.UNKNOWN,
        { answer: ReconcileAnswer.NO_ANSWER, reason: expect.stringContaining('bank API throttled') },
        0,
      ],
      [
        'already-done, with evidence nesting 29 levels (DynamoDB refuses an item nesting more than 32): the entry says its size',
        async (): Promise<ReconcileResult> => ({ outcome: ReconcileOutcome.ALREADY_DONE, evidence: DEEP }),
        RunStatus.SUCCEEDED,
        { answer: ReconcileAnswer.ALREADY_DONE, evidenceChars: JSON.stringify(DEEP).length },
        0,
      ],
    ] as const)('%s: recorded on the attempt entry by the outcome write itself', async (_what, reconcile, status, answer, runs) => {
      let ran = 0;
      const handler: JobHandler = { run: async () => void ran++, reconcile };
      const { jobs, id, record } = await unknownRun('reconciled', 'pay');
      const counting = new CountingMiddleware();
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, []);
      counting.attach(faulty.doc);
      try {
        const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
        // Virtual timers that are never advanced: no heartbeat can add a write to the count.
        const time = new VirtualTime(Date.now());
        await processBatch(deps(jobs, { pay: handler }, 'reconciler', { ledger, doc: faulty.doc, clock: time.read, timers: time.port }), [
          record,
        ]);
        // The claim and the outcome: the answer needed no write of its own.
        expect(counting.byCommand()).toEqual({ UpdateItemCommand: 2 });
      } finally {
        faulty.destroy();
      }
      expect(ran).toBe(runs);
      const run = await box.ledger.getRun(id);
      expect(run?.status).toBe(status);
      expect(run?.attempts?.map((a) => a.reconcile)).toEqual([undefined, { ...answer, at: expect.any(Number) }]);
    });
  });
});
