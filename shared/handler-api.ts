/**
 * The API job authors write against, exported from one place: the context a handler receives,
 * the handler shape, and the errors that tell the worker what happened.
 *
 * Error classification (DESIGN §8):
 * - `RetryableError`: not executed or failed transiently; retried with backoff until the budget is spent.
 * - `PermanentError`: definitely failed; the run goes DEAD at once.
 * - `ResultUnknownError`: a foreign call may or may not have taken effect (e.g. a timeout);
 *   the run goes UNKNOWN and the next attempt first calls `reconcile(ctx)` with the same runKey.
 *   A takeover (a RUNNING run whose holder's lease expired) calls `reconcile(ctx)` first too: the
 *   holder may have died after its effect and before recording it.
 * - any other thrown error is treated as retryable.
 * - `FencedOutError`: a fenced write was refused because the item has seen a higher fence. If a
 *   later slot wrote it (`error.refusal === 'newer-slot'`) this run's work is superseded: thrown
 *   out of `run`, the run is recorded SUPERSEDED at once (never retried into the newer state). If a
 *   later claim of this same slot wrote it (`'newer-claim'`) this worker lost its lease: it stops
 *   and records nothing.
 * - `LeaseLostError`: this worker is stale; it stops and records nothing.
 * - `AttemptEndedError`: a `ctx` call made after the attempt ended (timeout, yield, lost lease,
 *   or the handler already returned): refused, so nothing of an ended attempt lands.
 */
import type { Job } from './schedule/job-schema-core.js';
import { slotOfFence, type FenceRefusal } from './core/fence.js';

export { OutboxEventNameError, PermanentError, ResultUnknownError, RetryableError } from './core/errors.js';

export interface RunLogger {
  debug(message: string, ...extra: Record<string, unknown>[]): void;
  info(message: string, ...extra: Record<string, unknown>[]): void;
  warn(message: string, ...extra: Record<string, unknown>[]): void;
  error(message: string, ...extra: Record<string, unknown>[]): void;
}

export type { Expression, FencedPut, FencedUpdate, FencedWrite } from './core/fenced-write.js';
import type { FencedPut, FencedUpdate, FencedWrite } from './core/fenced-write.js';

/**
 * Writes on business items that carry the run's fencing token (DESIGN §6). Each write sets
 * `lastFence = :fence` and a fresh write id `lastWrite` on the item, under the condition that the
 * fence is new (`lastFence` absent or lower) or it is the same fence and `lastWrite` is not this
 * write's id, joined by AND with the write's own condition. So a holder with a lower token never
 * writes, the same holder may write an item repeatedly, and an SDK retry of a write that already
 * committed is not applied twice: the refusal returns the item, and a `lastWrite` equal to the
 * write's id reports it accepted. A write refused by a higher fence throws `FencedOutError`; a
 * failed business condition throws `ConditionFailedError`.
 */
export interface FencedStore {
  put(write: Omit<FencedPut, 'kind'>): Promise<void>;
  update(write: Omit<FencedUpdate, 'kind'>): Promise<void>;
  /** All-or-nothing: e.g. a cursor and an outbox row in one TransactWriteItems. */
  transact(writes: readonly FencedWrite[]): Promise<void>;
}

/** Consistent reads of business items (handlers never get a bare client). */
export interface ItemReader {
  get(table: string, key: { readonly pk: string; readonly sk: string }): Promise<Record<string, unknown> | undefined>;
  /** Items of one partition in sort-key order, strictly after `after` when given. */
  query(table: string, pk: string, options?: { readonly after?: string; readonly limit?: number }): Promise<Record<string, unknown>[]>;
}

export interface RunContext {
  readonly job: Job;
  /** Slot instant, UTC epoch ms. */
  readonly slot: number;
  readonly shard: number;
  readonly shards: number;
  /** `job@slotISO[#shard]`: pass it as the idempotency key of every foreign call. */
  readonly runKey: string;
  readonly fencingToken: number;
  readonly attempt: number;
  /**
   * Fires when the attempt ends without the handler returning: a heartbeat refused (lease lost),
   * the lease about to run out, the timeout, or the invocation about to end (yield). Its `reason`
   * is an `AttemptAbortedError` saying which. Stop promptly: every `ctx` call after that is refused.
   */
  readonly signal: AbortSignal;
  readonly logger: RunLogger;
  readonly fenced: FencedStore;
  readonly reader: ItemReader;
  /** Names of the tables handlers may write, resolved from the environment. */
  readonly tables: { readonly ledger: string; readonly payments: string };
  /** Days an outbox row written by this run is kept (`outboxPut` stamps its TTL from it). */
  readonly outboxRetentionDays: number;
  /** The last checkpoint saved by any attempt of this run, or undefined. */
  readonly resumeFrom: unknown;
  /** Saves a resume point for this run, fenced by the run's lease. */
  checkpoint(cursor: unknown): Promise<void>;
  /** The worker's clock (injected, so tests control it). */
  now(): number;
}

