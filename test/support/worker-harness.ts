/**
 * Drives the worker against a sandbox like the event source mapping would, with test handlers,
 * a controllable clock and invocation budget, and everything observable (history, metrics, logs).
 */
import { jobsByName } from '../../shared/config.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { InvariantMonitor, teeHistory } from '../../tools/verify/invariants.js';
import { runKeyOf } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import { messageFor } from '../../shared/planner/planner.js';
import { processBatch, type QueueRecord, type WorkerDeps } from '../../shared/worker/batch.js';
import { LocalPoller } from '../../tools/local-poller.js';
import { silentLogger } from './helpers.js';
import type { Sandbox } from './stack.js';

/**
 * Worker deps on the sandbox's ledger, queue and tables, on the real clock with a silent logger and
 * fresh metrics: what every test's worker shares, `extra` what the test changes.
 */
export function workerDeps(
  box: Sandbox,
  jobs: readonly Job[],
  handlers: Record<string, JobHandler>,
  owner: string,
  extra: Partial<WorkerDeps> = {},
): WorkerDeps {
  return {
    ledger: box.ledger,
    queue: box.queue,
    doc: box.clients.doc,
    jobs: jobsByName(jobs),
    handlers,
    tables: { ledger: box.endpoints.ledgerTable, payments: box.endpoints.paymentsTable },
    owner,
    clock: Date.now,
    logger: silentLogger(),
    metrics: new InMemoryMetrics(),
    ...extra,
  };
}

export class WorkerHarness {
  readonly metrics = new InMemoryMetrics();
  readonly events: HistoryEvent[] = [];
  readonly logs: Record<string, unknown>[] = [];
  readonly monitor = new InvariantMonitor();

  constructor(
    readonly box: Sandbox,
    readonly jobs: readonly Job[],
    readonly handlers: Record<string, JobHandler>,
  ) {}

  deps(owner: string, extra: Partial<WorkerDeps> = {}): WorkerDeps {
    return workerDeps(this.box, this.jobs, this.handlers, owner, {
      logger: new JsonLineLogger((line) => this.logs.push(JSON.parse(line) as Record<string, unknown>), {}, 'debug'),
      metrics: this.metrics,
      history: teeHistory(this.monitor, { record: (event) => this.events.push(event) }),
      ...extra,
    });
  }

  /** A record as SQS would deliver it for the run (job, slot, shard 0). */
  record(job: string, slot: number, messageId = `m-${job}-${slot}`, shards = 1): QueueRecord {
    return {
      messageId,
      receiptHandle: `r-${messageId}`,
      body: JSON.stringify(messageFor({ job, slot, shard: 0, runKey: runKeyOf(job, slot, 0, shards) })),
    };
  }

  poller(owner: string, extra: (records: QueueRecord[]) => Partial<WorkerDeps> = () => ({})): LocalPoller {
    return new LocalPoller(this.box.clients.sqs, (records) => processBatch(this.deps(owner, extra(records)), records), {
      queueUrl: this.box.endpoints.runQueueUrl,
    });
  }

  outcomes(runKey?: string) {
    return this.events.filter(
      (e): e is Extract<HistoryEvent, { type: 'outcome' }> => e.type === 'outcome' && (runKey === undefined || e.runKey === runKey),
    );
  }
}
