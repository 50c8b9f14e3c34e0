/**
 * The local runtime (DESIGN §2): the same planner and worker code as the Lambdas, against the
 * local stack, with a timer in place of EventBridge and pollers in place of the event source
 * mapping. Every event goes through the invariant monitor; `npm start`, the end-to-end tests,
 * the benchmark and the chaos drills all build on this class.
 */
import { randomUUID } from 'node:crypto';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { RunQueue } from '../shared/messaging/run-queue.js';
import type { Job } from '../shared/schedule/job-schema.js';
import type { HistoryEvent, HistorySink } from '../shared/core/history.js';
import { InvariantMonitor, teeHistory, type Violation } from './verify/invariants.js';
import { jobsByName } from '../shared/config.js';
import type { JobHandler } from '../shared/handler-api.js';
import { PAYMENTS_PK } from '../shared/handlers/payments-reconcile.js';
import { InMemoryMetrics, JsonLineLogger, MetricName, type RunLogger } from '../shared/runtime/observability.js';
import { ConfigRecorder } from '../shared/planner/config-record.js';
import { DeployedConfigStore } from '../shared/store/deployed-config.js';
import { runPlannerTick, type PlannerOptions, type TickReport } from '../shared/planner/planner.js';
import { createClients, type Clients } from '../shared/runtime/clients.js';
import { RunStatus, runKeyOf, type Run } from '../shared/core/vocabulary.js';
import { processBatch, type ChildLogger, type QueueRecord, type WorkerOptions } from '../shared/worker/batch.js';
import { localClientConfig, type DeadLetter, type LocalEndpoints } from './local-stack.js';
import { LocalPoller } from './local-poller.js';
import { LocalOutboxRelay } from './local-outbox-relay.js';
import { Ledger } from '../shared/store/ledger.js';
import type { LedgerObserver, PauseRecord, SettledStatus } from '../shared/store/observer.js';
import type {
  DeadLetterLine,
  FencedOutLine,
  PausedLine,
  PoisonLine,
  RunOutcomeLine,
  RunSettledLine,
  RuntimeSummary,
  TakeoverLine,
} from './local-reports.js';
import type { OutboxEvent } from '../shared/core/outbox.js';
import { PAUSED_BY_FAILURE } from '../shared/core/pause.js';

export type {
  DeadLetterLine,
  FencedOutLine,
  PausedLine,
  PoisonLine,
  RunOutcomeLine,
  RunSettledLine,
  RuntimeSummary,
  TakeoverLine,
} from './local-reports.js';

export interface LocalRuntimeOptions {
  readonly endpoints: LocalEndpoints;
  readonly jobs: readonly Job[];
  readonly handlers: Readonly<Record<string, JobHandler>>;
  /** @default 2 */
  readonly workers?: number;
  /** @default 10 */
  readonly batchSize?: number;
  /** Planner partitions, each ticked separately. @default 1 */
  readonly partitions?: number;
  readonly planner?: PlannerOptions;
  readonly worker?: WorkerOptions;
  readonly clock?: () => number;
  /** Structured JSON log lines of the planner and workers; silent by default. */
  readonly log?: (line: string) => void;
  readonly onOutcome?: (line: RunOutcomeLine) => void;
  readonly onSettled?: (line: RunSettledLine) => void;
  readonly onFencedOut?: (line: FencedOutLine) => void;
  readonly onTakeover?: (line: TakeoverLine) => void;
  readonly onPoison?: (line: PoisonLine) => void;
  readonly onPaused?: (line: PausedLine) => void;
  readonly onDeadLetter?: (line: DeadLetterLine) => void;
  readonly onViolation?: (violation: Violation) => void;
  readonly history?: HistorySink;
  /** Receives every outbox event the local relay reads from the ledger's stream. */
  readonly onOutboxEvent?: (event: OutboxEvent) => void;
  /** Called after each worker batch (one Lambda invocation) with its records and how long processBatch took. */
  readonly onBatch?: (records: readonly QueueRecord[], ms: number) => void;
}

