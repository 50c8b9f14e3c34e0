/**
 * The AWS adapters' request shapes and error mapping (DESIGN §5, §6, §8), with the SDK mocked:
 * - Ledger: conditional writes, and ConditionalCheckFailedException mapped to domain results from
 *   the item returned with the failure (never an extra read); other errors are never swallowed.
 * - DynamoFencedStore: a stale fence is told apart from a failed business condition.
 * - RunQueue: SendMessageBatch batching, delay clamping and partial-failure handling.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import 'aws-sdk-client-mock-vitest/extend';
import { mockClient, type AwsClientStub } from 'aws-sdk-client-mock';
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  type CancellationReason,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Ledger, watchKeys } from '../../shared/store/ledger.js';
import { DynamoFencedStore, type FencedWriteResult } from '../../shared/store/fenced-store.js';
import { RunQueue, SendRunsError, type OutgoingRun } from '../../shared/messaging/run-queue.js';
import { ConditionFailedError, FencedOutError, type FencedWrite } from '../../shared/handler-api.js';
import { initialFence, MAX_CLAIMS_PER_SLOT } from '../../shared/core/fence.js';
import { LedgerKeys } from '../../shared/core/resources.js';
import { RunOrigin, RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';
import { runAt } from '../support/runs.js';

// ------------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------------

type AV = { S: string } | { N: string } | { BOOL: boolean } | { NULL: true } | { M: Record<string, AV> } | { L: AV[] };

/** Marshals a plain item into the low-level AttributeValue format DynamoDB returns with a failed check. */
function marshal(item: Record<string, unknown>): Record<string, AV> {
  const av = (value: unknown): AV => {
    if (value === null) return { NULL: true };
    if (typeof value === 'string') return { S: value };
    if (typeof value === 'number') return { N: String(value) };
    if (typeof value === 'boolean') return { BOOL: value };
    if (Array.isArray(value)) return { L: value.map(av) };
    return { M: marshal(value as Record<string, unknown>) };
  };
  const out: Record<string, AV> = {};
  for (const [key, value] of Object.entries(item)) if (value !== undefined) out[key] = av(value);
  return out;
}

function conditionFailed(item?: Record<string, unknown>): ConditionalCheckFailedException {
  return new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: { httpStatusCode: 400 },
    ...(item ? { Item: marshal(item) as never } : {}),
  });
}

function throttled(): ProvisionedThroughputExceededException {
  return new ProvisionedThroughputExceededException({
    message: 'Rate of requests exceeds the allowed throughput',
    $metadata: { httpStatusCode: 400 },
  });
}

function networkError(): Error {
  return Object.assign(new Error('socket hang up'), { name: 'Error', code: 'ECONNRESET' });
}

const TABLE = 'ledger-test';
const SLOT = Date.UTC(2024, 0, 15, 12, 0);
const NOW = SLOT + 1_500;
const LEASE = 30_000;
const SKEW = 2_000;
const ID = { job: 'j', slot: SLOT, shard: 0 };
const KEY = { pk: LedgerKeys.jobPk('j'), sk: LedgerKeys.runSk(SLOT, 0) };

function runItem(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...KEY, ...runAt(SLOT), ...overrides };
}

function heldRun(overrides: Partial<Run> = {}): Run {
  return runAt(SLOT, {
    status: RunStatus.RUNNING,
    owner: 'me',
    leaseUntil: NOW + LEASE,
    fencingToken: initialFence(SLOT) + 1,
    attempt: 1,
    ...overrides,
  });
}

const newDoc = () =>
  DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'k', secretAccessKey: 's' } }));

// ------------------------------------------------------------------------------------------------
// Ledger
// ------------------------------------------------------------------------------------------------

