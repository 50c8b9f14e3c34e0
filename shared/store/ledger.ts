/**
 * The ledger adapter for run items (DESIGN §5, §6): create, claim, heartbeat, checkpoint,
 * complete, settle, and the queries the worker and sweeper need. It marshals, names each
 * condition clause, and maps ConditionalCheckFailedException to domain results using the item
 * DynamoDB returns with the failure (ReturnValuesOnConditionCheckFailure), never an extra read.
 * The rules themselves (what a refusal means, token composition) live in shared/core.
 *
 * Every write that may be retried after a lost response stamps a write id (`lastWrite`): a retry
 * whose condition fails against our own earlier commit is recognised as ours (DESIGN §12).
 *
 * The planner's own items and the exclusive lanes' markers have their own adapters, reachable as
 * `ledger.planning` and `ledger.lanes`, on the same table and client.
 */
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { mapBounded } from '../core/concurrency.js';
import { claimsOf, initialFence, MAX_CLAIMS_PER_SLOT } from '../core/fence.js';
import { lowersFloor } from '../core/lanes.js';
import { explainClaimRefusal, type ClaimResult } from '../core/lease.js';
import { ATTEMPT_HISTORY_LIMIT, boundMessage, MAX_HISTORY_MESSAGE_CHARS } from '../core/limits.js';
import type { Transition } from '../core/outcome.js';
import { openBucketOf } from '../core/planner-state.js';
import { KEY_SPREAD, LedgerKeys, LEDGER_TABLE } from '../core/resources.js';
import { failedItem, isConditionalCheckFailure, unmarshallFailureItem } from './failure-item.js';
import { LaneStore } from './lanes.js';
import type { LedgerObserver, SettledStatus } from './observer.js';
import { PlannerStore } from './planner-state.js';
import { newWriteId } from './write-id.js';
import { isWaiting, OPEN_STATUSES, RunOrigin, RunStatus, runKeyOf, TERMINAL_STATUSES, type AttemptRecord, type Run, type RunId } from '../core/vocabulary.js';

type Item = Record<string, unknown>;

export interface NewRun {
  readonly job: string;
  readonly slot: number;
  readonly shard: number;
  readonly shards: number;
  /** READY for runs to execute; SKIPPED for slots a policy decided not to run (visible to ops). */
  readonly status: typeof RunStatus.READY | typeof RunStatus.SKIPPED;
  readonly reason?: string;
  /** @default RunOrigin.PLANNED */
  readonly origin?: RunOrigin;
  /**
   * Put the run in the sweeper's watch index at once: for runs the window sweep will not visit
   * because their slot is already behind it (catch-up, backfill, manual). @default false
   */
  readonly watch?: boolean;
  /** When the run should start, if not at its slot. */
  readonly fireAt?: number;
  /** An operator's note (manual runs). */
  readonly note?: string;
  /** Who triggered a manual run. */
  readonly triggeredBy?: string;
  /** A manual run's overlap policy, when it overrides the job's. */
  readonly overlap?: string;
  /**
   * The job's overlap policy: a forbid-queue run created at a slot already past lowers its lane's
   * floor after the put (DESIGN §8 "Lanes"), so that the lane's holder finds it when it ends.
   */
  readonly laneOverlap?: string;
}

/** Where an `ops trigger --idempotency-key` put (or puts) its runs; `fresh`: this call recorded the key. */
export interface TriggerKey {
  readonly slot: number;
  readonly shard?: number;
  readonly fresh: boolean;
  readonly createdAt: number;
}

export type CreateRunResult = { readonly created: true; readonly run: Run } | { readonly created: false; readonly existing: Run };

/** A `maxRuns` job's count of scheduled slots, as `createRun` advances it with the put of a slot's shard 0. */
export interface RunCount {
  readonly maxRuns: number;
  /** The count where the plan item has none yet: 0, or what a bound recorded by earlier code implies. */
  readonly start: number;
}

/** The count was already at `maxRuns`: the run was not created. */
export type CountedCreateResult = CreateRunResult | { readonly created: false; readonly full: true };

/** Attempts of one counted put that lose to a concurrent transaction on the same plan item. */
const COUNT_CONFLICT_ATTEMPTS = 8;

/** The outcome an attempt records (the pure core's transition). */
export type Outcome = Transition;

/** A write guarded by the lease was refused: the caller no longer holds it. */
export type LeaseCheck = { readonly ok: true } | { readonly ok: false; readonly current: Run | undefined };

export interface LedgerOptions {
  readonly tableName: string;
  /** Days terminal runs stay before TTL removes them. @default 30 */
  readonly retentionDays?: number;
  /** Told of outcomes, runs ended without an attempt and pauses (the local runtime's report). */
  readonly observer?: LedgerObserver;
}

/** What `complete` remembers of the attempt in the run's history. */
export interface AttemptFacts {
  /** The status the claim took the run from. */
  readonly from?: RunStatus;
  /** Handler time this invocation spent on the attempt (kept across a refunded yield). */
  readonly elapsedMs?: number;
}

const WAITING = [RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN] as const;

