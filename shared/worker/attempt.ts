/**
 * One attempt of a claimed run (DESIGN §5, §6, §8): heartbeat while the handler runs
 * (heartbeat.ts), end the attempt on time (timeout, yield, lost lease), refuse every `ctx` call
 * once it has ended, then record the outcome under owner + token (outcome.ts).
 */
import { DynamoFencedStore } from '../store/fenced-store.js';
import { DynamoItemReader } from '../store/item-reader.js';
import { AttemptScope } from './attempt-scope.js';
import { sleep } from '../core/concurrency.js';
import { FencedWrite } from '../core/attempt-notes.js';
import { claimsOf, fenceRefusal, slotOfFence } from '../core/fence.js';
import type { Job } from '../schedule/job-schema-core.js';
import { checkpointProblem } from '../core/limits.js';
import { OUTBOX_DEFAULT_RETENTION_DAYS } from '../core/outbox.js';
import { previousResultUnknown, refuseToStart, transitionFor, type AttemptEnd } from '../core/outcome.js';
import { RunOrigin, RunStatus, type Run } from '../core/vocabulary.js';
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
} from '../handler-api.js';
import { MetricName } from '../runtime/observability.js';
import { type ChildLogger, type QueueRecord, type RecordOutcome, sinksOf, type WorkerDeps } from './deps.js';
import { AttemptNotes } from './attempt-notes.js';
import { startHeartbeat, type Heartbeat } from './heartbeat.js';
import { recordOutcome, recordUnwrittenOutcome } from './outcome.js';

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

