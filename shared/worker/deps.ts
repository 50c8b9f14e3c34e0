/**
 * What the worker works with (DESIGN §8): its dependencies, the SQS record it handles and what it
 * answers for it, and what every step of a record's handling may need: the clock allowance of a
 * run's job, hiding the record's message until a given time, or going on in a fresh message.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Ledger } from '../store/ledger.js';
import type { RunQueue } from '../messaging/run-queue.js';
import { REAL_TIMERS, type Timers } from '../core/concurrency.js';
import { type HistorySink, NO_HISTORY } from '../core/history.js';
import type { Job } from '../schedule/job-schema-core.js';
import type { RunMessage } from '../core/vocabulary.js';
import type { JobHandler, RunContext, RunLogger } from '../handler-api.js';
import type { MetricsSink } from '../runtime/observability.js';
import type { ChildLogger } from '../runtime/observability.js';

export interface QueueRecord {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly attributes?: { readonly ApproximateReceiveCount?: string };
}

export interface BatchResult {
  readonly batchItemFailures: { readonly itemIdentifier: string }[];
}

export type { ChildLogger } from '../runtime/observability.js';

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
  /** Heartbeats, timeouts and waits. Must tell the same time as `clock`. @default the runtime's timers */
  readonly timers?: Timers;
  readonly options?: WorkerOptions;
}

export type RecordOutcome = 'ack' | 'retry';

/** The history sink and timers a step records to and waits on: the deps' own (a test's), else the real ones. */
export function sinksOf(deps: WorkerDeps): { readonly history: HistorySink; readonly timers: Timers } {
  return { history: deps.history ?? NO_HISTORY, timers: deps.timers ?? REAL_TIMERS };
}

export function clockSkewFor(deps: WorkerDeps, job: Job): number {
  return deps.options?.clockSkewMs ?? Math.min(2_000, job.heartbeatEvery / 2);
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
export async function continueInFreshMessage(
  deps: WorkerDeps,
  record: QueueRecord,
  message: RunMessage,
  nextAttemptAt: number,
  logger: RunLogger,
): Promise<RecordOutcome> {
  try {
    await deps.queue.send([{ message, delaySeconds: Math.max(0, Math.ceil((nextAttemptAt - deps.clock()) / 1000)) }]);
    return 'ack';
  } catch (error) {
    logger.warn("could not send the run's next message: hiding this one instead", { error: String(error) });
    await hide(deps, record, logger, nextAttemptAt);
    return 'retry';
  }
}
