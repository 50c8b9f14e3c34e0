/**
 * What an attempt's end means for the run (DESIGN §5, §8), pure: the worker hands in how the
 * handler ended and gets the transition to record.
 */
import type { Job } from '../schedule/job-schema-core.js';
import { boundError, boundEvidence } from './limits.js';
import { RunOrigin, RunStatus, type Run } from './vocabulary.js';

export type AttemptEnd =
  | { readonly kind: 'succeeded'; readonly evidence?: unknown }
  | { readonly kind: 'retryable'; readonly code: string; readonly message: string }
  | { readonly kind: 'permanent'; readonly code: string; readonly message: string }
  | { readonly kind: 'unknown'; readonly code: string; readonly message: string }
  /**
   * Time ran low (the invocation is about to end). With checkpoint progress the attempt is given
   * back and the next claim resumes from the checkpoint; without it the yield counts as an attempt
   * whose result is unknown (like a timeout), so a handler that hangs cannot be re-claimed forever
   * and one that may have had its effect is reconciled before it runs again.
   */
  | { readonly kind: 'yielded'; readonly progress: boolean }
  /** A newer slot already wrote a resource this run must write: its work is superseded. */
  | { readonly kind: 'superseded'; readonly code: string; readonly message: string };

export interface RunError {
  readonly code: string;
  readonly message: string;
}

export type Transition =
  | { readonly status: typeof RunStatus.SUCCEEDED; readonly evidence?: unknown }
  | {
      readonly status: typeof RunStatus.RETRY;
      readonly nextAttemptAt: number;
      readonly lastError: RunError;
      readonly refundAttempt?: boolean;
    }
  | { readonly status: typeof RunStatus.UNKNOWN; readonly nextAttemptAt: number; readonly lastError: RunError }
  /** `resultUnknown`: the last attempt may have had its effect; a revival must reconcile first. */
  | { readonly status: typeof RunStatus.DEAD; readonly lastError: RunError; readonly resultUnknown?: boolean }
  /**
   * `resultUnknown`: the run was superseded mid-attempt (its handler ran until a newer slot's
   * write fenced it out): what it wrote before the refused write may have landed, so a revival
   * reconciles first.
   */
  | { readonly status: typeof RunStatus.SUPERSEDED; readonly lastError: RunError; readonly resultUnknown?: boolean };

/** Statuses whose recording ends the run (and releases an exclusive lane). */
export function endsRun(status: Transition['status']): boolean {
  return status === RunStatus.SUCCEEDED || status === RunStatus.DEAD || status === RunStatus.SUPERSEDED;
}

/**
 * Exponential backoff with full jitter: uniform in [0, min(max, base · 2^(attempt-1))].
 * Full jitter spreads a thundering herd of failing runs instead of retrying them in lockstep.
 */
export function backoffMs(job: Job, attempt: number, random: () => number): number {
  const { base, max, jitter } = job.retry.backoff;
  const ceiling = Math.min(max, base * 2 ** Math.max(0, attempt - 1));
  return jitter === 'full' ? Math.floor(random() * ceiling) : ceiling;
}

/**
 * The instant after which no attempt starts: the job's deadline counted from the slot, or from a
 * later fresh start. An operator's `ops retry` after fixing the cause revives the run, and an
 * `ops backfill` (or `ops trigger`) creates it: both ask for the slot's work now, so counted from
 * the slot the claim would refuse it at once, however long ago the slot was. A catch-up run, the
 * planner's own late planning of a missed slot, keeps the slot's deadline: the deadline says when a
 * slot's work goes stale, and an outage does not make it fresh (a refused catch-up run never ran,
 * ends DEAD with DEADLINE_BEFORE_START and is no failure of the job; `ops retry` runs it).
 */
/** What the deadline counts from: the slot, the run's creation (by whom), its last revival. */
export type DeadlineFacts = Pick<Run, 'slot' | 'revivedAt'> & Partial<Pick<Run, 'origin' | 'createdAt'>>;

export function deadlineOf(job: Job, run: DeadlineFacts): number | undefined {
  if (job.deadline === undefined) return undefined;
  const askedFor = (run.origin === RunOrigin.BACKFILL || run.origin === RunOrigin.MANUAL ? run.createdAt : undefined) ?? run.slot;
  return Math.max(run.slot, askedFor, run.revivedAt ?? run.slot) + job.deadline;
}

/**
 * The code of a run refused for its deadline before its handler ever started (since its creation
 * or its last revival): the run never ran, so it says nothing about the job's health
 * (pauseOnFailure passes it over), unlike DEADLINE_EXCEEDED after failed attempts.
 */
export const DEADLINE_BEFORE_START = 'DEADLINE_BEFORE_START';