describe('Ledger (DynamoDB document client mocked)', () => {
  let ddb: AwsClientStub<DynamoDBDocumentClient>;
  let ledger: Ledger;
  beforeEach(() => {
    ddb = mockClient(DynamoDBDocumentClient);
    ledger = new Ledger(newDoc(), { tableName: TABLE });
  });
  afterEach(() => ddb.restore());

  describe('claim: ONE conditional UpdateItem (no read-then-write race window)', () => {
    // What the condition admits is judged by DynamoDB Local (test/integration/ledger-conditions.test.ts).
    it('sends exactly one UpdateCommand, asking for the new item and, on a refusal, the item as it was', async () => {
      ddb.on(UpdateCommand).resolves({ Attributes: runItem({ status: RunStatus.RUNNING, owner: 'w1', claimedFrom: RunStatus.READY }) });
      await ledger.claim(ID, 'w1', NOW, LEASE, SKEW);

      expect(ddb.calls()).toHaveLength(1);
      expect(ddb).toHaveReceivedCommandExactlyOnceWith(UpdateCommand, {
        TableName: TABLE,
        Key: KEY,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ExpressionAttributeValues: expect.objectContaining({
          ':owner': 'w1',
          ':leaseUntil': NOW + LEASE,
          ':expiredBefore': NOW - SKEW,
          ':now': NOW,
          ':running': RunStatus.RUNNING,
          ':maxToken': initialFence(SLOT) + MAX_CLAIMS_PER_SLOT,
        }),
      });
    });

    it('a successful claim returns the new item and the status it was claimed from', async () => {
      const after = runItem({
        status: RunStatus.RUNNING,
        owner: 'w1',
        leaseUntil: NOW + LEASE,
        fencingToken: initialFence(SLOT) + 2,
        attempt: 2,
        claimedFrom: RunStatus.UNKNOWN,
      });
      ddb.on(UpdateCommand).resolves({ Attributes: after });
      const result = await ledger.claim(ID, 'w1', NOW, LEASE, SKEW);
      expect(result).toMatchObject({
        kind: 'claimed',
        claimedFrom: RunStatus.UNKNOWN,
        run: { owner: 'w1', fencingToken: initialFence(SLOT) + 2, attempt: 2 },
      });
    });

    it('ConditionalCheckFailed with a SUCCEEDED item → terminal (duplicate delivery is acked, not re-run)', async () => {
      ddb.on(UpdateCommand).rejects(
        conditionFailed(
          runItem({
            status: RunStatus.SUCCEEDED,
            fencingToken: initialFence(SLOT) + 1,
            attempt: 1,
            evidence: { settled: ['p1'] },
            finishedAt: NOW - 10,
          }),
        ),
      );
      const result = await ledger.claim(ID, 'w2', NOW, LEASE, SKEW);
      expect(result.kind).toBe('terminal');
      // The marshalled item is decoded: numbers are numbers, nested maps/lists are plain values.
      expect(result.kind === 'terminal' && result.run).toMatchObject({
        status: RunStatus.SUCCEEDED,
        slot: SLOT,
        fencingToken: initialFence(SLOT) + 1,
        attempt: 1,
        evidence: { settled: ['p1'] },
      });
      expect(ddb.calls()).toHaveLength(1); // no extra read to learn why
    });

    it('ConditionalCheckFailed with a RUNNING item and a live lease → leased, retryAt = leaseUntil + skew', async () => {
      ddb
        .on(UpdateCommand)
        .rejects(
          conditionFailed(
            runItem({ status: RunStatus.RUNNING, owner: 'w1', leaseUntil: NOW + 12_000, fencingToken: initialFence(SLOT) + 1, attempt: 1 }),
          ),
        );
      const result = await ledger.claim(ID, 'w2', NOW, LEASE, SKEW);
      expect(result).toMatchObject({ kind: 'leased', retryAt: NOW + 12_000 + SKEW, run: { owner: 'w1' } });
    });

    it('ConditionalCheckFailed with a RETRY item whose nextAttemptAt is in the future → not-due at nextAttemptAt', async () => {
      ddb
        .on(UpdateCommand)
        .rejects(
          conditionFailed(
            runItem({ status: RunStatus.RETRY, nextAttemptAt: NOW + 4_000, fencingToken: initialFence(SLOT) + 1, attempt: 1 }),
          ),
        );
      const result = await ledger.claim(ID, 'w2', NOW, LEASE, SKEW);
      expect(result).toMatchObject({ kind: 'not-due', retryAt: NOW + 4_000 });
    });

    it('ConditionalCheckFailed with no Item (the run does not exist) → missing', async () => {
      ddb.on(UpdateCommand).rejects(conditionFailed());
      await expect(ledger.claim(ID, 'w2', NOW, LEASE, SKEW)).resolves.toEqual({ kind: 'missing' });
    });

    it('a ConditionalCheckFailedException from another SDK copy (matched by name, not instanceof) is still mapped', async () => {
      const foreign = Object.assign(new Error('The conditional request failed'), {
        name: 'ConditionalCheckFailedException',
        Item: marshal(runItem({ status: RunStatus.DEAD })),
      });
      ddb.on(UpdateCommand).rejects(foreign);
      await expect(ledger.claim(ID, 'w2', NOW, LEASE, SKEW)).resolves.toMatchObject({ kind: 'terminal' });
    });

    it('throttling (ProvisionedThroughputExceededException) propagates: it is not a refusal and must not be acked', async () => {
      const error = throttled();
      ddb.on(UpdateCommand).rejects(error);
      await expect(ledger.claim(ID, 'w2', NOW, LEASE, SKEW)).rejects.toBe(error);
    });

    it('a network error propagates (never mistaken for "missing" or "terminal")', async () => {
      ddb.on(UpdateCommand).rejects(networkError());
      await expect(ledger.claim(ID, 'w2', NOW, LEASE, SKEW)).rejects.toThrow('socket hang up');
    });
  });

  describe('createRun: conditional put, at most one run item per (job, slot, shard)', () => {
    it('puts once, asking for the existing item on a refusal; the item starts at the slot’s initial fence', async () => {
      ddb.on(PutCommand).resolves({});
      const result = await ledger.createRun({ job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.READY }, NOW);
      expect(result.created).toBe(true);
      expect(ddb).toHaveReceivedCommandExactlyOnceWith(PutCommand, {
        TableName: TABLE,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        Item: expect.objectContaining({
          ...KEY,
          status: RunStatus.READY,
          fencingToken: initialFence(SLOT),
          attempt: 0,
          createdAt: NOW,
          runKey: 'j@2024-01-15T12:00:00.000Z',
        }),
      });
      // An on-time run is not watched: creating and finishing it writes no index.
      expect(ddb.commandCalls(PutCommand)[0]!.args[0].input.Item).not.toHaveProperty('openPk');
    });

    it('a run created late (catch-up, backfill, manual) is watched from the start: it carries its watch-index keys', async () => {
      ddb.on(PutCommand).resolves({});
      await ledger.createRun(
        { job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.READY, watch: true, origin: RunOrigin.CATCH_UP },
        NOW,
      );
      expect(ddb.commandCalls(PutCommand)[0]!.args[0].input.Item).toMatchObject({
        ...watchKeys({ job: 'j', slot: SLOT, shard: 0 }),
        origin: RunOrigin.CATCH_UP,
      });
    });

    it('a SKIPPED run is created terminal: finished, with TTL and reason, and outside the open-runs index', async () => {
      ddb.on(PutCommand).resolves({});
      await ledger.createRun(
        { job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.SKIPPED, reason: 'misfired: skipped by policy' },
        NOW,
      );
      const item = ddb.commandCalls(PutCommand)[0]!.args[0].input.Item!;
      expect(item).toMatchObject({
        status: RunStatus.SKIPPED,
        finishedAt: NOW,
        lastError: { code: RunStatus.SKIPPED, message: 'misfired: skipped by policy' },
      });
      expect(item.expiresAt).toBe(Math.floor(NOW / 1000) + 30 * 86_400);
      expect(item).not.toHaveProperty('openPk');
    });

    it('conditional failure with Item → { created: false, existing } (a concurrent planner got there first)', async () => {
      ddb
        .on(PutCommand)
        .rejects(conditionFailed(runItem({ status: RunStatus.RUNNING, owner: 'w1', fencingToken: initialFence(SLOT) + 1, attempt: 1 })));
      const result = await ledger.createRun({ job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.READY }, NOW);
      expect(result).toMatchObject({
        created: false,
        existing: { status: RunStatus.RUNNING, owner: 'w1', fencingToken: initialFence(SLOT) + 1 },
      });
    });

    it('conditional failure without Item is not reported as created (it propagates)', async () => {
      ddb.on(PutCommand).rejects(conditionFailed());
      await expect(ledger.createRun({ job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.READY }, NOW)).rejects.toBeInstanceOf(
        ConditionalCheckFailedException,
      );
    });

    it('throttling propagates (the planner retries next tick; the run is not silently dropped)', async () => {
      ddb.on(PutCommand).rejects(throttled());
      await expect(ledger.createRun({ job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.READY }, NOW)).rejects.toBeInstanceOf(
        ProvisionedThroughputExceededException,
      );
    });

    it('response lost after commit: the lost response throws (not "created"), and the retry finds the committed item as existing', async () => {
      // The put committed, but the connection dropped before the response; the retry's put then
      // fails its condition against the item the first put wrote.
      const committed = runItem({ createdAt: NOW });
      ddb.on(PutCommand).rejectsOnce(networkError()).rejectsOnce(conditionFailed(committed));
      const newRun = { job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.READY } as const;
      await expect(ledger.createRun(newRun, NOW)).rejects.toThrow('socket hang up');
      const retried = await ledger.createRun(newRun, NOW);
      expect(retried).toMatchObject({ created: false, existing: { runKey: 'j@2024-01-15T12:00:00.000Z', status: RunStatus.READY } });
      expect(ddb).toHaveReceivedCommandTimes(PutCommand, 2);
    });
  });

  it("a retried put that finds its own tick's item reports it created, so the planner still dispatches it", async () => {
    const newRun = { job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.READY } as const;
    ddb
      .on(PutCommand)
      .rejectsOnce(conditionFailed(runItem({ createdAt: NOW, createdBy: 'tick-1' })))
      .rejectsOnce(conditionFailed(runItem({ createdAt: NOW, createdBy: 'tick-2' })));
    await expect(ledger.createRun(newRun, NOW, 'tick-1')).resolves.toMatchObject({
      created: true,
      run: { runKey: 'j@2024-01-15T12:00:00.000Z' },
    });
    // Another planner's item stays "existing": only its creator sends the message.
    await expect(ledger.createRun(newRun, NOW, 'tick-1')).resolves.toMatchObject({ created: false });
  });

  describe('heartbeat / checkpoint / complete: guarded by owner + token + RUNNING', () => {
    it("heartbeat sends one UpdateCommand with the holder's owner and token, asking for the item as it was on a refusal", async () => {
      ddb.on(UpdateCommand).resolves({});
      await expect(ledger.heartbeat(heldRun(), NOW + 40_000)).resolves.toEqual({ ok: true });
      expect(ddb).toHaveReceivedCommandExactlyOnceWith(UpdateCommand, {
        Key: KEY,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ExpressionAttributeValues: expect.objectContaining({
          ':me': 'me',
          ':token': initialFence(SLOT) + 1,
          ':running': RunStatus.RUNNING,
          ':leaseUntil': NOW + 40_000,
        }),
      });
    });

    it('heartbeat refused (a successor took over) → { ok: false, current } with the successor’s item', async () => {
      ddb
        .on(UpdateCommand)
        .rejects(
          conditionFailed(runItem({ status: RunStatus.RUNNING, owner: 'successor', fencingToken: initialFence(SLOT) + 2, attempt: 2 })),
        );
      const check = await ledger.heartbeat(heldRun(), NOW + 40_000);
      expect(check).toMatchObject({ ok: false, current: { owner: 'successor', fencingToken: initialFence(SLOT) + 2 } });
    });

    it('heartbeat refused on a vanished item → { ok: false, current: undefined }', async () => {
      ddb.on(UpdateCommand).rejects(conditionFailed());
      await expect(ledger.heartbeat(heldRun(), NOW + 40_000)).resolves.toEqual({ ok: false, current: undefined });
    });

    it('heartbeat throttling propagates (the lease is not silently assumed extended)', async () => {
      ddb.on(UpdateCommand).rejects(throttled());
      await expect(ledger.heartbeat(heldRun(), NOW + 40_000)).rejects.toBeInstanceOf(ProvisionedThroughputExceededException);
    });

    it('complete refused (stale owner) → { ok: false, current }: the stale worker records nothing', async () => {
      ddb
        .on(UpdateCommand)
        .rejects(conditionFailed(runItem({ status: RunStatus.SUCCEEDED, owner: 'successor', fencingToken: initialFence(SLOT) + 2 })));
      const check = await ledger.complete(heldRun(), { status: RunStatus.SUCCEEDED }, NOW);
      expect(check).toMatchObject({ ok: false, current: { status: RunStatus.SUCCEEDED, owner: 'successor' } });
    });

    // What complete writes (status, evidence, TTL, the watch index, a yield's refund) is judged on
    // DynamoDB Local: test/integration/ledger-conditions.test.ts.

    it('checkpoint refused → { ok: false }', async () => {
      ddb.on(UpdateCommand).rejects(conditionFailed(runItem({ status: RunStatus.RETRY })));
      await expect(ledger.checkpoint(heldRun(), { cursor: 'x' })).resolves.toMatchObject({
        ok: false,
        current: { status: RunStatus.RETRY },
      });
    });
  });
});

