/**
 * The worker (DESIGN §8): for each SQS record, validate, claim the lease (through the lane for
 * exclusive overlap policies), run the attempt (attempt.ts), and report the records to
 * retry in `batchItemFailures`, as the Lambda SQS event source expects with
 * ReportBatchItemFailures.
 */
import { sleep } from '../core/concurrency.js';
import { NO_HISTORY } from '../core/history.js';
import type { Job } from '../schedule/job-schema-core.js';
import { VISIBILITY_STEP_MS, type ClaimResult } from '../core/lease.js';
import { isExclusive, LANE_CLOCK_ALLOWANCE_MS } from '../core/lanes.js';
import { parseRunMessage } from '../core/run-message.js';
import { RunStatus, type RunId, type RunMessage } from '../core/vocabulary.js';
import { MetricName } from '../runtime/observability.js';
import { execute } from './attempt.js';
import {
  clockSkewFor,
  continueInFreshMessage,
  hide,
  type BatchResult,
  type QueueRecord,
  type RecordOutcome,
  type WorkerDeps,
} from './deps.js';
import { beforeClaim, claimInLane, onBlocked } from './lanes.js';
import { runEnded } from './run-ended.js';

export type { BatchResult, ChildLogger, QueueRecord, RecordOutcome, WorkerDeps, WorkerOptions } from './deps.js';

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

/** How many times SQS has delivered the record (1 when it does not say). */
function receiveCountOf(record: QueueRecord): number {
  const receives = Number(record.attributes?.ApproximateReceiveCount ?? '1');
  return Number.isFinite(receives) ? receives : 1;
}

/** Seconds a message whose processing threw stays hidden: doubling per receive, at most a minute. */
function backoffSeconds(record: QueueRecord): number {
  return Math.min(60, 2 ** Math.max(1, receiveCountOf(record)));
}

/**
 * One record's failure must not fail its batch: a thrown error would make the event source
 * mapping redeliver every message of the batch, those already done included, and hide which one
 * failed. The error is logged with the message, counted (WorkerRecordErrors, alarmed) and the
 * record alone is reported failed. Its message is hidden for a short backoff, so SQS redelivers it
 * in seconds rather than after the queue's visibility timeout (minutes) and, if it keeps failing,
 * moves it to the DLQ. Nothing is written for it here: whatever the ledger holds is still guarded
 * by the lease and the fence, so the retry resumes from the truth.
 */
async function guardedRecord(deps: WorkerDeps, record: QueueRecord): Promise<RecordOutcome> {
  try {
    return await processRecord(deps, record);
  } catch (error) {
    deps.metrics.count(MetricName.WorkerRecordErrors);
    const logger = deps.logger.child({ messageId: record.messageId, owner: deps.owner });
    logger.error('record failed: reported to SQS for redelivery', {
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      body: record.body.slice(0, 512),
    });
    await hide(deps, record, logger, deps.clock() + backoffSeconds(record) * 1000);
    return 'retry';
  }
}