export class LocalRuntime {
  readonly clients: Clients;
  readonly metrics = new InMemoryMetrics();
  readonly monitor: InvariantMonitor;
  readonly events: HistoryEvent[] = [];
  readonly pollers: LocalPoller[] = [];
  private readonly history: HistorySink;
  private readonly claims = new Map<string, { attempt: number; at: number }>();
  /** The owner of each run's latest claim seen, to name whom a takeover took the run from. */
  private readonly holders = new Map<string, string>();
  /** Errors recorded by accepted outcomes, by `runKey/token`, until their outcome event is reported. */
  private readonly errors = new Map<string, { code: string; message: string }>();
  private readonly started = Date.now();
  private readonly ledger: Ledger;
  private readonly queue: RunQueue;
  private timer: NodeJS.Timeout | undefined;
  private relay: LocalOutboxRelay | undefined;
  readonly outboxEvents: OutboxEvent[] = [];
  private ticking: Promise<unknown> = Promise.resolve();
  private readonly logger: ChildLogger;
  /** The planner's cold-start record of its config, which `ops … --local` reads. */
  private readonly configRecorder: ConfigRecorder;
  runsSucceeded = 0;
  runsFailed = 0;
  runsSkipped = 0;
  runsSuperseded = 0;
  fencedOutWrites = 0;
  jobsPausedByFailure = 0;
  deadLettered = 0;
  ticks = 0;
  /** Poison messages seen, by message id: one line each, however often SQS delivers it again. */
  private readonly poison = new Set<string>();

  constructor(readonly options: LocalRuntimeOptions) {
    const e = options.endpoints;
    this.clients = createClients({ dynamo: localClientConfig(e.dynamoEndpoint), sqs: localClientConfig(e.sqsEndpoint) });
    this.monitor = new InvariantMonitor(0, options.onViolation);
    this.history = teeHistory(this.monitor, { record: (event) => this.observe(event) }, ...(options.history ? [options.history] : []));
    this.logger = new JsonLineLogger(options.log ?? (() => undefined));
    // The observer tells `npm start` what the history events do not carry: an outcome's error,
    // the runs ended without an attempt (SKIPPED, SUPERSEDED, DEAD) and the jobs paused.
    const observer: LedgerObserver = {
      completed: (run, outcome) => {
        if ('lastError' in outcome && outcome.lastError) this.errors.set(`${run.runKey}/${run.fencingToken}`, outcome.lastError);
      },
      settled: (run, status, reason) => this.settled(run, status, reason),
      paused: (job, by) => this.paused(job, by),
    };
    this.ledger = new Ledger(this.clients.doc, { tableName: e.ledgerTable, retentionDays: 30, observer });
    this.queue = new RunQueue(this.clients.sqs, e.runQueueUrl);
    this.configRecorder = new ConfigRecorder(DeployedConfigStore.of(this.ledger), options.jobs, this.logger);
  }

  private get clock(): () => number {
    return this.options.clock ?? Date.now;
  }

  private adapters() {
    return { ledger: this.ledger, queue: this.queue };
  }

  private settled(
    run: Pick<Run, 'job' | 'slot' | 'shard'> & Partial<Pick<Run, 'shards'>>,
    status: SettledStatus,
    reason: string | undefined,
  ): void {
    if (status === RunStatus.SKIPPED) this.runsSkipped++;
    if (status === RunStatus.SUPERSEDED) this.runsSuperseded++;
    if (status === RunStatus.DEAD) this.runsFailed++;
    // The run's own count when known: the job's may have changed since the run was created.
    const shards = run.shards ?? this.options.jobs.find((j) => j.name === run.job)?.shards ?? 1;
    this.options.onSettled?.({ job: run.job, slot: run.slot, runKey: runKeyOf(run.job, run.slot, run.shard, shards), status, reason });
  }

  /** A message the local SQS moved to the run queue's DLQ (LocalStack.onDeadLetter). */
  deadLetter(message: DeadLetter): void {
    if (!this.options.endpoints.deadLetterQueueUrl.endsWith(`/${message.queueName}`)) return;
    this.deadLettered++;
    this.options.onDeadLetter?.({ messageId: message.messageId, ...namedRun(message.body) });
  }

