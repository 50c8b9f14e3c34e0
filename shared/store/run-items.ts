/**
 * Run items in the ledger (DESIGN §5, §6): what a run item holds and how it decodes, the keys it
 * sits under (its own, its watch-index entry, its DEAD entry), and the table every run adapter
 * writes (runs.ts, run-holds.ts, run-endings.ts, watch-index.ts, run-queries.ts).
 */
import { UpdateCommand, type DynamoDBDocumentClient, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { FencedOutRecord, ReconcileRecord } from '../core/attempt-notes.js';
import type { Transition } from '../core/outcome.js';
import { openBucketOf } from '../core/planner-state.js';
import { LedgerKeys } from '../core/resources.js';
import { conditionalWrite, type OwnCommitCheck, wroteBy, type WriteResult } from './conditional.js';
import type { LedgerObserver } from './observer.js';
import { RunStatus, type AttemptRecord, type RunOrigin, type Run, type RunId } from '../core/vocabulary.js';

export type Item = Record<string, unknown>;

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
  /** What the handler's reconcile answered, when the attempt asked it. */
  readonly reconcile?: ReconcileRecord;
  /** The attempt's writes fenced out by a newer token (a newer slot's run, on a business item). */
  readonly fencedOut?: FencedOutRecord;
}

/** The statuses of a run that waits for a claim. */
export const WAITING = [RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN] as const;

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

/** The run table the run adapters share: its client and name, a run's key, a terminal run's TTL. */
export class RunTable {
  readonly tableName: string;
  readonly retentionSeconds: number;
  protected readonly observer: LedgerObserver | undefined;

  constructor(
    readonly doc: DynamoDBDocumentClient,
    options: LedgerOptions,
  ) {
    this.tableName = options.tableName;
    this.retentionSeconds = (options.retentionDays ?? 30) * 86_400;
    this.observer = options.observer;
  }

  runKeyOf(id: RunId): { pk: string; sk: string } {
    return { pk: LedgerKeys.jobPk(id.job), sk: LedgerKeys.runSk(id.slot, id.shard) };
  }

  protected expiresAt(now: number): number {
    return Math.floor(now / 1000) + this.retentionSeconds;
  }

  /**
   * One conditional UpdateItem of a run's item, through the envelope (conditional.ts). With
   * `writeId` (the write sets it as lastWrite), a retry after a lost response recognises its own
   * commit: the run adapters' writes differ only in their expressions and values. A write that
   * leaves its id elsewhere than lastWrite (a fenced-out note) passes its own check instead.
   */
  protected updateRun(id: RunId, update: RunUpdate, writeId?: string | OwnCommitCheck): Promise<WriteResult> {
    return conditionalWrite(this.doc, new UpdateCommand({ TableName: this.tableName, Key: this.runKeyOf(id), ...update }), {
      ownCommit: typeof writeId === 'string' ? wroteBy(writeId) : writeId,
    });
  }
}

/** What an update of a run item says beyond the table and the key. */
export type RunUpdate = Omit<UpdateCommandInput, 'TableName' | 'Key'>;

/** The values of `#status IN (:ready, :retry, :unknown, :running)`. */
export function openStatusValues(): Record<string, string> {
  return { ':ready': RunStatus.READY, ':retry': RunStatus.RETRY, ':unknown': RunStatus.UNKNOWN, ':running': RunStatus.RUNNING };
}

/** A run id from its table keys (`JOB#job`, `RUN#slotISO#shard`). */
export function idOfKey(key: { readonly pk: string; readonly sk: string }): RunId {
  return { job: LedgerKeys.jobOfPk(key.pk), ...LedgerKeys.runOfSk(key.sk) };
}
