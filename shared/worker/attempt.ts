/**
 * One attempt of a claimed run (DESIGN §5, §6, §8): heartbeat while the handler runs, end the
 * attempt on time (timeout, yield, lost lease), refuse every `ctx` call once it has ended, then
 * record the outcome under owner + token, retrying the write while the lease holds.
 */
import { DynamoFencedStore } from '../store/fenced-store.js';
import { DynamoItemReader } from '../store/item-reader.js';
import { isMalformedRequest } from '../store/failure-item.js';
import { newWriteId } from '../store/write-id.js';
import { AttemptScope } from './attempt-scope.js';
import { REAL_TIMERS, sleep } from '../core/concurrency.js';
import { claimsOf, fenceRefusal, slotOfFence } from '../core/fence.js';
import { NO_HISTORY } from '../core/history.js';
import type { Job } from '../schedule/job-schema-core.js';
import { takeoverVisibilitySeconds } from '../core/lease.js';
import { checkpointProblem, jsonChars } from '../core/limits.js';
import { OUTBOX_DEFAULT_RETENTION_DAYS } from '../core/outbox.js';
import { endsRun, previousResultUnknown, refuseToStart, transitionFor, type AttemptEnd, type Transition } from '../core/outcome.js';
import { RunOrigin, RunStatus, type Run, type RunMessage } from '../core/vocabulary.js';
import {
  AttemptAbort,
  AttemptAbortedError,
  CheckpointTooLargeError,
  FencedOutError,
  LeaseLostError,
  PermanentError,
  ReconcileOutcome,
  ResultUnknownError,
  type ItemReader,
  type ReconcileResult,
  type RunContext,
  type RunLogger,
} from '../handler-api.js';
import { MetricName } from '../runtime/observability.js';
import { messageFor } from '../core/run-message.js';
import type { ChildLogger, QueueRecord, RecordOutcome, WorkerDeps } from './batch.js';
import { runEnded, isExclusive } from './lanes.js';
import { pauseOnRepeatedFailure } from './pause.js';

/** Retries of a failed outcome write back off from this, doubling, up to a second. */
const OUTCOME_RETRY_BASE_MS = 50;

/** The lease as the heartbeat keeps it. */
interface Heartbeat {
  /** True once a heartbeat or checkpoint was refused: another worker holds the run. */
  readonly lost: boolean;
  /** The lease's end as last extended. */
  leaseUntil(): number;
  /** Starts the early visibility change (the handler has started; a short run makes no SQS call). */
  handlerStarted(): void;
  stop(): void;
}

export function clockSkewFor(deps: WorkerDeps, job: Job): number {
  return deps.options?.clockSkewMs ?? Math.min(2_000, job.heartbeatEvery / 2);
}

function classify(error: unknown): AttemptEnd {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown })?.code;
  if (error instanceof PermanentError) return { kind: 'permanent', code: error.code, message };
  if (error instanceof ResultUnknownError) return { kind: 'unknown', code: error.code, message };
  // Anything else, RetryableError included, is retryable: the safe default for unknown failures.
  return { kind: 'retryable', code: typeof code === 'string' ? code : error instanceof Error ? error.name : 'ERROR', message };
}

/** The FencedOutError behind an error, following `cause` (a handler may wrap it). */
function fencedOutIn(error: unknown): FencedOutError | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof FencedOutError) return e;
  }
  return undefined;
}

/** How an attempt that threw (or was aborted) ended; 'lease-lost' means: record nothing. */
function endOf(error: unknown, signal: AbortSignal, checkpointed: boolean): AttemptEnd | 'lease-lost' {
  const reason = signal.aborted && signal.reason instanceof AttemptAbortedError ? signal.reason : undefined;
  switch (reason?.why) {
    case AttemptAbort.LEASE_LOST:
    case AttemptAbort.LEASE_EXPIRING:
      return 'lease-lost';
    case AttemptAbort.TIMEOUT:
      return { kind: 'unknown', code: 'TIMEOUT', message: reason.message };
    case AttemptAbort.YIELD:
      return { kind: 'yielded', progress: checkpointed };
    default:
      break;
  }
  const fenced = fencedOutIn(error);
  if (fenced) {
    if (fenced.refusal === 'newer-claim') return 'lease-lost';
    return {
      kind: 'superseded',
      code: 'SUPERSEDED_BY_NEWER_SLOT',
      message: `${fenced.table} ${fenced.key.pk}/${fenced.key.sk} was already written with fence ${fenced.seenFence} by the run of slot ${new Date(fenced.seenSlot).toISOString()}: this older slot's work is superseded`,
    };
  }
  if (error instanceof LeaseLostError) return 'lease-lost';
  return classify(error);
}

