/**
 * The machine's ceiling: conditional PutItem and conditional UpdateItem throughput on DynamoDB
 * Local, with the same client settings as the scheduler (document client, localClientConfig) and
 * the planner's concurrency (16 in flight). The items have the run item's shape (open-runs index
 * attributes included) and the table is the ledger's own definition (createTables: index, stream,
 * TTL), so each write costs what a ledger write costs.
 *
 * How it is kept fair on a noisy, shared machine: every throughput phase runs on its own fresh
 * DynamoDB Local (it slows down as stream data accumulates across tables), after the same JIT
 * warm-up on a stream-less table, and the raw rate is measured on the phase's own ledger table
 * with the phase's volume and write mix, once just before and once just after the phase (data
 * accumulating inside one table does not slow it down). The ceiling is the better of the two,
 * so a ratio against it is never flattered by a momentary dip of the raw measurement.
 *  - puts: as many conditional puts as the planner tick creates (its comparison);
 *  - mix: K puts, then K claim-shaped and K completion-shaped conditional updates: the write mix
 *    and volume of the K-run end-to-end burst (the efficiency denominator).
 */
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { mapBounded } from '../../shared/core/concurrency.js';
import type { LocalEndpoints } from '../local-stack.js';
import { benchClients, round, type StackBase } from './measure.js';

const BASE_SLOT = Date.UTC(2030, 0, 1);

function keyOf(i: number) {
  const slot = BASE_SLOT + Math.floor(i / 100) * 60_000;
  const job = `bench-raw-${i % 100}`;
  const iso = new Date(slot).toISOString();
  return { pk: `JOB#${job}`, sk: `RUN#${iso}#000`, job, slot, iso };
}

function putRun(table: string, i: number): PutCommand {
  const { pk, sk, job, slot, iso } = keyOf(i);
  return new PutCommand({
    TableName: table,
    Item: {
      pk,
      sk,
      job,
      slot,
      shard: 0,
      shards: 1,
      runKey: `${job}@${iso}`,
      status: 'READY',
      fencingToken: slot * 1000,
      attempt: 0,
      createdAt: Date.now(),
      openPk: 'OPEN',
      openSk: `${iso}#${job}#000`,
    },
    ConditionExpression: 'attribute_not_exists(pk)',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  });
}

/** The claim's shape: one conditional UpdateItem returning the new item. */
function claimRun(table: string, i: number): UpdateCommand {
  const { pk, sk, slot } = keyOf(i);
  const now = Date.now();
  return new UpdateCommand({
    TableName: table,
    Key: { pk, sk },
    UpdateExpression:
      'SET claimedFrom = #status, #status = :running, #owner = :owner, leaseUntil = :leaseUntil, startedAt = :now, fencingToken = fencingToken + :one, attempt = attempt + :one REMOVE nextAttemptAt',
    ConditionExpression: 'attribute_exists(pk) AND #status IN (:ready, :retry) AND fencingToken < :maxToken',
    ExpressionAttributeNames: { '#status': 'status', '#owner': 'owner' },
    ExpressionAttributeValues: {
      ':running': 'RUNNING',
      ':ready': 'READY',
      ':retry': 'RETRY',
      ':owner': 'bench-raw',
      ':leaseUntil': now + 30_000,
      ':now': now,
      ':one': 1,
      ':maxToken': slot * 1000 + 999,
    },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  });
}

/** The completion's shape: conditional on owner + token + RUNNING, leaves the open-runs index. */
function completeRun(table: string, i: number): UpdateCommand {
  const { pk, sk, slot } = keyOf(i);
  const now = Date.now();
  return new UpdateCommand({
    TableName: table,
    Key: { pk, sk },
    UpdateExpression: 'SET #status = :outcome, finishedAt = :now, expiresAt = :expiresAt REMOVE leaseUntil, openPk',
    ConditionExpression: '#owner = :me AND fencingToken = :token AND #status = :running',
    ExpressionAttributeNames: { '#status': 'status', '#owner': 'owner' },
    ExpressionAttributeValues: {
      ':outcome': 'SUCCEEDED',
      ':now': now,
      ':expiresAt': Math.floor(now / 1000) + 86_400,
      ':me': 'bench-raw',
      ':token': slot * 1000 + 1,
      ':running': 'RUNNING',
    },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  });
}

