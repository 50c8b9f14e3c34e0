/**
 * Markers of exclusive lanes (overlap policies other than parallel; DESIGN §8 "Lanes"). One item
 * per (job, shard), with five attributes at most:
 * - `holderSk`: the run holding the lane (its slot is read from the key); absent when the lane is free;
 * - `holderToken`: the fencing token of the holder's claim, written by the take under the claim
 *   (the confirm): a release conditional on it is refused to an earlier incarnation of the same
 *   run (one that ended, was revived by `ops retry` and claimed again before that release landed);
 * - `since`: when the holder took it;
 * - `lastWrite`: the id of the last write, so that a retried write recognises its own commit and
 *   `advanceFloor` sees whether anybody wrote since the release it follows;
 * - `floor` (forbid-queue): every open run of the lane has a slot at or above it (absent: none
 *   is known, so a look reads the lane from its first run).
 * The item stays when the lane is freed (its floor is kept). Writes are plain conditional
 * updates, not transactions with the run: a marker left by a holder that ended (a crash between
 * its outcome and its release) is recognised by whoever finds it and taken over, atomically with
 * a check that its holder really ended. Earlier versions' shapes are read and converted in place:
 * a marker naming holder slot 0 (a "vacant" marker that only carried a flag) is a free lane, and
 * the waiting flags and the `holderSlot` copy they wrote are removed by the next holder's write.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LedgerKeys } from '../core/resources.js';
import { TERMINAL_STATUSES } from '../core/vocabulary.js';
import { conditionalWrite, transactWrite, wroteBy } from './conditional.js';
import { newWriteId } from './write-id.js';

export interface LaneHolder {
  readonly slot: number;
  readonly shard: number;
}

export type AcquireResult =
  /** Taken now (the lane was free), or already ours (a retry, our next attempt). */
  | { readonly kind: 'acquired' | 'held'; readonly floor?: number }
  /** Another run holds the lane. */
  | { readonly kind: 'blocked'; readonly holderSlot: number; readonly since?: number; readonly floor?: number };

export type ReleaseResult =
  /** Freed by this call (or by our own earlier commit whose response was lost). */
  | { readonly freed: true; readonly writeId: string; readonly floor?: number }
  /** Not ours to free: `holderSlot` is who holds it now (absent: nobody, the lane is free). */
  | { readonly freed: false; readonly holderSlot?: number; readonly floor?: number };

export interface LaneMarker {
  readonly holderSlot?: number;
  readonly holderToken?: number;
  readonly since?: number;
  readonly lastWrite?: string;
  readonly floor?: number;
}

/** The holder slot of an earlier version's "vacant" marker (a free lane that carried a flag). */
export const VACANT_SLOT = 0;

/** Attributes earlier versions wrote (waiting flags, a copy of the holder's slot); removed by every holder write. */
const EARLIER_FLAGS = 'holderSlot, runsWaiting, olderWaiting, oldestWaitingSlot, flagsWaiting';

/** The slot a run's sort key names (`RUN#<ISO slot>#<shard>`), or undefined. */
function slotOfRunSk(sk: string): number | undefined {
  if (!sk.startsWith(LedgerKeys.runSkPrefix)) return undefined;
  const { slot } = LedgerKeys.runOfSk(sk);
  return Number.isNaN(slot) ? undefined : slot;
}

/** A marker item as the protocol reads it: a vacant or holder-less one is a free lane. */
export function markerOf(item: Record<string, unknown> | undefined): LaneMarker | undefined {
  if (!item) return undefined;
  const named = typeof item.holderSk === 'string' ? slotOfRunSk(item.holderSk) : undefined;
  const holderSlot = named !== undefined && named !== VACANT_SLOT && item.holderSlot !== VACANT_SLOT ? named : undefined;
  return {
    ...(holderSlot !== undefined ? { holderSlot } : {}),
    ...(holderSlot !== undefined && typeof item.holderToken === 'number' ? { holderToken: item.holderToken } : {}),
    ...(holderSlot !== undefined && typeof item.since === 'number' ? { since: item.since } : {}),
    ...(typeof item.lastWrite === 'string' ? { lastWrite: item.lastWrite } : {}),
    ...(typeof item.floor === 'number' ? { floor: item.floor } : {}),
  };
}

/** The holder's recorded token is not newer than `:token` (none recorded: a take whose claim is to come). */
const TOKEN_NOT_NEWER = '(attribute_not_exists(holderToken) OR holderToken <= :token)';

const floorOf = (marker: LaneMarker | undefined) => (marker?.floor !== undefined ? { floor: marker.floor } : {});