export async function execute(deps: WorkerDeps, record: QueueRecord, job: Job, claimed: Run, claimedFrom: RunStatus, baseLogger: ChildLogger): Promise<RecordOutcome> {
  const history = deps.history ?? NO_HISTORY;
  const timers = deps.timers ?? REAL_TIMERS;
  let run = claimed;
  const logger = baseLogger.child({ fencingToken: run.fencingToken, attempt: run.attempt });
  const now = deps.clock();
  history.record({ type: 'claimed', at: now, runKey: run.runKey, owner: deps.owner, token: run.fencingToken, attempt: run.attempt, from: claimedFrom, leaseUntil: run.leaseUntil ?? now });
  if (claimedFrom === RunStatus.RUNNING) {
    deps.metrics.count(MetricName.Takeovers);
    logger.warn('took over a run whose lease expired');
  }

  const scope = new AttemptScope(run.runKey, run.fencingToken);
  /** The newest slot whose run's write fenced out a write of this attempt, if any. */
  const supersededBy: { slot?: number } = {};
  const controller = new AbortController();
  const end = (why: AttemptAbort, message: string, cause?: unknown) => {
    const reason = new AttemptAbortedError(why, message, { cause });
    if (!controller.signal.aborted) controller.abort(reason);
    scope.end(reason);
  };
  const heartbeat = startHeartbeat(deps, record, job, () => run, (next) => (run = next), end, logger);
  try {
    const refusal = refuseToStart(job, run, now, claimedFrom);
    if (refusal) return await recordOutcome(deps, record, job, run, claimedFrom, refusal, heartbeat, logger, 0);

    let outcome: AttemptEnd | 'lease-lost';
    let checkpointed = false;
    const started = deps.clock();
    try {
      // Runs are enqueued up to `startLead` early; wait out the remainder so the handler starts on time.
      const early = (run.fireAt ?? run.slot) - deps.clock();
      if (early > 0) await sleep(Math.min(early, job.startLead + 1_000), controller.signal, timers);
      const onFencedOut = (seenSlot: number) => (supersededBy.slot = Math.max(supersededBy.slot ?? seenSlot, seenSlot));
      outcome = await attempt(deps, job, run, claimedFrom, controller.signal, scope, end, heartbeat, () => (checkpointed = true), onFencedOut, logger);
    } catch (error) {
      outcome = endOf(error, controller.signal, checkpointed);
    }
    const elapsed = deps.clock() - started;
    // From here on nothing of this attempt may land: refuse new calls, wait for those in flight
    // (while the lease still holds, nobody else can act on the run).
    end(AttemptAbort.ENDED, 'the attempt is over: its outcome is being recorded');
    const drained = await scope.drain(Math.max(0, heartbeat.leaseUntil() - deps.clock()), timers);
    if (!drained) logger.warn('calls of the ended attempt still in flight at the end of its lease');
    // An attempt that ended without knowing its result (its timeout, a ResultUnknownError) while a
    // write of it was still in flight may learn here that a newer slot's run had written that item
    // first: its work is superseded (DESIGN §11.9), as if the handler had seen the FencedOutError.
    // Recording UNKNOWN instead would retry work that can never succeed, or page an operator for a
    // DEAD run that was only superseded. SUPERSEDED keeps the result unknown (outcome.ts).
    if (outcome !== 'lease-lost' && outcome.kind === 'unknown' && supersededBy.slot !== undefined) {
      outcome = { kind: 'superseded', code: 'SUPERSEDED_BY_NEWER_SLOT', message: `a write of this attempt came back fenced out by the run of slot ${new Date(supersededBy.slot).toISOString()} after the attempt ended (${outcome.code}): this older slot's work is superseded` };
    }
    if (outcome === 'lease-lost' || heartbeat.lost) {
      deps.metrics.count(MetricName.LeaseLost);
      logger.warn('stopped: this worker no longer holds the run', { reason: controller.signal.reason instanceof Error ? controller.signal.reason.message : undefined });
      history.record({ type: 'outcome', at: deps.clock(), runKey: run.runKey, owner: deps.owner, token: run.fencingToken, status: RunStatus.RUNNING, accepted: false });
      return 'retry';
    }
    const transition = transitionFor(job, run, outcome, deps.clock(), deps.random ?? Math.random);
    return await recordOutcome(deps, record, job, run, claimedFrom, transition, heartbeat, logger, elapsed);
  } finally {
    heartbeat.stop();
  }
}

