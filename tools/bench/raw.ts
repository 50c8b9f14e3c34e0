/**
 * The machine's ceiling: conditional PutItem and conditional UpdateItem throughput on the same
 * DynamoDB Local, with the same client settings as the scheduler (document client,
 * localClientConfig) and the planner's concurrency (16 in flight). The items have the run item's
 * shape, including the open-runs index attributes, so each write costs what a ledger write costs.
 */
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mapBounded } from '../../shared/core/concurrency.js';
import type { LocalEndpoints } from '../local-stack.js';
import { benchClients, freshResources, round } from './measure.js';

export interface RawOptions {
  readonly base: Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint'>;
  /** Items put, then updated. */
  readonly items: number;
  /** Items put and updated first on a separate table and not counted (JIT warm-up of DynamoDB Local). */
  readonly warmupItems: number;
  readonly concurrency: number;
}

export interface RawResult {
  readonly rawPutsPerSec: number;
  readonly rawUpdatesPerSec: number;
  /** (puts + updates) ÷ (put time + update time). */
  readonly rawWritesPerSec: number;
  readonly rawItems: number;
  readonly rawConcurrency: number;
}

async function putsAndUpdates(endpoints: LocalEndpoints, items: number, concurrency: number): Promise<{ putMs: number; updateMs: number }> {
  const { dynamo, doc } = benchClients(endpoints);
  try {
    const base = Date.UTC(2030, 0, 1);
    const keyOf = (i: number) => {
      const slot = base + Math.floor(i / 100) * 60_000;
      const job = `bench-raw-${i % 100}`;
      const iso = new Date(slot).toISOString();
      return { pk: `JOB#${job}`, sk: `RUN#${iso}#000`, job, slot, iso };
    };
    const indexes = Array.from({ length: items }, (_, i) => i);
    const putStart = performance.now();
    await mapBounded(indexes, concurrency, async (i) => {
      const { pk, sk, job, slot, iso } = keyOf(i);
      await doc.send(
        new PutCommand({
          TableName: endpoints.ledgerTable,
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
        }),
      );
    });
    const putMs = performance.now() - putStart;
    const updateStart = performance.now();
    await mapBounded(indexes, concurrency, async (i) => {
      const { pk, sk, slot } = keyOf(i);
      const now = Date.now();
      // The claim's shape: one conditional UpdateItem returning the new item.
      await doc.send(
        new UpdateCommand({
          TableName: endpoints.ledgerTable,
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
        }),
      );
    });
    const updateMs = performance.now() - updateStart;
    return { putMs, updateMs };
  } finally {
    dynamo.destroy();
  }
}

export async function measureRaw(options: RawOptions): Promise<RawResult> {
  if (options.warmupItems > 0) {
    await putsAndUpdates(await freshResources(options.base, 'rawwarm'), options.warmupItems, options.concurrency);
  }
  const { putMs, updateMs } = await putsAndUpdates(await freshResources(options.base, 'raw'), options.items, options.concurrency);
  return {
    rawPutsPerSec: round(options.items / (putMs / 1000), 1),
    rawUpdatesPerSec: round(options.items / (updateMs / 1000), 1),
    rawWritesPerSec: round((2 * options.items) / ((putMs + updateMs) / 1000), 1),
    rawItems: options.items,
    rawConcurrency: options.concurrency,
  };
}