// ------------------------------------------------------------------------------------------------
// The same "response lost after commit" drill through the real SDK retry middleware: the Ledger has
// no retry loop of its own; it relies on the SDK retrying the transient error and on mapping the
// retry's ConditionalCheckFailed (with the committed item) to `existing`.
// ------------------------------------------------------------------------------------------------

describe('Ledger.createRun through the real SDK retry middleware', () => {
  it('response lost after commit: one createRun call returns the committed item as existing (no throw)', async () => {
    const committed = marshal(runItem({ createdAt: NOW }));
    let calls = 0;
    const requestHandler = {
      async handle() {
        calls++;
        if (calls === 1) throw networkError(); // the put reached DynamoDB; its response did not reach us
        const body = JSON.stringify({
          __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
          message: 'The conditional request failed',
          Item: committed,
        });
        return {
          response: {
            statusCode: 400,
            reason: 'Bad Request',
            headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `req-${calls}` },
            body: new TextEncoder().encode(body),
          },
        };
      },
      updateHttpClientConfig() {},
      httpHandlerConfigs() {
        return {};
      },
    };
    const client = new DynamoDBClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'k', secretAccessKey: 's' },
      maxAttempts: 3,
      requestHandler: requestHandler as never,
    });
    const ledger = new Ledger(DynamoDBDocumentClient.from(client), { tableName: TABLE });
    const result = await ledger.createRun({ job: 'j', slot: SLOT, shard: 0, shards: 1, status: RunStatus.READY }, NOW);
    expect(calls).toBe(2);
    expect(result).toMatchObject({
      created: false,
      existing: { runKey: 'j@2024-01-15T12:00:00.000Z', status: RunStatus.READY, fencingToken: initialFence(SLOT) },
    });
  });
});

