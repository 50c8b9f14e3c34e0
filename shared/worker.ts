/**
 * The worker (DESIGN §8): for each SQS record, validate, claim the lease, heartbeat while the
 * job's handler runs, then record the outcome under owner + token. Returns the records to retry
 * in `batchItemFailures`, as the Lambda SQS event source expects with ReportBatchItemFailures.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Ledger } from './adapters/ledger.js';
import type { RunQueue } from './adapters/run-queue.js';
import { DynamoFencedStore } from './adapters/fenced-store.js';
import { DynamoItemReader } from './adapters/item-reader.js';
import { sleep } from './core/concurrency.js';
import { NO_HISTORY, type HistorySink } from './core/history.js';
import type { Job } from './core/job-schema-core.js';
import { DEFAULT_CLOCK_SKEW_MS, takeoverVisibilitySeconds, VISIBILITY_STEP_MS, type ClaimResult } from './core/lease.js';
import { refuseToStart, transitionFor, type AttemptEnd, type Transition } from './core/outcome.js';
import { messageFor, parseRunMessage } from './core/run-message.js';
import { OUTBOX_DEFAULT_RETENTION_DAYS } from './core/outbox.js';
import { RunStatus, type Run, type RunId } from './core/vocabulary.js';
import { OverlapPolicy } from './core/job-schema-core.js';
import {
  FencedOutError,
  LeaseLostError,
  PermanentError,
  ReconcileOutcome,
  ResultUnknownError,
  type JobHandler,
  type RunContext,
  type RunLogger,
} from './handler-api.js';
import { MetricName, type MetricsSink } from './observability.js';

export interface QueueRecord {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly attributes?: { readonly ApproximateReceiveCount?: string };
}

export interface BatchResult {
  readonly batchItemFailures: { readonly itemIdentifier: string }[];
}

export interface ChildLogger extends RunLogger {
  child(keys: Record<string, unknown>): ChildLogger;
}

export interface WorkerOptions {
  /** Clock allowance before a lease counts as expired. @default min(2 s, heartbeatEvery / 2) of the run's job */
  readonly clockSkewMs?: number;
  /** Yield when the invocation has less than this left. @default 10 s */
  readonly yieldMarginMs?: number;
}

export interface WorkerDeps {
  readonly ledger: Ledger;
  readonly queue: RunQueue;
  readonly doc: DynamoDBDocumentClient;
  readonly jobs: ReadonlyMap<string, Job>;
  readonly handlers: Readonly<Record<string, JobHandler>>;
  readonly tables: RunContext['tables'];
  /** Outbox rows' retention (env OUTBOX_RETENTION_DAYS). @default OUTBOX_DEFAULT_RETENTION_DAYS */
  readonly outboxRetentionDays?: number;
  /** Identity written as the lease owner; unique per worker process/invocation. */
  readonly owner: string;
  readonly clock: () => number;
  readonly random?: () => number;
  readonly logger: ChildLogger;
  readonly metrics: MetricsSink;
  readonly history?: HistorySink;
  /** Time left in this invocation (Lambda's getRemainingTimeInMillis); absent = unbounded. */
  readonly remainingTimeMs?: () => number;
  readonly options?: WorkerOptions;
}

type RecordOutcome = 'ack' | 'retry';

/**
 * The clock allowance a takeover waits beyond a lease's end. A worker killed just after a
 * heartbeat leaves a full lease behind, so the takeover comes lease + allowance + redelivery
 * after the kill. Half a heartbeat interval keeps that within lease + one heartbeat with room
 * for the redelivery (SQS visibility is whole seconds, the poll adds its own delay); a longer
 * heartbeat still gets the full DEFAULT_CLOCK_SKEW_MS. The allowance only decides how soon a
 * takeover may happen, never whether two writers can both land: the fencing token does that.
 */
function clockSkewFor(deps: WorkerDeps, job: Job): number {
  return deps.options?.clockSkewMs ?? Math.min(DEFAULT_CLOCK_SKEW_MS, job.heartbeatEvery / 2);
}