async function attempt(
  deps: WorkerDeps,
  job: Job,
  run: Run,
  claimedFrom: RunStatus,
  signal: AbortSignal,
  scope: AttemptScope,
  end: (why: AttemptAbort, message: string, cause?: unknown) => void,
  heartbeat: Heartbeat,
  onCheckpoint: () => void,
  /** A write came back fenced out by a newer slot's run (`seenSlot`), even after the attempt ended. */
  onFencedOut: (seenSlot: number) => void,
  logger: ChildLogger,
): Promise<AttemptEnd> {
  const history = deps.history ?? NO_HISTORY;
  const timers = deps.timers ?? REAL_TIMERS;
  const handler = deps.handlers[job.handler];
  if (!handler) throw new PermanentError(`handler "${job.handler}" is not registered`, { code: 'UNKNOWN_HANDLER' });
  const guard = <T>(call: (signal?: AbortSignal) => Promise<T>) => scope.guard(call);
  const fenced = new DynamoFencedStore(deps.doc, run.fencingToken, {
    guard,
    onResult: (write, result, detail) => {
      if (result === 'fenced-out') deps.metrics.count(MetricName.FencingRejections);
      if (result === 'fenced-out' && detail.seenFence !== undefined && fenceRefusal(run.fencingToken, detail.seenFence) === 'newer-slot') onFencedOut(slotOfFence(detail.seenFence));
      const key = write.kind === 'put' ? write.item : write.key;
      history.record({ type: 'effect', at: deps.clock(), runKey: run.runKey, token: run.fencingToken, resource: `${write.table}/${key.pk}/${key.sk}`, result });
    },
  });
  const reader = new DynamoItemReader(deps.doc);
  const guardedReader: ItemReader = {
    get: (table, key) => guard(() => reader.get(table, key)),
    query: (table, pk, options) => guard(() => reader.query(table, pk, options)),
  };
  const ctx: RunContext = {
    job,
    slot: run.slot,
    shard: run.shard,
    shards: run.shards,
    runKey: run.runKey,
    fencingToken: run.fencingToken,
    attempt: run.attempt,
    signal,
    logger,
    fenced,
    reader: guardedReader,
    tables: deps.tables,
    outboxRetentionDays: deps.outboxRetentionDays ?? OUTBOX_DEFAULT_RETENTION_DAYS,
    resumeFrom: run.checkpoint,
    checkpoint: (cursor) =>
      guard(async () => {
        const problem = checkpointProblem(cursor);
        if (problem) throw new CheckpointTooLargeError(run.runKey, problem);
        const check = await deps.ledger.checkpoint(run, cursor);
        if (!check.ok) {
          end(AttemptAbort.LEASE_LOST, `checkpoint refused: ${run.runKey} is now held by ${check.current?.owner ?? 'nobody'} (token ${check.current?.fencingToken ?? '?'})`);
          throw new LeaseLostError(run.runKey, run.fencingToken);
        }
        onCheckpoint();
      }),
    now: deps.clock,
  };

  // The attempt ends when the handler returns, or when the signal aborts (timeout, yield, lost
  // lease), whichever comes first: a handler that ignores its signal is left behind, and the
  // scope refuses whatever it still tries to read or write.
  const aborted = new Promise<never>((_, reject) => {
    const fail = () => reject(signal.reason);
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
  aborted.catch(() => undefined);
  const budget = job.timeout - (run.attemptElapsedMs ?? 0);
  const timer = timers.setTimeout(() => end(AttemptAbort.TIMEOUT, `attempt exceeded timeout ${job.timeout} ms`), Math.max(0, budget));
  try {
    // A run claimed out of UNKNOWN, or taken over from RUNNING after its holder's lease expired
    // (the holder died, froze or lost the ledger mid-attempt), may already have had its effect: in
    // both cases the previous attempt's result is unknown, so ask before doing it again.
    if (previousResultUnknown(claimedFrom) && handler.reconcile) {
      const reconciled = await reconcileOrUnknown(handler.reconcile(ctx), aborted, signal);
      if ('kind' in reconciled) return reconciled;
      logger.info('reconciled a run whose result was unknown', { outcome: reconciled.outcome, claimedFrom });
      if (reconciled.outcome === ReconcileOutcome.ALREADY_DONE) return { kind: 'succeeded', evidence: reconciled.evidence };
      if (reconciled.outcome === ReconcileOutcome.STILL_UNKNOWN) {
        return { kind: 'unknown', code: 'STILL_UNKNOWN', message: reconciled.reason ?? 'reconcile could not tell whether the effect landed' };
      }
    }
    const started = deps.clock();
    observeStartLag(deps, run, claimedFrom, started);
    heartbeat.handlerStarted();
    history.record({ type: 'handler-started', at: started, runKey: run.runKey, owner: deps.owner, token: run.fencingToken, slot: run.slot });
    const result = await Promise.race([handler.run(ctx), aborted]);
    deps.metrics.observe(MetricName.RunDuration, deps.clock() - started, 'Milliseconds');
    return { kind: 'succeeded', evidence: result?.evidence };
  } finally {
    timers.clearTimeout(timer);
  }
}

/**
 * The reconcile of a run whose previous result is unknown, or, when it could not answer (it threw
 * a retryable or permanent error: a throttled read, a provider down), this attempt's end with the
 * result still unknown. Recording that failure as a plain RETRY would let the next claim (from
 * RETRY, no reconcile) run the handler again over an effect that may have landed. An end the
 * attempt's signal decided (timeout, yield, lost lease) or a fence refusal is left to `endOf`.
 */
async function reconcileOrUnknown(reconciling: Promise<ReconcileResult>, aborted: Promise<never>, signal: AbortSignal): Promise<ReconcileResult | AttemptEnd> {
  try {
    return await Promise.race([reconciling, aborted]);
  } catch (error) {
    // Ended by the attempt's signal (timeout, yield, lost lease): endOf decides, as for the handler.
    if (signal.aborted) throw error;
    const end = endOf(error, signal, false);
    if (end === 'lease-lost' || (end.kind !== 'retryable' && end.kind !== 'permanent')) throw error;
    return { kind: 'unknown', code: end.code, message: `reconcile could not tell whether the previous attempt's effect landed: ${end.message}` };
  }
}

/**
 * Trigger lag is how late the scheduler started an on-time slot: only the first claim of a
 * planned run measures it. Retries, takeovers, catch-up, backfill, manual and revived runs are late
 * by construction; their first start is a separate figure (LateStartLag) so normal recovery never
 * pages as trigger lag.
 */
function observeStartLag(deps: WorkerDeps, run: Run, claimedFrom: RunStatus, started: number): void {
  const firstClaim = claimsOf(run.fencingToken, run.slot) === 1;
  if (!firstClaim || claimedFrom !== RunStatus.READY) return;
  // A revived run (a retried SKIPPED slot that never ran, say) starts hours after its slot by an
  // operator's choice, not the scheduler's lateness.
  const onTime = (run.origin ?? RunOrigin.PLANNED) === RunOrigin.PLANNED && (run.revivals ?? 0) === 0;
  deps.metrics.observe(onTime ? MetricName.TriggerLag : MetricName.LateStartLag, started - (run.fireAt ?? run.slot), 'Milliseconds');
}

/**
 * Extends the lease and the message's visibility every `heartbeatEvery`, and ends the attempt
 * (through ctx.signal) when a heartbeat is refused, when the ledger stays unreachable until the
 * lease is about to run out, or when the invocation is about to time out (yield). It keeps
 * beating after the handler returned, until the outcome is recorded.
 */
function startHeartbeat(
  deps: WorkerDeps,
  record: QueueRecord,
  job: Job,
  current: () => Run,
  update: (run: Run) => void,
  end: (why: AttemptAbort, message: string) => void,
  logger: RunLogger,
): Heartbeat {
  const history = deps.history ?? NO_HISTORY;
  const timers = deps.timers ?? REAL_TIMERS;
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
      history.record({ type: 'heartbeat', at: now, runKey: run.runKey, owner: deps.owner, token: run.fencingToken, ok: check.ok, leaseUntil });
      if (!check.ok) {
        lost = true;
        logger.warn('heartbeat refused: lease lost', { currentOwner: check.current?.owner, currentToken: check.current?.fencingToken });
        end(AttemptAbort.LEASE_LOST, `heartbeat refused: ${run.runKey} is now held by ${check.current?.owner ?? 'nobody'} (token ${check.current?.fencingToken ?? '?'}, status ${check.current?.status ?? 'gone'})`);
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
  const watchdog = timers.setInterval(() => {
    if (stopped) return;
    if (deps.remainingTimeMs && deps.remainingTimeMs() < margin) {
      logger.info('yielding: the invocation is about to time out');
      end(AttemptAbort.YIELD, 'the invocation is about to time out: yielding');
    } else if ((current().leaseUntil ?? 0) - deps.clock() < Math.min(1_000, job.heartbeatEvery)) {
      logger.error('lease about to run out: stopping the handler');
      end(AttemptAbort.LEASE_EXPIRING, 'the lease is about to run out');
    }
  }, Math.max(50, Math.min(1_000, job.heartbeatEvery / 2)));
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

/**
 * Records the attempt's outcome. A write that fails (throttling past the SDK's retries, a
 * transaction conflict, the network) is retried with the same write id while the lease holds,
 * so a handler that finished is never re-run merely because its outcome write failed once; if
 * the lease runs out first, the run stays RUNNING under this token and its next claim is a
 * takeover, which reconciles before running again.
 */
async function recordOutcome(
  deps: WorkerDeps,
  record: QueueRecord,
  job: Job,
  run: Run,
  claimedFrom: RunStatus,
  transition: Transition,
  heartbeat: Heartbeat,
  logger: RunLogger,
  elapsedMs: number,
): Promise<RecordOutcome> {
  const history = deps.history ?? NO_HISTORY;
  const timers = deps.timers ?? REAL_TIMERS;
  const writeId = newWriteId();
  const now = deps.clock();
  let check;
  for (let attemptNo = 1; ; attemptNo++) {
    try {
      check = await deps.ledger.complete(run, transition, deps.clock(), { from: claimedFrom, elapsedMs }, writeId);
      break;
    } catch (error) {
      const leaseLeft = heartbeat.leaseUntil() - deps.clock();
      // A malformed write fails identically every time: waiting out the lease for it would hold
      // the run (and a hot loop of retries) for nothing; the takeover path is the same.
      const malformed = isMalformedRequest(error);
      if (heartbeat.lost || malformed || leaseLeft <= clockSkewFor(deps, job)) {
        logger.error(malformed ? 'outcome write rejected as malformed: the next claim takes over and reconciles' : 'outcome could not be recorded before the lease ran out: the next claim takes over and reconciles', {
          wanted: transition.status,
          error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        });
        history.record({ type: 'outcome', at: deps.clock(), runKey: run.runKey, owner: deps.owner, token: run.fencingToken, status: transition.status, accepted: false });
        await hide(deps, record, logger, heartbeat.leaseUntil() + clockSkewFor(deps, job));
        return 'retry';
      }
      deps.metrics.count(MetricName.OutcomeWriteRetries);
      logger.warn('outcome write failed: retrying while the lease holds', { wanted: transition.status, attempt: attemptNo, error: String(error) });
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
    logger.warn('outcome refused: lease lost before completion', { wanted: transition.status, currentOwner: check.current?.owner, currentToken: check.current?.fencingToken });
    return 'retry';
  }
  const lastError = 'lastError' in transition ? transition.lastError : undefined;
  logger.info('run outcome', { outcome: transition.status, durationMs: deps.clock() - (run.startedAt ?? now), lastError, evidenceChars: transition.status === RunStatus.SUCCEEDED ? jsonChars(transition.evidence) : undefined });
  if (isExclusive(job) && endsRun(transition.status)) {
    // The run has ended: its lane is free; a failure here leaves a stale marker (taken over by
    // the next claimer) or an undispatched run (the sweeper's), never a stuck lane.
    await runEnded(deps, job, run, logger).catch((error: unknown) => logger.warn('could not hand the lane on', { error: String(error) }));
  }
  switch (transition.status) {
    case RunStatus.SUCCEEDED:
      deps.metrics.count(MetricName.RunsSucceeded);
      return 'ack';
    case RunStatus.DEAD:
      deps.metrics.count(MetricName.RunsDead);
      await pauseOnRepeatedFailure(deps, job, run, transition.lastError, logger).catch((error: unknown) => logger.warn('could not apply pauseOnFailure', { error: String(error) }));
      return 'ack';
    case RunStatus.SUPERSEDED:
      deps.metrics.count(MetricName.RunsSuperseded);
      deps.metrics.count(MetricName.RunsSupersededByFence);
      logger.warn('superseded: a newer slot already wrote what this run must write', { reason: transition.lastError.message });
      return 'ack';
    case RunStatus.RETRY:
    case RunStatus.UNKNOWN:
      deps.metrics.count(transition.status === RunStatus.UNKNOWN ? MetricName.RunsUnknown : transition.refundAttempt ? MetricName.RunsYielded : MetricName.RunsRetried);
      if (transition.status === RunStatus.RETRY && transition.refundAttempt) return continueInFreshMessage(deps, record, messageFor(run), transition.nextAttemptAt, logger);
      await hide(deps, record, logger, transition.nextAttemptAt);
      return 'retry';
  }
}

/**
 * A receive that is no attempt goes on in a fresh message, and this one is acknowledged: a yield
 * with progress, and a copy of a message whose run a live holder leases. Hidden and received
 * again, the same message would count each such receive against the queue's maxReceiveCount,
 * which is sized against retry.maxAttempts: a run needing more invocations than that, or a copy
 * waiting out a holder that runs longer than that many leases, would land in the DLQ though
 * nothing failed. The fresh message is sent first, so a failure between the two leaves two
 * messages (the claim lets one run and the other finds the run leased or ended), never none; a
 * send that fails hides this message as before (it counts one receive).
 */
export async function continueInFreshMessage(deps: WorkerDeps, record: QueueRecord, message: RunMessage, nextAttemptAt: number, logger: RunLogger): Promise<RecordOutcome> {
  try {
    await deps.queue.send([{ message, delaySeconds: Math.max(0, Math.ceil((nextAttemptAt - deps.clock()) / 1000)) }]);
    return 'ack';
  } catch (error) {
    logger.warn('could not send the run\'s next message: hiding this one instead', { error: String(error) });
    await hide(deps, record, logger, nextAttemptAt);
    return 'retry';
  }
}

export async function hide(deps: WorkerDeps, record: QueueRecord, logger: RunLogger, until: number): Promise<void> {
  const seconds = (until - deps.clock()) / 1000;
  try {
    await deps.queue.changeVisibility(record.receiptHandle, Math.max(1, seconds));
  } catch (error) {
    // The message then simply comes back at the queue's visibility timeout: slower, not wrong.
    logger.warn('could not hide message', { error: String(error) });
  }
}