// ------------------------------------------------------------------------------------------------
// DynamoFencedStore
// ------------------------------------------------------------------------------------------------

describe('DynamoFencedStore: stale fences are rejected and told apart from business conditions', () => {
  const FENCE = initialFence(SLOT) + 1;
  let ddb: AwsClientStub<DynamoDBDocumentClient>;
  let results: [FencedWrite, FencedWriteResult][];
  let store: DynamoFencedStore;
  beforeEach(() => {
    ddb = mockClient(DynamoDBDocumentClient);
    results = [];
    store = new DynamoFencedStore(newDoc(), FENCE, { onResult: (write, result) => results.push([write, result]) });
  });
  afterEach(() => ddb.restore());

  const cursorPut = { table: 'biz', item: { pk: 'JOB#j', sk: 'CURSOR', position: 'p7' } };
  const paymentUpdate: Omit<Extract<FencedWrite, { kind: 'update' }>, 'kind'> = {
    table: 'payments',
    key: { pk: 'PAYMENTS', sk: 'p7' },
    set: { expression: '#status = :settled', names: { '#status': 'status' }, values: { ':settled': 'SETTLED' } },
    condition: { expression: '#status = :processing', names: { '#status': 'status' }, values: { ':processing': 'PROCESSING' } },
  };

  // What the conditions do is tested against DynamoDB Local (test/integration/fenced-effects.test.ts);
  // here only what a local server cannot produce: the mapping of returned items and errors.
  it('a fenced write stamps the fence and a write id on the item; success reports accepted', async () => {
    ddb.on(PutCommand).resolves({});
    await store.put(cursorPut);
    const input = ddb.commandCalls(PutCommand)[0]!.args[0].input;
    expect(input.Item).toMatchObject({
      pk: 'JOB#j',
      sk: 'CURSOR',
      position: 'p7',
      lastFence: FENCE,
      lastWrite: input.ExpressionAttributeValues![':write__'],
    });
    expect(results.map(([, r]) => r)).toEqual(['accepted']);
  });

  it('conditional failure with a HIGHER lastFence → FencedOutError (a successor wrote: this worker is stale)', async () => {
    ddb.on(PutCommand).rejects(conditionFailed({ pk: 'JOB#j', sk: 'CURSOR', position: 'p9', lastFence: FENCE + 1000 }));
    const error = await store.put(cursorPut).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FencedOutError);
    expect(error).toMatchObject({ fence: FENCE, seenFence: FENCE + 1000, table: 'biz', key: { pk: 'JOB#j', sk: 'CURSOR' } });
    expect(results.map(([, r]) => r)).toEqual(['fenced-out']);
  });

  it.each([
    ['lower', FENCE - 1],
    ['equal (same holder writing again)', FENCE],
  ])(
    'conditional failure with a %s lastFence → ConditionFailedError (the business condition failed, not the fence)',
    async (_label, lastFence) => {
      ddb.on(UpdateCommand).rejects(conditionFailed({ pk: 'PAYMENTS', sk: 'p7', status: 'SETTLED', lastFence }));
      const error = await store.update(paymentUpdate).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConditionFailedError);
      expect(error).not.toBeInstanceOf(FencedOutError);
      expect(results.map(([, r]) => r)).toEqual(['condition-failed']);
    },
  );

  it('conditional failure on an item that does not exist (no Item) → ConditionFailedError', async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed());
    await expect(store.update(paymentUpdate)).rejects.toBeInstanceOf(ConditionFailedError);
  });

  it('throttling propagates unchanged and is not reported as a fence result', async () => {
    const error = throttled();
    ddb.on(PutCommand).rejects(error);
    await expect(store.put(cursorPut)).rejects.toBe(error);
    expect(results).toEqual([]);
  });

  // Regression: ConditionFailedError.current was handed to handlers in the low-level
  // AttributeValue format ({ status: { S: 'SETTLED' } }) instead of a plain item like ctx.reader
  // returns, so `error.current?.status === 'SETTLED'` in a handler was always false.
  it('ConditionFailedError.current is a plain item (like ctx.reader results), not AttributeValues', async () => {
    ddb.on(UpdateCommand).rejects(conditionFailed({ pk: 'PAYMENTS', sk: 'p7', status: 'SETTLED', lastFence: FENCE - 1 }));
    const error = (await store.update(paymentUpdate).catch((e: unknown) => e)) as ConditionFailedError;
    expect(error.current).toEqual({ pk: 'PAYMENTS', sk: 'p7', status: 'SETTLED', lastFence: FENCE - 1 });
  });

  describe('transact', () => {
    const writes: FencedWrite[] = [
      { kind: 'update', ...paymentUpdate },
      { kind: 'put', ...cursorPut },
    ];
    const canceled = (reasons: CancellationReason[]) =>
      new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: { httpStatusCode: 400 },
        CancellationReasons: reasons,
      });

    it('sends one TransactWriteCommand with an idempotency token; success reports each write accepted', async () => {
      ddb.on(TransactWriteCommand).resolves({});
      await store.transact(writes);
      const input = ddb.commandCalls(TransactWriteCommand)[0]!.args[0].input;
      expect(input.TransactItems).toHaveLength(2);
      expect(input.ClientRequestToken).toMatch(/^fence-/);
      expect(input.TransactItems![1]!.Put!.Item).toMatchObject({ lastFence: FENCE });
      expect(results.map(([, r]) => r)).toEqual(['accepted', 'accepted']);
    });

    it('the cursor put refused by a higher fence → FencedOutError naming the cursor', async () => {
      ddb
        .on(TransactWriteCommand)
        .rejects(
          canceled([
            { Code: 'None' },
            { Code: 'ConditionalCheckFailed', Item: marshal({ pk: 'JOB#j', sk: 'CURSOR', lastFence: FENCE + 1 }) as never },
          ]),
        );
      const error = await store.transact(writes).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FencedOutError);
      expect(error).toMatchObject({ key: { pk: 'JOB#j', sk: 'CURSOR' }, seenFence: FENCE + 1 });
    });

    it('only the business condition failed → ConditionFailedError naming the payment', async () => {
      ddb.on(TransactWriteCommand).rejects(
        canceled([
          {
            Code: 'ConditionalCheckFailed',
            Item: marshal({ pk: 'PAYMENTS', sk: 'p7', status: 'SETTLED', lastFence: FENCE - 5 }) as never,
          },
          { Code: 'None' },
        ]),
      );
      const error = await store.transact(writes).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConditionFailedError);
      expect(error).toMatchObject({ key: { pk: 'PAYMENTS', sk: 'p7' } });
      expect(results.map(([, r]) => r)).toEqual(['condition-failed']);
    });

    it('a fence refusal anywhere outranks a business-condition failure elsewhere (stale worker must stop)', async () => {
      ddb.on(TransactWriteCommand).rejects(
        canceled([
          { Code: 'ConditionalCheckFailed', Item: marshal({ pk: 'PAYMENTS', sk: 'p7', status: 'SETTLED' }) as never },
          { Code: 'ConditionalCheckFailed', Item: marshal({ pk: 'JOB#j', sk: 'CURSOR', lastFence: FENCE + 7 }) as never },
        ]),
      );
      const error = await store.transact(writes).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FencedOutError);
      expect(results.map(([, r]) => r)).toEqual(['fenced-out']);
    });

    it('a cancellation for another reason (TransactionConflict) propagates unchanged for retry', async () => {
      const error = canceled([{ Code: 'TransactionConflict' }, { Code: 'None' }]);
      ddb.on(TransactWriteCommand).rejects(error);
      await expect(store.transact(writes)).rejects.toBe(error);
      expect(results).toEqual([]);
    });
  });
});