export async function processBatch(deps: WorkerDeps, records: readonly QueueRecord[]): Promise<BatchResult> {
  // The same message can arrive twice in one batch (legal SQS behaviour): process it once.
  const byMessage = new Map<string, QueueRecord[]>();
  for (const record of records) byMessage.set(record.messageId, [...(byMessage.get(record.messageId) ?? []), record]);
  const outcomes = await Promise.all(
    [...byMessage.values()].map(async (copies) => {
      const record = copies[copies.length - 1]!;
      if (copies.length > 1) deps.metrics.count(MetricName.DuplicateDeliveries, copies.length - 1);
      return { record, outcome: await guardedRecord(deps, record) };
    }),
  );
  return { batchItemFailures: outcomes.filter((o) => o.outcome === 'retry').map((o) => ({ itemIdentifier: o.record.messageId })) };
}

/**
 * One record's failure must not fail its batch: a thrown error would make the event source
 * mapping redeliver every message of the batch, those already done included, and hide which one
 * failed. The error is logged with the message, counted (WorkerRecordErrors, alarmed) and the
 * record alone is reported failed, so SQS redelivers it after its visibility timeout and, if it
 * keeps failing, moves it to the DLQ. Nothing is written for it here: whatever the ledger holds is
 * still guarded by the lease and the fence, so the retry resumes from the truth.
 */
async function guardedRecord(deps: WorkerDeps, record: QueueRecord): Promise<RecordOutcome> {
  try {
    return await processRecord(deps, record);
  } catch (error) {
    deps.metrics.count(MetricName.WorkerRecordErrors);
    deps.logger.child({ messageId: record.messageId, owner: deps.owner }).error('record failed: reported to SQS for redelivery', {
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      body: record.body.slice(0, 512),
    });
    return 'retry';
  }
}

async function hide(deps: WorkerDeps, record: QueueRecord, logger: RunLogger, until: number): Promise<void> {
  const seconds = (until - deps.clock()) / 1000;
  try {
    await deps.queue.changeVisibility(record.receiptHandle, Math.max(1, seconds));
  } catch (error) {
    // The message then simply comes back at the queue's visibility timeout: slower, not wrong.
    logger.warn('could not hide message', { error: String(error) });
  }
}

export async function processRecord(deps: WorkerDeps, record: QueueRecord): Promise<RecordOutcome> {
  const history = deps.history ?? NO_HISTORY;
  const parsed = parseRunMessage(record.body, deps.jobs);
  const base = deps.logger.child({ messageId: record.messageId, owner: deps.owner });
  if (!parsed.ok) {
    deps.metrics.count(MetricName.PoisonMessages);
    base.error('poison message: left for the dead-letter queue', { code: parsed.code, reason: parsed.reason, body: record.body.slice(0, 512) });
    // Back off a little per receive so poison reaches the DLQ in minutes, not hours.
    const receives = Number(record.attributes?.ApproximateReceiveCount ?? '1');
    await hide(deps, record, base, deps.clock() + Math.min(60, 2 ** receives) * 1000);
    return 'retry';
  }
  const { message, job } = parsed;
  const logger = base.child({ job: job.name, slot: new Date(message.slot).toISOString(), shard: message.shard, runKey: message.runKey });
  const skew = clockSkewFor(deps, job);
  const exclusive = job.overlap !== OverlapPolicy.PARALLEL;
  if (exclusive) {
    const waitOrSettle = await applyOverlapBeforeClaim(deps, job, message, logger);
    if (waitOrSettle) return waitOrSettle;
  }
  const claim = await claimRun(deps, message, job, skew, exclusive);
  switch (claim.kind) {
    case 'claimed':
      if (job.overlap === OverlapPolicy.COALESCE) await supersedeOlderWaiting(deps, job, claim.run, logger);
      return execute(deps, record, job, claim.run, claim.claimedFrom, logger);
    case 'blocked':
      return onBlocked(deps, job, message, claim.holderSlot, logger);
    case 'terminal':
      deps.metrics.count(MetricName.DuplicateDeliveries);
      history.record({ type: 'duplicate', at: deps.clock(), runKey: message.runKey, messageId: record.messageId });
      logger.info('duplicate delivery of a finished run acknowledged', { status: claim.run.status, fencingToken: claim.run.fencingToken });
      return 'ack';
    case 'leased':
      deps.metrics.count(MetricName.ClaimConflicts);
      logger.info('run leased by another owner; hiding message until the lease can expire', { leaseOwner: claim.run.owner, retryAt: claim.retryAt });
      await hide(deps, record, logger, claim.retryAt);
      return 'retry';
    case 'not-due':
      logger.info('run not due for retry yet; hiding message', { nextAttemptAt: claim.retryAt });
      await hide(deps, record, logger, claim.retryAt);
      return 'retry';
    case 'exhausted':
      logger.error('run has used every claim its fencing range allows', { fencingToken: claim.run.fencingToken });
      return 'retry';
    case 'missing':
      deps.metrics.count(MetricName.PoisonMessages);
      logger.error('message names a run that does not exist: left for the dead-letter queue');
      return 'retry';
  }
}

