/**
 * The design's vocabulary (DESIGN §3, §5) as values and types. Pure: no I/O, no clock.
 */
import type { FencedOutRecord, ReconcileRecord } from './attempt-notes.js';

export const RunStatus = {
  READY: 'READY',
  RUNNING: 'RUNNING',
  RETRY: 'RETRY',
  UNKNOWN: 'UNKNOWN',
  SUCCEEDED: 'SUCCEEDED',
  DEAD: 'DEAD',
  SKIPPED: 'SKIPPED',
  SUPERSEDED: 'SUPERSEDED',
  MANUAL: 'MANUAL',
} as const;
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus];

/** Statuses a run never leaves by itself (only ops resolve/redrive move a DEAD run). */
export const TERMINAL_STATUSES: readonly RunStatus[] = [
  RunStatus.SUCCEEDED,
  RunStatus.DEAD,
  RunStatus.SKIPPED,
  RunStatus.SUPERSEDED,
  RunStatus.MANUAL,
];
/** Statuses a claim may take without a takeover. */
export const CLAIMABLE_STATUSES: readonly RunStatus[] = [RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN];
/** Statuses of a run that is neither terminal nor held: it waits for its (next) claim. */
export const WAITING_STATUSES: readonly RunStatus[] = CLAIMABLE_STATUSES;
/** Statuses of a run that has not ended: waiting or held. */
export const OPEN_STATUSES: readonly RunStatus[] = [...WAITING_STATUSES, RunStatus.RUNNING];

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function isWaiting(status: RunStatus): boolean {
  return WAITING_STATUSES.includes(status);
}

/**
 * Where a run came from. Only the first attempt of a `planned` run measures trigger lag (how late
 * the scheduler started an on-time slot); the others were late by construction.
 */
export const RunOrigin = {
  /** Materialized on time by the planner. */
  PLANNED: 'planned',
  /** A misfired slot planned late by the misfire policy. */
  CATCH_UP: 'catch-up',
  /**
   * Planned as an on-time slot (within misfire.after) but only after its fire time had passed:
   * a job resumed from a short pause, a planner tick late past its lookahead. Its first start
   * cannot be on time, so it is LateStartLag, not trigger lag.
   */
  PLANNED_LATE: 'planned-late',
  /** Created by `ops backfill`. */
  BACKFILL: 'backfill',
  /** Created by `ops trigger`. */
  MANUAL: 'manual',
} as const;
export type RunOrigin = (typeof RunOrigin)[keyof typeof RunOrigin];

/**
 * One attempt as the run item remembers it (the last few are kept; see ATTEMPT_HISTORY_LIMIT).
 * The entry of an attempt that recorded no outcome, because a newer token held the run by then,
 * is its fenced-out note alone: no `endedAt` nor `outcome`, its `fencedOut` says what was refused.
 */
export interface AttemptRecord {
  /** Claim number within the run (1, 2, …): the fencing token's low digits. */
  readonly claim: number;
  readonly token: number;
  readonly owner: string;
  /** The status the claim took the run from (RUNNING: a takeover; UNKNOWN: reconciled first). */
  readonly from?: RunStatus;
  readonly claimedAt: number;
  /** When the attempt recorded its outcome (absent: it recorded none, see `fencedOut`). */
  readonly endedAt?: number;
  /** The status the attempt recorded (absent: it recorded none). */
  readonly outcome?: RunStatus;
  readonly code?: string;
  readonly message?: string;
  /** What the handler's reconcile answered, when the attempt asked it (the previous result was unknown). */
  readonly reconcile?: ReconcileRecord;
  /** The attempt's writes refused because a newer token held the run or the item. */
  readonly fencedOut?: FencedOutRecord;
}

/** One run of a job: the ledger item for (job, slot, shard). */
export interface Run {
  readonly job: string;
  /** The slot instant, UTC epoch ms. */
  readonly slot: number;
  readonly shard: number;
  readonly shards: number;
  readonly runKey: string;
  readonly status: RunStatus;
  readonly owner?: string;
  readonly leaseUntil?: number;
  readonly fencingToken: number;
  readonly attempt: number;
  readonly nextAttemptAt?: number;
  readonly lastError?: { readonly code: string; readonly message: string };
  readonly createdAt: number;
  readonly dispatchedAt?: number;
  readonly startedAt?: number;
  readonly finishedAt?: number;
  readonly checkpoint?: unknown;
  readonly evidence?: unknown;
  readonly expiresAt?: number;
  /** @default RunOrigin.PLANNED (runs written before origins were recorded) */
  readonly origin?: RunOrigin;
  /** When the run should start, if not at its slot (jitter). */
  readonly fireAt?: number;
  /** The status the latest claim took the run from. */
  readonly claimedFrom?: RunStatus;
  /**
   * The last attempt may have had its effect without recording it (it ended UNKNOWN, timed out, or
   * its holder vanished): whoever revives the run must reconcile before running it again.
   */
  readonly resultUnknown?: boolean;
  /** The last attempts, oldest first. */
  readonly attempts?: readonly AttemptRecord[];
  /** Operator's note (manual runs). */
  readonly note?: string;
  /** Who triggered a manual run. */
  readonly triggeredBy?: string;
  /** A manual run's overlap policy, when it overrides the job's. */
  readonly overlap?: string;
  /** Times the sweeper re-dispatched the run since its last claim. */
  readonly redispatches?: number;
  /** Times an operator revived the run (`ops retry`, `ops redrive`). */
  readonly revivals?: number;
  /** When an operator last revived the run (UTC ms): its deadline counts from then. */
  readonly revivedAt?: number;
  /**
   * Handler time the current attempt already spent in earlier invocations (a checkpointing job
   * that yielded with progress): its timeout counts across them.
   */
  readonly attemptElapsedMs?: number;
}

export interface RunId {
  readonly job: string;
  readonly slot: number;
  readonly shard: number;
}

export function slotIso(slot: number): string {
  return new Date(slot).toISOString();
}

/**
 * The run key `job@slotISO[#shard]`: the idempotency key handed to handlers. The shard suffix is
 * present only for sharded jobs so that unsharded keys read naturally in logs and foreign APIs.
 */
export function runKeyOf(job: string, slot: number, shard: number, shards: number): string {
  const base = `${job}@${slotIso(slot)}`;
  return shards > 1 ? `${base}#${shard}` : base;
}

/** The queue message that asks a worker to execute one run (DESIGN §8). */
export interface RunMessage {
  readonly v: 1;
  readonly job: string;
  readonly slot: number;
  readonly shard: number;
  /**
   * The run's own shard count (its item's `shards`), which its key and shard are checked against:
   * a change of the job's `shards` leaves runs created before it valid. Absent from messages sent
   * by earlier code (checked against the job's current count).
   */
  readonly shards?: number;
  readonly runKey: string;
  /** A manual run's overlap policy when it overrides the job's (`ops trigger --overlap`). */
  readonly overlap?: string;
  /** A jittered run's fire time (absent: its slot). */
  readonly fireAt?: number;
}
export const RUN_MESSAGE_VERSION = 1 as const;