export function runFromItem(item: Item): Run {
  const attempts = item.attempts as Record<string, AttemptRecord> | undefined;
  return {
    job: item.job as string,
    slot: item.slot as number,
    shard: item.shard as number,
    shards: item.shards as number,
    runKey: item.runKey as string,
    status: item.status as RunStatus,
    owner: item.owner as string | undefined,
    leaseUntil: item.leaseUntil as number | undefined,
    fencingToken: item.fencingToken as number,
    attempt: item.attempt as number,
    nextAttemptAt: item.nextAttemptAt as number | undefined,
    lastError: item.lastError as Run['lastError'],
    createdAt: item.createdAt as number,
    dispatchedAt: item.dispatchedAt as number | undefined,
    startedAt: item.startedAt as number | undefined,
    finishedAt: item.finishedAt as number | undefined,
    checkpoint: item.checkpoint,
    evidence: item.evidence,
    expiresAt: item.expiresAt as number | undefined,
    origin: item.origin as RunOrigin | undefined,
    fireAt: item.fireAt as number | undefined,
    claimedFrom: item.claimedFrom as RunStatus | undefined,
    resultUnknown: item.resultUnknown === true ? true : undefined,
    attempts: attempts ? Object.values(attempts).sort((a, b) => a.claim - b.claim) : undefined,
    note: item.note as string | undefined,
    triggeredBy: item.triggeredBy as string | undefined,
    overlap: item.overlap as string | undefined,
    redispatches: item.redispatches as number | undefined,
    revivals: item.revivals as number | undefined,
    revivedAt: (item.lastRevival as { at?: number } | undefined)?.at,
    attemptElapsedMs: item.attemptElapsed as number | undefined,
  };
}

/**
 * The index keys of a DEAD run that waits for an operator: the same bucket and sort key as its
 * watch entry, under DEAD#bb, which the sweeper never reads (it must not re-send a DEAD run).
 */
export function deadKeys(run: Pick<Run, 'job' | 'slot' | 'shard'>): { openPk: string; openSk: string } {
  return { openPk: LedgerKeys.deadPk(openBucketOf(run.job, run.slot, run.shard)), openSk: LedgerKeys.openSk(run.slot, run.job, run.shard) };
}

/** The watch-index keys of a run. */
export function watchKeys(run: Pick<Run, 'job' | 'slot' | 'shard'>): { openPk: string; openSk: string } {
  return { openPk: LedgerKeys.openPk(openBucketOf(run.job, run.slot, run.shard)), openSk: LedgerKeys.openSk(run.slot, run.job, run.shard) };
}

export class Ledger {
  readonly tableName: string;
  readonly retentionSeconds: number;
  /** The planner's layout, watermarks, job planning state and exception lists. */
  readonly planning: PlannerStore;
  /** The exclusive lanes' active-run markers. */
  readonly lanes: LaneStore;
  private readonly observer: LedgerObserver | undefined;

  constructor(
    readonly doc: DynamoDBDocumentClient,
    options: LedgerOptions,
  ) {
    this.tableName = options.tableName;
    this.retentionSeconds = (options.retentionDays ?? 30) * 86_400;
    this.observer = options.observer;
    this.planning = new PlannerStore(doc, this.tableName, options.observer);
    this.lanes = new LaneStore(doc, this.tableName);
  }

  runKeyOf(id: RunId): { pk: string; sk: string } {
    return { pk: LedgerKeys.jobPk(id.job), sk: LedgerKeys.runSk(id.slot, id.shard) };
  }

  private expiresAt(now: number): number {
    return Math.floor(now / 1000) + this.retentionSeconds;
  }

