/**
 * The ledger's conditions judged by DynamoDB Local, clause by clause: for generated item states
 * (around every boundary a clause draws) the write lands exactly when the rule says it may, and a
 * refused write changes nothing. These are the behaviour tests of the condition text; the adapter
 * tests with a mocked SDK (test/unit/ledger.test.ts) only test the mapping of what comes back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { initialFence, MAX_CLAIMS_PER_SLOT } from '../../shared/core/fence.js';
import { explainClaimRefusal } from '../../shared/core/lease.js';
import { isTerminal, RunOrigin, RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';
import { deadKeys, Ledger, runFromItem, watchKeys } from '../../shared/store/ledger.js';
import { ATTEMPT_HISTORY_LIMIT } from '../../shared/core/limits.js';
import { exceptionBucketOf } from '../../shared/core/planner-state.js';
import { LedgerKeys } from '../../shared/core/resources.js';
import { LaneStore, VACANT_SLOT } from '../../shared/store/lanes.js';
import { faultyClient } from '../support/faults.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const BASE = Date.UTC(2026, 5, 1, 0, 0);
const NOW = BASE + 3_600_000;
const LEASE = 30_000;
const SKEW = 2_000;
const ALL_STATUSES = Object.values(RunStatus);
const CLAIMABLE = [RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN] as const;

let nextSlot = 0;
/** A fresh slot per generated case: every case writes its own item. */
const freshSlot = () => BASE + ++nextSlot * 1_000;

/** A value at, just before or just after `at`, or far from it: the boundaries a clause draws. */
const around = (at: number) => fc.oneof(fc.constantFrom(at - 1, at, at + 1), fc.integer({ min: at - 60_000, max: at + 60_000 }));

interface State {
  readonly status: RunStatus;
  readonly owner?: string;
  readonly leaseUntil?: number;
  readonly nextAttemptAt?: number;
  readonly claims: number;
  readonly watched: boolean;
}

const stateArb: fc.Arbitrary<State> = fc.record(
  {
    status: fc.constantFrom(...ALL_STATUSES),
    owner: fc.constantFrom('me', 'other'),
    leaseUntil: around(NOW - SKEW),
    nextAttemptAt: around(NOW),
    claims: fc.oneof(fc.constantFrom(0, 1, MAX_CLAIMS_PER_SLOT - 1, MAX_CLAIMS_PER_SLOT), fc.integer({ min: 0, max: MAX_CLAIMS_PER_SLOT })),
    watched: fc.boolean(),
  },
  { requiredKeys: ['status', 'claims', 'watched'] },
);