/** Whether the claim is the run's first since its creation or its last revival: no attempt of it has run. */
export function neverRan(run: Pick<Run, 'attempt'>, claimedFrom: RunStatus | undefined): boolean {
  return claimedFrom === RunStatus.READY && run.attempt === 1;
}

/** A claim out of these statuses finds the previous attempt's result unknown. */
export function previousResultUnknown(claimedFrom: RunStatus | undefined): boolean {
  return claimedFrom === RunStatus.UNKNOWN || claimedFrom === RunStatus.RUNNING;
}

/**
 * Why a claimed run must not start at all (budget or deadline already spent), if so, as the DEAD
 * transition to record. Claimed out of UNKNOWN or from a vanished holder, the last attempt's
 * result stays unknown: the DEAD run says so, and a revival reconciles first.
 */
export function refuseToStart(
  job: Job,
  run: DeadlineFacts & Pick<Run, 'attempt'>,
  now: number,
  claimedFrom?: RunStatus,
): Extract<Transition, { status: typeof RunStatus.DEAD }> | undefined {
  const resultUnknown = previousResultUnknown(claimedFrom) || undefined;
  const deadline = deadlineOf(job, run);
  if (deadline !== undefined && now > deadline) {
    if (neverRan(run, claimedFrom)) {
      return {
        status: RunStatus.DEAD,
        lastError: {
          code: DEADLINE_BEFORE_START,
          message: `deadline ${new Date(deadline).toISOString()} passed before the run first started: it never ran`,
        },
      };
    }
    return {
      status: RunStatus.DEAD,
      resultUnknown,
      lastError: {
        code: 'DEADLINE_EXCEEDED',
        message: `deadline ${new Date(deadline).toISOString()} passed before attempt ${run.attempt}`,
      },
    };
  }
  if (run.attempt > job.retry.maxAttempts) {
    return {
      status: RunStatus.DEAD,
      resultUnknown,
      lastError: { code: 'ATTEMPTS_EXHAUSTED', message: `attempt ${run.attempt} exceeds maxAttempts ${job.retry.maxAttempts}` },
    };
  }
  return undefined;
}

export const YIELD_WITHOUT_PROGRESS = {
  code: 'YIELDED_WITHOUT_PROGRESS',
  message: 'the attempt reached the invocation time limit without saving a checkpoint: it counts as an attempt whose result is unknown',
} as const;

export function transitionFor(
  job: Job,
  run: DeadlineFacts & Pick<Run, 'attempt'>,
  end: AttemptEnd,
  now: number,
  random: () => number,
): Transition {
  switch (end.kind) {
    case 'succeeded':
      return { status: RunStatus.SUCCEEDED, evidence: boundEvidence(end.evidence) };
    case 'yielded':
      if (end.progress) {
        return {
          status: RunStatus.RETRY,
          nextAttemptAt: now,
          lastError: { code: 'YIELDED', message: 'yielded before the time limit' },
          refundAttempt: true,
        };
      }
      // The worker stopped waiting for a handler that had not answered: whatever it did before
      // the yield may have landed, as after a timeout. So its result is unknown (the next claim
      // reconciles first; a DEAD run keeps `resultUnknown` for the operator's revival), and it
      // spends the attempt, so a hung handler is not re-claimed forever.
      return transitionFor(job, run, { kind: 'unknown', ...YIELD_WITHOUT_PROGRESS }, now, random);
    case 'superseded':
      // The handler ran and was stopped by the fence, not by its own verdict: whatever it wrote
      // before the refused write (its effect among them, perhaps) stands.
      return { status: RunStatus.SUPERSEDED, resultUnknown: true, lastError: boundError({ code: end.code, message: end.message }) };
    case 'permanent':
      return { status: RunStatus.DEAD, lastError: boundError({ code: end.code, message: end.message }) };
    case 'retryable':
    case 'unknown': {
      const lastError = boundError({ code: end.code, message: end.message });
      const nextAttemptAt = now + backoffMs(job, run.attempt, random);
      const deadline = deadlineOf(job, run);
      const resultUnknown = end.kind === 'unknown' || undefined;
      if (run.attempt >= job.retry.maxAttempts) {
        return {
          status: RunStatus.DEAD,
          resultUnknown,
          lastError: boundError({
            code: end.code,
            message: `${end.message} (attempts exhausted: ${run.attempt}/${job.retry.maxAttempts})`,
          }),
        };
      }
      if (deadline !== undefined && nextAttemptAt > deadline) {
        return {
          status: RunStatus.DEAD,
          resultUnknown,
          lastError: boundError({ code: end.code, message: `${end.message} (next attempt would pass the deadline)` }),
        };
      }
      return end.kind === 'unknown'
        ? { status: RunStatus.UNKNOWN, nextAttemptAt, lastError }
        : { status: RunStatus.RETRY, nextAttemptAt, lastError };
    }
  }
}