/**
 * Claims the run; when a lease that is about to end refuses the claim, waits it out once.
 * A dead holder's message reappears after its lease's end and within a second before the lease
 * plus the clock allowance has passed (takeoverVisibilitySeconds). Hiding the message again would
 * add up to a whole second to every takeover; waiting out the fraction here costs at most that
 * much Lambda time, once per takeover. A live holder heartbeats meanwhile, so the second claim is
 * refused like the first and the message is hidden.
 */
async function claimRun(deps: WorkerDeps, id: RunId, job: Job, skew: number, exclusive: boolean): Promise<ClaimResult> {
  const claim = await deps.ledger.claim(id, deps.owner, deps.clock(), job.lease, skew, exclusive);
  if (claim.kind !== 'leased' || claim.run.status !== RunStatus.RUNNING) return claim;
  const now = deps.clock();
  const leaseEndsSoon = (claim.run.leaseUntil ?? Number.POSITIVE_INFINITY) - now <= VISIBILITY_STEP_MS;
  if (!leaseEndsSoon || claim.retryAt - now > VISIBILITY_STEP_MS) return claim;
  // +1: a lease counts as expired once leaseUntil is strictly before now − allowance.
  await sleep(Math.max(0, claim.retryAt - now) + 1);
  return deps.ledger.claim(id, deps.owner, deps.clock(), job.lease, skew, exclusive);
}

/**
 * Overlap policies (DESIGN §4, §8), enforced at claim time. The per-(job, shard) active-run
 * marker, taken in the same transaction as the claim, guarantees one run at a time; these checks
 * decide what a run does when it cannot be the one:
 * - forbid-skip: SKIPPED while an earlier run is open;
 * - forbid-queue: waits, and runs in slot order: a run with an older open run acks its message
 *   and is dispatched again by the holder when it finishes (no polling, no receive-count burn);
 * - coalesce: only the newest waiting run executes; older waiting ones become SUPERSEDED.
 */
async function applyOverlapBeforeClaim(deps: WorkerDeps, job: Job, id: RunId, logger: RunLogger): Promise<RecordOutcome | undefined> {
  if (job.overlap === OverlapPolicy.FORBID_QUEUE) {
    const older = (await deps.ledger.openRunsBeside(job.name, id.slot, 'before')).filter((r) => r.shard === id.shard);
    if (older.length > 0) {
      deps.metrics.count(MetricName.OverlapWaits);
      logger.info('waiting: an earlier run of the job is still open (forbid-queue)', { earlierSlot: new Date(older[0]!.slot).toISOString() });
      return 'ack';
    }
  }
  if (job.overlap === OverlapPolicy.COALESCE) {
    const newer = (await deps.ledger.openRunsBeside(job.name, id.slot, 'after')).filter((r) => r.shard === id.shard && isWaiting(r));
    if (newer.length > 0) {
      const self = await deps.ledger.getRun(id);
      if (self && isWaiting(self) && (await deps.ledger.settleWaiting(self, RunStatus.SUPERSEDED, `superseded by ${newer[newer.length - 1]!.runKey}`, deps.clock()))) {
        deps.metrics.count(MetricName.RunsSuperseded);
        logger.info('superseded by a newer waiting run (coalesce)');
        return 'ack';
      }
    }
  }
  return undefined;
}