export interface RunResult {
  /** Proof of what the run did (ids, counts); stored on the run item. */
  readonly evidence?: unknown;
}

export const ReconcileOutcome = {
  ALREADY_DONE: 'already-done',
  NOT_DONE: 'not-done',
  STILL_UNKNOWN: 'still-unknown',
} as const;
export type ReconcileResult =
  | { readonly outcome: typeof ReconcileOutcome.ALREADY_DONE; readonly evidence?: unknown }
  | { readonly outcome: typeof ReconcileOutcome.NOT_DONE }
  | { readonly outcome: typeof ReconcileOutcome.STILL_UNKNOWN; readonly reason?: string };

export interface JobHandler {
  run(ctx: RunContext): Promise<RunResult | void>;
  /**
   * Called first, with the same runKey, when the previous attempt's result is unknown: a claim out
   * of UNKNOWN, or a takeover of a RUNNING run whose holder's lease expired. Without it, the
   * handler runs again and its idempotency (fenced writes, business-key conditions, idempotency
   * keys on foreign calls) must keep the effect single.
   */
  reconcile?(ctx: RunContext): Promise<ReconcileResult>;
}

/** A fenced write was rejected: the item has seen a higher fencing token. */
export class FencedOutError extends Error {
  override readonly name = 'FencedOutError';
  /** Whether a later slot (`newer-slot`: this run is superseded) or a later claim of this slot (`newer-claim`: lease lost) wrote the item. */
  readonly refusal: FenceRefusal;
  /** The slot the item's fence belongs to (UTC ms). */
  readonly seenSlot: number;
  constructor(
    readonly table: string,
    readonly key: { readonly pk: string; readonly sk: string },
    readonly fence: number,
    readonly seenFence: number,
    refusal: FenceRefusal,
    options: { cause?: unknown } = {},
  ) {
    super(
      `fenced out: ${table} ${key.pk}/${key.sk} has seen fence ${seenFence} > ${fence} (${
        refusal === 'newer-slot'
          ? `written by the run of a later slot, ${new Date(slotOfFence(seenFence)).toISOString()}`
          : 'written by a later claim of this slot'
      })`,
      options,
    );
    this.refusal = refusal;
    this.seenSlot = slotOfFence(seenFence);
  }
}

/** A fenced write's business condition failed (the fence itself was fine). */
export class ConditionFailedError extends Error {
  override readonly name = 'ConditionFailedError';
  constructor(
    readonly table: string,
    readonly key: { readonly pk: string; readonly sk: string },
    readonly current: Readonly<Record<string, unknown>> | undefined,
    options: { cause?: unknown } = {},
  ) {
    super(`condition failed on ${table} ${key.pk}/${key.sk}`, options);
  }
}

/** This worker no longer holds the run's lease (a heartbeat or completion was refused). */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  constructor(
    readonly runKey: string,
    readonly fencingToken: number,
    options: { cause?: unknown } = {},
  ) {
    super(`lease lost on ${runKey} (token ${fencingToken})`, options);
  }
}

/** Why an attempt ended before its handler returned; the reason of `ctx.signal`. */
export const AttemptAbort = {
  /** A heartbeat or checkpoint was refused: another worker holds the run now. */
  LEASE_LOST: 'lease-lost',
  /** The ledger stayed unreachable until the lease was about to run out. */
  LEASE_EXPIRING: 'lease-expiring',
  /** The job's `timeout` elapsed (the result is unknown: the next attempt reconciles). */
  TIMEOUT: 'timeout',
  /** The invocation is about to time out: the attempt yields (resumes from its checkpoint). */
  YIELD: 'yield',
  /** The attempt is over (its outcome is being recorded). */
  ENDED: 'ended',
} as const;
export type AttemptAbort = (typeof AttemptAbort)[keyof typeof AttemptAbort];

/** `ctx.signal.reason`: the attempt ended before the handler returned, and why. */
export class AttemptAbortedError extends Error {
  override readonly name = 'AttemptAbortedError';
  constructor(
    readonly why: AttemptAbort,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

/** A `ctx` call (fenced write, read, checkpoint) made after the attempt ended: refused. */
export class AttemptEndedError extends Error {
  override readonly name = 'AttemptEndedError';
  constructor(
    readonly runKey: string,
    readonly fencingToken: number,
    readonly why: AttemptAbort,
    options: { cause?: unknown } = {},
  ) {
    super(`attempt of ${runKey} (token ${fencingToken}) has ended (${why}): no further reads or writes`, options);
  }
}

/** `ctx.checkpoint` refused a cursor too large to store on the run item. */
export class CheckpointTooLargeError extends Error {
  override readonly name = 'CheckpointTooLargeError';
  constructor(
    readonly runKey: string,
    message: string,
  ) {
    super(`checkpoint of ${runKey} refused: ${message}`);
  }
}