describe("the ledger's conditions on DynamoDB Local", () => {
  let box: Sandbox;
  /** The open-runs index key a run item carries (OPEN#bb watched, DEAD#bb waiting for an operator), read consistently. */
  const indexKeyOf = async (run: Pick<Run, 'job' | 'slot' | 'shard'>): Promise<unknown> => {
    const { Item } = await box.clients.doc.send(
      new GetCommand({ TableName: box.endpoints.ledgerTable, Key: box.ledger.runKeyOf(run), ConsistentRead: true }),
    );
    return Item?.openPk;
  };
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  /** Writes a run item in `state` directly, as earlier writes would have left it. */
  async function put(job: string, state: State, extra: Record<string, unknown> = {}): Promise<Run> {
    const slot = freshSlot();
    const item = {
      pk: LedgerKeys.jobPk(job),
      sk: LedgerKeys.runSk(slot, 0),
      job,
      slot,
      shard: 0,
      shards: 1,
      runKey: runKeyOf(job, slot, 0, 1),
      status: state.status,
      fencingToken: initialFence(slot) + state.claims,
      attempt: state.claims,
      createdAt: BASE,
      attempts: {},
      ...(state.owner !== undefined ? { owner: state.owner } : {}),
      ...(state.leaseUntil !== undefined ? { leaseUntil: state.leaseUntil } : {}),
      ...(state.nextAttemptAt !== undefined ? { nextAttemptAt: state.nextAttemptAt } : {}),
      ...(state.watched ? watchKeys({ job, slot, shard: 0 }) : {}),
      ...extra,
    };
    await box.clients.doc.send(new PutCommand({ TableName: box.endpoints.ledgerTable, Item: item }));
    return runFromItem(item);
  }

  /** A run item of `job` as the planner creates it (no claim yet). */
  function runAt(job: string, slot: number, shard: number, shards: number): Run {
    return runFromItem({
      job,
      slot,
      shard,
      shards,
      runKey: runKeyOf(job, slot, shard, shards),
      status: RunStatus.READY,
      fencingToken: initialFence(slot),
      attempt: 0,
      createdAt: BASE,
    });
  }

  it('claim: lands exactly on a claimable run past its backoff, or a RUNNING one past lease + allowance, within its fence range', async () => {
    await fc.assert(
      fc.asyncProperty(stateArb, async (state) => {
        const before = await put('claim', state);
        const result = await box.ledger.claim(before, 'claimer', NOW, LEASE, SKEW);
        const backoffOver = state.nextAttemptAt === undefined || state.nextAttemptAt <= NOW;
        const leaseOver = state.leaseUntil === undefined || state.leaseUntil < NOW - SKEW;
        const claimable =
          ((CLAIMABLE as readonly RunStatus[]).includes(state.status) && backoffOver) ||
          (state.status === RunStatus.RUNNING && state.leaseUntil !== undefined && leaseOver);
        const expected = claimable && state.claims < MAX_CLAIMS_PER_SLOT;
        const after = await box.ledger.getRun(before);
        if (!expected) {
          expect(result).toEqual(explainClaimRefusal(before, NOW, SKEW));
          expect(after).toEqual(before);
          return;
        }
        expect(result).toMatchObject({ kind: 'claimed', claimedFrom: state.status });
        expect(after).toMatchObject({
          status: RunStatus.RUNNING,
          owner: 'claimer',
          leaseUntil: NOW + LEASE,
          startedAt: NOW,
          fencingToken: before.fencingToken + 1,
          attempt: before.attempt + 1,
          claimedFrom: state.status,
        });
        expect(after?.nextAttemptAt).toBeUndefined();
      }),
      { numRuns: 80 },
    );
  });

  it('claim of a run that does not exist creates nothing', async () => {
    const id = { job: 'claim-missing', slot: freshSlot(), shard: 0 };
    expect(await box.ledger.claim(id, 'claimer', NOW, LEASE, SKEW)).toEqual({ kind: 'missing' });
    expect(await box.ledger.getRun(id)).toBeUndefined();
  });

  /** Every combination of the given choices (small, finite spaces are tested whole, not sampled). */
  function* everyCombination<T extends Record<string, readonly unknown[]>>(choices: T): Generator<{ [K in keyof T]: T[K][number] }> {
    const keys = Object.keys(choices) as Array<keyof T>;
    const pick = function* (i: number, acc: Partial<{ [K in keyof T]: T[K][number] }>): Generator<{ [K in keyof T]: T[K][number] }> {
      if (i === keys.length) return yield acc as { [K in keyof T]: T[K][number] };
      for (const value of choices[keys[i]!]!) yield* pick(i + 1, { ...acc, [keys[i]!]: value });
    };
    yield* pick(0, {});
  }

  /** Runs `check` on every case, a few at a time (each case writes its own item). */
  async function eachCase<C>(cases: Iterable<C>, check: (c: C) => Promise<void>): Promise<void> {
    const all = [...cases];
    for (let i = 0; i < all.length; i += 8) await Promise.all(all.slice(i, i + 8).map(check));
  }

  it('heartbeat, checkpoint and complete: land only for the same owner, the same token and a RUNNING run; a refusal changes nothing', async () => {
    const cases = everyCombination({
      status: ALL_STATUSES,
      owner: ['me', 'other'],
      tokenOffset: [-1, 0, 1],
      write: ['heartbeat', 'checkpoint', 'complete'],
    } as const);
    await eachCase(cases, async ({ status, owner, tokenOffset, write }) => {
      const stored = await put('held', { status, owner, leaseUntil: NOW + LEASE, claims: 2, watched: true });
      // What the writer believes it holds: owner 'me' at the stored token + offset.
      const mine: Run = { ...stored, status: RunStatus.RUNNING, owner: 'me', fencingToken: stored.fencingToken + tokenOffset };
      const check =
        write === 'heartbeat'
          ? await box.ledger.heartbeat(mine, NOW + 2 * LEASE)
          : write === 'checkpoint'
            ? await box.ledger.checkpoint(mine, { cursor: 'c' })
            : await box.ledger.complete(mine, { status: RunStatus.SUCCEEDED, evidence: { ok: 1 } }, NOW);
      const holds = owner === 'me' && tokenOffset === 0 && status === RunStatus.RUNNING;
      const after = await box.ledger.getRun(stored);
      const label = `${write} by me at token ${tokenOffset} of a ${status} run owned by ${owner}`;
      expect(check.ok, label).toBe(holds);
      if (!holds) {
        expect(check, label).toEqual({ ok: false, current: stored });
        expect(after, label).toEqual(stored);
        return;
      }
      if (write === 'heartbeat') expect(after?.leaseUntil).toBe(NOW + 2 * LEASE);
      if (write === 'checkpoint') expect(after?.checkpoint).toEqual({ cursor: 'c' });
      if (write === 'complete') expect(after).toMatchObject({ status: RunStatus.SUCCEEDED, evidence: { ok: 1 }, finishedAt: NOW });
    });
  });

  it('complete: an outcome that ends the run takes it out of the watch index and drops its lease (DEAD moves to its DEAD key); RETRY keeps it watched', async () => {
    for (const [outcome, stillWatched] of [
      [{ status: RunStatus.SUCCEEDED }, false],
      [{ status: RunStatus.DEAD, lastError: { code: 'X', message: 'x' } }, false],
      [{ status: RunStatus.SUPERSEDED, lastError: { code: 'SUPERSEDED_BY_NEWER_SLOT', message: 'x' } }, false],
      [{ status: RunStatus.RETRY, nextAttemptAt: NOW + 5_000, lastError: { code: 'X', message: 'x' } }, true],
      [{ status: RunStatus.UNKNOWN, nextAttemptAt: NOW + 5_000, lastError: { code: 'X', message: 'x' } }, true],
    ] as const) {
      const held = await put('index', { status: RunStatus.RUNNING, owner: 'me', leaseUntil: NOW + LEASE, claims: 1, watched: true });
      expect((await box.ledger.complete(held, outcome, NOW)).ok).toBe(true);
      const { Item } = await box.clients.doc.send(
        new GetCommand({ TableName: box.endpoints.ledgerTable, Key: box.ledger.runKeyOf(held), ConsistentRead: true }),
      );
      expect(
        typeof Item?.openPk === 'string' && Item.openPk.startsWith('OPEN#') && 'openSk' in Item,
        `${outcome.status} still watched`,
      ).toBe(stillWatched);
      // A DEAD run waits for an operator under its DEAD key (the runs-dead gauge counts it); the others leave the index.
      expect(Item?.openPk, outcome.status).toBe(
        outcome.status === RunStatus.DEAD ? deadKeys(held).openPk : stillWatched ? watchKeys(held).openPk : undefined,
      );
      expect(Item).not.toHaveProperty('leaseUntil');
      // An ended run is finished and expires (TTL); one that waits for its next attempt does neither.
      expect(Item?.finishedAt, outcome.status).toBe(stillWatched ? undefined : NOW);
      expect(Item?.expiresAt, outcome.status).toBe(stillWatched ? undefined : Math.floor(NOW / 1000) + 30 * 86_400);
    }
  });

  it("complete records whether the attempt's result is unknown: UNKNOWN and a DEAD that gave up on an unknown result mark it, every other outcome clears an earlier mark", async () => {
    const error = { code: 'X', message: 'x' };
    const cases = everyCombination({
      outcome: [
        { status: RunStatus.SUCCEEDED },
        { status: RunStatus.RETRY, nextAttemptAt: NOW + 5_000, lastError: error },
        { status: RunStatus.UNKNOWN, nextAttemptAt: NOW + 5_000, lastError: error },
        { status: RunStatus.DEAD, lastError: error },
        { status: RunStatus.DEAD, lastError: error, resultUnknown: true },
        { status: RunStatus.SUPERSEDED, lastError: error },
      ],
      markedBefore: [false, true],
    } as const);
    await eachCase(cases, async ({ outcome, markedBefore }) => {
      const held = await put(
        'unknown',
        { status: RunStatus.RUNNING, owner: 'me', leaseUntil: NOW + LEASE, claims: 2, watched: false },
        markedBefore ? { resultUnknown: true } : {},
      );
      expect(held.resultUnknown).toBe(markedBefore ? true : undefined);
      expect((await box.ledger.complete(held, outcome, NOW)).ok).toBe(true);
      const marked = outcome.status === RunStatus.UNKNOWN || ('resultUnknown' in outcome && outcome.resultUnknown === true);
      const label = `${outcome.status}${'resultUnknown' in outcome ? ' (result unknown)' : ''} after ${markedBefore ? 'an unknown' : 'a known'} result`;
      expect((await box.ledger.getRun(held))?.resultUnknown, label).toBe(marked ? true : undefined);
    });
  });

  it("complete adds the attempt to the run's history (claim, token, owner, where it was claimed from, when, outcome, error) and keeps only the last ATTEMPT_HISTORY_LIMIT attempts", async () => {
    for (const claims of [1, ATTEMPT_HISTORY_LIMIT, ATTEMPT_HISTORY_LIMIT + 1, ATTEMPT_HISTORY_LIMIT + 2]) {
      // The history as earlier attempts left it: one entry per earlier claim, the oldest already dropped.
      const earlier = Object.fromEntries(
        Array.from({ length: claims - 1 }, (_, i) => i + 1)
          .filter((c) => c > claims - 1 - ATTEMPT_HISTORY_LIMIT)
          .map((c) => [`c${c}`, { claim: c, token: c, owner: 'earlier', claimedAt: BASE, endedAt: BASE, outcome: RunStatus.RETRY }]),
      );
      const held = await put(
        'history',
        { status: RunStatus.RUNNING, owner: 'me', leaseUntil: NOW + LEASE, claims, watched: false },
        { attempts: earlier, startedAt: NOW - 700 },
      );
      const lastError = { code: 'FLAKY', message: 'the service said no' };
      expect(
        (
          await box.ledger.complete(held, { status: RunStatus.RETRY, nextAttemptAt: NOW + 1_000, lastError }, NOW, {
            from: RunStatus.UNKNOWN,
          })
        ).ok,
      ).toBe(true);
      const attempts = (await box.ledger.getRun(held))?.attempts ?? [];
      const kept = Array.from(
        { length: Math.min(claims, ATTEMPT_HISTORY_LIMIT) },
        (_, i) => claims - Math.min(claims, ATTEMPT_HISTORY_LIMIT) + 1 + i,
      );
      expect(
        attempts.map((a) => a.claim),
        `${claims} claims`,
      ).toEqual(kept);
      expect(attempts.at(-1), `${claims} claims`).toEqual({
        claim: claims,
        token: held.fencingToken,
        owner: 'me',
        from: RunStatus.UNKNOWN,
        claimedAt: NOW - 700,
        endedAt: NOW,
        outcome: RunStatus.RETRY,
        code: 'FLAKY',
        message: 'the service said no',
      });
    }
  });

  it('heartbeat, checkpoint and complete of a run whose item is gone report the lease lost, and create nothing', async () => {
    const gone: Run = {
      ...(await put('gone', { status: RunStatus.RUNNING, owner: 'me', leaseUntil: NOW + LEASE, claims: 1, watched: false })),
      slot: freshSlot(),
    };
    expect(await box.ledger.heartbeat(gone, NOW + LEASE)).toEqual({ ok: false, current: undefined });
    expect(await box.ledger.checkpoint(gone, { cursor: 'c' })).toEqual({ ok: false, current: undefined });
    expect(await box.ledger.complete(gone, { status: RunStatus.SUCCEEDED }, NOW)).toEqual({ ok: false, current: undefined });
    // The run-ending writes and the sweeper's mark say the run moved, they do not throw.
    expect(await box.ledger.settleWaiting(gone, RunStatus.SKIPPED, 'skipped', NOW)).toBe(false);
    expect(await box.ledger.replaceRunning(gone, 'newer', NOW)).toBe(false);
    expect(await box.ledger.markRedispatch(gone, NOW, 60_000, 10)).toBe('moved');
    expect(await box.ledger.getRun(gone)).toBeUndefined();
  });

  it("a run-ending write or re-dispatch mark the store refuses (throttled past the SDK's retries) throws: it is never taken for a run that moved", async () => {
    const waiting = await put('throttled', { status: RunStatus.READY, claims: 1, watched: true });
    const running = await put('throttled', {
      status: RunStatus.RUNNING,
      owner: 'o',
      leaseUntil: NOW - LEASE,
      claims: MAX_CLAIMS_PER_SLOT,
      watched: true,
    });
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: () => true, fault: 'refused', times: 100 }], 1);
    try {
      const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
      await expect(ledger.settleWaiting(waiting, RunStatus.SKIPPED, 'skipped', NOW)).rejects.toMatchObject({ name: 'ThrottlingException' });
      await expect(ledger.replaceRunning(running, 'newer', NOW)).rejects.toMatchObject({ name: 'ThrottlingException' });
      await expect(ledger.endSpentRunning(running, NOW, NOW - SKEW)).rejects.toMatchObject({ name: 'ThrottlingException' });
      await expect(ledger.markRedispatch(waiting, NOW, 60_000, 10)).rejects.toMatchObject({ name: 'ThrottlingException' });
    } finally {
      faulty.destroy();
    }
    expect(await box.ledger.getRun(waiting)).toEqual(waiting);
    expect(await box.ledger.getRun(running)).toEqual(running);
  });

  // Faults a local server cannot produce (test/support/faults.ts): the SDK retries a write whose
  // response was lost after it committed, and the retry's condition fails on our own commit.
  it('a write whose response was lost after it committed is reported done, not as a run that moved: settle, replace, spent-run end, re-dispatch mark, and a create by its own tick', async () => {
    // The first send of each write loses its response; the SDK's retry of it gets its answer.
    const sent = new Set<string>();
    const firstSend = (command: string, input: Record<string, unknown>) => {
      if (command !== 'UpdateItemCommand' && command !== 'PutItemCommand') return false;
      const write = JSON.stringify([command, input.Key ?? input.Item, input.ExpressionAttributeValues]);
      if (sent.has(write)) return false;
      sent.add(write);
      return true;
    };
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: firstSend, fault: 'lost-response', times: 100 }]);
    try {
      const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
      const waiting = await put('lost', { status: RunStatus.READY, claims: 1, watched: true });
      expect(await ledger.settleWaiting(waiting, RunStatus.SKIPPED, 'skipped by policy', NOW)).toBe(true);
      expect(await box.ledger.getRun(waiting)).toMatchObject({ status: RunStatus.SKIPPED });

      const running = await put('lost', { status: RunStatus.RUNNING, owner: 'o', leaseUntil: NOW + LEASE, claims: 1, watched: true });
      expect(await ledger.replaceRunning(running, 'newer', NOW)).toBe(true);
      expect(await box.ledger.getRun(running)).toMatchObject({ status: RunStatus.SUPERSEDED, fencingToken: running.fencingToken + 1 });

      const spent = await put('lost', {
        status: RunStatus.RUNNING,
        owner: 'o',
        leaseUntil: NOW - LEASE,
        claims: MAX_CLAIMS_PER_SLOT,
        watched: true,
      });
      expect(await ledger.endSpentRunning(spent, NOW, NOW - SKEW)).toBe(true);
      expect(await box.ledger.getRun(spent)).toMatchObject({
        status: RunStatus.DEAD,
        resultUnknown: true,
        lastError: {
          code: 'FENCE_RANGE_EXHAUSTED',
          message: `the holder of the last claim of the fencing range (token ${spent.fencingToken}) vanished`,
        },
      });
      expect(await indexKeyOf(spent)).toBe(deadKeys(spent).openPk);

      const stuck = await put('lost', { status: RunStatus.READY, claims: 1, watched: false });
      expect(await ledger.markRedispatch(stuck, NOW, 60_000, 10)).toBe('marked');
      expect(await raw(stuck)).toMatchObject({ dispatchedAt: NOW, redispatches: 1 });

      const slot = freshSlot();
      const created = await ledger.createRun({ job: 'lost', slot, shard: 0, shards: 1, status: RunStatus.READY }, NOW, 'tick-1');
      expect(created).toMatchObject({ created: true, run: { job: 'lost', slot, status: RunStatus.READY } });
      // Another tick creating the same run finds it is not its own.
      expect(await ledger.createRun({ job: 'lost', slot, shard: 0, shards: 1, status: RunStatus.READY }, NOW, 'tick-2')).toMatchObject({
        created: false,
      });
      expect(faulty.injected).toHaveLength(6);
    } finally {
      faulty.destroy();
    }
  });

  it('complete RETRY of a yield gives the attempt back and adds the time spent; a plain RETRY spends it', async () => {
    const yielded = await put('yield', { status: RunStatus.RUNNING, owner: 'me', leaseUntil: NOW + LEASE, claims: 3, watched: false });
    await box.ledger.complete(
      yielded,
      { status: RunStatus.RETRY, nextAttemptAt: NOW, lastError: { code: 'YIELDED', message: 'y' }, refundAttempt: true },
      NOW,
      { elapsedMs: 1_234 },
    );
    expect(await box.ledger.getRun(yielded)).toMatchObject({ status: RunStatus.RETRY, attempt: 2, attemptElapsedMs: 1_234 });
    // A second yield of the same attempt adds to the time its earlier invocations spent.
    await box.ledger.claim(yielded, 'me', NOW, LEASE, SKEW);
    const resumed = (await box.ledger.getRun(yielded))!;
    await box.ledger.complete(
      resumed,
      { status: RunStatus.RETRY, nextAttemptAt: NOW, lastError: { code: 'YIELDED', message: 'y' }, refundAttempt: true },
      NOW,
      { elapsedMs: 1_000 },
    );
    expect(await box.ledger.getRun(yielded)).toMatchObject({ status: RunStatus.RETRY, attempt: 2, attemptElapsedMs: 2_234 });
    // An attempt that fails after yielding before is spent: the next one starts a fresh budget.
    const failed = await put(
      'yield',
      { status: RunStatus.RUNNING, owner: 'me', leaseUntil: NOW + LEASE, claims: 3, watched: false },
      { attemptElapsed: 500 },
    );
    await box.ledger.complete(failed, { status: RunStatus.RETRY, nextAttemptAt: NOW, lastError: { code: 'FLAKY', message: 'f' } }, NOW, {
      elapsedMs: 1_234,
    });
    const after = await box.ledger.getRun(failed);
    expect(after).toMatchObject({ status: RunStatus.RETRY, attempt: 3 });
    expect(after?.attemptElapsedMs).toBeUndefined();
  });

  it('createRun: a second create of the same (job, slot, shard) never replaces the first, whatever happened to it', async () => {
    const slot = freshSlot();
    const first = await box.ledger.createRun({ job: 'create', slot, shard: 0, shards: 1, status: RunStatus.READY }, NOW);
    if (!first.created) throw new Error('setup: not created');
    const claimed = await box.ledger.claim(first.run, 'w', NOW, LEASE, SKEW);
    expect(claimed.kind).toBe('claimed');
    const again = await box.ledger.createRun(
      { job: 'create', slot, shard: 0, shards: 1, status: RunStatus.SKIPPED, reason: 'late' },
      NOW + 1,
    );
    expect(again).toMatchObject({ created: false, existing: { status: RunStatus.RUNNING, owner: 'w' } });
    expect(await box.ledger.getRun(first.run)).toMatchObject({ status: RunStatus.RUNNING, owner: 'w' });
  });

  it("createRun keeps what decides how the run starts: a fire time other than its slot (jitter), and a manual run's origin, note, trigger and overlap", async () => {
    const jittered = freshSlot();
    const created = await box.ledger.createRun(
      { job: 'create-fields', slot: jittered, shard: 0, shards: 1, status: RunStatus.READY, fireAt: jittered + 1_500 },
      NOW,
    );
    expect(created).toMatchObject({ created: true, run: { fireAt: jittered + 1_500 } });
    expect(await box.ledger.getRun({ job: 'create-fields', slot: jittered, shard: 0 })).toMatchObject({ fireAt: jittered + 1_500 });
    const manual = freshSlot();
    await box.ledger.createRun(
      {
        job: 'create-fields',
        slot: manual,
        shard: 0,
        shards: 1,
        status: RunStatus.READY,
        origin: RunOrigin.MANUAL,
        note: 'rerun after the fix',
        triggeredBy: 'ops@example',
        overlap: 'parallel',
        watch: true,
      },
      NOW,
    );
    const stored = await raw({ job: 'create-fields', slot: manual, shard: 0 });
    expect(stored).toMatchObject({
      origin: RunOrigin.MANUAL,
      note: 'rerun after the fix',
      triggeredBy: 'ops@example',
      overlap: 'parallel',
      attempts: {},
      ...watchKeys({ job: 'create-fields', slot: manual, shard: 0 }),
    });
    // A planned run on time carries none of these.
    const planned = freshSlot();
    await box.ledger.createRun({ job: 'create-fields', slot: planned, shard: 0, shards: 1, status: RunStatus.READY, fireAt: planned }, NOW);
    const plain = await raw({ job: 'create-fields', slot: planned, shard: 0 });
    for (const field of ['fireAt', 'origin', 'note', 'triggeredBy', 'overlap', 'openPk', 'finishedAt'])
      expect(plain, field).not.toHaveProperty(field);
  });

  it('settleWaiting: ends only a waiting run (READY, RETRY, UNKNOWN) at the token read; a held or ended one is left alone', async () => {
    await eachCase(
      everyCombination({ status: ALL_STATUSES, tokenOffset: [-1, 0, 1, undefined] } as const),
      async ({ status, tokenOffset }) => {
        const stored = await put('settle', { status, owner: 'o', leaseUntil: NOW + LEASE, claims: 1, watched: true });
        const as =
          tokenOffset === undefined
            ? { job: stored.job, slot: stored.slot, shard: 0 }
            : { ...stored, fencingToken: stored.fencingToken + tokenOffset };
        const settled = await box.ledger.settleWaiting(as, RunStatus.SKIPPED, 'skipped by policy', NOW);
        const waiting = (CLAIMABLE as readonly RunStatus[]).includes(status) && (tokenOffset === undefined || tokenOffset === 0);
        const label = `settle ${tokenOffset === undefined ? 'without a token' : `at token ${tokenOffset}`} of a ${status} run`;
        expect(settled, label).toBe(waiting);
        const after = await box.ledger.getRun(stored);
        if (waiting)
          expect(after).toMatchObject({
            status: RunStatus.SKIPPED,
            finishedAt: NOW,
            lastError: { code: RunStatus.SKIPPED, message: 'skipped by policy' },
          });
        else expect(after, label).toEqual(stored);
      },
    );
    // A waiting run whose fencing range is spent ends DEAD, naming why.
    const spent = await put('settle', { status: RunStatus.RETRY, claims: MAX_CLAIMS_PER_SLOT, watched: true });
    expect(await box.ledger.settleWaiting(spent, RunStatus.DEAD, 'no claim left', NOW)).toBe(true);
    expect(await box.ledger.getRun(spent)).toMatchObject({
      status: RunStatus.DEAD,
      lastError: { code: 'FENCE_RANGE_EXHAUSTED', message: 'no claim left' },
    });
    // It waits for an operator: out of the watch index, under its DEAD key.
    expect(await indexKeyOf(spent)).toBe(deadKeys(spent).openPk);
  });

  it('replaceRunning: ends a RUNNING run at the token read SUPERSEDED and advances its fence; anything else is left alone', async () => {
    await eachCase(everyCombination({ status: ALL_STATUSES, tokenOffset: [-1, 0, 1] } as const), async ({ status, tokenOffset }) => {
      const stored = await put('replace', { status, owner: 'o', leaseUntil: NOW + LEASE, claims: 1, watched: true });
      const replaced = await box.ledger.replaceRunning({ ...stored, fencingToken: stored.fencingToken + tokenOffset }, 'newer', NOW);
      const holds = status === RunStatus.RUNNING && tokenOffset === 0;
      const label = `replace at token ${tokenOffset} of a ${status} run`;
      expect(replaced, label).toBe(holds);
      const after = await box.ledger.getRun(stored);
      if (holds) {
        expect(after).toMatchObject({
          status: RunStatus.SUPERSEDED,
          fencingToken: stored.fencingToken + 1,
          finishedAt: NOW,
          lastError: { code: 'REPLACED', message: 'replaced by newer' },
        });
        // The replaced attempt joins the run's history, as one that ended by itself would.
        expect(after?.attempts).toEqual([
          {
            claim: 1,
            token: stored.fencingToken,
            owner: 'o',
            claimedAt: NOW,
            endedAt: NOW,
            outcome: RunStatus.SUPERSEDED,
            code: 'REPLACED',
            message: 'replaced by newer',
          },
        ]);
        // The old holder's heartbeat is refused from now on.
        expect((await box.ledger.heartbeat(stored, NOW + LEASE)).ok).toBe(false);
      } else expect(after, label).toEqual(stored);
    });
  });

  /** The item as stored (every attribute, not only the ones a Run carries). */
  async function raw(run: Pick<Run, 'job' | 'slot' | 'shard'>): Promise<Record<string, unknown> | undefined> {
    const { Item } = await box.clients.doc.send(
      new GetCommand({
        TableName: box.endpoints.ledgerTable,
        Key: { pk: LedgerKeys.jobPk(run.job), sk: LedgerKeys.runSk(run.slot, run.shard) },
        ConsistentRead: true,
      }),
    );
    return Item;
  }

  it('markRedispatch: at most once per grace period, only a run that has not moved since it was read, and never past its budget', async () => {
    const GRACE = 60_000;
    const MAX = 10;
    const cases = everyCombination({
      moved: ['no', 'status', 'token'],
      dispatchedAt: [undefined, NOW - GRACE - 1, NOW - GRACE, NOW - GRACE + 1],
      redispatches: [undefined, MAX - 1, MAX],
    } as const);
    await eachCase(cases, async ({ moved, dispatchedAt, redispatches }) => {
      const stored = await put(
        'redispatch',
        { status: RunStatus.READY, claims: 1, watched: false },
        { ...(dispatchedAt !== undefined ? { dispatchedAt } : {}), ...(redispatches !== undefined ? { redispatches } : {}) },
      );
      const before = await raw(stored);
      // What the sweeper read: the run as stored, or as it was before someone moved it on.
      const read: Run =
        moved === 'status'
          ? { ...stored, status: RunStatus.RETRY }
          : moved === 'token'
            ? { ...stored, fencingToken: stored.fencingToken - 1 }
            : stored;
      const result = await box.ledger.markRedispatch(read, NOW, GRACE, MAX);
      const label = `moved ${moved}, dispatched at ${dispatchedAt === undefined ? 'never' : dispatchedAt - NOW}, ${redispatches ?? 'no'} re-dispatches`;
      const graceOver = dispatchedAt === undefined || dispatchedAt < NOW - GRACE;
      const budgetLeft = redispatches === undefined || redispatches < MAX;
      const expected = moved === 'no' && graceOver && budgetLeft ? 'marked' : moved === 'no' && !budgetLeft ? 'exhausted' : 'moved';
      expect(result, label).toBe(expected);
      const after = await raw(stored);
      if (expected === 'marked') {
        expect(after, label).toMatchObject({ dispatchedAt: NOW, redispatches: (redispatches ?? 0) + 1, ...watchKeys(stored) });
      } else expect(after, label).toEqual(before);
    });
  });

  it("nearestRuns and laneRunsAfter read exactly a lane's neighbours: nearest first before a slot, oldest first in (after, until] with the statuses asked, whatever the shards", async () => {
    const MIN = 60_000;
    const layoutArb = fc.record({
      shards: fc.integer({ min: 1, max: 3 }),
      slots: fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 7 }),
      statuses: fc.array(fc.constantFrom(...ALL_STATUSES), { minLength: 30, maxLength: 30 }),
      // Often exactly at a slot that has runs: the boundaries of (after, until] and of "before".
      at: fc.oneof(
        fc.integer({ min: 0, max: 10 }),
        fc.nat().map((n) => ({ nth: n })),
      ),
      until: fc.oneof(
        fc.integer({ min: -1, max: 10 }),
        fc.nat().map((n) => ({ nth: n })),
      ),
      limit: fc.integer({ min: 1, max: 4 }),
      shard: fc.nat(),
      asked: fc.subarray([...ALL_STATUSES], { minLength: 1 }),
    });
    let cases = 0;
    await fc.assert(
      fc.asyncProperty(layoutArb, async ({ shards, slots, statuses, at: atChoice, until: untilChoice, limit, shard: anyShard, asked }) => {
        const job = `near-${++nextSlot}`;
        const pick = (c: number | { nth: number }) => (typeof c === 'number' ? c : slots[c.nth % slots.length]!);
        const [at, until] = [pick(atChoice), pick(untilChoice)];
        const slotAt = (i: number) => BASE + i * MIN;
        const shard = anyShard % shards;
        // The planner writes every shard of a slot; beside the runs sit the job's other items.
        const runs: Run[] = [];
        let k = 0;
        for (const i of slots)
          for (let sh = 0; sh < shards; sh++) runs.push({ ...runAt(job, slotAt(i), sh, shards), status: statuses[k++ % statuses.length]! });
        await eachCase(runs, (run) =>
          box.clients.doc
            .send(new PutCommand({ TableName: box.endpoints.ledgerTable, Item: { ...box.ledger.runKeyOf(run), ...run } }))
            .then(() => undefined),
        );
        await box.ledger.lanes.acquire(job, { slot: slotAt(slots[0]!), shard }, NOW);
        await box.clients.doc.send(
          new PutCommand({
            TableName: box.endpoints.ledgerTable,
            Item: { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.jobPlanSk, cursor: 1 },
          }),
        );
        const lane = runs.filter((r) => r.shard === shard);
        const label = `${shards} shards, slots ${[...slots].sort((a, b) => a - b).join(',')}, shard ${shard}`;

        const near = await box.ledger.nearestRuns(job, slotAt(at), 'before', limit, { shard, shards });
        const older = [...new Set(lane.filter((r) => r.slot < slotAt(at)).map((r) => r.slot))].sort((a, b) => b - a);
        // Nearest first, only the lane's older runs, and nothing beyond its `limit` nearest slots;
        // the `limit - 1` nearest are always read whole (the slot's own shard 0 may take one place).
        expect(
          near.map((r) => [r.slot, r.shard]),
          label,
        ).toEqual(
          lane
            .filter((r) => older.slice(0, limit).includes(r.slot))
            .sort((a, b) => b.slot - a.slot)
            .slice(0, near.length)
            .map((r) => [r.slot, r.shard]),
        );
        expect(near.length, label).toBeGreaterThanOrEqual(Math.min(older.length, limit - 1));

        const after = await box.ledger.laneRunsAfter(job, shard, slotAt(at), slotAt(until), asked);
        expect(
          after.map((r) => [r.slot, r.shard, r.status]),
          `${label}, (${at}, ${until}], ${asked.join('/')}`,
        ).toEqual(
          lane
            .filter((r) => r.slot > slotAt(at) && r.slot <= slotAt(until) && asked.includes(r.status))
            .sort((a, b) => a.slot - b.slot)
            .map((r) => [r.slot, r.shard, r.status]),
        );
        cases++;
      }),
      { numRuns: 30 },
    );
    expect(cases).toBe(30);
    // The boundaries that matter most, every time: the last shard of `until`'s slot is in, no shard of `after`'s.
    const job = `near-${++nextSlot}`;
    for (const i of [0, 1, 2])
      for (let sh = 0; sh < 3; sh++)
        await box.clients.doc.send(
          new PutCommand({
            TableName: box.endpoints.ledgerTable,
            Item: { ...box.ledger.runKeyOf({ job, slot: BASE + i * MIN, shard: sh }), ...runAt(job, BASE + i * MIN, sh, 3) },
          }),
        );
    expect((await box.ledger.laneRunsAfter(job, 2, BASE, BASE + 2 * MIN)).map((r) => [r.slot, r.shard])).toEqual([
      [BASE + MIN, 2],
      [BASE + 2 * MIN, 2],
    ]);
    expect((await box.ledger.nearestRuns(job, BASE + 2 * MIN, 'before', 2, { shard: 2, shards: 3 })).map((r) => [r.slot, r.shard])).toEqual(
      [
        [BASE + MIN, 2],
        [BASE, 2],
      ],
    );
    // Without a lane (pauseOnFailure's look back): the `limit` items below the slot's shard 0, every shard.
    expect((await box.ledger.nearestRuns(job, BASE + 2 * MIN, 'before', 3)).map((r) => [r.slot, r.shard])).toEqual([
      [BASE + MIN, 2],
      [BASE + MIN, 1],
    ]);
  });

  describe('lane markers', () => {
    const MIN = 60_000;
    const laneJob = () => `lane-${++nextSlot}`;
    const holder = (slot: number) => ({ slot, shard: 0 });
    /**
     * Every shape a marker can have in a table: no item; a free lane (the item stays, with a
     * floor); held by the run asking (`mine`) or another; and the shapes earlier versions wrote: a
     * "vacant" marker (holder slot 0, a waiting flag), a held one with waiting flags, a held one
     * from before the flags.
     */
    const markers = ['none', 'free', 'mine', 'other', 'vacant', 'flagged-mine', 'flagged-other', 'unflagged-mine'] as const;
    type Marker = (typeof markers)[number];
    const key = (job: string) => ({ pk: LedgerKeys.jobPk(job), sk: LedgerKeys.activeSk(0) });
    async function rawMarker(job: string, holderSlot: number, extra: Record<string, unknown>): Promise<void> {
      await box.clients.doc.send(
        new PutCommand({
          TableName: box.endpoints.ledgerTable,
          Item: { ...key(job), holderSk: LedgerKeys.runSk(holderSlot, 0), holderSlot, since: NOW, lastWrite: 'earlier-code', ...extra },
        }),
      );
    }
    async function mark(job: string, marker: Marker, mine: number, other: number): Promise<void> {
      const flags = { runsWaiting: true, olderWaiting: true, oldestWaitingSlot: mine - 5 * MIN, flagsWaiting: true };
      switch (marker) {
        case 'none':
          return;
        case 'free':
          expect(await box.ledger.lanes.acquire(job, holder(other), NOW)).toEqual({ kind: 'acquired' });
          return void expect((await box.ledger.lanes.release(job, holder(other))).freed).toBe(true);
        case 'mine':
        case 'other':
          return void expect(await box.ledger.lanes.acquire(job, holder(marker === 'mine' ? mine : other), NOW)).toEqual({
            kind: 'acquired',
          });
        case 'vacant':
          return rawMarker(job, VACANT_SLOT, { runsWaiting: true, olderWaiting: true, oldestWaitingSlot: mine - 5 * MIN });
        case 'flagged-mine':
        case 'flagged-other':
          return rawMarker(job, marker === 'flagged-mine' ? mine : other, flags);
        case 'unflagged-mine':
          return rawMarker(job, mine, {});
      }
    }
    const heldByMe = (m: Marker) => m === 'mine' || m === 'flagged-mine' || m === 'unflagged-mine';
    const heldByOther = (m: Marker) => m === 'other' || m === 'flagged-other';
    const EARLIER_FLAGS = ['holderSlot', 'runsWaiting', 'olderWaiting', 'oldestWaitingSlot', 'flagsWaiting'];
    async function stored(job: string): Promise<Record<string, unknown> | undefined> {
      return (await box.clients.doc.send(new GetCommand({ TableName: box.endpoints.ledgerTable, Key: key(job), ConsistentRead: true })))
        .Item;
    }

    it("acquire takes a free lane (no item, a free marker, an earlier vacant one), keeps one its holder has, is blocked by another holder's, and converts an earlier shape in place", async () => {
      await eachCase(markers, async (marker) => {
        const job = laneJob();
        await mark(job, marker, BASE + 1_000, BASE);
        const result = await box.ledger.lanes.acquire(job, holder(BASE + 1_000), NOW + 1);
        expect(result.kind, marker).toBe(heldByOther(marker) ? 'blocked' : heldByMe(marker) ? 'held' : 'acquired');
        if (result.kind === 'blocked') expect(result.holderSlot, marker).toBe(BASE);
        expect((await box.ledger.lanes.read(job, 0))?.holderSlot, marker).toBe(heldByOther(marker) ? BASE : BASE + 1_000);
        // A holder's write leaves no earlier flag behind; another holder's marker is left as it was.
        const item = await stored(job);
        for (const flag of EARLIER_FLAGS) expect(item?.[flag] === undefined, `${marker}: ${flag}`).toBe(!(marker === 'flagged-other'));
      });
    });

    it("release frees only its own holder's marker and keeps the item and its floor; a refusal says who holds the lane now", async () => {
      await eachCase(markers, async (marker) => {
        const job = laneJob();
        await mark(job, marker, BASE + 1_000, BASE);
        await box.ledger.lanes.lowerFloor(job, 0, BASE - MIN);
        const released = await box.ledger.lanes.release(job, holder(BASE + 1_000));
        expect(released.freed, marker).toBe(heldByMe(marker));
        if (!released.freed) expect(released.holderSlot, marker).toBe(heldByOther(marker) ? BASE : undefined);
        expect((await box.ledger.lanes.read(job, 0))?.holderSlot, marker).toBe(heldByOther(marker) ? BASE : undefined);
        if (heldByMe(marker)) for (const flag of EARLIER_FLAGS) expect((await stored(job))?.[flag], `${marker}: ${flag}`).toBeUndefined();
      });
    });

    it('lowerFloor only ever lowers a floor that exists (a lane without one reads from its first run already); advanceFloor raises it only if nobody wrote the marker since the release it follows', async () => {
      const job = laneJob();
      await box.ledger.lanes.lowerFloor(job, 0, BASE);
      expect(await stored(job)).toBeUndefined();
      expect(await box.ledger.lanes.acquire(job, holder(BASE + 10 * MIN), NOW)).toEqual({ kind: 'acquired' });
      const released = await box.ledger.lanes.release(job, holder(BASE + 10 * MIN));
      if (!released.freed) throw new Error('setup: not released');
      expect(released.floor).toBeUndefined();
      expect(await box.ledger.lanes.advanceFloor(job, 0, released.writeId, BASE + 5 * MIN)).toBe(true);
      expect((await box.ledger.lanes.read(job, 0))?.floor).toBe(BASE + 5 * MIN);
      await box.ledger.lanes.lowerFloor(job, 0, BASE + 6 * MIN);
      expect((await box.ledger.lanes.read(job, 0))?.floor).toBe(BASE + 5 * MIN);
      await box.ledger.lanes.lowerFloor(job, 0, BASE + 2 * MIN);
      expect((await box.ledger.lanes.read(job, 0))?.floor).toBe(BASE + 2 * MIN);
      // The lower wrote the marker after the release: an advance decided before it is refused.
      expect(await box.ledger.lanes.advanceFloor(job, 0, released.writeId, BASE + 9 * MIN)).toBe(false);
      expect((await box.ledger.lanes.read(job, 0))?.floor).toBe(BASE + 2 * MIN);
      // A holder keeps the floor through its take and its release.
      expect(await box.ledger.lanes.acquire(job, holder(BASE + 11 * MIN), NOW)).toEqual({ kind: 'acquired', floor: BASE + 2 * MIN });
      expect(await box.ledger.lanes.release(job, holder(BASE + 11 * MIN))).toMatchObject({ freed: true, floor: BASE + 2 * MIN });
    });

    it('the take under the claim records its fencing token; a release or take by an earlier incarnation of the same run (an older token) is refused, one by the same or a newer token frees it', async () => {
      const job = laneJob();
      const mine = holder(freshSlot());
      expect(await box.ledger.lanes.acquire(job, mine, NOW)).toEqual({ kind: 'acquired' });
      // No token yet (the claim is still to come): a release by any incarnation frees it.
      expect((await box.ledger.lanes.read(job, 0))?.holderToken).toBeUndefined();
      expect(await box.ledger.lanes.acquire(job, mine, NOW, 'take-1', 7)).toEqual({ kind: 'held' });
      expect((await box.ledger.lanes.read(job, 0))?.holderToken).toBe(7);
      // A plain take of a lane the run holds keeps the token (another copy of the same message).
      expect(await box.ledger.lanes.acquire(job, mine, NOW, 'take-2')).toEqual({ kind: 'held' });
      expect((await box.ledger.lanes.read(job, 0))?.holderToken).toBe(7);
      // An earlier incarnation (token 6) can neither free it nor record its token over it.
      expect(await box.ledger.lanes.release(job, mine, { token: 6 })).toEqual({ freed: false, holderSlot: mine.slot });
      expect(await box.ledger.lanes.acquire(job, mine, NOW, 'take-3', 6)).toEqual({ kind: 'blocked', holderSlot: mine.slot, since: NOW });
      expect((await box.ledger.lanes.read(job, 0))?.holderToken).toBe(7);
      // The same incarnation frees it; the token goes with the holder.
      expect(await box.ledger.lanes.release(job, mine, { token: 7 })).toMatchObject({ freed: true });
      expect(await stored(job)).not.toHaveProperty('holderToken');
      // takeFromEnded drops the ended holder's token.
      const ended = holder((await put(job, { status: RunStatus.SUCCEEDED, claims: 1, watched: false })).slot);
      expect(await box.ledger.lanes.acquire(job, ended, NOW, 'take-4', 9)).toEqual({ kind: 'acquired' });
      const next = holder(freshSlot());
      expect(await box.ledger.lanes.takeFromEnded(job, next, ended, NOW + 1)).toBe(true);
      expect(await box.ledger.lanes.read(job, 0)).toMatchObject({ holderSlot: next.slot });
      expect(await stored(job)).not.toHaveProperty('holderToken');
    });

    it('a release whose response was lost after it committed is recognised as ours (its write id), floor and all', async () => {
      const job = laneJob();
      const mine = holder(freshSlot());
      expect(await box.ledger.lanes.acquire(job, mine, NOW)).toEqual({ kind: 'acquired' });
      await box.ledger.lanes.lowerFloor(job, 0, mine.slot - MIN);
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
        {
          when: (command, input) => command === 'UpdateItemCommand' && String(input.UpdateExpression).includes('REMOVE holderSk'),
          fault: 'lost-response',
        },
      ]);
      try {
        const lanes = new LaneStore(faulty.doc, box.endpoints.ledgerTable);
        expect(await lanes.release(job, mine)).toMatchObject({ freed: true });
        expect(faulty.injected.length).toBe(1);
        expect((await lanes.read(job, 0))?.holderSlot).toBeUndefined();
      } finally {
        faulty.destroy();
      }
    });

    it("takeFromEnded takes the lane only from the holder named, and only once that holder's run has ended or is gone", async () => {
      const cases = everyCombination({ staleRun: [...ALL_STATUSES, 'gone'], marker: ['stale', 'other', 'none'] } as const);
      await eachCase(cases, async ({ staleRun, marker }) => {
        const job = laneJob();
        const stale =
          staleRun === 'gone'
            ? holder(freshSlot())
            : holder((await put(job, { status: staleRun, owner: 'o', leaseUntil: NOW + LEASE, claims: 1, watched: false })).slot);
        const other = freshSlot();
        if (marker !== 'none')
          expect(await box.ledger.lanes.acquire(job, marker === 'stale' ? stale : holder(other), NOW)).toEqual({ kind: 'acquired' });
        const next = holder(freshSlot());
        const taken = await box.ledger.lanes.takeFromEnded(job, next, stale, NOW + 1);
        const label = `marker ${marker}, stale holder's run ${staleRun}`;
        const expected = marker === 'stale' && (staleRun === 'gone' || isTerminal(staleRun));
        expect(taken, label).toBe(expected);
        const now = (await box.ledger.lanes.read(job, 0))?.holderSlot;
        expect(now, label).toBe(expected ? next.slot : marker === 'stale' ? stale.slot : marker === 'other' ? other : undefined);
      });
    });

    // Faults a local server cannot produce (test/support/faults.ts): the adapter's own mapping.
    it('a takeover whose response was lost after it committed is recognised as ours; one that lost the race is not', async () => {
      const job = laneJob();
      const stale = holder((await put(job, { status: RunStatus.SUCCEEDED, claims: 1, watched: false })).slot);
      expect(await box.ledger.lanes.acquire(job, stale, NOW)).toEqual({ kind: 'acquired' });
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
        { when: (command) => command === 'TransactWriteItemsCommand', fault: 'lost-response' },
      ]);
      try {
        const lanes = new LaneStore(faulty.doc, box.endpoints.ledgerTable);
        const next = holder(freshSlot());
        expect(await lanes.takeFromEnded(job, next, stale, NOW + 1)).toBe(true);
        expect(faulty.injected).toEqual(['TransactWriteItemsCommand']);
        expect((await lanes.read(job, 0))?.holderSlot).toBe(next.slot);
        // A second claimer naming the same stale holder finds the lane taken: not ours.
        expect(await lanes.takeFromEnded(job, holder(freshSlot()), stale, NOW + 2)).toBe(false);
      } finally {
        faulty.destroy();
      }
    });

    it("a lane call the store refuses (throttled past the SDK's retries) throws: it is never taken for a refusal of the condition", async () => {
      const job = laneJob();
      const stale = holder((await put(job, { status: RunStatus.SUCCEEDED, claims: 1, watched: false })).slot);
      expect(await box.ledger.lanes.acquire(job, stale, NOW)).toEqual({ kind: 'acquired' });
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: () => true, fault: 'refused', times: 100 }], 1);
      try {
        const lanes = new LaneStore(faulty.doc, box.endpoints.ledgerTable);
        await expect(lanes.acquire(job, holder(freshSlot()), NOW)).rejects.toMatchObject({ name: 'ThrottlingException' });
        await expect(lanes.release(job, stale)).rejects.toMatchObject({ name: 'ThrottlingException' });
        await expect(lanes.takeFromEnded(job, holder(freshSlot()), stale, NOW)).rejects.toMatchObject({ name: 'ThrottlingException' });
        await expect(lanes.lowerFloor(job, 0, stale.slot - MIN)).rejects.toMatchObject({ name: 'ThrottlingException' });
      } finally {
        faulty.destroy();
      }
      expect((await box.ledger.lanes.read(job, 0))?.holderSlot).toBe(stale.slot);
    });
  });
});