function isWaiting(run: Run): boolean {
  return run.status === RunStatus.READY || run.status === RunStatus.RETRY;
}

async function onBlocked(deps: WorkerDeps, job: Job, id: RunId, holderSlot: number, logger: RunLogger): Promise<RecordOutcome> {
  if (job.overlap === OverlapPolicy.FORBID_SKIP) {
    const self = await deps.ledger.getRun(id);
    if (self && isWaiting(self)) {
      const settled = await deps.ledger.settleWaiting(self, RunStatus.SKIPPED, `skipped: run of ${new Date(holderSlot).toISOString()} still open (forbid-skip)`, deps.clock());
      if (settled) {
        deps.metrics.count(MetricName.RunsSkippedByOverlap);
        logger.info('skipped: an earlier run of the job is still open (forbid-skip)', { holderSlot: new Date(holderSlot).toISOString() });
      }
    }
    return 'ack';
  }
  // forbid-queue and coalesce: the holder dispatches the next waiting run when it finishes.
  deps.metrics.count(MetricName.OverlapWaits);
  logger.info('waiting: another run of the job holds the active marker', { holderSlot: new Date(holderSlot).toISOString() });
  return 'ack';
}

async function supersedeOlderWaiting(deps: WorkerDeps, job: Job, run: Run, logger: RunLogger): Promise<void> {
  const older = (await deps.ledger.openRunsBeside(job.name, run.slot, 'before')).filter((r) => r.shard === run.shard && isWaiting(r));
  for (const stale of older) {
    if (await deps.ledger.settleWaiting(stale, RunStatus.SUPERSEDED, `superseded by ${run.runKey}`, deps.clock())) {
      deps.metrics.count(MetricName.RunsSuperseded);
      logger.info('superseded an older waiting run (coalesce)', { superseded: stale.runKey });
    }
  }
}

/** After an exclusive run ends, dispatch the next waiting run of its lane, per policy. */
async function dispatchNextWaiting(deps: WorkerDeps, job: Job, run: Run, logger: RunLogger): Promise<void> {
  const side = job.overlap === OverlapPolicy.FORBID_QUEUE ? 'before' : 'after';
  const candidates = [
    ...(side === 'before' ? await deps.ledger.openRunsBeside(job.name, run.slot, 'before') : []),
    ...(await deps.ledger.openRunsBeside(job.name, run.slot, 'after')),
  ].filter((r) => r.shard === run.shard && isWaiting(r) && r.slot <= deps.clock() + job.startLead);
  if (candidates.length === 0) return;
  candidates.sort((a, b) => a.slot - b.slot);
  const next = job.overlap === OverlapPolicy.COALESCE ? candidates[candidates.length - 1]! : candidates[0]!;
  const delayMs = Math.max(next.slot, next.nextAttemptAt ?? 0) - job.startLead - deps.clock();
  await deps.queue.send([{ message: messageFor(next), delaySeconds: Math.max(0, Math.floor(delayMs / 1000)) }]);
  logger.info('dispatched the next waiting run', { next: next.runKey });
}

function classify(error: unknown): AttemptEnd {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown })?.code;
  if (error instanceof PermanentError) return { kind: 'permanent', code: error.code, message };
  if (error instanceof ResultUnknownError) return { kind: 'unknown', code: error.code, message };
  // Anything else, RetryableError included, is retryable: the safe default for unknown failures.
  return { kind: 'retryable', code: typeof code === 'string' ? code : error instanceof Error ? error.name : 'ERROR', message };
}

