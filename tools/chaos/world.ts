/**
 * One drill iteration's world: a sandbox (fresh tables and queues), the history every worker and
 * planner reports into (in-process directly, child processes through their stdout), the notes
 * the drill handlers leave, in-process workers, and the final state read back for the checker.
 */
import { randomUUID } from 'node:crypto';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { BatchGetCommand, DeleteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Ledger } from '../../shared/store/ledger.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import { checkHistory, type BusinessState, type CheckResult, type Expected } from '../verify/checker.js';
import type { HistoryEvent, HistorySink } from '../../shared/core/history.js';
import { parseJobs, type Job, type JobInput } from '../../shared/schedule/job-schema.js';
import { isTerminal, RunStatus, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { jobsByName } from '../../shared/config.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import { messageFor, runPlannerTick, type PlannerOptions, type TickReport } from '../../shared/planner/planner.js';
import { LedgerKeys } from '../../shared/core/resources.js';
import { processBatch, type QueueRecord, type WorkerDeps } from '../../shared/worker/batch.js';
import { LocalPoller } from '../local-poller.js';
import type { LocalEndpoints } from '../local-stack.js';
import { BUSINESS_SK, businessPk, HANDLER_NAMES, makeHandlers, type DrillNote, type HandlerConfig, type HandlerHooks } from './handlers.js';
import { createSandbox, type ChaosSandbox, type SandboxOptions } from './sandbox.js';

export const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Polls `probe` until it returns true or `timeoutMs` passes; returns whether it held. */
/**
 * How long a drill waits for runs to settle after its fault. Drills end as soon as the runs
 * settle; only a run that is stuck waits this long, and a loaded machine (every lease and
 * backoff slower in wall time) must not turn into a lost-slot report.
 */
export const SETTLE_MS = 120_000;

export async function until(probe: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() >= deadline) return false;
    await sleepMs(intervalMs);
  }
}

export interface WorkerSpec {
  readonly owner?: string;
  readonly handlers?: Readonly<Record<string, JobHandler>>;
  readonly handlerConfig?: HandlerConfig;
  readonly hooks?: HandlerHooks;
  readonly clock?: () => number;
  readonly doc?: DynamoDBDocumentClient;
  readonly sqs?: SQSClient;
  readonly history?: HistorySink;
  readonly metrics?: InMemoryMetrics;
  readonly clockSkewMs?: number;
}

export interface PollerSpec extends WorkerSpec {
  readonly batchSize?: number;
  readonly waitTimeSeconds?: number;
  readonly visibilityTimeoutSeconds?: number;
  /** Stop it with the world (default). A victim that may hang forever must not be tracked. */
  readonly track?: boolean;
}

export class World {
  readonly events: HistoryEvent[] = [];
  readonly notes: DrillNote[] = [];
  readonly metrics = new InMemoryMetrics();
  readonly sink: HistorySink = { record: (event) => void this.events.push(event) };
  readonly hooks: HandlerHooks = { record: (event) => this.sink.record(event), note: (note) => void this.notes.push(note) };
  readonly logger: JsonLineLogger;
  readonly errors: string[] = [];
  private readonly pollers: LocalPoller[] = [];
  jobs: Job[] = [];

  private constructor(
    readonly box: ChaosSandbox,
    private readonly log?: (line: string) => void,
  ) {
    this.logger = new JsonLineLogger((line) => (process.env.CHAOS_VERBOSE ? log?.(line) : undefined), {}, 'error');
  }

  static async create(base: LocalEndpoints, options: SandboxOptions = {}, log?: (line: string) => void): Promise<World> {
    return new World(await createSandbox(base, options), log);
  }

  get endpoints(): LocalEndpoints {
    return this.box.endpoints;
  }

  get ledger(): Ledger {
    return this.box.ledger;
  }

  setJobs(inputs: readonly JobInput[]): Job[] {
    // The drills' workers run in process or as local children: no Lambda time limit applies.
    this.jobs = parseJobs(inputs, { handlers: [...HANDLER_NAMES], workerTimeoutMs: Number.POSITIVE_INFINITY });
    return this.jobs;
  }

  job(name: string): Job {
    const job = this.jobs.find((j) => j.name === name);
    if (!job) throw new Error(`no job ${name}`);
    return job;
  }

  notesOf(kind: DrillNote['note']): DrillNote[] {
    return this.notes.filter((n) => n.note === kind);
  }

