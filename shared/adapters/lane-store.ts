/**
 * Active-run markers of exclusive lanes (overlap policies other than parallel; DESIGN §8, §11).
 * One marker per (job, shard) names the run that holds the lane. A run that waits for the lane
 * says so on the marker (`runsWaiting`), so that the holder looks for a run to hand the lane on to
 * only when one may wait: the common, unqueued run ends without that read. A run that flags a
 * free lane writes a marker naming the vacant holder (`VACANT_SLOT`, a slot no run has): the lane
 * stays free, and a version of the code from before the flag takes such a marker for a vanished
 * holder's and takes it over, as it would any. A marker taken before the flag existed (no
 * `flagsWaiting`) is read as flagged: its waiting runs never said so. Plain conditional writes, not a
 * transaction with the claim: a marker left behind by a holder that ended (a crash between the
 * two writes, a path that closed the run without releasing) is recognised as stale by whoever
 * finds it and taken over, atomically with a check that its holder really ended. So no marker can
 * block a lane whose holder is terminal, and the common path costs one write per marker change.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
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

export type ReleaseResult =
  /**
   * Freed. `olderWaiting`: a run older than the holder found the lane held and waits for it (it
   * opened behind the holder's back: a backfill, an operator's retry, a catch-up slot planned late).
   */
  | {
      readonly freed: true;
      readonly olderWaiting: boolean;
      /** The oldest slot that said it waits (absent on a flag written before slots were recorded). */
      readonly oldestWaitingSlot?: number;
      /** A run said it waits for a hand-on (or a hand-on passed the lane on: more may wait). */
      readonly runsWaiting: boolean;
    }
  /** The holder did not hold it (already freed, taken over, or our own delete whose response was lost). */
  | { readonly freed: false };

/** The holder slot of a marker that only carries a waiting run's flag: no run has it (1970-01-01). */
export const VACANT_SLOT = 0;

function isCancellation(error: unknown): error is TransactionCanceledException {
  return error instanceof TransactionCanceledException || (error as { name?: string })?.name === 'TransactionCanceledException';
}

/** The oldest waiting slot a marker records (absent on markers written before slots were recorded). */
function oldestWaitingSlotOf(marker: Record<string, unknown> | undefined): number | undefined {
  return typeof marker?.oldestWaitingSlot === 'number' ? marker.oldestWaitingSlot : undefined;
}

