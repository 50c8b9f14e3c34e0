/**
 * The heartbeat of one attempt (DESIGN §5, §8): extends the lease and the message's visibility
 * while the handler runs, and ends the attempt through its signal when the lease is lost or about
 * to run out, or when the invocation is about to time out.
 */
import { FencedWrite } from '../core/attempt-notes.js';
import type { Job } from '../schedule/job-schema-core.js';
import { takeoverVisibilitySeconds } from '../core/lease.js';
import type { Run } from '../core/vocabulary.js';
import { AttemptAbort, type RunLogger } from '../handler-api.js';
import { MetricName } from '../runtime/observability.js';
import type { AttemptNotes } from './attempt-notes.js';
import { clockSkewFor, type QueueRecord, sinksOf, type WorkerDeps } from './deps.js';

/** The lease as the heartbeat keeps it. */
export interface Heartbeat {
  /** True once a heartbeat or checkpoint was refused: another worker holds the run. */
  readonly lost: boolean;
  /** The lease's end as last extended. */
  leaseUntil(): number;
  /** Starts the early visibility change (the handler has started; a short run makes no SQS call). */
  handlerStarted(): void;
  stop(): void;
}

/**
 * Extends the lease and the message's visibility every `heartbeatEvery`, and ends the attempt
 * (through ctx.signal) when a heartbeat is refused, when the ledger stays unreachable until the
 * lease is about to run out, or when the invocation is about to time out (yield). It keeps
 * beating after the handler returned, until the outcome is recorded.
 */
export function startHeartbeat(
  deps: WorkerDeps,
  record: QueueRecord,
  job: Job,
  current: () => Run,
  update: (run: Run) => void,
  end: (why: AttemptAbort, message: string) => void,
  notes: AttemptNotes,
  logger: RunLogger,
): Heartbeat {
  const { history, timers } = sinksOf(deps);
  const margin = deps.options?.yieldMarginMs ?? 10_000;
  let inFlight = false;
  let lost = false;
  let stopped = false;
  let early: unknown;
  // The message comes back after the lease's end and at most a second before a successor may
  // claim (takeoverVisibilitySeconds). A failure here is not a lost lease: at worst the message
  // reappears early and finds the run leased.
  const matchVisibilityToLease = (signal: AbortSignal) => {
    const now = deps.clock();
    const seconds = takeoverVisibilitySeconds(current().leaseUntil ?? now + job.lease, clockSkewFor(deps, job), now);
    return deps.queue.changeVisibility(record.receiptHandle, seconds, signal).catch((error: unknown) => {
      logger.warn('could not extend message visibility', { error: String(error) });
    });
  };
  // The visibility follows the lease apart from the renewal: a heartbeat that waited for SQS would
  // make the next one find it still in flight and skip, so every slow ChangeMessageVisibility
  // would cost a renewal (a third of the lease at the default period). One change at a time, each
  // given up after a heartbeat period (a hung call must not hold back the later ones: the message
  // would keep the queue's long visibility, and a crash would be taken over minutes late); a
  // change asked for meanwhile is sent when the one in flight settles, with the newest lease. The
  // attempt's end gives up the one in flight, so the outcome's own hide is the last word.
  let visibility: AbortController | undefined;
  let wanted = false;
  const followLease = () => {
    if (stopped) return;
    if (visibility) {
      wanted = true;
      return;
    }
    const controller = new AbortController();
    visibility = controller;
    const limit = timers.setTimeout(() => controller.abort(), job.heartbeatEvery);
    const givenUp = new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve(), { once: true }));
    void Promise.race([matchVisibilityToLease(controller.signal), givenUp]).then(() => {
      timers.clearTimeout(limit);
      visibility = undefined;
      if (wanted) {
        wanted = false;
        followLease();
      }
    });
  };
  const beat = async () => {
    if (stopped || lost || inFlight) return;
    const run = current();
    const now = deps.clock();
    inFlight = true;
    try {
      const leaseUntil = now + job.lease;
      const check = await deps.ledger.heartbeat(run, leaseUntil);
      deps.metrics.observe(MetricName.HeartbeatLatency, deps.clock() - now, 'Milliseconds');
      history.record({
        type: 'heartbeat',
        at: now,
        runKey: run.runKey,
        owner: deps.owner,
        token: run.fencingToken,
        ok: check.ok,
        leaseUntil,
      });
      if (!check.ok) {
        lost = true;
        notes.runWriteRefused(FencedWrite.HEARTBEAT, check.current);
        logger.warn('heartbeat refused: lease lost', { currentOwner: check.current?.owner, currentToken: check.current?.fencingToken });
        end(
          AttemptAbort.LEASE_LOST,
          `heartbeat refused: ${run.runKey} is now held by ${check.current?.owner ?? 'nobody'} (token ${check.current?.fencingToken ?? '?'}, status ${check.current?.status ?? 'gone'})`,
        );
        return;
      }
      // The attempt may have ended while this renewal was on the way: its outcome, not this late
      // answer, decides the message's visibility now.
      if (stopped) return;
      update({ ...current(), leaseUntil });
      followLease();
    } catch (error) {
      // The ledger may be briefly unreachable; keep trying while the lease still holds.
      logger.warn('heartbeat failed', { error: String(error) });
      if ((current().leaseUntil ?? 0) - deps.clock() < job.heartbeatEvery) {
        logger.error('lease about to run out without a heartbeat: stopping the handler');
        end(AttemptAbort.LEASE_EXPIRING, 'the ledger stayed unreachable until the lease was about to run out');
      }
    } finally {
      inFlight = false;
    }
  };
  const interval = timers.setInterval(() => void beat(), job.heartbeatEvery);
  // Checked more often than heartbeats: the lease runs out even if heartbeats hang (stop before a
  // successor can take over), and the invocation's time runs out whatever the heartbeat period.
  const watchdog = timers.setInterval(
    () => {
      if (stopped) return;
      if (deps.remainingTimeMs && deps.remainingTimeMs() < margin) {
        logger.info('yielding: the invocation is about to time out');
        end(AttemptAbort.YIELD, 'the invocation is about to time out: yielding');
      } else if ((current().leaseUntil ?? 0) - deps.clock() < Math.min(1_000, job.heartbeatEvery)) {
        logger.error('lease about to run out: stopping the handler');
        end(AttemptAbort.LEASE_EXPIRING, 'the lease is about to run out');
      }
    },
    Math.max(50, Math.min(1_000, job.heartbeatEvery / 2)),
  );
  return {
    get lost() {
      return lost;
    },
    leaseUntil: () => current().leaseUntil ?? 0,
    handlerStarted: () => {
      // The queue's own visibility timeout is long (6 × the Lambda timeout); a run that lasts past
      // a second shortens it to the lease, so a crash before the first heartbeat is taken over
      // after the lease, not minutes later. Runs shorter than that make no SQS call at all.
      if (early === undefined && !stopped) early = timers.setTimeout(followLease, Math.min(1_000, job.heartbeatEvery));
    },
    stop: () => {
      stopped = true;
      visibility?.abort();
      if (early !== undefined) timers.clearTimeout(early);
      timers.clearInterval(interval);
      timers.clearInterval(watchdog);
    },
  };
}
