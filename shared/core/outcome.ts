/**
 * What an attempt's end means for the run (DESIGN §5, §8), pure: the worker hands in how the
 * handler ended and gets the transition to record.
 */
import type { Job } from './job-schema.js';
import { RunStatus, type Run } from './vocabulary.js';

export type AttemptEnd =
  | { readonly kind: 'succeeded'; readonly evidence?: unknown }
  | { readonly kind: 'retryable'; readonly code: string; readonly message: string }
  | { readonly kind: 'permanent'; readonly code: string; readonly message: string }
  | { readonly kind: 'unknown'; readonly code: string; readonly message: string }
  /** Time ran low: give the attempt back and resume from the checkpoint. */
  | { readonly kind: 'yielded' };

export type Transition =
  | { readonly status: typeof RunStatus.SUCCEEDED; readonly evidence?: unknown }
  | { readonly status: typeof RunStatus.RETRY; readonly nextAttemptAt: number; readonly lastError: { code: string; message: string }; readonly refundAttempt?: boolean }
  | { readonly status: typeof RunStatus.UNKNOWN; readonly nextAttemptAt: number; readonly lastError: { code: string; message: string } }
  | { readonly status: typeof RunStatus.DEAD; readonly lastError: { code: string; message: string } };

/**
 * Exponential backoff with full jitter: uniform in [0, min(max, base · 2^(attempt-1))].
 * Full jitter spreads a thundering herd of failing runs instead of retrying them in lockstep.
 */
export function backoffMs(job: Job, attempt: number, random: () => number): number {
  const { base, max, jitter } = job.retry.backoff;
  const ceiling = Math.min(max, base * 2 ** Math.max(0, attempt - 1));
  return jitter === 'full' ? Math.floor(random() * ceiling) : ceiling;
}

export function deadlineOf(job: Job, run: Pick<Run, 'slot'>): number | undefined {
  return job.deadline === undefined ? undefined : run.slot + job.deadline;
}

/** Why a claimed run must not start at all (budget or deadline already spent), if so. */
export function refuseToStart(job: Job, run: Pick<Run, 'slot' | 'attempt'>, now: number): { code: string; message: string } | undefined {
  const deadline = deadlineOf(job, run);
  if (deadline !== undefined && now > deadline) {
    return { code: 'DEADLINE_EXCEEDED', message: `deadline ${new Date(deadline).toISOString()} passed before attempt ${run.attempt}` };
  }
  if (run.attempt > job.retry.maxAttempts) {
    return { code: 'ATTEMPTS_EXHAUSTED', message: `attempt ${run.attempt} exceeds maxAttempts ${job.retry.maxAttempts}` };
  }
  return undefined;
}

export function transitionFor(job: Job, run: Pick<Run, 'slot' | 'attempt'>, end: AttemptEnd, now: number, random: () => number): Transition {
  switch (end.kind) {
    case 'succeeded':
      return { status: RunStatus.SUCCEEDED, evidence: end.evidence };
    case 'yielded':
      return { status: RunStatus.RETRY, nextAttemptAt: now, lastError: { code: 'YIELDED', message: 'yielded before the time limit' }, refundAttempt: true };
    case 'permanent':
      return { status: RunStatus.DEAD, lastError: { code: end.code, message: end.message } };
    case 'retryable':
    case 'unknown': {
      const lastError = { code: end.code, message: end.message };
      const nextAttemptAt = now + backoffMs(job, run.attempt, random);
      const deadline = deadlineOf(job, run);
      if (run.attempt >= job.retry.maxAttempts) {
        return { status: RunStatus.DEAD, lastError: { code: end.code, message: `${end.message} (attempts exhausted: ${run.attempt}/${job.retry.maxAttempts})` } };
      }
      if (deadline !== undefined && nextAttemptAt > deadline) {
        return { status: RunStatus.DEAD, lastError: { code: end.code, message: `${end.message} (next attempt would pass the deadline)` } };
      }
      return end.kind === 'unknown'
        ? { status: RunStatus.UNKNOWN, nextAttemptAt, lastError }
        : { status: RunStatus.RETRY, nextAttemptAt, lastError };
    }
  }
}