type Send = (command: PutCommand | UpdateCommand) => Promise<unknown>;

/** Runs `count` commands with `concurrency` in flight; returns the time at which each completed (ms from start). */
async function timed(count: number, concurrency: number, make: (i: number) => PutCommand | UpdateCommand, send: Send): Promise<number[]> {
  const done: number[] = [];
  const start = performance.now();
  await mapBounded(
    Array.from({ length: count }, (_, i) => i),
    concurrency,
    async (i) => {
      await send(make(i));
      done.push(performance.now() - start);
    },
  );
  return done;
}

/**
 * Warms DynamoDB Local's JIT on a table with the ledger's index but no stream (stream data would
 * slow the measured phase down; see the module comment).
 */
export async function warmUp(base: StackBase, items: number, concurrency: number): Promise<void> {
  if (items <= 0) return;
  const { dynamo, doc } = benchClients(base);
  try {
    const table = `bench-warmup-${randomUUID().slice(0, 8)}`;
    await dynamo.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
          { AttributeName: 'openPk', AttributeType: 'S' },
          { AttributeName: 'openSk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'open-runs',
            KeySchema: [
              { AttributeName: 'openPk', KeyType: 'HASH' },
              { AttributeName: 'openSk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      }),
    );
    const send: Send = (command) => doc.send(command as PutCommand);
    await timed(items, concurrency, (i) => putRun(table, i), send);
    await timed(items, concurrency, (i) => claimRun(table, i), send);
    await timed(items, concurrency, (i) => completeRun(table, i), send);
  } finally {
    dynamo.destroy();
  }
}

export interface RawPutsResult {
  readonly items: number;
  readonly putsPerSec: number;
  /** Rate over the first `n` puts, for each requested n. */
  readonly putsPerSecAt: Readonly<Record<number, number>>;
}

/**
 * `items` conditional puts into the given (ledger-defined) table, keys from `keyOffset` on: run it
 * on the measured phase's own table, before and after the phase (see the module comment).
 */
export async function measureRawPuts(endpoints: LocalEndpoints, items: number, concurrency: number, keyOffset = 0, checkpoints: readonly number[] = []): Promise<RawPutsResult> {
  const { dynamo, doc } = benchClients(endpoints);
  try {
    const done = await timed(items, concurrency, (i) => putRun(endpoints.ledgerTable, keyOffset + i), (c) => doc.send(c as PutCommand));
    const at: Record<number, number> = {};
    for (const n of checkpoints) if (n <= items) at[n] = round(n / (done[n - 1]! / 1000), 1);
    return { items, putsPerSec: round(items / (done[items - 1]! / 1000), 1), putsPerSecAt: at };
  } finally {
    dynamo.destroy();
  }
}

export interface RawMixResult {
  readonly items: number;
  readonly putsPerSec: number;
  readonly updatesPerSec: number;
  /** (K puts + 2K updates) ÷ their total time. */
  readonly writesPerSec: number;
}

/** K puts, then K claim-shaped and K completion-shaped updates of them, keys from `keyOffset` on. */
export async function measureRawMix(endpoints: LocalEndpoints, items: number, concurrency: number, keyOffset = 0): Promise<RawMixResult> {
  const { dynamo, doc } = benchClients(endpoints);
  try {
    const table = endpoints.ledgerTable;
    const send: Send = (c) => doc.send(c as PutCommand);
    const puts = await timed(items, concurrency, (i) => putRun(table, keyOffset + i), send);
    const claims = await timed(items, concurrency, (i) => claimRun(table, keyOffset + i), send);
    const completes = await timed(items, concurrency, (i) => completeRun(table, keyOffset + i), send);
    const putMs = puts[items - 1]!;
    const updateMs = claims[items - 1]! + completes[items - 1]!;
    return {
      items,
      putsPerSec: round(items / (putMs / 1000), 1),
      updatesPerSec: round((2 * items) / (updateMs / 1000), 1),
      writesPerSec: round((3 * items) / ((putMs + updateMs) / 1000), 1),
    };
  } finally {
    dynamo.destroy();
  }
}
