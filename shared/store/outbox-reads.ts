/**
 * The outbox rows a run wrote (shared/core/outbox.ts: partition `OUTBOX#<job>`, sort key
 * `<runKey>#<name>`), read back for the operator: what the relay publishes (or published) for it.
 * Rows expire after the outbox retention, so an old run's list may be empty.
 */
import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { OUTBOX_PK_PREFIX, outboxEventOf, type OutboxEvent } from '../core/outbox.js';

export interface OutboxRow extends OutboxEvent {
  /** When the row expires (epoch s), as its TTL attribute says. */
  readonly expiresAt?: number;
}

/** The run's outbox rows, at most `limit`, in event-key order (consistent read). */
export async function outboxRowsOfRun(
  doc: DynamoDBDocumentClient,
  tableName: string,
  job: string,
  runKey: string,
  limit = 50,
): Promise<OutboxRow[]> {
  const { Items = [] } = await doc.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': `${OUTBOX_PK_PREFIX}${job}`, ':prefix': `${runKey}#` },
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  const rows: OutboxRow[] = [];
  for (const item of Items) {
    const event = outboxEventOf(item);
    // `job@slot#` also begins the keys of that slot's shards (`job@slot#1#name`): keep this run's only.
    if (event === undefined || event.runKey !== runKey) continue;
    rows.push({ ...event, ...(typeof item.expiresAt === 'number' ? { expiresAt: item.expiresAt } : {}) });
  }
  return rows;
}