export async function processRecord(deps: WorkerDeps, record: QueueRecord): Promise<RecordOutcome> {
  const history = deps.history ?? NO_HISTORY;
  const parsed = parseRunMessage(record.body, deps.jobs);
  const base = deps.logger.child({ messageId: record.messageId, owner: deps.owner });
  if (!parsed.ok) {
    deps.metrics.count(MetricName.PoisonMessages);
    history.record({
      type: 'poison',
      at: deps.clock(),
      runKey: '',
      ...(parsed.orphan ? { job: parsed.orphan.job } : {}),
      messageId: record.messageId,
      receiveCount: receiveCountOf(record),
      code: parsed.code,
      reason: parsed.reason,
    });
    base.error('poison message: left for the dead-letter queue', {
      code: parsed.code,
      reason: parsed.reason,
      body: record.body.slice(0, 512),
    });
    // The run of a job removed from the config is left open: watched, so the sweeper reports it.
    if (parsed.orphan) await deps.ledger.watch(parsed.orphan).catch(() => false);
    // Back off a little per receive so poison reaches the DLQ in minutes, not hours.
    await hide(deps, record, base, deps.clock() + backoffSeconds(record) * 1000);
    return 'retry';
  }
  const { message, job } = parsed;
  const logger = base.child({ job: job.name, slot: new Date(message.slot).toISOString(), shard: message.shard, runKey: message.runKey });
  const skew = clockSkewFor(deps, job);
  const exclusive = isExclusive(job);
  const laneDeps = { ledger: deps.ledger, queue: deps.queue, clock: deps.clock, metrics: deps.metrics };
  if (exclusive) {
    // Every overlap decision is taken at the run's fire time: the message may come up to
    // `startLead` early, and the lane's state then is not its state at the slot.
    await waitForFireTime(deps, job, message);
    if (await beforeClaim(laneDeps, job, message, logger)) return 'ack';
  }
  const claim = exclusive
    ? await claimInLane(laneDeps, job, message, logger, () => claimRun(deps, message, job, skew))
    : await claimRun(deps, message, job, skew);
  switch (claim.kind) {
    case 'waits':
      return 'ack';
    case 'contended':
      await hide(deps, record, logger, claim.retryAt);
      return 'retry';
    case 'claimed':
      return execute(deps, record, job, claim.run, claim.claimedFrom, logger);
    case 'blocked':
      return onBlocked(laneDeps, job, message, claim.holderSlot, logger);
    case 'terminal':
      deps.metrics.count(MetricName.DuplicateDeliveries);
      history.record({ type: 'duplicate', at: deps.clock(), runKey: message.runKey, messageId: record.messageId });
      logger.info('duplicate delivery of a finished run acknowledged', { status: claim.run.status, fencingToken: claim.run.fencingToken });
      return 'ack';
    case 'leased':
      deps.metrics.count(MetricName.ClaimConflicts);
      logger.info('run leased by another owner; hiding message until the lease can expire', {
        leaseOwner: claim.run.owner,
        retryAt: claim.retryAt,
      });
      // A copy waiting out a live holder is no attempt: once it has been received before, it goes
      // on in a fresh message, so a holder that outlives maxReceiveCount leases never sends it to the DLQ.
      if (receiveCountOf(record) > 1) return continueInFreshMessage(deps, record, message, claim.retryAt, logger);
      await hide(deps, record, logger, claim.retryAt);
      return 'retry';
    case 'not-due':
      logger.info('run not due for retry yet; hiding message', { nextAttemptAt: claim.retryAt });
      await hide(deps, record, logger, claim.retryAt);
      return 'retry';
    case 'exhausted': {
      // No claim is left in its fencing range: retrying can never succeed. End it visibly.
      logger.error('run has used every claim its fencing range allows: DEAD', { fencingToken: claim.run.fencingToken });
      // A RUNNING one here is a vanished holder's (a live one is 'leased'): its lease is over.
      const settled =
        claim.run.status === RunStatus.RUNNING
          ? await deps.ledger.endSpentRunning(claim.run, deps.clock(), deps.clock() - skew)
          : await deps.ledger.settleWaiting(
              claim.run,
              RunStatus.DEAD,
              `every claim of the fencing range was used (token ${claim.run.fencingToken})`,
              deps.clock(),
            );
      if (settled) {
        deps.metrics.count(MetricName.RunsDead);
        await runEnded(laneDeps, job, claim.run, logger);
      }
      return settled ? 'ack' : 'retry';
    }
    case 'missing':
      deps.metrics.count(MetricName.PoisonMessages);
      history.record({
        type: 'poison',
        at: deps.clock(),
        runKey: message.runKey,
        job: message.job,
        messageId: record.messageId,
        receiveCount: receiveCountOf(record),
        code: 'RUN_MISSING',
        reason: 'the message names a run that does not exist',
      });
      logger.error('message names a run that does not exist: left for the dead-letter queue');
      return 'retry';
  }
}

/**
 * Waits until the run's fire time, which the message names (a jittered one) or is its slot. SQS
 * delivers a planned message `startLead` early; one early by more than that and the clock
 * allowance was sent early on purpose (a redrive, an operator's retry of a run not yet due) and
 * is decided now, as it would be on a worker whose clock is that far ahead.
 */
async function waitForFireTime(deps: WorkerDeps, job: Job, message: RunMessage): Promise<void> {
  const early = (message.fireAt ?? message.slot) - deps.clock();
  if (early > 0 && early <= job.startLead + LANE_CLOCK_ALLOWANCE_MS) await sleep(early, undefined, deps.timers);
}

/**
 * Claims the run; when a lease that is about to end refuses the claim, waits it out once.
 * A dead holder's message reappears after its lease's end and within a second before the lease
 * plus the clock allowance has passed (takeoverVisibilitySeconds). Hiding the message again would
 * add up to a whole second to every takeover; waiting out the fraction here costs at most that
 * much Lambda time, once per takeover. A live holder heartbeats meanwhile, so the second claim is
 * refused like the first and the message is hidden.
 */
async function claimRun(deps: WorkerDeps, id: RunId, job: Job, skew: number): Promise<ClaimResult> {
  const claim = await deps.ledger.claim(id, deps.owner, deps.clock(), job.lease, skew);
  if (claim.kind !== 'leased' || claim.run.status !== RunStatus.RUNNING) return claim;
  const now = deps.clock();
  const leaseEndsSoon = (claim.run.leaseUntil ?? Number.POSITIVE_INFINITY) - now <= VISIBILITY_STEP_MS;
  if (!leaseEndsSoon || claim.retryAt - now > VISIBILITY_STEP_MS) return claim;
  // +1: a lease counts as expired once leaseUntil is strictly before now − allowance.
  await sleep(Math.max(0, claim.retryAt - now) + 1, undefined, deps.timers);
  return deps.ledger.claim(id, deps.owner, deps.clock(), job.lease, skew);
}