export class LaneStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  private key(job: string, shard: number) {
    return { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.activeSk(shard) };
  }

  /**
   * The marker's holder fields. Written with SET, never a whole-item put, so that a holder that
   * takes its own lane again (its next attempt) or a takeover keeps the `olderWaiting` flag that
   * a blocked older run left on the marker.
   */
  private holderFields(holder: LaneHolder, now: number, writeId: string) {
    return {
      // flagsWaiting: this marker's waiting runs say so (runsWaiting); see release.
      UpdateExpression: 'SET holderSk = :holderSk, holderSlot = :holderSlot, since = :since, lastWrite = :lastWrite, flagsWaiting = :flags',
      values: { ':holderSk': LedgerKeys.runSk(holder.slot, holder.shard), ':holderSlot': holder.slot, ':since': now, ':lastWrite': writeId, ':flags': true },
    };
  }

  private vacantSk(shard: number): string {
    return LedgerKeys.runSk(VACANT_SLOT, shard);
  }

  /** Takes the lane for `holder` if it is free or already the holder's. */
  async acquire(job: string, holder: LaneHolder, now: number): Promise<AcquireResult> {
    const writeId = newWriteId();
    // Free: no marker, or a vacant one that only carries a waiting run's flag (kept: the new holder hands on).
    const laneFree = '(attribute_not_exists(pk) OR holderSk = :vacantSk)';
    // Ours, taken since waiting runs flag markers (one from before is upgraded below).
    const alreadyOurs = '(holderSk = :holderSk AND flagsWaiting = :flags)';
    const fields = this.holderFields(holder, now, writeId);
    try {
      const { Attributes } = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(job, holder.shard),
          UpdateExpression: fields.UpdateExpression,
          ConditionExpression: `${laneFree} OR ${alreadyOurs}`,
          ExpressionAttributeValues: { ...fields.values, ':vacantSk': this.vacantSk(holder.shard) },
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return Attributes?.holderSk === LedgerKeys.runSk(holder.slot, holder.shard) ? { kind: 'held' } : { kind: 'acquired' };
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      const current = failedItem(error);
      // Our own put, committed before its response was lost and retried by the SDK.
      if (!current || current.lastWrite === writeId) return { kind: 'acquired' };
      if (current.holderSk === LedgerKeys.runSk(holder.slot, holder.shard)) return this.upgradeOwn(job, holder, now);
      return { kind: 'blocked', holderSlot: current.holderSlot as number, since: current.since as number | undefined };
    }
  }

  /**
   * Our own marker, taken before waiting runs flagged markers (no `flagsWaiting`): runs may wait
   * behind it unflagged. Flagged and upgraded in one write, so that no failure between the two
   * can leave it upgraded but unflagged (its waiting runs would then never be looked for).
   */
  private async upgradeOwn(job: string, holder: LaneHolder, now: number): Promise<AcquireResult> {
    const fields = this.holderFields(holder, now, newWriteId());
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(job, holder.shard),
          UpdateExpression: `${fields.UpdateExpression}, runsWaiting = :yes`,
          ConditionExpression: 'holderSk = :holderSk',
          ExpressionAttributeValues: { ...fields.values, ':yes': true },
        }),
      );
      return { kind: 'held' };
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      // Freed or taken meanwhile: decide again.
      return this.acquire(job, holder, now);
    }
  }

  /**
   * Takes the lane from a holder that has ended (or whose item is gone), atomically with a check of
   * that holder run: if it was revived or is still open, nothing changes and false is returned.
   */
  async takeFromEnded(job: string, holder: LaneHolder, stale: LaneHolder, now: number): Promise<boolean> {
    const writeId = newWriteId();
    const staleStillHolds = 'holderSk = :staleSk';
    const fields = this.holderFields(holder, now, writeId);
    // Who waited for the ended holder cannot be told (a marker from before the flag has waiting
    // runs that never said so): the new holder looks for the next run when it ends.
    const flagged = { UpdateExpression: `${fields.UpdateExpression}, runsWaiting = :yes`, values: { ...fields.values, ':yes': true } };
    const staleRunEnded = `attribute_not_exists(pk) OR #status IN (${TERMINAL_STATUSES.map((_, i) => `:t${i}`).join(', ')})`;
    try {
      await this.doc.send(
        new TransactWriteCommand({
          ClientRequestToken: `lane-${writeId}`,
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: this.key(job, holder.shard),
                UpdateExpression: flagged.UpdateExpression,
                ConditionExpression: staleStillHolds,
                ExpressionAttributeValues: { ...flagged.values, ':staleSk': LedgerKeys.runSk(stale.slot, stale.shard) },
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

  /**
   * Marks the lane as having a run older than its holder waiting for it, if `holder` still holds
   * it, and records the oldest such slot (the holder hands the lane to it, however far back it
   * lies: a bounded look-back misses a run revived many slots back). True when the lane is still
   * the holder's (marked now, or an older waiting slot was recorded already: that run goes first
   * and hands on in slot order); false when it is not (the lane was freed or taken meanwhile: the
   * older run must try the lane again rather than wait for a hand-on decided without it).
   */
  async markOlderWaiting(job: string, holder: LaneHolder, waitingSlot: number): Promise<boolean> {
    const holderSk = LedgerKeys.runSk(holder.slot, holder.shard);
    const holderStillHolds = 'holderSk = :holderSk';
    const noOlderRecorded = '(attribute_not_exists(oldestWaitingSlot) OR oldestWaitingSlot > :waitingSlot)';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(job, holder.shard),
          UpdateExpression: 'SET olderWaiting = :yes, oldestWaitingSlot = :waitingSlot',
          ConditionExpression: `${holderStillHolds} AND ${noOlderRecorded}`,
          ExpressionAttributeValues: { ':holderSk': holderSk, ':yes': true, ':waitingSlot': waitingSlot },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return true;
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      // Still the holder's: an older (or the same, a retry of our own write) slot is recorded.
      return failedItem(error)?.holderSk === holderSk;
    }
  }

  /**
   * Says on the lane's marker that a run waits for a hand-on. With `holder`: only while that run
   * still holds the lane (true), else nothing is written (false: the holder let go meanwhile, and
   * decided its hand-on without the waiting run, which must try the lane again). Without: whoever
   * holds the lane, or nobody (a free lane gets a vacant marker: the flag waits there for the next
   * holder), always true, and then `from`, the slot the queue resumes from, is recorded as the
   * oldest waiting slot (the oldest wins): whoever takes the flag, however much newer than the
   * waiting runs (its look-ahead sees only past itself), looks back from there. The flags are
   * consumed by the release that returns them.
   */
  async markWaiting(job: string, shard: number, holder: LaneHolder): Promise<boolean>;
  async markWaiting(job: string, shard: number, holder: undefined, from: number): Promise<boolean>;
  async markWaiting(job: string, shard: number, holder: LaneHolder | undefined, from?: number): Promise<boolean> {
    if (!holder && from !== undefined) {
      const noOlderRecorded = '(attribute_not_exists(oldestWaitingSlot) OR oldestWaitingSlot > :from)';
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: this.key(job, shard),
            UpdateExpression:
              'SET runsWaiting = :yes, olderWaiting = :yes, oldestWaitingSlot = :from, holderSk = if_not_exists(holderSk, :vacantSk), holderSlot = if_not_exists(holderSlot, :vacantSlot)',
            ConditionExpression: noOlderRecorded,
            ExpressionAttributeValues: { ':yes': true, ':from': from, ':vacantSk': this.vacantSk(shard), ':vacantSlot': VACANT_SLOT },
          }),
        );
        return true;
      } catch (error) {
        if (!isConditionalCheckFailure(error)) throw error;
        // An older slot is recorded already (the queue resumes there): only the flag below.
      }
    }
    const holderStillHolds = 'holderSk = :holderSk';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.key(job, shard),
          UpdateExpression: holder
            ? 'SET runsWaiting = :yes'
            : 'SET runsWaiting = :yes, holderSk = if_not_exists(holderSk, :vacantSk), holderSlot = if_not_exists(holderSlot, :vacantSlot)',
          ...(holder ? { ConditionExpression: holderStillHolds } : {}),
          ExpressionAttributeValues: {
            ':yes': true,
            ...(holder ? { ':holderSk': LedgerKeys.runSk(holder.slot, holder.shard) } : { ':vacantSk': this.vacantSk(shard), ':vacantSlot': VACANT_SLOT }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (holder && isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /** Frees the lane if `holder` still holds it, saying whether a run was waiting for it. */
  async release(job: string, holder: LaneHolder): Promise<ReleaseResult> {
    const holderStillHolds = 'holderSk = :holderSk';
    try {
      const { Attributes } = await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: this.key(job, holder.shard),
          ConditionExpression: holderStillHolds,
          ExpressionAttributeValues: { ':holderSk': LedgerKeys.runSk(holder.slot, holder.shard) },
          ReturnValues: 'ALL_OLD',
        }),
      );
      const oldestWaitingSlot = oldestWaitingSlotOf(Attributes);
      return {
        freed: true,
        olderWaiting: Attributes?.olderWaiting === true,
        ...(oldestWaitingSlot !== undefined ? { oldestWaitingSlot } : {}),
        // A marker taken before waiting runs flagged it: any may wait, unflagged.
        runsWaiting: Attributes?.runsWaiting === true || Attributes?.flagsWaiting !== true,
      };
    } catch (error) {
      if (isConditionalCheckFailure(error)) return { freed: false };
      throw error;
    }
  }

  /** The lane's marker as stored (consistent), or undefined when the lane is free (no marker, or a vacant one). */
  async read(job: string, shard: number): Promise<{ holderSlot: number; since?: number; lastWrite?: string; oldestWaitingSlot?: number } | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.key(job, shard), ConsistentRead: true }));
    if (!Item || Item.holderSk === this.vacantSk(shard)) return undefined;
    return {
      holderSlot: Item.holderSlot as number,
      since: Item.since as number | undefined,
      lastWrite: Item.lastWrite as string | undefined,
      oldestWaitingSlot: oldestWaitingSlotOf(Item),
    };
  }
}