  // ---------------------------------------------------------------- create and read

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
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (isConditionalCheckFailure(error)) {
        const existing = failedItem(error);
        if (existing && creator !== undefined && existing.createdBy === creator) return this.created(run, runFromItem(existing), now);
        if (existing) return { created: false, existing: runFromItem(existing) };
      }
      throw error;
    }
    return this.created(run, runFromItem(item), now);
  }

  /** A run this call created; a forbid-queue lane's floor is lowered after the put, never before (DESIGN §8 "Lanes"). */
  private async created(run: NewRun, created: Run, now: number): Promise<CreateRunResult> {
    if (created.status === RunStatus.SKIPPED) this.observer?.settled?.(run, RunStatus.SKIPPED, run.reason);
    if (created.status === RunStatus.READY && lowersFloor(run.overlap ?? run.laneOverlap, run.slot, now)) await this.lanes.lowerFloor(run.job, run.shard, run.slot);
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
    for (let attempt = 1; ; attempt++) {
      try {
        await this.doc.send(
          new TransactWriteCommand({
            // One token per attempt: the SDK's own retries of it (a lost response) reuse it, and AWS
            // applies the transaction once; an attempt cancelled by a conflict is a new request.
            ClientRequestToken: `count-${newWriteId()}`,
            TransactItems: [
              { Put: { TableName: this.tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
              {
                Update: {
                  TableName: this.tableName,
                  Key: { pk: LedgerKeys.jobPk(run.job), sk: LedgerKeys.jobPlanSk },
                  UpdateExpression: 'SET #planned = if_not_exists(#planned, :start) + :one',
                  // Without a count yet, the start (0, or a bound recorded by earlier code) must be below maxRuns.
                  ConditionExpression: count.start < count.maxRuns ? 'attribute_not_exists(#planned) OR #planned < :max' : '#planned < :max',
                  ExpressionAttributeNames: { '#planned': 'planned' },
                  ExpressionAttributeValues: { ':start': count.start, ':one': 1, ':max': count.maxRuns },
                },
              },
            ],
          }),
        );
        return this.created(run, runFromItem(item), now);
      } catch (error) {
        if (!(error instanceof TransactionCanceledException) && (error as { name?: string })?.name !== 'TransactionCanceledException') throw error;
        const [put, counted] = (error as TransactionCanceledException).CancellationReasons ?? [];
        if (put?.Code === 'ConditionalCheckFailed' && put.Item) {
          const existing = unmarshallFailureItem(put.Item as Record<string, unknown>);
          return existing.createdBy === creator ? this.created(run, runFromItem(existing), now) : { created: false, existing: runFromItem(existing) };
        }
        if (counted?.Code === 'ConditionalCheckFailed') return { created: false, full: true };
        // A concurrent tick counting a slot of the same job: try again on the count it left.
        const conflict = [put, counted].some((reason) => reason?.Code === 'TransactionConflict');
        if (!conflict || attempt >= COUNT_CONFLICT_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** attempt * Math.random()));
      }
    }
  }

  /**
   * Records which manual slot an `ops trigger --idempotency-key` gives its runs, unless the key was
   * used before for this job: then the earlier slot (and shard) is returned, and the trigger
   * creates nothing new. Kept for the ledger's retention. A put whose response was lost after it
   * committed is recognised by its write id on the SDK's retry.
   */
  async reserveTriggerKey(job: string, key: string, want: { readonly slot: number; readonly shard?: number }, now: number): Promise<TriggerKey> {
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
    try {
      await this.doc.send(new PutCommand({ TableName: this.tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
      return { slot: want.slot, shard: want.shard, fresh: true, createdAt: now };
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      const existing = failedItem(error);
      if (!existing) throw error;
      return { slot: existing.slot as number, shard: existing.shard as number | undefined, fresh: existing.lastWrite === writeId, createdAt: existing.createdAt as number };
    }
  }

  /** Moves a trigger key to the next manual slot when another trigger took its slot first; returns the key's slot after. */
  async moveTriggerKey(job: string, key: string, from: number, to: number): Promise<number> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: LedgerKeys.triggerPk(job), sk: LedgerKeys.triggerKeySk(key) },
          UpdateExpression: 'SET #slot = :to',
          ConditionExpression: '#slot = :from',
          ExpressionAttributeNames: { '#slot': 'slot' },
          ExpressionAttributeValues: { ':from': from, ':to': to },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return to;
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      // Moved already (by our own retried update, or a concurrent command with the same key).
      const current = failedItem(error);
      if (!current) throw error;
      return current.slot as number;
    }
  }

  async getRun(id: RunId, consistent = true): Promise<Run | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.runKeyOf(id), ConsistentRead: consistent }));
    return Item ? runFromItem(Item) : undefined;
  }

  /** Consistent reads of many runs (BatchGetItem, 100 keys per call, 8 at once); missing runs are left out. */
  async getRuns(ids: readonly RunId[]): Promise<Run[]> {
    const chunks = Array.from({ length: Math.ceil(ids.length / 100) }, (_, i) => ids.slice(i * 100, i * 100 + 100));
    const pages = await mapBounded(chunks, 8, async (chunk) => {
      const out: Run[] = [];
      let keys: Record<string, unknown>[] = chunk.map((id) => this.runKeyOf(id));
      for (let round = 0; keys.length > 0; round++) {
        const { Responses = {}, UnprocessedKeys = {} } = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } } }),
        );
        for (const item of Responses[this.tableName] ?? []) out.push(runFromItem(item));
        keys = (UnprocessedKeys[this.tableName]?.Keys as Record<string, unknown>[] | undefined) ?? [];
        // Unprocessed keys mean throttling: back off before asking again.
        if (keys.length > 0) await new Promise((r) => setTimeout(r, Math.min(1_000, 25 * 2 ** round)));
      }
      return out;
    });
    return pages.flat();
  }

  // ---------------------------------------------------------------- claim and hold

  /**
   * Claims the run in ONE conditional UpdateItem: sets owner, leaseUntil, status RUNNING,
   * attempt + 1 and fencingToken + 1, returning the new item. A RUNNING run whose lease expired
   * (beyond the clock allowance) is claimable: that is a takeover. An exclusive lane's marker is
   * taken before this, by `lanes.acquire`.
   *
   * A claim whose response was lost after it committed is retried by the SDK; the retry fails
   * its condition against our own claim, and the write id returned with the failure says so: it
   * is reported claimed, not as someone else's lease.
   */
  async claim(id: RunId, owner: string, now: number, leaseMs: number, skewMs: number): Promise<ClaimResult> {
    const writeId = newWriteId();
    const claimableStatus = '#status IN (:ready, :retry, :unknown)';
    const backoffElapsed = '(attribute_not_exists(nextAttemptAt) OR nextAttemptAt <= :now)';
    const leaseExpired = '(#status = :running AND leaseUntil < :expiredBefore)';
    const fenceRangeLeft = 'fencingToken < :maxToken';
    try {
      const { Attributes = {} } = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKeyOf(id),
          // Operands read the item as it was before this update, so claimedFrom records the
          // status the claim started from (RUNNING means takeover, UNKNOWN means reconcile first).
          UpdateExpression:
            'SET claimedFrom = #status, #status = :running, #owner = :owner, leaseUntil = :leaseUntil, ' +
            'startedAt = :now, fencingToken = fencingToken + :one, attempt = attempt + :one, lastWrite = :write ' +
            'REMOVE nextAttemptAt, redispatches',
          ConditionExpression: `attribute_exists(pk) AND ((${claimableStatus} AND ${backoffElapsed}) OR ${leaseExpired}) AND ${fenceRangeLeft}`,
          ExpressionAttributeNames: { '#status': 'status', '#owner': 'owner' },
          ExpressionAttributeValues: {
            ':ready': RunStatus.READY,
            ':retry': RunStatus.RETRY,
            ':unknown': RunStatus.UNKNOWN,
            ':running': RunStatus.RUNNING,
            ':owner': owner,
            ':now': now,
            ':leaseUntil': now + leaseMs,
            ':expiredBefore': now - skewMs,
            ':one': 1,
            ':write': writeId,
            ':maxToken': initialFence(id.slot) + MAX_CLAIMS_PER_SLOT,
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { kind: 'claimed', run: runFromItem(Attributes), claimedFrom: Attributes.claimedFrom as RunStatus };
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      const current = failedItem(error);
      if (current?.lastWrite === writeId) return { kind: 'claimed', run: runFromItem(current), claimedFrom: current.claimedFrom as RunStatus };
      return explainClaimRefusal(current ? runFromItem(current) : undefined, now, skewMs);
    }
  }

  /**
   * The lease holder's conditional update: owner, token and status RUNNING must all still match.
   * With a `writeId`, a retry that finds its own earlier commit is reported done.
   */
  private async updateHeld(
    run: Pick<Run, 'job' | 'slot' | 'shard' | 'fencingToken' | 'owner'>,
    sets: readonly string[],
    removes: readonly string[],
    names: Record<string, string>,
    values: Record<string, unknown>,
    writeId?: string,
  ): Promise<LeaseCheck> {
    const sameOwner = '#owner = :me';
    const sameToken = 'fencingToken = :token';
    const stillRunning = '#status = :running';
    const allSets = writeId ? ['lastWrite = :write', ...sets] : sets;
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKeyOf(run),
          UpdateExpression: `SET ${allSets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: `${sameOwner} AND ${sameToken} AND ${stillRunning}`,
          ExpressionAttributeNames: { '#owner': 'owner', '#status': 'status', ...names },
          ExpressionAttributeValues: { ':me': run.owner, ':token': run.fencingToken, ':running': RunStatus.RUNNING, ...(writeId ? { ':write': writeId } : {}), ...values },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { ok: true };
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      const current = failedItem(error);
      // Our own write, committed before its response was lost and retried by the SDK.
      if (writeId !== undefined && current?.lastWrite === writeId) return { ok: true };
      return { ok: false, current: current ? runFromItem(current) : undefined };
    }
  }

  /** Idempotent: a retried heartbeat sets the same lease end again. */
  heartbeat(run: Run, leaseUntil: number): Promise<LeaseCheck> {
    return this.updateHeld(run, ['leaseUntil = :leaseUntil'], [], {}, { ':leaseUntil': leaseUntil });
  }

  /** Idempotent: a retried checkpoint stores the same cursor again. */
  checkpoint(run: Run, cursor: unknown): Promise<LeaseCheck> {
    return this.updateHeld(run, ['#checkpoint = :checkpoint'], [], { '#checkpoint': 'checkpoint' }, { ':checkpoint': cursor ?? null });
  }

  /**
   * Records the attempt's outcome; every transition out of RUNNING is conditional on owner + token.
   * The attempt joins the run's history (the last ATTEMPT_HISTORY_LIMIT are kept). `writeId`
   * makes a retry after a lost response recognise its own commit; pass the same id to every retry
   * of one outcome. An exclusive lane's marker is released by the caller, after this succeeds.
   */
  async complete(run: Run, outcome: Outcome, now: number, facts: AttemptFacts = {}, writeId: string = newWriteId()): Promise<LeaseCheck> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':outcome': outcome.status };
    const sets = ['#status = :outcome'];
    const removes = ['leaseUntil'];
    const ends = outcome.status === RunStatus.SUCCEEDED || outcome.status === RunStatus.DEAD || outcome.status === RunStatus.SUPERSEDED;
    if (ends) {
      sets.push('finishedAt = :now', 'expiresAt = :expiresAt');
      values[':now'] = now;
      values[':expiresAt'] = this.expiresAt(now);
      removes.push('nextAttemptAt');
      if (outcome.status === RunStatus.DEAD) {
        // A DEAD run waits for an operator: counted under its DEAD key until retried or resolved.
        const keys = deadKeys(run);
        sets.push('openPk = :deadPk', 'openSk = :deadSk');
        values[':deadPk'] = keys.openPk;
        values[':deadSk'] = keys.openSk;
      } else {
        // A finished run needs no watching: leaving the index is a write only if it was in it.
        removes.push('openPk', 'openSk');
      }
    }
    switch (outcome.status) {
      case RunStatus.SUCCEEDED:
        if (outcome.evidence !== undefined) {
          sets.push('evidence = :evidence');
          values[':evidence'] = outcome.evidence;
        }
        // An earlier attempt's error is history (kept in `attempts`), not the run's state.
        removes.push('lastError', 'resultUnknown');
        break;
      case RunStatus.DEAD:
      case RunStatus.SUPERSEDED:
        sets.push('lastError = :lastError');
        values[':lastError'] = outcome.lastError;
        if (outcome.resultUnknown) {
          sets.push('resultUnknown = :true');
          values[':true'] = true;
        } else removes.push('resultUnknown');
        break;
      case RunStatus.RETRY:
      case RunStatus.UNKNOWN:
        sets.push('nextAttemptAt = :next', 'lastError = :lastError');
        values[':next'] = outcome.nextAttemptAt;
        values[':lastError'] = outcome.lastError;
        if (outcome.status === RunStatus.UNKNOWN) {
          sets.push('resultUnknown = :true');
          values[':true'] = true;
        } else removes.push('resultUnknown');
        if (outcome.status === RunStatus.RETRY && outcome.refundAttempt) {
          // The attempt goes on in the next invocation: its timeout keeps counting there.
          sets.push('attempt = attempt - :one', 'attemptElapsed = if_not_exists(attemptElapsed, :zero) + :elapsed');
          values[':one'] = 1;
          values[':zero'] = 0;
          values[':elapsed'] = Math.max(0, Math.round(facts.elapsedMs ?? 0));
        }
        break;
    }
    if (!(outcome.status === RunStatus.RETRY && outcome.refundAttempt)) removes.push('attemptElapsed');
    // History: one map entry per claim, keyed by claim number; the oldest beyond the limit is dropped.
    const claim = claimsOf(run.fencingToken, run.slot);
    const lastError = 'lastError' in outcome ? outcome.lastError : undefined;
    const entry: AttemptRecord = {
      claim,
      token: run.fencingToken,
      owner: run.owner ?? '?',
      ...(facts.from ? { from: facts.from } : {}),
      claimedAt: run.startedAt ?? now,
      endedAt: now,
      outcome: outcome.status,
      ...(lastError ? { code: lastError.code, message: boundMessage(lastError.message, MAX_HISTORY_MESSAGE_CHARS) } : {}),
    };
    names['#entry'] = `c${claim}`;
    values[':entry'] = entry;
    sets.push('attempts.#entry = :entry');
    if (claim > ATTEMPT_HISTORY_LIMIT) {
      names['#dropped'] = `c${claim - ATTEMPT_HISTORY_LIMIT}`;
      removes.push('attempts.#dropped');
    }
    const check = await this.updateHeld(run, sets, removes, names, values, writeId);
    if (check.ok) this.observer?.completed?.(run, outcome);
    return check;
  }

  /**
   * Ends DEAD a RUNNING run whose holder took the last claim its fencing range allows and then
   * vanished (its lease expired before `expiredBefore`): nobody can ever claim it again, so it
   * would stay RUNNING forever. Its last attempt may have had its effect: resultUnknown, so a
   * revival reconciles first. Conditional on the token read; true when this write (or its own
   * earlier commit, after a lost response) ended it.
   */
  async endSpentRunning(run: Pick<Run, 'job' | 'slot' | 'shard' | 'fencingToken'>, now: number, expiredBefore: number): Promise<boolean> {
    const running = '#status = :running';
    const sameToken = 'fencingToken = :token';
    const leaseExpired = 'leaseUntil < :expiredBefore';
    const keys = deadKeys(run);
    return this.endOnce(run, {
      // A DEAD run waits for an operator: counted under its DEAD key until retried or resolved.
      set: '#status = :dead, finishedAt = :now, expiresAt = :expiresAt, lastError = :reason, resultUnknown = :true, openPk = :deadPk, openSk = :deadSk',
      remove: 'nextAttemptAt, leaseUntil',
      condition: [running, sameToken, leaseExpired].join(' AND '),
      values: {
        ':running': RunStatus.RUNNING,
        ':token': run.fencingToken,
        ':expiredBefore': expiredBefore,
        ':dead': RunStatus.DEAD,
        ':now': now,
        ':expiresAt': this.expiresAt(now),
        ':reason': { code: 'FENCE_RANGE_EXHAUSTED', message: `the holder of the last claim of the fencing range (token ${run.fencingToken}) vanished` },
        ':true': true,
        ':deadPk': keys.openPk,
        ':deadSk': keys.openSk,
      },
    });
  }

  /**
   * Ends a waiting run (READY, RETRY or UNKNOWN: nobody holds it) without running it: SKIPPED by
   * forbid-skip, SUPERSEDED by coalesce, DEAD when its fencing range is spent. Returns false if it
   * moved meanwhile (a claim bumped the token, or it ended).
   */
  async settleWaiting(
    run: Pick<Run, 'job' | 'slot' | 'shard'> & { readonly fencingToken?: number },
    status: SettledStatus,
    reason: string,
    now: number,
  ): Promise<boolean> {
    const waiting = '#status IN (:ready, :retry, :unknown)';
    // Without a token: whatever claims happened before, as long as nobody holds it now.
    const sameToken = run.fencingToken === undefined ? undefined : 'fencingToken = :token';
    // A DEAD run waits for an operator: counted under its DEAD key until retried or resolved.
    const dead = status === RunStatus.DEAD ? deadKeys(run) : undefined;
    const settled = await this.endOnce(run, {
      set: `#status = :settled, finishedAt = :now, expiresAt = :expiresAt, lastError = :reason${dead ? ', openPk = :deadPk, openSk = :deadSk' : ''}`,
      remove: dead ? 'nextAttemptAt' : 'openPk, openSk, nextAttemptAt',
      condition: sameToken ? `${waiting} AND ${sameToken}` : waiting,
      values: {
        ':ready': RunStatus.READY,
        ':retry': RunStatus.RETRY,
        ':unknown': RunStatus.UNKNOWN,
        ...(sameToken ? { ':token': run.fencingToken } : {}),
        ':settled': status,
        ':now': now,
        ':expiresAt': this.expiresAt(now),
        ':reason': { code: status === RunStatus.DEAD ? 'FENCE_RANGE_EXHAUSTED' : status, message: reason },
        ...(dead ? { ':deadPk': dead.openPk, ':deadSk': dead.openSk } : {}),
      },
    });
    if (settled) this.observer?.settled?.(run, status, reason);
    return settled;
  }

  /**
   * Hands back a claim that must not run yet (forbid-queue: an older run of its lane is open):
   * the run waits again, in the status it was claimed from (UNKNOWN after a takeover: the last
   * holder's result is unknown), its attempt refunded and watched; its token stays advanced.
   * Conditional on our claim (owner, token, RUNNING); a retry recognises its own commit.
   */
  async giveBack(run: Run): Promise<boolean> {
    const writeId = newWriteId();
    const ourClaim = '#status = :running AND #owner = :owner AND fencingToken = :token';
    const back = run.claimedFrom !== undefined && isWaiting(run.claimedFrom) ? run.claimedFrom : RunStatus.UNKNOWN;
    const keys = watchKeys(run);
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKeyOf(run),
          UpdateExpression: 'SET #status = :back, attempt = attempt - :one, lastWrite = :write, openPk = :openPk, openSk = :openSk REMOVE #owner, leaseUntil',
          ConditionExpression: ourClaim,
          ExpressionAttributeNames: { '#status': 'status', '#owner': 'owner' },
          ExpressionAttributeValues: { ':running': RunStatus.RUNNING, ':owner': run.owner ?? '', ':token': run.fencingToken, ':back': back, ':one': 1, ':write': writeId, ':openPk': keys.openPk, ':openSk': keys.openSk },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return true;
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      return failedItem(error)?.lastWrite === writeId;
    }
  }

  /**
   * Overlap `replace`: ends a RUNNING run SUPERSEDED by a newer one, through the fence. The token
   * advances, so its holder's next heartbeat and its outcome are refused (it stops, and records
   * nothing), and the replacing run, with a later slot's larger token, fences out its writes on
   * every item it then writes. Conditional on the status and token read; false when it moved.
   */
  async replaceRunning(run: Run, by: string, now: number): Promise<boolean> {
    const claim = claimsOf(run.fencingToken, run.slot);
    const entry: AttemptRecord = {
      claim,
      token: run.fencingToken,
      owner: run.owner ?? '?',
      claimedAt: run.startedAt ?? now,
      endedAt: now,
      outcome: RunStatus.SUPERSEDED,
      code: 'REPLACED',
      message: boundMessage(`replaced by ${by}`, MAX_HISTORY_MESSAGE_CHARS),
    };
    return this.endOnce(run, {
      // The replaced attempt was running: what it did is unknown, so a revival reconciles first.
      set: '#status = :superseded, fencingToken = fencingToken + :one, finishedAt = :now, expiresAt = :expiresAt, lastError = :reason, attempts.#entry = :entry, resultUnknown = :true',
      remove: 'leaseUntil, openPk, openSk, nextAttemptAt',
      condition: '#status = :running AND fencingToken = :token',
      names: { '#entry': `c${claim}` },
      values: {
        ':superseded': RunStatus.SUPERSEDED,
        ':running': RunStatus.RUNNING,
        ':token': run.fencingToken,
        ':one': 1,
        ':now': now,
        ':expiresAt': this.expiresAt(now),
        ':reason': { code: 'REPLACED', message: `replaced by ${by}` },
        ':entry': entry,
        ':true': true,
      },
    });
  }

  /**
   * One conditional update that ends a run, stamped with a write id: true when it committed, or
   * when the condition failed on the item our own earlier attempt wrote (the SDK retried it after
   * a lost response); false when the run moved meanwhile. `#status` is named; the write id is set
   * beside `set` (so no caller can leave it out).
   */
  private async endOnce(
    run: Pick<Run, 'job' | 'slot' | 'shard'>,
    end: { readonly set: string; readonly remove: string; readonly condition: string; readonly names?: Record<string, string>; readonly values: Record<string, unknown> },
  ): Promise<boolean> {
    const writeId = newWriteId();
    const { set, remove, condition, names = {}, values } = end;
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKeyOf(run),
          UpdateExpression: `SET lastWrite = :write, ${set} REMOVE ${remove}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: { '#status': 'status', ...names },
          ExpressionAttributeValues: { ...values, ':write': writeId },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return true;
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      return failedItem(error)?.lastWrite === writeId;
    }
  }

  // ---------------------------------------------------------------- watching (the sweeper's index)

  /** Puts an open run in the sweeper's watch index (no-op for a run that ended or vanished). */
  async watch(id: RunId): Promise<boolean> {
    const keys = watchKeys(id);
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKeyOf(id),
          UpdateExpression: 'SET openPk = :openPk, openSk = :openSk',
          ConditionExpression: 'attribute_exists(pk) AND #status IN (:ready, :retry, :unknown, :running) AND attribute_not_exists(openPk)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':openPk': keys.openPk, ':openSk': keys.openSk, ...openStatusValues() },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /**
   * Marks a run as re-dispatched now, only if nobody else did within `graceMs` and it has not
   * moved since the sweeper read it: concurrent sweepers then send at most one replacement per
   * grace period. It also puts the run in the watch index. Refused once the run was re-dispatched
   * `maxRedispatches` times without a claim in between: a message that never gets its run claimed
   * stops looping and the run waits for an operator ('exhausted').
   */
  async markRedispatch(run: Run, now: number, graceMs: number, maxRedispatches: number): Promise<'marked' | 'moved' | 'exhausted'> {
    const writeId = newWriteId();
    const keys = watchKeys(run);
    const sameStatus = '#status = :status';
    const sameToken = 'fencingToken = :token';
    const notRecentlyDispatched = '(attribute_not_exists(dispatchedAt) OR dispatchedAt < :recent)';
    const budgetLeft = '(attribute_not_exists(redispatches) OR redispatches < :max)';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKeyOf(run),
          UpdateExpression: 'SET dispatchedAt = :now, redispatches = if_not_exists(redispatches, :zero) + :one, openPk = :openPk, openSk = :openSk, lastWrite = :write',
          ConditionExpression: `${sameStatus} AND ${sameToken} AND ${notRecentlyDispatched} AND ${budgetLeft}`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':status': run.status,
            ':token': run.fencingToken,
            ':now': now,
            ':recent': now - graceMs,
            ':max': maxRedispatches,
            ':zero': 0,
            ':one': 1,
            ':openPk': keys.openPk,
            ':openSk': keys.openSk,
            ':write': writeId,
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'marked';
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
      const current = failedItem(error);
      if (current?.lastWrite === writeId) return 'marked';
      const moved = !current || current.status !== run.status || current.fencingToken !== run.fencingToken;
      if (!moved && typeof current.redispatches === 'number' && current.redispatches >= maxRedispatches) return 'exhausted';
      return 'moved';
    }
  }

  /** Takes a run out of the watch index once it is found ended (a leftover of an interrupted write). */
  async unwatch(id: RunId): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.runKeyOf(id),
          UpdateExpression: 'REMOVE openPk, openSk',
          // Only a watch entry: a stale one read from the index must not take a DEAD run's DEAD key.
          ConditionExpression: `begins_with(openPk, :watchPrefix) AND #status IN (${TERMINAL_STATUSES.map((_, i) => `:t${i}`).join(', ')})`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':watchPrefix': LedgerKeys.openPkPrefix, ...Object.fromEntries(TERMINAL_STATUSES.map((s, i) => [`:t${i}`, s])) },
        }),
      );
    } catch (error) {
      if (!isConditionalCheckFailure(error)) throw error;
    }
  }

  /** One page of watch-index entries of a bucket with slot ≤ `slotUpTo`, after `after` (an index sort key). */
  async watchedPage(bucket: number, slotUpTo: number, after: { readonly openSk: string; readonly pk: string; readonly sk: string } | undefined, limit: number) {
    const page = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: LEDGER_TABLE.openRunsIndex.name,
        KeyConditionExpression: 'openPk = :bucket AND openSk <= :upTo',
        ExpressionAttributeValues: { ':bucket': LedgerKeys.openPk(bucket), ':upTo': `${new Date(slotUpTo).toISOString()}#\uffff` },
        ExclusiveStartKey: after ? { openPk: LedgerKeys.openPk(bucket), openSk: after.openSk, pk: after.pk, sk: after.sk } : undefined,
        Limit: limit,
      }),
    );
    const entries = (page.Items ?? []).map((item) => ({ pk: item.pk as string, sk: item.sk as string, openSk: item.openSk as string }));
    return { entries, more: page.LastEvaluatedKey !== undefined };
  }

  /**
   * DEAD runs under one bucket's DEAD key (not yet retried or resolved), counted up to `cap`
   * (a gauge need not be exact past it): keys-only index pages, eventually consistent.
   */
  async countOpenDead(bucket: number, cap: number): Promise<number> {
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: LEDGER_TABLE.openRunsIndex.name,
          KeyConditionExpression: 'openPk = :bucket',
          ExpressionAttributeValues: { ':bucket': LedgerKeys.deadPk(bucket) },
          Select: 'COUNT',
          Limit: cap - count,
          ExclusiveStartKey: startKey,
        }),
      );
      count += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey && count < cap);
    return Math.min(count, cap);
  }

  // ---------------------------------------------------------------- queries

  /**
   * The runs of one job nearest to a slot on one side, nearest first (the slot itself excluded),
   * reading at most `limit` slots' worth of items: the overlap policies only ever need the nearest
   * neighbours. With `lane` only that shard's runs are returned: the read covers `limit` slots of
   * all `lane.shards` shards (the items of one slot sit together, one per shard), so a job with
   * many shards still sees its lane's `limit` nearest slots, not the other shards of one slot.
   */
  async nearestRuns(job: string, slot: number, side: 'before' | 'after', limit: number, lane?: { readonly shard: number; readonly shards: number }): Promise<Run[]> {
    const before = side === 'before';
    const shard = lane?.shard;
    const mine = LedgerKeys.runSk(slot, 0);
    const want = limit * Math.max(1, lane?.shards ?? 1);
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    // Paged: a page stops at 1 MB, and a job's items (attempt history, evidence, checkpoints) can
    // be large enough that one page holds fewer than `want` of them.
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: before ? 'pk = :pk AND sk BETWEEN :low AND :mine' : 'pk = :pk AND sk > :mine',
          ExpressionAttributeValues: {
            ':pk': LedgerKeys.jobPk(job),
            // After: past every shard of our slot; before: below shard 000 of our slot.
            ':mine': before ? mine : `${mine.slice(0, -3)}\uffff`,
            ...(before ? { ':low': LedgerKeys.runSkPrefix } : {}),
          },
          ScanIndexForward: !before,
          Limit: want - items.length,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey && items.length < want);
    return items.filter((item) => (item.sk as string).startsWith(LedgerKeys.runSkPrefix) && item.slot !== slot && (shard === undefined || item.shard === shard)).map(runFromItem);
  }

  /**
   * Runs of one lane (job, shard) with slot in (after, until] and one of `statuses`, oldest
   * first, every page. The overlap policies read the runs just after a run's slot.
   * `firstPageWithAny`: stop at the first page that holds a match (forbid-queue needs only the
   * oldest, and the range after a revived old run can span a long history of ended runs).
   */
  async laneRunsAfter(job: string, shard: number, after: number, until: number, statuses: readonly RunStatus[] = WAITING, options: { readonly firstPageWithAny?: boolean } = {}): Promise<Run[]> {
    const out: Run[] = [];
    if (until <= after) return out;
    const statusValues = Object.fromEntries(statuses.map((status, i) => [`:s${i}`, status]));
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
          FilterExpression: `#status IN (${Object.keys(statusValues).join(', ')}) AND #shard = :shard`,
          ExpressionAttributeNames: { '#status': 'status', '#shard': 'shard' },
          ExpressionAttributeValues: {
            ':pk': LedgerKeys.jobPk(job),
            // Past every shard of `after`'s slot, up to every shard of `until`'s.
            ':low': `${LedgerKeys.runSk(after, 0).slice(0, -3)}\uffff`,
            ':high': `${LedgerKeys.runSk(until, 0).slice(0, -3)}\uffff`,
            ':shard': shard,
            ...statusValues,
          },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) out.push(runFromItem(item));
      startKey = page.LastEvaluatedKey;
    } while (startKey && !(options.firstPageWithAny && out.length > 0));
    return out;
  }

  /**
   * A forbid-queue lane read from its floor (`from`, inclusive; undefined: its first run) up to
   * its first open run, oldest first: `first` is that run (of the lane's shard, in the lane),
   * `passed` how many items the read went over before it (ended runs, other shards' runs) and
   * `lastSlot` the last slot read. Pages of a few items: a floor kept current finds the first open
   * run within the first page, and a stale one is raised by the caller after this read.
   */
  async laneFromFloor(job: string, shard: number, from: number | undefined, isOpenInLane: (run: Run) => boolean): Promise<{ first?: Run; passed: number; lastSlot?: number }> {
    let passed = 0;
    let lastSlot: number | undefined;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
          ExpressionAttributeValues: {
            ':pk': LedgerKeys.jobPk(job),
            ':low': from !== undefined ? LedgerKeys.runSk(from, 0) : LedgerKeys.runSkPrefix,
            ':high': `${LedgerKeys.runSkPrefix}\uffff`,
          },
          ConsistentRead: true,
          Limit: 16,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) {
        const run = runFromItem(item);
        lastSlot = run.slot;
        if (run.shard === shard && isOpenInLane(run)) return { first: run, passed, lastSlot };
        passed++;
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return { passed, ...(lastSlot !== undefined ? { lastSlot } : {}) };
  }

  /** Open runs of one job with slot in (after, until], every page (the window sweep). */
  async openRunsInWindow(job: string, after: number, until: number): Promise<Run[]> {
    const out: Run[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
          FilterExpression: '#status IN (:ready, :retry, :unknown, :running)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':pk': LedgerKeys.jobPk(job),
            ':low': LedgerKeys.runSk(after + 1, 0),
            ':high': `${LedgerKeys.runSk(until, 0).slice(0, -3)}\uffff`,
            ...openStatusValues(),
          },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) out.push(runFromItem(item));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return out;
  }

  /** Runs of one job, newest first unless `ascending`. */
  async listRuns(job: string, options: { limit?: number; ascending?: boolean; sinceSlot?: number } = {}): Promise<Run[]> {
    const out: Run[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: `pk = :pk AND sk BETWEEN :low AND :high`,
          ExpressionAttributeValues: {
            ':pk': LedgerKeys.jobPk(job),
            ':low': options.sinceSlot !== undefined ? LedgerKeys.runSk(options.sinceSlot, 0) : LedgerKeys.runSkPrefix,
            ':high': `${LedgerKeys.runSkPrefix}\uffff`,
          },
          ScanIndexForward: options.ascending ?? false,
          Limit: options.limit,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) out.push(runFromItem(item));
      startKey = options.limit !== undefined && out.length >= options.limit ? undefined : page.LastEvaluatedKey;
    } while (startKey);
    return options.limit !== undefined ? out.slice(0, options.limit) : out;
  }

  /** Watched open runs (every bucket) with slot at or before `slotBefore`, oldest first, read consistently. */
  async listOpenRuns(slotBefore: number, limit: number): Promise<Run[]> {
    const keys: RunId[] = [];
    for (let bucket = 0; bucket < KEY_SPREAD.openBuckets; bucket++) {
      let after: { openSk: string; pk: string; sk: string } | undefined;
      for (;;) {
        const { entries, more } = await this.watchedPage(bucket, slotBefore, after, Math.min(1_000, limit));
        for (const e of entries) keys.push(idOfKey(e));
        if (!more || entries.length === 0 || keys.length >= limit * 2) break;
        after = entries[entries.length - 1];
      }
    }
    const runs = (await this.getRuns(keys)).filter((run) => (OPEN_STATUSES as readonly string[]).includes(run.status));
    return runs.sort((a, b) => a.slot - b.slot).slice(0, limit);
  }
}

function openStatusValues(): Record<string, string> {
  return { ':ready': RunStatus.READY, ':retry': RunStatus.RETRY, ':unknown': RunStatus.UNKNOWN, ':running': RunStatus.RUNNING };
}

/** A run id from its table keys (`JOB#job`, `RUN#slotISO#shard`). */
export function idOfKey(key: { readonly pk: string; readonly sk: string }): RunId {
  const job = key.pk.slice('JOB#'.length);
  const [, slotIso = '', shard = '0'] = key.sk.split('#');
  return { job, slot: Date.parse(slotIso), shard: Number(shard) };
}
