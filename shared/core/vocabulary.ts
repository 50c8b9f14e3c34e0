/**
 * The design's vocabulary (DESIGN §3, §5) as values and types. Pure: no I/O, no clock.
 */

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

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
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
  readonly runKey: string;
}
export const RUN_MESSAGE_VERSION = 1 as const;