  private paused(job: string, by: PauseRecord): void {
    if (by.by !== PAUSED_BY_FAILURE) return;
    this.jobsPausedByFailure++;
    this.options.onPaused?.({ job, ...(by.note === undefined ? {} : { note: by.note }) });
  }

  private observe(event: HistoryEvent): void {
    this.events.push(event);
    const key = (e: { runKey: string; token: number }) => `${e.runKey}/${e.token}`;
    if (event.type === 'claimed') {
      this.claims.set(key(event), { attempt: event.attempt, at: event.at });
      const previousOwner = this.holders.get(event.runKey);
      this.holders.set(event.runKey, event.owner);
      if (event.from === RunStatus.RUNNING)
        this.options.onTakeover?.({ runKey: event.runKey, token: event.token, owner: event.owner, previousOwner });
    }
    if (event.type === 'handler-started') {
      const claim = this.claims.get(key(event));
      if (claim) claim.at = event.at;
    }
    if (event.type === 'poison' && !this.poison.has(event.messageId)) {
      this.poison.add(event.messageId);
      this.options.onPoison?.({
        messageId: event.messageId,
        runKey: event.runKey,
        code: event.code,
        reason: event.reason,
        ...(event.job === undefined ? {} : { job: event.job }),
      });
    }
    if (event.type === 'effect' && event.result === 'fenced-out') {
      this.fencedOutWrites++;
      this.options.onFencedOut?.({ runKey: event.runKey, token: event.token, resource: event.resource });
    }
    if (event.type === 'outcome' && event.accepted) {
      const claim = this.claims.get(key(event));
      const error = this.errors.get(key(event));
      this.errors.delete(key(event));
      this.claims.delete(key(event));
      if (event.status === RunStatus.SUCCEEDED) this.runsSucceeded++;
      if (event.status === RunStatus.DEAD) this.runsFailed++;
      if (event.status === RunStatus.SUPERSEDED) this.runsSuperseded++;
      const [job = '', slotIso = ''] = event.runKey.split('@');
      this.options.onOutcome?.({
        job,
        slot: Date.parse(slotIso.split('#')[0] ?? ''),
        runKey: event.runKey,
        attempt: claim?.attempt ?? 0,
        token: event.token,
        status: event.status,
        durationMs: claim ? event.at - claim.at : 0,
        ...(error ? { error } : {}),
      });
    }
  }

  /**
   * The figures `npm start` prints. Trigger lag is the worker's own TriggerLag metric: first
   * attempts of on-time (planned) slots only; a backfilled or caught-up run's start is LateStartLag,
   * so one backfill of last week does not read as a p99 of days.
   */
  summary(now = Date.now()): RuntimeSummary {
    const lags = this.metrics.observations.get(MetricName.TriggerLag) ?? [];
    const late = this.metrics.observations.get(MetricName.LateStartLag) ?? [];
    return {
      uptimeSeconds: Math.round((now - this.started) / 1000),
      ticks: this.ticks,
      runsSucceeded: this.runsSucceeded,
      runsFailed: this.runsFailed,
      runsSkipped: this.runsSkipped,
      runsSuperseded: this.runsSuperseded,
      duplicatesAcked: this.metrics.get(MetricName.DuplicateDeliveries),
      takeovers: this.metrics.get(MetricName.Takeovers),
      fencingRejections: this.metrics.get(MetricName.FencingRejections),
      fencedOutWrites: this.fencedOutWrites,
      poisonMessages: this.poison.size,
      deadLettered: this.deadLettered,
      jobsPausedByFailure: this.jobsPausedByFailure,
      outboxEvents: this.outboxEvents.length,
      triggerLagSamples: lags.length,
      triggerLagP50Ms: percentile(lags, 50),
      triggerLagP99Ms: percentile(lags, 99),
      lateStarts: late.length,
      lateStartLagP99Ms: percentile(late, 99),
      violations: this.violations.length,
    };
  }