// ------------------------------------------------------------------------------------------------
// RunQueue
// ------------------------------------------------------------------------------------------------

describe('RunQueue.send: SendMessageBatch with partial-failure handling', () => {
  const QUEUE = 'https://sqs.us-east-1.amazonaws.com/123456789012/runs';
  let sqs: AwsClientStub<SQSClient>;
  let queue: RunQueue;
  beforeEach(() => {
    sqs = mockClient(SQSClient);
    queue = new RunQueue(new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'k', secretAccessKey: 's' } }), QUEUE);
  });
  afterEach(() => sqs.restore());

  const out = (i: number, delaySeconds = 0): OutgoingRun => {
    const slot = SLOT + i * 1000;
    return { message: { v: 1, job: 'j', slot, shard: 0, runKey: runKeyOf('j', slot, 0, 1) }, delaySeconds };
  };
  const bodies = (call: number) =>
    (sqs.commandCalls(SendMessageBatchCommand)[call]!.args[0].input.Entries ?? []).map((e) => JSON.parse(e.MessageBody!).runKey as string);

  it('sends nothing for no runs', async () => {
    await queue.send([]);
    expect(sqs).not.toHaveReceivedCommand(SendMessageBatchCommand);
  });

  it('sends in batches of at most 10, in order, with unique Ids per batch', async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
    const runs = Array.from({ length: 25 }, (_, i) => out(i));
    await queue.send(runs);
    const calls = sqs.commandCalls(SendMessageBatchCommand);
    expect(calls.map((c) => c.args[0].input.Entries!.length)).toEqual([10, 10, 5]);
    expect([0, 1, 2].flatMap(bodies)).toEqual(runs.map((r) => r.message.runKey));
    for (const call of calls) {
      const ids = call.args[0].input.Entries!.map((e) => e.Id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(call.args[0].input.QueueUrl).toBe(QUEUE);
    }
  });

  it('clamps DelaySeconds to SQS’s 0..900 range and whole seconds (an out-of-range delay fails the whole entry)', async () => {
    sqs.on(SendMessageBatchCommand).resolves({});
    await queue.send([out(0, -5), out(1, 0), out(2, 1.9), out(3, 900), out(4, 901), out(5, 86_400)]);
    const delays = sqs.commandCalls(SendMessageBatchCommand)[0]!.args[0].input.Entries!.map((e) => e.DelaySeconds);
    expect(delays).toEqual([0, 0, 1, 900, 900, 900]);
  });

  it('the message body is the run message, validated by the worker on the other side', async () => {
    sqs.on(SendMessageBatchCommand).resolves({});
    await queue.send([out(0)]);
    const entry = sqs.commandCalls(SendMessageBatchCommand)[0]!.args[0].input.Entries![0]!;
    expect(JSON.parse(entry.MessageBody!)).toEqual(out(0).message);
  });

  it('retries entries that failed for SQS’s own reasons once, only those entries', async () => {
    sqs
      .on(SendMessageBatchCommand)
      .resolvesOnce({ Failed: [{ Id: '3', SenderFault: false, Code: 'InternalError', Message: 'try again' }] })
      .resolves({});
    const runs = Array.from({ length: 5 }, (_, i) => out(i));
    await queue.send(runs);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 2);
    expect(bodies(1)).toEqual([runs[3]!.message.runKey]);
  });

  it('a sender-fault failure is not retried and throws SendRunsError naming the runKey', async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Failed: [{ Id: '1', SenderFault: true, Code: 'InvalidParameterValue', Message: 'bad' }] });
    const runs = [out(0), out(1), out(2)];
    const error = await queue.send(runs).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendRunsError);
    expect((error as SendRunsError).failed).toEqual([{ runKey: runs[1]!.message.runKey, code: 'InvalidParameterValue', message: 'bad' }]);
    expect((error as SendRunsError).message).toContain(runs[1]!.message.runKey);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 1);
  });

  it('a non-sender-fault failure that fails again on retry throws SendRunsError naming the runKey (no endless loop)', async () => {
    sqs.on(SendMessageBatchCommand).callsFake((input: { Entries: { Id: string }[] }) => ({
      Failed: input.Entries.filter((e) => e.Id === '0').map((e) => ({ Id: e.Id, SenderFault: false, Code: 'InternalError' })),
    }));
    const runs = [out(0), out(1)];
    const error = await queue.send(runs).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendRunsError);
    expect((error as SendRunsError).failed.map((f) => f.runKey)).toEqual([runs[0]!.message.runKey]);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 2);
  });

  it('a failure in one batch does not stop later batches from being sent; all failures are reported together', async () => {
    sqs
      .on(SendMessageBatchCommand)
      .resolvesOnce({ Failed: [{ Id: '9', SenderFault: true, Code: 'X' }] })
      .resolves({ Failed: [{ Id: '0', SenderFault: true, Code: 'Y' }] });
    const runs = Array.from({ length: 11 }, (_, i) => out(i));
    const error = (await queue.send(runs).catch((e: unknown) => e)) as SendRunsError;
    expect(error).toBeInstanceOf(SendRunsError);
    expect(error.failed.map((f) => f.runKey)).toEqual([runs[9]!.message.runKey, runs[10]!.message.runKey]);
  });

  it('a failed API call (throttling, network) propagates', async () => {
    const spy = vi.fn();
    sqs.on(SendMessageBatchCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    await queue.send([out(0)]).catch(spy);
    expect(spy).toHaveBeenCalledWith(expect.objectContaining({ name: 'ThrottlingException' }));
  });
});