describe("the planner's watermarks on DynamoDB Local", () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  const step = fc.record({
    gen: fc.constantFrom(1, 1, 1, 2),
    kind: fc.constantFrom('planned', 'swept') as fc.Arbitrary<'planned' | 'swept'>,
    to: fc.integer({ min: 0, max: 20 }),
  });

  it('plannedUntil and sweptUntil only move forward, within their layout generation, whatever order concurrent ticks finish in', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const partition = ++nextSlot;
        // A layout of generation 1 with this partition at 5 (planned) and 5 (swept).
        const layout = await box.ledger.planning.readLayout();
        const partitions = new Map(layout?.partitions ?? []);
        partitions.set(partition, { plannedUntil: BASE + 5, sweptUntil: BASE + 5 });
        expect(await box.ledger.planning.writeLayout(layout, { of: 1, gen: 1, partitions }, NOW)).toBe(true);
        const model = { planned: BASE + 5, swept: BASE + 5 };
        for (const { gen, kind, to } of steps) {
          const until = BASE + to;
          const moved =
            kind === 'planned'
              ? await box.ledger.planning.advancePartition(gen, partition, until)
              : await box.ledger.planning.saveSweep(gen, partition, { sweptUntil: until });
          const expected = gen === 1 && until >= model[kind];
          expect(moved, `${kind} ${model[kind]} → ${until} in gen ${gen}`).toBe(expected);
          if (expected) model[kind] = until;
        }
        const cursor = (await box.ledger.planning.readLayout())!.partitions.get(partition)!;
        expect(cursor).toMatchObject({ plannedUntil: model.planned, sweptUntil: model.swept });
        // Put the layout back to generation 0 for the next case (its writeLayout expects gen 1 or none).
        const now = await box.ledger.planning.readLayout();
        expect(await box.ledger.planning.writeLayout(now, { ...now!, gen: 0 }, NOW)).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('a layout is replaced only by a planner that read the current one: two switching at once agree on one', async () => {
    const own = await sandbox();
    try {
      const empty = { of: 1, gen: 1, partitions: new Map() };
      expect(await own.ledger.planning.writeLayout(undefined, empty, NOW)).toBe(true);
      expect(await own.ledger.planning.writeLayout(undefined, { ...empty, of: 2 }, NOW)).toBe(false);
      const current = await own.ledger.planning.readLayout();
      const [a, b] = await Promise.all([
        own.ledger.planning.writeLayout(current, { of: 4, gen: 2, partitions: new Map() }, NOW),
        own.ledger.planning.writeLayout(current, { of: 8, gen: 2, partitions: new Map() }, NOW),
      ]);
      expect([a, b].filter(Boolean)).toHaveLength(1);
      expect((await own.ledger.planning.readLayout())?.of).toBe(a ? 4 : 8);
    } finally {
      own.destroy();
    }
  });
});