  workerDeps(spec: WorkerSpec = {}): WorkerDeps {
    const doc = spec.doc ?? this.box.clients.doc;
    const owner = spec.owner ?? `w-${randomUUID().slice(0, 8)}`;
    const sqs = spec.sqs ?? this.box.clients.sqs;
    return {
      ledger: spec.doc ? new Ledger(doc, { tableName: this.endpoints.ledgerTable }) : this.ledger,
      queue: spec.sqs ? new RunQueue(sqs, this.endpoints.runQueueUrl) : this.box.queue,
      doc,
      jobs: jobsByName(this.jobs),
      handlers: spec.handlers ?? makeHandlers(spec.handlerConfig ?? { seed: 1 }, spec.hooks ?? this.hooks),
      tables: { ledger: this.endpoints.ledgerTable, payments: this.endpoints.paymentsTable },
      owner,
      clock: spec.clock ?? Date.now,
      logger: this.logger.child({ worker: owner }),
      metrics: spec.metrics ?? this.metrics,
      history: spec.history ?? this.sink,
      options: { clockSkewMs: spec.clockSkewMs ?? 200 },
    };
  }

  /** An in-process worker polling the run queue like the event source mapping. */
  startPoller(spec: PollerSpec = {}): { poller: LocalPoller; deps: WorkerDeps } {
    const deps = this.workerDeps(spec);
    const poller = new LocalPoller(
      spec.sqs ?? this.box.clients.sqs,
      (records) => processBatch(deps, records),
      {
        queueUrl: this.endpoints.runQueueUrl,
        batchSize: spec.batchSize ?? 10,
        waitTimeSeconds: spec.waitTimeSeconds,
        visibilityTimeoutSeconds: spec.visibilityTimeoutSeconds,
      },
      (error) => {
        if ((error as { name?: string })?.name !== 'AbortError') this.errors.push(`${deps.owner}: ${String(error)}`);
      },
    );
    poller.start();
    if (spec.track ?? true) this.pollers.push(poller);
    return { poller, deps };
  }

  async stopPollers(): Promise<void> {
    const pollers = this.pollers.splice(0);
    await Promise.all(pollers.map((p) => p.stop()));
  }

  /** Creates READY runs directly (a minimal planner for the worker drills) and sends their messages. */
  async createRuns(runs: readonly { job: Job; slot: number; shard?: number }[], now = Date.now()): Promise<RunId[]> {
    const ids: RunId[] = [];
    const out = [];
    for (const spec of runs) {
      const shard = spec.shard ?? 0;
      const result = await this.ledger.createRun(
        { job: spec.job.name, slot: spec.slot, shard, shards: spec.job.shards, status: RunStatus.READY },
        now,
      );
      if (!result.created) throw new Error(`run ${spec.job.name}@${spec.slot} already existed`);
      this.sink.record({
        type: 'run-created',
        at: now,
        runKey: result.run.runKey,
        job: spec.job.name,
        slot: spec.slot,
        shard,
        status: RunStatus.READY,
      });
      ids.push({ job: spec.job.name, slot: spec.slot, shard });
      out.push({ message: messageFor(result.run), delaySeconds: 0 });
    }
    await this.box.queue.send(out);
    for (const o of out) this.sink.record({ type: 'message-sent', at: Date.now(), runKey: o.message.runKey, reason: 'planned' });
    return ids;
  }

  /** One planner tick of this world's jobs (partition 0 of 1). */
  tick(clock: () => number, options: PlannerOptions = {}, ledger: Ledger = this.ledger): Promise<TickReport> {
    return runPlannerTick(
      { ledger, queue: this.box.queue, jobs: this.jobs, clock, logger: this.logger, metrics: this.metrics, history: this.sink, options },
      { partition: 0, of: 1 },
    );
  }

  /** Forgets the planner's layout and watermarks (a fresh partition starts at `now`). */
  async resetWatermark(): Promise<void> {
    await this.box.clients.doc.send(
      new DeleteCommand({ TableName: this.endpoints.ledgerTable, Key: { pk: LedgerKeys.plannerPk, sk: LedgerKeys.plannerStateSk } }),
    );
  }