export class LaneStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  private key(job: string, shard: number) {
    return { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.activeSk(shard) };
  }

  private holderSk(holder: LaneHolder): string {
    return LedgerKeys.runSk(holder.slot, holder.shard);
  }

  /**
   * The holder's write: names it, stamps the write, drops earlier versions' attributes. The
   * holder's token: `set` writes it (the take under the claim), `drop` removes it (a new holder
   * whose claim is still to come), `keep` leaves it (a take of a lane the run holds already).
   */
  private holderUpdate(holder: LaneHolder, now: number, writeId: string, token: { set: number } | 'drop' | 'keep') {
    const setToken = typeof token === 'object' ? ', holderToken = :holderToken' : '';
    const dropToken = token === 'drop' ? ', holderToken' : '';
    return {
      UpdateExpression: `SET holderSk = :holderSk, since = :since, lastWrite = :lastWrite${setToken} REMOVE ${EARLIER_FLAGS}${dropToken}`,
      values: {
        ':holderSk': this.holderSk(holder),
        ':since': now,
        ':lastWrite': writeId,
        ...(typeof token === 'object' ? { ':holderToken': token.set } : {}),
      },
    };
  }

  /**
   * Takes the lane for `holder` if it is free or already the holder's. `writeId` marks this take
   * on the marker: a release conditional on it frees only what this take took. `token` (the take
   * under the claim) records the claim's fencing token, unless a later claim of the run recorded
   * a newer one: then the lane is another incarnation's, and the result is 'blocked' by our slot.
   */
  async acquire(job: string, holder: LaneHolder, now: number, writeId = newWriteId(), token?: number): Promise<AcquireResult> {
    const laneFree = '(attribute_not_exists(holderSk) OR holderSlot = :vacant)';
    const alreadyOurs = token === undefined ? 'holderSk = :holderSk' : `(holderSk = :holderSk AND ${TOKEN_NOT_NEWER})`;
    const update = this.holderUpdate(holder, now, writeId, token === undefined ? 'keep' : { set: token });
    const result = await conditionalWrite(
      this.doc,
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(job, holder.shard),
        UpdateExpression: update.UpdateExpression,
        ConditionExpression: `${laneFree} OR ${alreadyOurs}`,
        ExpressionAttributeValues: { ...update.values, ':vacant': VACANT_SLOT, ...(token !== undefined ? { ':token': token } : {}) },
        ReturnValues: 'ALL_OLD',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      // Our own write, committed before its response was lost and retried by the SDK.
      { ownCommit: wroteBy(writeId) },
    );
    if (result.kind === 'ok') {
      const before = markerOf(result.attributes);
      // Our own take retried by the SDK after its response was lost passes `alreadyOurs`: it is
      // still this call's take, not an earlier one's.
      const ours = before?.holderSlot === holder.slot && before.lastWrite !== writeId;
      return { kind: ours ? 'held' : 'acquired', ...floorOf(before) };
    }
    const current = markerOf(result.current);
    if (result.kind === 'ownCommit') return { kind: 'acquired', ...floorOf(current) };
    // Freed between the failed condition and now cannot be: the item returned is the one that
    // failed it. One without a holder means a malformed marker: refuse rather than guess.
    if (current?.holderSlot === undefined)
      throw new Error(`lane marker of ${job} shard ${holder.shard} refused the lane without naming a holder`);
    return {
      kind: 'blocked',
      holderSlot: current.holderSlot,
      ...(current.since !== undefined ? { since: current.since } : {}),
      ...floorOf(current),
    };
  }

  /**
   * Takes the lane from a holder that has ended (or whose item is gone), atomically with a check of
   * that holder run: if it was revived or is still open, nothing changes and false is returned.
   */
  async takeFromEnded(job: string, holder: LaneHolder, stale: LaneHolder, now: number, writeId = newWriteId()): Promise<boolean> {
    const staleStillHolds = 'holderSk = :staleSk';
    const staleRunEnded = `attribute_not_exists(pk) OR #status IN (${TERMINAL_STATUSES.map((_, i) => `:t${i}`).join(', ')})`;
    const update = this.holderUpdate(holder, now, writeId, 'drop');
    const result = await transactWrite(
      this.doc,
      new TransactWriteCommand({
        ClientRequestToken: `lane-${writeId}`,
        TransactItems: [
          {
            Update: {
              TableName: this.tableName,
              Key: this.key(job, holder.shard),
              UpdateExpression: update.UpdateExpression,
              ConditionExpression: staleStillHolds,
              ExpressionAttributeValues: { ...update.values, ':staleSk': this.holderSk(stale) },
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
    if (result.kind !== 'conditionFailed') return true;
    // A retry of our own committed transaction finds the marker naming us, with our write.
    const marker = await this.read(job, holder.shard);
    return marker?.holderSlot === holder.slot && marker.lastWrite === writeId;
  }

  /**
   * Frees the lane if `holder` holds it; the floor stays. A refusal says who holds the lane now:
   * nobody means our own release committed before its response was lost, or a later holder's
   * release came after it; either way the caller looks for the next run, as after a release.
   * Options: `token`, the fencing token the caller knows the run by: refused if a later claim of
   * the run recorded a newer one (that incarnation holds the lane and releases it when it ends);
   * `onlyTake`, only if the marker is still as that take left it (no other copy of the run took
   * it since).
   */
  async release(
    job: string,
    holder: LaneHolder,
    options: { readonly onlyTake?: string; readonly token?: number } = {},
  ): Promise<ReleaseResult> {
    const writeId = newWriteId();
    const holderStillHolds = 'holderSk = :holderSk';
    const takeUntouched = options.onlyTake !== undefined ? ' AND lastWrite = :take' : '';
    const sameIncarnation = options.token !== undefined ? ` AND ${TOKEN_NOT_NEWER}` : '';
    const result = await conditionalWrite(
      this.doc,
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(job, holder.shard),
        UpdateExpression: `SET lastWrite = :lastWrite REMOVE holderSk, holderToken, since, ${EARLIER_FLAGS}`,
        ConditionExpression: `${holderStillHolds}${takeUntouched}${sameIncarnation}`,
        ExpressionAttributeValues: {
          ':holderSk': this.holderSk(holder),
          ':lastWrite': writeId,
          ...(options.onlyTake !== undefined ? { ':take': options.onlyTake } : {}),
          ...(options.token !== undefined ? { ':token': options.token } : {}),
        },
        ReturnValues: 'ALL_OLD',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      { ownCommit: wroteBy(writeId) },
    );
    if (result.kind === 'ok') return { freed: true, writeId, ...floorOf(markerOf(result.attributes)) };
    const current = markerOf(result.current);
    if (result.kind === 'ownCommit') return { freed: true, writeId, ...floorOf(current) };
    return { freed: false, ...(current?.holderSlot !== undefined ? { holderSlot: current.holderSlot } : {}), ...floorOf(current) };
  }

  /**
   * Keeps the floor at or below `slot`, for a run just created or revived there (called after
   * the put, before the send: see DESIGN §8). A lane without a marker or a floor reads from its
   * first run already: nothing is written.
   */
  async lowerFloor(job: string, shard: number, slot: number): Promise<void> {
    const floorAbove = 'floor > :slot';
    const lowered = await conditionalWrite(
      this.doc,
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(job, shard),
        UpdateExpression: 'SET floor = :slot, lastWrite = :lastWrite',
        ConditionExpression: floorAbove,
        ExpressionAttributeValues: { ':slot': slot, ':lastWrite': newWriteId() },
      }),
    );
    if (lowered.kind === 'ok') return;
    // At or below already (or no floor: the lane is read from its start). The write is stamped
    // all the same: a look that read the lane before this run's put must not raise the floor
    // past it (advanceFloor's nobodyWroteSince).
    const markerExists = 'attribute_exists(pk)';
    // Refused: no marker, so no look to hold back.
    await conditionalWrite(
      this.doc,
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(job, shard),
        UpdateExpression: 'SET lastWrite = :lastWrite',
        ConditionExpression: markerExists,
        ExpressionAttributeValues: { ':lastWrite': newWriteId() },
      }),
    );
  }

  /**
   * Raises the floor after a look that found every run below `floor` ended, only if nobody wrote
   * the marker since the release the look follows (`releaseWrite`): a run created or revived below
   * meanwhile lowered it, and a new holder looks again when it ends. Best effort: a floor left low
   * costs a longer read, never a missed run.
   */
  async advanceFloor(job: string, shard: number, releaseWrite: string, floor: number): Promise<boolean> {
    const nobodyWroteSince = 'lastWrite = :releaseWrite';
    const result = await conditionalWrite(
      this.doc,
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.key(job, shard),
        UpdateExpression: 'SET floor = :floor, lastWrite = :lastWrite',
        ConditionExpression: nobodyWroteSince,
        ExpressionAttributeValues: { ':floor': floor, ':releaseWrite': releaseWrite, ':lastWrite': newWriteId() },
      }),
    );
    return result.kind === 'ok';
  }

  /** The lane's marker as stored (consistent read); undefined when there is no item. */
  async read(job: string, shard: number): Promise<LaneMarker | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.key(job, shard), ConsistentRead: true }));
    return markerOf(Item);
  }
}
