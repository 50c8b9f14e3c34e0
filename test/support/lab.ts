/**
 * A deterministic bench for the worker's decisions: runs created directly in a sandbox ledger,
 * messages handed to `processRecord` one at a time under a manual clock, and every message the
 * worker sends (lane hand-offs) or hides kept for the test to inspect and deliver.
 */
import { RunQueue, type OutgoingRun } from '../../shared/messaging/run-queue.js';
import { jobsByName } from '../../shared/config.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { InvariantMonitor, teeHistory } from '../../tools/verify/invariants.js';
import { messageFor } from '../../shared/core/run-message.js';
import { RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import { processRecord, type QueueRecord, type WorkerDeps } from '../../shared/worker/batch.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { ManualClock, silentLogger } from './helpers.js';
import type { Sandbox } from './stack.js';

/**
 * One planner tick of partition 0 of 1 on `box`'s ledger at `now` (a 65 s lookahead, a silent
 * logger, fresh metrics), its messages kept in `queue`.
 */
export function plannerTick(box: Pick<Sandbox, 'ledger'>, jobs: readonly Job[], now: number, queue: RunQueue = new RecordingQueue()) {
  return runPlannerTick(
    {
      ledger: box.ledger,
      queue,
      jobs,
      clock: () => now,
      logger: silentLogger(),
      metrics: new InMemoryMetrics(),
      options: { lookaheadMs: 65_000 },
    },
    { partition: 0, of: 1 },
  );
}

/** A RunQueue that keeps what it is asked to send or hide instead of calling SQS. */
export class RecordingQueue extends RunQueue {
  sent: OutgoingRun[] = [];
  readonly hidden: { receiptHandle: string; seconds: number }[] = [];

  constructor() {
    super(undefined as never, 'recording-queue');
  }

  override async send(runs: readonly OutgoingRun[]): Promise<void> {
    this.sent.push(...runs);
  }

  override async changeVisibility(receiptHandle: string, seconds: number): Promise<void> {
    this.hidden.push({ receiptHandle, seconds });
  }

  take(): OutgoingRun[] {
    const out = this.sent;
    this.sent = [];
    return out;
  }
}

let messages = 0;

export class Lab {
  readonly clock: ManualClock;
  readonly queue = new RecordingQueue();
  readonly metrics = new InMemoryMetrics();
  readonly events: HistoryEvent[] = [];
  readonly logs: Record<string, unknown>[] = [];
  readonly monitor = new InvariantMonitor();

  constructor(
    readonly box: Sandbox,
    readonly jobs: readonly Job[],
    readonly handlers: Record<string, JobHandler>,
    now: number,
  ) {
    this.clock = new ManualClock(now);
  }

  deps(owner: string, extra: Partial<WorkerDeps> = {}): WorkerDeps {
    return {
      ledger: this.box.ledger,
      queue: this.queue,
      doc: this.box.clients.doc,
      jobs: jobsByName(this.jobs),
      handlers: this.handlers,
      tables: { ledger: this.box.endpoints.ledgerTable, payments: this.box.endpoints.paymentsTable },
      owner,
      clock: this.clock.read,
      logger: new JsonLineLogger((line) => this.logs.push(JSON.parse(line) as Record<string, unknown>), {}, 'debug'),
      metrics: this.metrics,
      history: teeHistory(this.monitor, { record: (event) => this.events.push(event) }),
      random: () => 0.5,
      ...extra,
    };
  }

  job(name: string): Job {
    const job = this.jobs.find((j) => j.name === name);
    if (!job) throw new Error(`no job ${name}`);
    return job;
  }

  id(job: string, slot: number, shard = 0): RunId {
    return { job, slot, shard };
  }

  async create(job: string, slot: number, options: { shard?: number; watch?: boolean } = {}): Promise<Run> {
    const result = await this.box.ledger.createRun(
      {
        job,
        slot,
        shard: options.shard ?? 0,
        shards: this.job(job).shards,
        status: RunStatus.READY,
        watch: options.watch,
        laneOverlap: this.job(job).overlap,
      },
      this.clock.now,
    );
    if (!result.created) throw new Error(`run ${job}@${slot} exists`);
    return result.run;
  }

  record(job: string, slot: number, shard = 0): QueueRecord {
    const id = `m${++messages}`;
    return {
      messageId: id,
      receiptHandle: `r-${id}`,
      body: JSON.stringify(messageFor({ job, slot, shard, runKey: runKeyOf(job, slot, shard, this.job(job).shards) })),
    };
  }

  /** Hands one message of the run to a worker and waits for its decision. */
  deliver(job: string, slot: number, owner = 'worker', extra: Partial<WorkerDeps> = {}, shard = 0): Promise<'ack' | 'retry'> {
    return processRecord(this.deps(owner, extra), this.record(job, slot, shard));
  }

  /** Delivers every message the workers sent since the last call, in order, as sent; returns their run keys. */
  async deliverSent(owner = 'worker'): Promise<string[]> {
    const keys: string[] = [];
    for (const out of this.queue.take()) {
      keys.push(out.message.runKey);
      const id = `m${++messages}`;
      await processRecord(this.deps(owner), { messageId: id, receiptHandle: `r-${id}`, body: JSON.stringify(out.message) });
    }
    return keys;
  }

  run(job: string, slot: number, shard = 0): Promise<Run | undefined> {
    return this.box.ledger.getRun(this.id(job, slot, shard));
  }

  async status(job: string, slot: number, shard = 0): Promise<RunStatus | undefined> {
    return (await this.run(job, slot, shard))?.status;
  }

  /** The run keys whose handler started, in order. */
  started(): string[] {
    return this.events.filter((e) => e.type === 'handler-started').map((e) => e.runKey);
  }
}