async function execute(
  deps: WorkerDeps,
  record: QueueRecord,
  job: Job,
  claimed: Run,
  claimedFrom: RunStatus,
  baseLogger: ChildLogger,
): Promise<RecordOutcome> {
  const history = deps.history ?? NO_HISTORY;
  let run = claimed;
  const logger = baseLogger.child({ fencingToken: run.fencingToken, attempt: run.attempt });
  const now = deps.clock();
  history.record({ type: 'claimed', at: now, runKey: run.runKey, owner: deps.owner, token: run.fencingToken, attempt: run.attempt, from: claimedFrom, leaseUntil: run.leaseUntil ?? now });
  if (claimedFrom === RunStatus.RUNNING) {
    deps.metrics.count(MetricName.Takeovers);
    logger.warn('took over a run whose lease expired');
  }

  const refusal = refuseToStart(job, run, now);
  if (refusal) return recordOutcome(deps, record, job, run, { status: RunStatus.DEAD, lastError: refusal }, logger);

  const controller = new AbortController();
  const stopHeartbeat = startHeartbeat(deps, record, job, () => run, (next) => (run = next), controller, logger);
  let end: AttemptEnd;
  try {
    // Runs are enqueued up to `startLead` early; wait out the remainder so the handler starts on its slot.
    const early = run.slot - deps.clock();
    if (early > 0) await sleep(Math.min(early, job.startLead + 1_000), controller.signal);
    end = await attempt(deps, job, run, claimedFrom, controller, logger);
  } catch (error) {
    end = controller.signal.aborted && controller.signal.reason === YIELD ? { kind: 'yielded' } : classify(error);
    if (error instanceof LeaseLostError || error instanceof FencedOutError || isLeaseAbort(controller)) {
      // A FencedOutError was already counted as a fencing rejection where the write was refused.
      if (!(error instanceof FencedOutError)) deps.metrics.count(MetricName.LeaseLost);
      logger.warn('stopped: this worker no longer holds the run', { error: String(error) });
      history.record({ type: 'outcome', at: deps.clock(), runKey: run.runKey, owner: deps.owner, token: run.fencingToken, status: RunStatus.RUNNING, accepted: false });
      return 'retry';
    }
  } finally {
    stopHeartbeat();
  }
  const transition = transitionFor(job, run, end, deps.clock(), deps.random ?? Math.random);
  return recordOutcome(deps, record, job, run, transition, logger);
}

const YIELD = Symbol('yield');
const TIMEOUT = Symbol('timeout');
const LEASE_LOST = Symbol('lease-lost');

function isLeaseAbort(controller: AbortController): boolean {
  return controller.signal.aborted && controller.signal.reason === LEASE_LOST;
}