describe("a job's planning state on DynamoDB Local", () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());
  const job = () => `plan-${++nextSlot}`;

  it('a catch-up cursor moves only from the value read, and never while the job is paused', async () => {
    const name = job();
    const planning = box.ledger.planning;
    expect(await planning.setCatchUp(name, BASE + 1, BASE + 9, undefined)).toBe(true);
    // A concurrent tick that read no cursor, or an older one, loses.
    expect(await planning.setCatchUp(name, BASE + 2, BASE + 9, undefined)).toBe(false);
    expect(await planning.setCatchUp(name, BASE + 2, BASE + 9, BASE)).toBe(false);
    expect(await planning.setCatchUp(name, BASE + 2, BASE + 9, BASE + 1)).toBe(true);
    expect(await planning.clearCatchUp(name, BASE + 1)).toBe(false);
    expect(await planning.readJobPlan(name)).toMatchObject({ cursor: BASE + 2, edge: BASE + 9 });
    // Paused: the pause keeps the cursor it found; no tick moves or clears it.
    expect(await planning.pause(name, BASE + 5, { by: 'op', at: NOW, note: 'hold' })).toBe(true);
    expect(await planning.pause(name, BASE + 6, { by: 'other', at: NOW })).toBe(false);
    expect(await planning.setCatchUp(name, BASE + 3, BASE + 9, BASE + 2)).toBe(false);
    expect(await planning.clearCatchUp(name, BASE + 2)).toBe(false);
    expect(await planning.readJobPlan(name)).toMatchObject({ cursor: BASE + 2, pause: { by: 'op', note: 'hold' } });
    expect((await planning.readTickState()).paused.has(name)).toBe(true);
    // Resumed: listed as behind, and the cursor moves on again.
    expect(await planning.resume(name)).toBe(true);
    expect(await planning.resume(name)).toBe(false);
    const state = await planning.readTickState();
    expect([state.paused.has(name), state.behind.has(name)]).toEqual([false, true]);
    expect(await planning.clearCatchUp(name, BASE + 2)).toBe(true);
    expect((await planning.readJobPlan(name))?.cursor).toBeUndefined();
  });

  it('a pause of a job that was not behind starts its cursor where the job was planned to', async () => {
    const name = job();
    expect(await box.ledger.planning.pause(name, BASE + 7, { by: 'op', at: NOW })).toBe(true);
    expect(await box.ledger.planning.readJobPlan(name)).toMatchObject({ cursor: BASE + 7 });
  });

  it("a counted put creates and counts a maxRuns slot together: its own retry is counted once, another tick's put of the slot not at all, and the slot past maxRuns is refused uncreated", async () => {
    const name = job();
    const run = (slot: number) => ({ job: name, slot, shard: 0, shards: 1, status: RunStatus.READY }) as const;
    const count = { maxRuns: 2, start: 0 };
    expect(await box.ledger.createCountedRun(run(BASE + 1_000), NOW, 'tick-a', count)).toMatchObject({ created: true });
    expect(await box.ledger.createCountedRun(run(BASE + 1_000), NOW, 'tick-a', count)).toMatchObject({ created: true });
    expect(await box.ledger.createCountedRun(run(BASE + 1_000), NOW, 'tick-b', count)).toMatchObject({
      created: false,
      existing: { slot: BASE + 1_000 },
    });
    expect((await box.ledger.planning.readJobPlan(name))?.planned).toBe(1);
    expect(await box.ledger.createCountedRun(run(BASE + 2_000), NOW, 'tick-b', count)).toMatchObject({ created: true });
    expect(await box.ledger.createCountedRun(run(BASE + 3_000), NOW, 'tick-b', count)).toEqual({ created: false, full: true });
    expect(await box.ledger.getRun({ job: name, slot: BASE + 3_000, shard: 0 })).toBeUndefined();
    expect((await box.ledger.planning.readJobPlan(name))?.planned).toBe(2);
    // A count that starts where earlier code's bound left it: at maxRuns, nothing more.
    const legacy = job();
    expect(await box.ledger.createCountedRun({ ...run(BASE + 1_000), job: legacy }, NOW, 'tick-a', { maxRuns: 2, start: 2 })).toEqual({
      created: false,
      full: true,
    });
    expect(await box.ledger.createCountedRun({ ...run(BASE + 1_000), job: legacy }, NOW, 'tick-a', { maxRuns: 3, start: 2 })).toMatchObject(
      { created: true },
    );
    expect((await box.ledger.planning.readJobPlan(legacy))?.planned).toBe(3);
  });

  it('a counted put whose response is lost, retried by the SDK, is created and counted once and reported created', async () => {
    const name = job();
    const faulty = faultyClient(
      box.endpoints.dynamoEndpoint,
      [{ when: (command) => command === 'TransactWriteItemsCommand', fault: 'lost-response' }],
      3,
    );
    try {
      const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
      const result = await ledger.createCountedRun(
        { job: name, slot: BASE + 1_000, shard: 0, shards: 1, status: RunStatus.READY },
        NOW,
        'tick-a',
        { maxRuns: 5, start: 0 },
      );
      expect(result).toMatchObject({ created: true, run: { slot: BASE + 1_000 } });
      expect(faulty.injected).toEqual(['TransactWriteItemsCommand']);
      expect(faulty.matched.length).toBeGreaterThanOrEqual(2);
    } finally {
      faulty.destroy();
    }
    expect((await box.ledger.planning.readJobPlan(name))?.planned).toBe(1);
  });

  it('the behind lists take and drop names, several per call, additions and removals in the same bucket included', async () => {
    const names = Array.from({ length: 6 }, job);
    // A name dropped in the same call that lists another of its bucket: one update may not both
    // ADD to and DELETE from a set.
    let sharer = job();
    while (exceptionBucketOf(sharer) !== exceptionBucketOf(names[0]!)) sharer = job();
    await box.ledger.planning.listBehind(names, []);
    await box.ledger.planning.listBehind([...names.slice(3), sharer], names.slice(0, 2));
    const { behind } = await box.ledger.planning.readTickState();
    expect([...names, sharer].map((n) => behind.has(n))).toEqual([false, false, true, true, true, true, true]);
  });
});