  /** One planner invocation per partition, as EventBridge would trigger them. */
  async tick(): Promise<TickReport[]> {
    const { ledger, queue } = this.adapters();
    const of = this.options.partitions ?? 1;
    this.ticks++;
    await this.configRecorder.ensureRecorded(this.clock());
    const reports: TickReport[] = [];
    for (let partition = 0; partition < of; partition++) {
      reports.push(
        await runPlannerTick(
          {
            ledger,
            queue,
            jobs: this.options.jobs,
            clock: this.clock,
            logger: this.logger,
            metrics: this.metrics,
            history: this.history,
            options: this.options.planner,
          },
          { partition, of },
        ),
      );
    }
    return reports;
  }

  /** Starts the outbox relay on the ledger's stream (events already written are not replayed). */
  async startRelay(): Promise<void> {
    this.relay = new LocalOutboxRelay(
      this.clients.dynamo,
      this.options.endpoints.dynamoEndpoint,
      this.options.endpoints.ledgerTable,
      (event) => {
        this.outboxEvents.push(event);
        this.options.onOutboxEvent?.(event);
      },
      (error) => this.logger.error('outbox relay error', { error: String(error) }),
    );
    await this.relay.start('now');
  }

  /** Starts the pollers and, when `tickSeconds` is given, the planner timer (first tick at once). */
  start(tickSeconds?: number): void {
    const { ledger, queue } = this.adapters();
    const jobs = jobsByName(this.options.jobs);
    for (let i = 0; i < (this.options.workers ?? 2); i++) {
      // One owner per poller, as long as the deployed worker's (the Lambda request id), so run items are as large.
      const owner = randomUUID();
      const poller = new LocalPoller(
        this.clients.sqs,
        async (records) => {
          const started = performance.now();
          try {
            return await processBatch(
              {
                ledger,
                queue,
                doc: this.clients.doc,
                jobs,
                handlers: this.options.handlers,
                tables: { ledger: this.options.endpoints.ledgerTable, payments: this.options.endpoints.paymentsTable },
                owner,
                clock: this.clock,
                logger: this.logger.child({ worker: owner }),
                metrics: this.metrics,
                history: this.history,
                options: this.options.worker,
              },
              records,
            );
          } finally {
            this.options.onBatch?.(records, performance.now() - started);
          }
        },
        { queueUrl: this.options.endpoints.runQueueUrl, batchSize: this.options.batchSize ?? 10 },
        (error) => this.logger.error('poller error', { error: String(error) }),
      );
      poller.start();
      this.pollers.push(poller);
    }
    if (tickSeconds !== undefined) {
      const runTick = () => {
        this.ticking = this.ticking
          .then(() => this.tick())
          .catch((error: unknown) => this.logger.error('planner tick failed', { error: String(error) }));
      };
      runTick();
      this.timer = setInterval(runTick, tickSeconds * 1000);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    await Promise.all(this.pollers.map((p) => p.stop()));
    this.pollers.length = 0;
    await this.relay?.stop();
    this.clients.dynamo.destroy();
    this.clients.sqs.destroy();
  }

  get violations(): readonly Violation[] {
    return this.monitor.violations;
  }

  get logSink(): RunLogger {
    return this.logger;
  }
}

/** Sample PROCESSING payments for the payments-reconcile example job. */
export async function seedPayments(clients: Clients, table: string, count: number, startAt = 0): Promise<void> {
  const items = Array.from({ length: count }, (_, i) => ({
    pk: PAYMENTS_PK,
    sk: `pay-${String(startAt + i).padStart(6, '0')}`,
    status: 'PROCESSING',
    amountCents: 1_000 + (((startAt + i) * 37) % 9_000),
  }));
  for (let i = 0; i < items.length; i += 25) {
    let requests = { [table]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) };
    while (Object.keys(requests).length > 0) {
      const { UnprocessedItems = {} } = await clients.doc.send(new BatchWriteCommand({ RequestItems: requests }));
      requests = UnprocessedItems as typeof requests;
    }
  }
}

/** The job and run a message body names, as far as it is readable (a dead letter may be junk). */
function namedRun(body: string): { job?: string; runKey?: string } {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return {};
  }
  if (value === null || typeof value !== 'object') return {};
  const { job, runKey } = value as Record<string, unknown>;
  return { ...(typeof job === 'string' ? { job } : {}), ...(typeof runKey === 'string' ? { runKey } : {}) };
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
