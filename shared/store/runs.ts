/**
 * Creating runs (DESIGN §5): the conditional put of a run item (at most one per job, slot and
 * shard), the counted put of a `maxRuns` job's slot, and the idempotency keys of `ops trigger`.
 * A put whose response was lost after it committed is recognised as ours on the SDK's retry:
 * by its creator (a planner tick) or its write id.
 */
import { TransactWriteCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { initialFence } from '../core/fence.js';
import { lowersFloor } from '../core/lanes.js';
import { LedgerKeys } from '../core/resources.js';
import { RunOrigin, RunStatus, runKeyOf, type Run } from '../core/vocabulary.js';
import { conditionalWrite, failedCondition, foundItem, isCancellation, transactWrite, wroteBy, type Cancellation } from './conditional.js';
import type { LaneStore } from './lanes.js';
import {
  RunTable,
  runFromItem,
  watchKeys,
  type CountedCreateResult,
  type CreateRunResult,
  type Item,
  type LedgerOptions,
  type NewRun,
  type RunCount,
  type TriggerKey,
} from './run-items.js';
import { newWriteId } from './write-id.js';

/** Attempts of one counted put that lose to a concurrent transaction on the same plan item. */
const COUNT_CONFLICT_ATTEMPTS = 8;

/** A cancelled transaction's reasons include a conflict with a concurrent one. */
function conflicted(reasons: readonly (Cancellation | undefined)[]): boolean {
  return reasons.some((reason) => reason?.code === 'TransactionConflict');
}

export class RunCreation extends RunTable {
  constructor(
    doc: DynamoDBDocumentClient,
    options: LedgerOptions,
    /** The lanes whose floor a forbid-queue run created behind it lowers. */
    private readonly lanes: LaneStore,
  ) {
    super(doc, options);
  }

  /**
   * Conditional put: at most one run item per (job, slot, shard), whoever calls and however often.
   * `creator` identifies the caller's attempt (a planner tick): when the SDK retries a put whose
   * response was lost after it committed, the retry fails its condition on our own item, and the
   * creator tells us the run is ours to dispatch, not another planner's.
   */
  private newRunItem(run: NewRun, now: number, creator?: string): Item {
    const open = run.status === RunStatus.READY;
    const origin = run.origin ?? RunOrigin.PLANNED;
    const item: Item = {
      ...this.runKeyOf(run),
      ...(creator ? { createdBy: creator } : {}),
      job: run.job,
      slot: run.slot,
      shard: run.shard,
      shards: run.shards,
      runKey: runKeyOf(run.job, run.slot, run.shard, run.shards),
      status: run.status,
      fencingToken: initialFence(run.slot),
      attempt: 0,
      createdAt: now,
      ...(origin !== RunOrigin.PLANNED ? { origin } : {}),
      ...(run.fireAt !== undefined && run.fireAt !== run.slot ? { fireAt: run.fireAt } : {}),
      ...(run.note ? { note: run.note } : {}),
      ...(run.triggeredBy ? { triggeredBy: run.triggeredBy } : {}),
      ...(run.overlap ? { overlap: run.overlap } : {}),
      // The history map must exist before an attempt's entry can be set inside it.
      ...(open ? { attempts: {} } : { finishedAt: now, expiresAt: this.expiresAt(now) }),
      ...(open && run.watch ? watchKeys(run) : {}),
      ...(run.reason ? { lastError: { code: run.status, message: run.reason } } : {}),
    };
    return item;
  }

  async createRun(run: NewRun, now: number, creator?: string): Promise<CreateRunResult> {
    const item = this.newRunItem(run, now, creator);
    const noRunYet = 'attribute_not_exists(pk)';
    const result = await conditionalWrite(
      this.doc,
      new PutCommand({
        TableName: this.tableName,
        Item: item,
        ConditionExpression: noRunYet,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      { ownCommit: creator !== undefined ? (existing) => existing.createdBy === creator : undefined },
    );
    if (result.kind === 'ok') return this.created(run, runFromItem(item), now);
    if (result.kind === 'ownCommit') return this.created(run, runFromItem(result.current), now);
    return { created: false, existing: runFromItem(foundItem(result)) };
  }

  /** A run this call created; a forbid-queue lane's floor is lowered after the put, never before (DESIGN §8 "Lanes"). */
  private async created(run: NewRun, created: Run, now: number): Promise<CreateRunResult> {
    if (created.status === RunStatus.SKIPPED) this.observer?.settled?.(run, RunStatus.SKIPPED, run.reason);
    if (created.status === RunStatus.READY && lowersFloor(run.overlap ?? run.laneOverlap, run.slot, now))
      await this.lanes.lowerFloor(run.job, run.shard, run.slot);
    return { created: true, run: created };
  }

  /**
   * The put of a `maxRuns` job's scheduled slot (its shard 0), in one transaction with the count
   * of such slots on the job's plan item: the run is created and counted, or neither. So the
   * count is the number of slots ever created whatever the schedule or `maxRuns` became, and the
   * put past `maxRuns` is refused (`full`). A retry after a lost response is recognised as ours
   * by `creator`, as in createRun (and AWS applies one attempt's token once); an attempt cancelled
   * by a concurrent tick's count of the same job is tried again.
   */
  async createCountedRun(run: NewRun, now: number, creator: string, count: RunCount): Promise<CountedCreateResult> {
    const item = this.newRunItem(run, now, creator);
    const noRunYet = 'attribute_not_exists(pk)';
    for (let attempt = 1; ; attempt++) {
      let reasons: readonly Cancellation[];
      let cause: unknown;
      try {
        const result = await transactWrite(
          this.doc,
          new TransactWriteCommand({
            // One token per attempt: the SDK's own retries of it (a lost response) reuse it, and AWS
            // applies the transaction once; an attempt cancelled by a conflict is a new request.
            ClientRequestToken: `count-${newWriteId()}`,
            TransactItems: [
              {
                Put: {
                  TableName: this.tableName,
                  Item: item,
                  ConditionExpression: noRunYet,
                  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
                },
              },
              {
                Update: {
                  TableName: this.tableName,
                  Key: { pk: LedgerKeys.jobPk(run.job), sk: LedgerKeys.jobPlanSk },
                  UpdateExpression: 'SET #planned = if_not_exists(#planned, :start) + :one',
                  // Without a count yet, the start (0, or a bound recorded by earlier code) must be below maxRuns.
                  ConditionExpression:
                    count.start < count.maxRuns ? 'attribute_not_exists(#planned) OR #planned < :max' : '#planned < :max',
                  ExpressionAttributeNames: { '#planned': 'planned' },
                  ExpressionAttributeValues: { ':start': count.start, ':one': 1, ':max': count.maxRuns },
                },
              },
            ],
          }),
        );
        if (result.kind !== 'conditionFailed') return this.created(run, runFromItem(item), now);
        reasons = result.reasons;
        cause = result.cause;
      } catch (error) {
        if (!isCancellation(error)) throw error;
        reasons = (error.CancellationReasons ?? []).map((reason) => ({ code: reason.Code, item: undefined }));
        cause = error;
      }
      const [put, counted] = reasons;
      if (failedCondition(put) && put?.item) {
        const existing = put.item;
        return existing.createdBy === creator
          ? this.created(run, runFromItem(existing), now)
          : { created: false, existing: runFromItem(existing) };
      }
      if (failedCondition(counted)) return { created: false, full: true };
      // A concurrent tick counting a slot of the same job: try again on the count it left.
      if (!conflicted([put, counted]) || attempt >= COUNT_CONFLICT_ATTEMPTS) throw cause;
      await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** attempt * Math.random()));
    }
  }

  /**
   * Records which manual slot an `ops trigger --idempotency-key` gives its runs, unless the key was
   * used before for this job: then the earlier slot (and shard) is returned, and the trigger
   * creates nothing new. Kept for the ledger's retention. A put whose response was lost after it
   * committed is recognised by its write id on the SDK's retry.
   */
  async reserveTriggerKey(
    job: string,
    key: string,
    want: { readonly slot: number; readonly shard?: number },
    now: number,
  ): Promise<TriggerKey> {
    const writeId = newWriteId();
    const item: Item = {
      pk: LedgerKeys.triggerPk(job),
      sk: LedgerKeys.triggerKeySk(key),
      job,
      key,
      slot: want.slot,
      ...(want.shard !== undefined ? { shard: want.shard } : {}),
      createdAt: now,
      expiresAt: this.expiresAt(now),
      lastWrite: writeId,
    };
    const keyUnused = 'attribute_not_exists(pk)';
    const result = await conditionalWrite(
      this.doc,
      new PutCommand({
        TableName: this.tableName,
        Item: item,
        ConditionExpression: keyUnused,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
      { ownCommit: wroteBy(writeId) },
    );
    if (result.kind === 'ok') return { slot: want.slot, shard: want.shard, fresh: true, createdAt: now };
    const existing = foundItem(result);
    return {
      slot: existing.slot as number,
      shard: existing.shard as number | undefined,
      fresh: result.kind === 'ownCommit',
      createdAt: existing.createdAt as number,
    };
  }

  /** Moves a trigger key to the next manual slot when another trigger took its slot first; returns the key's slot after. */
  async moveTriggerKey(job: string, key: string, from: number, to: number): Promise<number> {
    const stillAtFrom = '#slot = :from';
    const result = await conditionalWrite(
      this.doc,
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: LedgerKeys.triggerPk(job), sk: LedgerKeys.triggerKeySk(key) },
        UpdateExpression: 'SET #slot = :to',
        ConditionExpression: stillAtFrom,
        ExpressionAttributeNames: { '#slot': 'slot' },
        ExpressionAttributeValues: { ':from': from, ':to': to },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    if (result.kind === 'ok') return to;
    // Moved already (by our own retried update, or a concurrent command with the same key).
    return foundItem(result).slot as number;
  }
}