async function attempt(
  deps: WorkerDeps,
  job: Job,
  run: Run,
  claimedFrom: RunStatus,
  controller: AbortController,
  logger: ChildLogger,
): Promise<AttemptEnd> {
  const history = deps.history ?? NO_HISTORY;
  const handler = deps.handlers[job.handler];
  if (!handler) throw new PermanentError(`handler "${job.handler}" is not registered`, { code: 'UNKNOWN_HANDLER' });
  const fenced = new DynamoFencedStore(deps.doc, run.fencingToken, {
    onResult: (write, result) => {
      if (result === 'fenced-out') deps.metrics.count(MetricName.FencingRejections);
      const key = write.kind === 'put' ? write.item : write.key;
      history.record({ type: 'effect', at: deps.clock(), runKey: run.runKey, token: run.fencingToken, resource: `${write.table}/${key.pk}/${key.sk}`, result });
    },
  });
  const ctx: RunContext = {
    job,
    slot: run.slot,
    shard: run.shard,
    shards: run.shards,
    runKey: run.runKey,
    fencingToken: run.fencingToken,
    attempt: run.attempt,
    signal: controller.signal,
    logger,
    fenced,
    reader: new DynamoItemReader(deps.doc),
    tables: deps.tables,
    outboxRetentionDays: deps.outboxRetentionDays ?? OUTBOX_DEFAULT_RETENTION_DAYS,
    resumeFrom: run.checkpoint,
    checkpoint: async (cursor) => {
      const check = await deps.ledger.checkpoint(run, cursor);
      if (!check.ok) {
        controller.abort(LEASE_LOST);
        throw new LeaseLostError(run.runKey, run.fencingToken);
      }
    },
    now: deps.clock,
  };

  // A run claimed out of UNKNOWN, or taken over from RUNNING after its holder's lease expired (the
  // holder died, froze or lost the ledger mid-attempt), may already have had its effect: in both
  // cases the previous attempt's result is unknown, so ask before doing it again.
  if ((claimedFrom === RunStatus.UNKNOWN || claimedFrom === RunStatus.RUNNING) && handler.reconcile) {
    const reconciled = await handler.reconcile(ctx);
    logger.info('reconciled a run whose result was unknown', { outcome: reconciled.outcome, claimedFrom });
    if (reconciled.outcome === ReconcileOutcome.ALREADY_DONE) return { kind: 'succeeded', evidence: reconciled.evidence };
    if (reconciled.outcome === ReconcileOutcome.STILL_UNKNOWN) {
      return { kind: 'unknown', code: 'STILL_UNKNOWN', message: reconciled.reason ?? 'reconcile could not tell whether the effect landed' };
    }
  }

  const started = deps.clock();
  deps.metrics.observe(MetricName.TriggerLag, started - run.slot, 'Milliseconds');
  history.record({ type: 'handler-started', at: started, runKey: run.runKey, owner: deps.owner, token: run.fencingToken, slot: run.slot });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new ResultUnknownError(`attempt exceeded timeout ${job.timeout} ms`, { code: 'TIMEOUT' }));
      // Then tell the handler to stop: its effects from here on would race the next attempt.
      controller.abort(TIMEOUT);
    }, job.timeout);
  });
  const aborted = new Promise<never>((_, reject) => {
    const fail = () => {
      if (controller.signal.reason === TIMEOUT) return; // the timeout already rejected
      reject(controller.signal.reason === YIELD ? new Error('yielded') : new LeaseLostError(run.runKey, run.fencingToken, { cause: controller.signal.reason }));
    };
    if (controller.signal.aborted) fail();
    else controller.signal.addEventListener('abort', fail, { once: true });
  });
  try {
    const result = await Promise.race([handler.run(ctx), timeout, aborted]);
    deps.metrics.observe(MetricName.RunDuration, deps.clock() - started, 'Milliseconds');
    return { kind: 'succeeded', evidence: result?.evidence };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Extends the lease and the message's visibility every `heartbeatEvery`, and aborts the handler
 * (through ctx.signal) when a heartbeat is refused, when the ledger stays unreachable until the
 * lease is about to run out, or when the invocation is about to time out (yield).
 */
function startHeartbeat(
  deps: WorkerDeps,
  record: QueueRecord,
  job: Job,
  current: () => Run,
  update: (run: Run) => void,
  controller: AbortController,
  logger: RunLogger,
): () => void {
  const history = deps.history ?? NO_HISTORY;
  const margin = deps.options?.yieldMarginMs ?? 10_000;
  let inFlight = false;
  // The message comes back after the lease's end and at most a second before a successor may
  // claim (takeoverVisibilitySeconds). A failure here is not a lost lease: at worst the message
  // reappears early and finds the run leased.
  const matchVisibilityToLease = () => {
    const now = deps.clock();
    const seconds = takeoverVisibilitySeconds(current().leaseUntil ?? now + job.lease, clockSkewFor(deps, job), now);
    return deps.queue.changeVisibility(record.receiptHandle, seconds).catch((error: unknown) => {
      logger.warn('could not extend message visibility', { error: String(error) });
    });
  };
  const beat = async () => {
    if (controller.signal.aborted || inFlight) return;
    const run = current();
    const now = deps.clock();
    inFlight = true;
    try {
      const leaseUntil = now + job.lease;
      const check = await deps.ledger.heartbeat(run, leaseUntil);
      deps.metrics.observe(MetricName.HeartbeatLatency, deps.clock() - now, 'Milliseconds');
      history.record({ type: 'heartbeat', at: now, runKey: run.runKey, owner: deps.owner, token: run.fencingToken, ok: check.ok, leaseUntil });
      if (!check.ok) {
        logger.warn('heartbeat refused: lease lost', { currentOwner: check.current?.owner, currentToken: check.current?.fencingToken });
        controller.abort(LEASE_LOST);
        return;
      }
      update({ ...run, leaseUntil });
      await matchVisibilityToLease();
    } catch (error) {
      // The ledger may be briefly unreachable; keep trying while the lease still holds.
      logger.warn('heartbeat failed', { error: String(error) });
      if ((current().leaseUntil ?? 0) - deps.clock() < job.heartbeatEvery) {
        logger.error('lease about to run out without a heartbeat: stopping the handler');
        controller.abort(LEASE_LOST);
      }
    } finally {
      inFlight = false;
    }
  };
  const interval = setInterval(() => void beat(), job.heartbeatEvery);
  // The queue's own visibility timeout is long (6 × the Lambda timeout); a run that lasts past a
  // second shortens it to the lease early, so a crash before the first heartbeat is taken over
  // after the lease, not minutes later. Runs shorter than that make no SQS call at all.
  const early = setTimeout(() => void matchVisibilityToLease(), Math.min(1_000, job.heartbeatEvery));
  // Checked more often than heartbeats: the lease runs out even if heartbeats hang (stop before a
  // successor can take over), and the invocation's time runs out whatever the heartbeat period.
  const watchdog = setInterval(() => {
    if (controller.signal.aborted) return;
    if (deps.remainingTimeMs && deps.remainingTimeMs() < margin) {
      logger.info('yielding: the invocation is about to time out');
      controller.abort(YIELD);
    } else if ((current().leaseUntil ?? 0) - deps.clock() < Math.min(1_000, job.heartbeatEvery)) {
      logger.error('lease about to run out: stopping the handler');
      controller.abort(LEASE_LOST);
    }
  }, Math.max(50, Math.min(1_000, job.heartbeatEvery / 2)));
  return () => {
    clearTimeout(early);
    clearInterval(interval);
    clearInterval(watchdog);
  };
}

async function recordOutcome(deps: WorkerDeps, record: QueueRecord, job: Job, run: Run, transition: Transition, logger: RunLogger): Promise<RecordOutcome> {
  const history = deps.history ?? NO_HISTORY;
  const now = deps.clock();
  const exclusive = job.overlap !== OverlapPolicy.PARALLEL;
  const check = await deps.ledger.complete(run, transition, now, exclusive);
  history.record({
    type: 'outcome',
    at: now,
    runKey: run.runKey,
    owner: deps.owner,
    token: run.fencingToken,
    status: transition.status,
    accepted: check.ok,
    nextAttemptAt: 'nextAttemptAt' in transition ? transition.nextAttemptAt : undefined,
  });
  if (!check.ok) {
    deps.metrics.count(MetricName.LeaseLost);
    logger.warn('outcome refused: lease lost before completion', { wanted: transition.status, currentOwner: check.current?.owner, currentToken: check.current?.fencingToken });
    return 'retry';
  }
  const duration = now - (run.startedAt ?? now);
  logger.info('run outcome', { outcome: transition.status, durationMs: duration, lastError: 'lastError' in transition ? transition.lastError : undefined });
  if (exclusive && (transition.status === RunStatus.SUCCEEDED || transition.status === RunStatus.DEAD)) {
    await dispatchNextWaiting(deps, job, run, logger);
  }
  switch (transition.status) {
    case RunStatus.SUCCEEDED:
      deps.metrics.count(MetricName.RunsSucceeded);
      return 'ack';
    case RunStatus.DEAD:
      deps.metrics.count(MetricName.RunsDead);
      return 'ack';
    case RunStatus.RETRY:
    case RunStatus.UNKNOWN:
      deps.metrics.count(transition.status === RunStatus.UNKNOWN ? MetricName.RunsUnknown : transition.refundAttempt ? MetricName.RunsYielded : MetricName.RunsRetried);
      await hide(deps, record, logger, transition.nextAttemptAt);
      return 'retry';
  }
}
