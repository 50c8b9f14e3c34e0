/**
 * Drives the worker against a sandbox like the event source mapping would, with test handlers,
 * a controllable clock and invocation budget, and everything observable (history, metrics, logs).
 */
import { jobsByName } from '../../shared/config.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import type { Job, JobInput } from '../../shared/schedule/job-schema.js';
import { InvariantMonitor, teeHistory } from '../../tools/verify/invariants.js';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import { messageFor } from '../../shared/planner/planner.js';
import { processBatch, type QueueRecord, type WorkerDeps } from '../../shared/worker/batch.js';
import { LocalPoller } from '../../tools/local-poller.js';
import { silentLogger, testJobs, VirtualTime } from './helpers.js';
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

/**
 * A READY run, a minute old, of a fresh every-minute job on `handler` (a 20 s lease, a heartbeat
 * every 300 ms, no start lead, `job` what the test changes), with its message and its own virtual time.
 */
export async function readyRun(box: Sandbox, stem: string, handler: string, job: Partial<JobInput> = {}) {
  const name = `${stem}-${Math.random().toString(36).slice(2, 8)}`;
  const jobs = testJobs([{ name, schedule: '* * * * *', handler, lease: 20_000, heartbeatEvery: 300, startLead: 0, ...job }], [handler]);
  const time = new VirtualTime(Date.now());
  const slot = Math.floor(time.now / 1000) * 1000 - 60_000;
  const id = { job: name, slot, shard: 0 };
  await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, time.now);
  const record = {
    messageId: `m-${name}`,
    receiptHandle: `r-${name}`,
    body: JSON.stringify(messageFor({ ...id, runKey: runKeyOf(name, slot, 0, 1) })),
  };
  return { name, jobs, time, id, slot, record };
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