  /**
   * Receives and processes until the queue is empty (manual-clock drills: every message is sent
   * without delay and visible at once; what a worker hands back stays hidden for the visibility
   * timeout). Several lanes, each its own worker, like concurrent Lambda invocations.
   */
  async drain(lanes: readonly WorkerDeps[], options: { visibilityTimeoutSeconds?: number; idleRounds?: number } = {}): Promise<number> {
    let processed = 0;
    await Promise.all(
      lanes.map(async (deps) => {
        let idle = 0;
        while (idle < (options.idleRounds ?? 1)) {
          const { Messages = [] } = await this.box.clients.sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: this.endpoints.runQueueUrl,
              MaxNumberOfMessages: 10,
              WaitTimeSeconds: 0,
              VisibilityTimeout: options.visibilityTimeoutSeconds ?? 60,
              MessageSystemAttributeNames: ['ApproximateReceiveCount'],
            }),
          );
          if (Messages.length === 0) {
            idle++;
            await sleepMs(10);
            continue;
          }
          idle = 0;
          const records: QueueRecord[] = Messages.map((m) => ({
            messageId: m.MessageId!,
            receiptHandle: m.ReceiptHandle!,
            body: m.Body ?? '',
            attributes: { ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount },
          }));
          const { batchItemFailures } = await processBatch(deps, records);
          processed += records.length;
          const failed = new Set(batchItemFailures.map((f) => f.itemIdentifier));
          const done = records.filter((r) => !failed.has(r.messageId));
          if (done.length > 0) {
            await this.box.clients.sqs.send(
              new DeleteMessageBatchCommand({
                QueueUrl: this.endpoints.runQueueUrl,
                Entries: done.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
              }),
            );
          }
        }
      }),
    );
    return processed;
  }

  async runsOf(jobNames: readonly string[] = this.jobs.map((j) => j.name)): Promise<Run[]> {
    const all = await Promise.all(jobNames.map((name) => this.ledger.listRuns(name, { ascending: true })));
    return all.flat();
  }

  /** Waits until every run of `ids` satisfies `done` (default: terminal); returns whether they did. */
  async waitForRuns(
    ids: readonly RunId[],
    timeoutMs: number,
    done: (run: Run) => boolean = (run) => isTerminal(run.status),
  ): Promise<boolean> {
    const wanted = new Set(ids.map((id) => `${id.job}|${id.slot}|${id.shard}`));
    const jobs = [...new Set(ids.map((id) => id.job))];
    return until(
      async () => {
        const runs = await this.runsOf(jobs);
        const ok = runs.filter((r) => wanted.has(`${r.job}|${r.slot}|${r.shard}`) && done(r));
        return ok.length === wanted.size;
      },
      timeoutMs,
      150,
    );
  }

  /** The business items of these runs, with their commit-ordered write logs. */
  async business(runKeys: readonly string[]): Promise<BusinessState[]> {
    const table = this.endpoints.ledgerTable;
    const states: BusinessState[] = [];
    const keys = [...new Set(runKeys)].map((runKey) => ({ pk: businessPk(runKey), sk: BUSINESS_SK }));
    for (let i = 0; i < keys.length; i += 100) {
      let request: Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: boolean }> | undefined = {
        [table]: { Keys: keys.slice(i, i + 100), ConsistentRead: true },
      };
      while (request && Object.keys(request).length > 0) {
        const response = await this.box.clients.doc.send(new BatchGetCommand({ RequestItems: request }));
        for (const item of response.Responses?.[table] ?? []) {
          const log = Array.isArray(item.log) ? (item.log as Record<string, unknown>[]) : [];
          states.push({
            resource: `${table}/${item.pk as string}/${item.sk as string}`,
            lastFence: typeof item.lastFence === 'number' ? item.lastFence : undefined,
            effects: log.map((entry) => ({
              token: Number(entry.token),
              runKey: entry.runKey as string | undefined,
              businessKey: entry.businessKey as string | undefined,
              kind: entry.kind as string | undefined,
            })),
          });
        }
        request = response.UnprocessedKeys as typeof request;
      }
    }
    return states;
  }

  /** Reads the final ledger and business items and runs the checker over everything reported. */
  async check(expected: Expected, jobNames?: readonly string[]): Promise<{ result: CheckResult; runs: Run[] }> {
    // The history first, then the state: a handler still running (one that ignores ctx.signal)
    // may land a write meanwhile; the item then shows a write the history does not (fine), never
    // the other way round (which the checker reports as a lost write).
    const events = [...this.events];
    const runs = await this.runsOf(jobNames);
    const business = await this.business(runs.map((r) => r.runKey));
    return { result: checkHistory(events, { runs, business }, expected), runs };
  }

  async destroy(): Promise<void> {
    await this.stopPollers().catch(() => undefined);
    await this.box.destroy();
  }
}
