/**
 * The end of one attempt (DESIGN §6, §8): its outcome recorded under owner + token, retrying the
 * write while the lease holds; then what the ended run asks for (its lane handed on, its job
 * paused after repeated failure) and what becomes of its message (acked, hidden until the next
 * attempt, or continued in a fresh message after a yield).
 */
import { isMalformedRequest } from '../store/failure-item.js';
import { newWriteId } from '../store/write-id.js';
import { sleep } from '../core/concurrency.js';
import type { Job } from '../schedule/job-schema-core.js';
import { jsonChars } from '../core/limits.js';
import { FencedWrite } from '../core/attempt-notes.js';
import { endsRun, type Transition } from '../core/outcome.js';
import { messageFor } from '../core/run-message.js';
import { RunStatus, type Run } from '../core/vocabulary.js';
import type { RunLogger } from '../handler-api.js';
import { MetricName } from '../runtime/observability.js';
import { clockSkewFor, continueInFreshMessage, hide, type QueueRecord, type RecordOutcome, sinksOf, type WorkerDeps } from './deps.js';
import type { AttemptNotes } from './attempt-notes.js';
import type { Heartbeat } from './heartbeat.js';
import { pauseOnRepeatedFailure } from './pause.js';
import { runEnded } from './run-ended.js';

/** Retries of a failed outcome write back off from this, doubling, up to a second. */
const OUTCOME_RETRY_BASE_MS = 50;

/**
 * Tells the history that this attempt's outcome was not written: its lease is gone, or going, so
 * the run stays as the ledger has it for whoever claims it next. `status` is the one it wanted.
 */
export function recordUnwrittenOutcome(deps: WorkerDeps, run: Run, status: RunStatus): void {
  sinksOf(deps).history.record({
    type: 'outcome',
    at: deps.clock(),
    runKey: run.runKey,
    owner: deps.owner,
    token: run.fencingToken,
    status,
    accepted: false,
  });
}

/**
 * Records the attempt's outcome. A write that fails (throttling past the SDK's retries, a
 * transaction conflict, the network) is retried with the same write id while the lease holds,
 * so a handler that finished is never re-run merely because its outcome write failed once; if
 * the lease runs out first, the run stays RUNNING under this token and its next claim is a
 * takeover, which reconciles before running again.
 */
export async function recordOutcome(
  deps: WorkerDeps,
  record: QueueRecord,
  job: Job,
  run: Run,
  claimedFrom: RunStatus,
  transition: Transition,
  heartbeat: Heartbeat,
  notes: AttemptNotes,
  logger: RunLogger,
  elapsedMs: number,
): Promise<RecordOutcome> {
  const { history, timers } = sinksOf(deps);
  const writeId = newWriteId();
  const now = deps.clock();
  let check;
  for (let attemptNo = 1; ; attemptNo++) {
    try {
      check = await deps.ledger.complete(run, transition, deps.clock(), { from: claimedFrom, elapsedMs, ...notes.facts() }, writeId);
      break;
    } catch (error) {
      const leaseLeft = heartbeat.leaseUntil() - deps.clock();
      // A malformed write fails identically every time: waiting out the lease for it would hold
      // the run (and a hot loop of retries) for nothing; the takeover path is the same.
      const malformed = isMalformedRequest(error);
      if (heartbeat.lost || malformed || leaseLeft <= clockSkewFor(deps, job)) {
        logger.error(
          malformed
            ? 'outcome write rejected as malformed: the next claim takes over and reconciles'
            : 'outcome could not be recorded before the lease ran out: the next claim takes over and reconciles',
          {
            wanted: transition.status,
            error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
          },
        );
        recordUnwrittenOutcome(deps, run, transition.status);
        await hide(deps, record, logger, heartbeat.leaseUntil() + clockSkewFor(deps, job));
        return 'retry';
      }
      deps.metrics.count(MetricName.OutcomeWriteRetries);
      logger.warn('outcome write failed: retrying while the lease holds', {
        wanted: transition.status,
        attempt: attemptNo,
        error: String(error),
      });
      await sleep(Math.min(1_000, OUTCOME_RETRY_BASE_MS * 2 ** (attemptNo - 1), Math.max(0, leaseLeft / 2)), undefined, timers);
    }
  }
  history.record({
    type: 'outcome',
    at: now,
    runKey: run.runKey,
    owner: deps.owner,
    token: run.fencingToken,
    status: transition.status,
    accepted: check.ok,
    nextAttemptAt: 'nextAttemptAt' in transition ? transition.nextAttemptAt : undefined,
    code: 'lastError' in transition ? transition.lastError.code : undefined,
    resultUnknown: 'resultUnknown' in transition ? transition.resultUnknown : undefined,
  });
  if (!check.ok) {
    deps.metrics.count(MetricName.LeaseLost);
    logger.warn('outcome refused: lease lost before completion', {
      wanted: transition.status,
      currentOwner: check.current?.owner,
      currentToken: check.current?.fencingToken,
    });
    notes.runWriteRefused(FencedWrite.OUTCOME, check.current);
    await notes.leave(deps, run, claimedFrom, logger);
    return 'retry';
  }
  const lastError = 'lastError' in transition ? transition.lastError : undefined;
  logger.info('run outcome', {
    outcome: transition.status,
    durationMs: deps.clock() - (run.startedAt ?? now),
    lastError,
    evidenceChars: transition.status === RunStatus.SUCCEEDED ? jsonChars(transition.evidence) : undefined,
  });
  if (endsRun(transition.status)) {
    // The run has ended: an exclusive job's lane is free; a failure here leaves a stale marker (taken over by
    // the next claimer) or an undispatched run (the sweeper's), never a stuck lane.
    await runEnded(deps, job, run, logger).catch((error: unknown) => logger.warn('could not hand the lane on', { error: String(error) }));
  }
  switch (transition.status) {
    case RunStatus.SUCCEEDED:
      deps.metrics.count(MetricName.RunsSucceeded);
      return 'ack';
    case RunStatus.DEAD:
      deps.metrics.count(MetricName.RunsDead);
      await pauseOnRepeatedFailure(deps, job, run, transition.lastError, logger).catch((error: unknown) =>
        logger.warn('could not apply pauseOnFailure', { error: String(error) }),
      );
      return 'ack';
    case RunStatus.SUPERSEDED:
      deps.metrics.count(MetricName.RunsSuperseded);
      deps.metrics.count(MetricName.RunsSupersededByFence);
      logger.warn('superseded: a newer slot already wrote what this run must write', { reason: transition.lastError.message });
      return 'ack';
    case RunStatus.RETRY:
    case RunStatus.UNKNOWN:
      deps.metrics.count(
        transition.status === RunStatus.UNKNOWN
          ? MetricName.RunsUnknown
          : transition.refundAttempt
            ? MetricName.RunsYielded
            : MetricName.RunsRetried,
      );
      if (transition.status === RunStatus.RETRY && transition.refundAttempt)
        return continueInFreshMessage(deps, record, messageFor(run), transition.nextAttemptAt, logger);
      await hide(deps, record, logger, transition.nextAttemptAt);
      return 'retry';
  }
}
