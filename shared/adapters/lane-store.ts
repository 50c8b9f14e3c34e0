/**
 * Active-run markers of exclusive lanes (overlap policies other than parallel; DESIGN §8, §11).
 * One marker per (job, shard) names the run that holds the lane. Plain conditional writes, not a
 * transaction with the claim: a marker left behind by a holder that ended (a crash between the
 * two writes, a path that closed the run without releasing) is recognised as stale by whoever
 * finds it and taken over, atomically with a check that its holder really ended. So no marker can
 * block a lane whose holder is terminal, and the common path costs one write per marker change.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LedgerKeys } from '../resources.js';
import { TERMINAL_STATUSES } from '../core/vocabulary.js';
import { failedItem, isConditionalCheckFailure } from './failure-item.js';
import { newWriteId } from './write-id.js';

export interface LaneHolder {
  readonly slot: number;
  readonly shard: number;
}

export type AcquireResult =
  /** Taken now: the lane was free. */
  | { readonly kind: 'acquired' }
  /** Already ours (a retry, an UNKNOWN run, a takeover of our own run). */
  | { readonly kind: 'held' }
  /** Another run holds the lane. */
  | { readonly kind: 'blocked'; readonly holderSlot: number; readonly since?: number };

function isCancellation(error: unknown): error is TransactionCanceledException {
  return error instanceof TransactionCanceledException || (error as { name?: string })?.name === 'TransactionCanceledException';
}

export class LaneStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  private key(job: string, shard: number) {
    return { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.activeSk(shard) };
  }

  private item(job: string, holder: LaneHolder, now: number, writeId: string) {
    return { ...this.key(job, holder.shard), holderSk: LedgerKeys.runSk(holder.slot, holder.shard), holderSlot: holder.slot, since: now, lastWrite: writeId };
  }

  /** Takes the lane for `holder` if it is free or already the holder's. */
  async acquire(job: string, holder: LaneHolder, now: number): Promise<AcquireResult> {
    const writeId = newWriteId();
    const laneFree = 'attribute_not_exists(pk)';
    const alreadyOurs = 'holderSk = :holderSk';
    try {
      const { Attributes } = await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: this.item(job, holder, now, writeId),
          ConditionExpression: `${laneFree} OR ${alreadyOurs}`,
          ExpressionAttributeValues: { ':holderSk': LedgerKeys.runSk(holder.slot, holder.shard) },
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return Attributes ? { kind: 'held' } : { kind: 'acquired' };
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      const current = failedItem(error);
      // Our own put, committed before its response was lost and retried by the SDK.
      if (!current || current.lastWrite === writeId) return { kind: 'acquired' };
      return { kind: 'blocked', holderSlot: current.holderSlot as number, since: current.since as number | undefined };
    }
  }

  /**
   * Takes the lane from a holder that has ended (or whose item is gone), atomically with a check of
   * that holder run: if it was revived or is still open, nothing changes and false is returned.
   */
  async takeFromEnded(job: string, holder: LaneHolder, stale: LaneHolder, now: number): Promise<boolean> {
    const writeId = newWriteId();
    const staleStillHolds = 'holderSk = :staleSk';
    const staleRunEnded = `attribute_not_exists(pk) OR #status IN (${TERMINAL_STATUSES.map((_, i) => `:t${i}`).join(', ')})`;
    try {
      await this.doc.send(
        new TransactWriteCommand({
          ClientRequestToken: `lane-${writeId}`,
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: this.item(job, holder, now, writeId),
                ConditionExpression: staleStillHolds,
                ExpressionAttributeValues: { ':staleSk': LedgerKeys.runSk(stale.slot, stale.shard) },
              },
            },
            {
              ConditionCheck: {
                TableName: this.tableName,
                Key: { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.runSk(stale.slot, stale.shard) },
                ConditionExpression: staleRunEnded,
                ExpressionAttributeNames: { '#status': 'status' },
                ExpressionAttributeValues: Object.fromEntries(TERMINAL_STATUSES.map((s, i) => [`:t${i}`, s])),
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (!isCancellation(error)) throw error;
      const reasons = error.CancellationReasons ?? [];
      if (reasons.some((r) => r.Code === 'ConditionalCheckFailed')) {
        // A retry of our own committed transaction finds the marker naming us.
        const marker = await this.read(job, holder.shard);
        return marker?.holderSlot === holder.slot && marker.lastWrite === writeId;
      }
      throw error;
    }
  }

  /** Frees the lane if `holder` still holds it; false when it did not (already freed or taken over). */
  async release(job: string, holder: LaneHolder): Promise<boolean> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: this.key(job, holder.shard),
          ConditionExpression: 'holderSk = :holderSk',
          ExpressionAttributeValues: { ':holderSk': LedgerKeys.runSk(holder.slot, holder.shard) },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /** The lane's marker as stored (consistent), or undefined when the lane is free. */
  async read(job: string, shard: number): Promise<{ holderSlot: number; since?: number; lastWrite?: string } | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.key(job, shard), ConsistentRead: true }));
    return Item ? { holderSlot: Item.holderSlot as number, since: Item.since as number | undefined, lastWrite: Item.lastWrite as string | undefined } : undefined;
  }
}