export async function execute(
  deps: WorkerDeps,
  record: QueueRecord,
  job: Job,
  claimed: Run,
  claimedFrom: RunStatus,
  baseLogger: ChildLogger,
): Promise<RecordOutcome> {
  const { history, timers } = sinksOf(deps);
  let run = claimed;
  const logger = baseLogger.child({ fencingToken: run.fencingToken, attempt: run.attempt });
  const now = deps.clock();
  history.record({
    type: 'claimed',
    at: now,
    runKey: run.runKey,
    owner: deps.owner,
    token: run.fencingToken,
    attempt: run.attempt,
    from: claimedFrom,
    leaseUntil: run.leaseUntil ?? now,
  });
  if (claimedFrom === RunStatus.RUNNING) {
    deps.metrics.count(MetricName.Takeovers);
    logger.warn('took over a run whose lease expired');
  }

  const scope = new AttemptScope(run.runKey, run.fencingToken);
  const notes = new AttemptNotes(deps, run.fencingToken);
  /** The newest slot whose run's write fenced out a write of this attempt, if any. */
  const supersededBy: { slot?: number } = {};
  const controller = new AbortController();
  const end = (why: AttemptAbort, message: string, cause?: unknown) => {
    const reason = new AttemptAbortedError(why, message, { cause });
    if (!controller.signal.aborted) controller.abort(reason);
    scope.end(reason);
  };
  const heartbeat = startHeartbeat(
    deps,
    record,
    job,
    () => run,
    (next) => (run = next),
    end,
    notes,
    logger,
  );
  try {
    const refusal = refuseToStart(job, run, now, claimedFrom);
    if (refusal) return await recordOutcome(deps, record, job, run, claimedFrom, refusal, heartbeat, notes, logger, 0);

    let outcome: AttemptEnd | 'lease-lost';
    let checkpointed = false;
    const started = deps.clock();
    try {
      // Runs are enqueued up to `startLead` early; wait out the remainder so the handler starts on time.
      const early = (run.fireAt ?? run.slot) - deps.clock();
      if (early > 0) await sleep(Math.min(early, job.startLead + 1_000), controller.signal, timers);
      const onFencedOut = (seenSlot: number) => (supersededBy.slot = Math.max(supersededBy.slot ?? seenSlot, seenSlot));
      outcome = await attempt(
        deps,
        job,
        run,
        claimedFrom,
        controller.signal,
        scope,
        end,
        heartbeat,
        () => (checkpointed = true),
        onFencedOut,
        notes,
        logger,
      );
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
      outcome = {
        kind: 'superseded',
        code: 'SUPERSEDED_BY_NEWER_SLOT',
        message: `a write of this attempt came back fenced out by the run of slot ${new Date(supersededBy.slot).toISOString()} after the attempt ended (${outcome.code}): this older slot's work is superseded`,
      };
    }
    if (outcome === 'lease-lost' || heartbeat.lost) {
      deps.metrics.count(MetricName.LeaseLost);
      logger.warn('stopped: this worker no longer holds the run', {
        reason: controller.signal.reason instanceof Error ? controller.signal.reason.message : undefined,
      });
      recordUnwrittenOutcome(deps, run, RunStatus.RUNNING);
      // A newer token holds the run: what of this attempt it fenced out goes on the attempt's own entry.
      await notes.leave(deps, run, claimedFrom, logger);
      return 'retry';
    }
    const transition = transitionFor(job, run, outcome, deps.clock(), deps.random ?? Math.random);
    return await recordOutcome(deps, record, job, run, claimedFrom, transition, heartbeat, notes, logger, elapsed);
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
  notes: AttemptNotes,
  logger: ChildLogger,
): Promise<AttemptEnd> {
  const { history, timers } = sinksOf(deps);
  const handler = deps.handlers[job.handler];
  if (!handler) throw new PermanentError(`handler "${job.handler}" is not registered`, { code: 'UNKNOWN_HANDLER' });
  const guard = <T>(call: (signal?: AbortSignal) => Promise<T>) => scope.guard(call);
  const fenced = new DynamoFencedStore(deps.doc, run.fencingToken, {
    guard,
    onResult: (write, result, detail) => {
      const key = write.kind === 'put' ? write.item : write.key;
      if (result === 'fenced-out') deps.metrics.count(MetricName.FencingRejections);
      if (result === 'fenced-out' && detail.seenFence !== undefined) {
        notes.fencedOut(FencedWrite.EFFECT, detail.seenFence, `${write.table}/${key.pk}/${key.sk}`);
        if (fenceRefusal(run.fencingToken, detail.seenFence) === 'newer-slot') onFencedOut(slotOfFence(detail.seenFence));
      }
      history.record({
        type: 'effect',
        at: deps.clock(),
        runKey: run.runKey,
        token: run.fencingToken,
        resource: `${write.table}/${key.pk}/${key.sk}`,
        result,
      });
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
          notes.runWriteRefused(FencedWrite.CHECKPOINT, check.current);
          end(
            AttemptAbort.LEASE_LOST,
            `checkpoint refused: ${run.runKey} is now held by ${check.current?.owner ?? 'nobody'} (token ${check.current?.fencingToken ?? '?'})`,
          );
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
      let reconciled: Awaited<ReturnType<typeof reconcileOrUnknown>>;
      try {
        reconciled = await reconcileOrUnknown(handler.reconcile(ctx), aborted, signal);
      } catch (error) {
        // Ended before it answered (timeout, yield, lost lease, a fence): the entry says so.
        notes.reconciled({ failed: error instanceof Error ? error.message : String(error) });
        throw error;
      }
      if ('kind' in reconciled) {
        notes.reconciled({ failed: reconciled.message });
        return reconciled;
      }
      notes.reconciled(reconciled);
      logger.info('reconciled a run whose result was unknown', { outcome: reconciled.outcome, claimedFrom });
      if (reconciled.outcome === ReconcileOutcome.ALREADY_DONE) return { kind: 'succeeded', evidence: reconciled.evidence };
      if (reconciled.outcome === ReconcileOutcome.STILL_UNKNOWN) {
        return {
          kind: 'unknown',
          code: 'STILL_UNKNOWN',
          message: reconciled.reason ?? 'reconcile could not tell whether the effect landed',
        };
      }
    }
    const started = deps.clock();
    observeStartLag(deps, run, claimedFrom, started);
    heartbeat.handlerStarted();
    history.record({
      type: 'handler-started',
      at: started,
      runKey: run.runKey,
      owner: deps.owner,
      token: run.fencingToken,
      slot: run.slot,
    });
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
async function reconcileOrUnknown(
  reconciling: Promise<ReconcileResult>,
  aborted: Promise<never>,
  signal: AbortSignal,
): Promise<ReconcileResult | Extract<AttemptEnd, { kind: 'unknown' }>> {
  try {
    return await Promise.race([reconciling, aborted]);
  } catch (error) {
    // Ended by the attempt's signal (timeout, yield, lost lease): endOf decides, as for the handler.
    if (signal.aborted) throw error;
    const end = endOf(error, signal, false);
    if (end === 'lease-lost' || (end.kind !== 'retryable' && end.kind !== 'permanent')) throw error;
    return {
      kind: 'unknown',
      code: end.code,
      message: `reconcile could not tell whether the previous attempt's effect landed: ${end.message}`,
    };
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
