/**
 * The local runtime (DESIGN §2): the same planner and worker code as the Lambdas, against the
 * local stack, with a timer in place of EventBridge and pollers in place of the event source
 * mapping. Every event goes through the invariant monitor; `npm start`, the end-to-end tests,
 * the benchmark and the chaos drills all build on this class.
 */
import { randomUUID } from 'node:crypto';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Job } from '../shared/core/job-schema.js';
import type { HistoryEvent, HistorySink } from '../shared/core/history.js';
import { InvariantMonitor, teeHistory, type Violation } from '../shared/core/invariants.js';
import { jobsByName } from '../shared/config.js';
import type { JobHandler } from '../shared/handler-api.js';
import { PAYMENTS_PK } from '../shared/handlers/payments-reconcile.js';
import { InMemoryMetrics, JsonLineLogger, type RunLogger } from '../shared/observability.js';
import { runPlannerTick, type PlannerOptions, type TickReport } from '../shared/planner.js';
import { createAdapters, createClients, type Clients } from '../shared/runtime.js';
import { processBatch, type ChildLogger, type QueueRecord, type WorkerOptions } from '../shared/worker.js';
import { localClientConfig, type LocalEndpoints } from './local-stack.js';
import { LocalPoller } from './local-poller.js';
import { LocalOutboxRelay } from './local-outbox-relay.js';
import type { OutboxEvent } from '../shared/core/outbox.js';

export interface RunOutcomeLine {
  readonly job: string;
  readonly slot: number;
  readonly runKey: string;
  readonly attempt: number;
  readonly token: number;
  readonly status: string;
  readonly durationMs: number;
}

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
  readonly triggerLags: number[] = [];
  private readonly history: HistorySink;
  private readonly claims = new Map<string, { attempt: number; at: number }>();
  private timer: NodeJS.Timeout | undefined;
  private relay: LocalOutboxRelay | undefined;
  readonly outboxEvents: OutboxEvent[] = [];
  private ticking: Promise<unknown> = Promise.resolve();
  private readonly logger: ChildLogger;
  runsSucceeded = 0;
  runsFailed = 0;
  ticks = 0;

  constructor(readonly options: LocalRuntimeOptions) {
    const e = options.endpoints;
    this.clients = createClients({ dynamo: localClientConfig(e.dynamoEndpoint), sqs: localClientConfig(e.sqsEndpoint) });
    this.monitor = new InvariantMonitor(0, options.onViolation);
    this.history = teeHistory(this.monitor, { record: (event) => this.observe(event) }, ...(options.history ? [options.history] : []));
    this.logger = new JsonLineLogger(options.log ?? (() => undefined));
  }

  private get clock(): () => number {
    return this.options.clock ?? Date.now;
  }

  private adapters() {
    const e = this.options.endpoints;
    return createAdapters(this.clients, { ledgerTable: e.ledgerTable, paymentsTable: e.paymentsTable, runQueueUrl: e.runQueueUrl, retentionDays: 30 });
  }

  private observe(event: HistoryEvent): void {
    this.events.push(event);
    if (event.type === 'claimed') this.claims.set(`${event.runKey}/${event.token}`, { attempt: event.attempt, at: event.at });
    if (event.type === 'handler-started') {
      this.triggerLags.push(event.at - event.slot);
      const claim = this.claims.get(`${event.runKey}/${event.token}`);
      if (claim) claim.at = event.at;
    }
    if (event.type === 'outcome' && event.accepted) {
      const claim = this.claims.get(`${event.runKey}/${event.token}`);
      if (event.status === 'SUCCEEDED') this.runsSucceeded++;
      if (event.status === 'DEAD') this.runsFailed++;
      const [job = '', slotIso = ''] = event.runKey.split('@');
      this.options.onOutcome?.({
        job,
        slot: Date.parse(slotIso.split('#')[0] ?? ''),
        runKey: event.runKey,
        attempt: claim?.attempt ?? 0,
        token: event.token,
        status: event.status,
        durationMs: claim ? event.at - claim.at : 0,
      });
    }
  }

  /** One planner invocation per partition, as EventBridge would trigger them. */
  async tick(): Promise<TickReport[]> {
    const { ledger, queue } = this.adapters();
    const of = this.options.partitions ?? 1;
    this.ticks++;
    const reports: TickReport[] = [];
    for (let partition = 0; partition < of; partition++) {
      reports.push(
        await runPlannerTick(
          { ledger, queue, jobs: this.options.jobs, clock: this.clock, logger: this.logger, metrics: this.metrics, history: this.history, options: this.options.planner },
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
        this.ticking = this.ticking.then(() => this.tick()).catch((error: unknown) => this.logger.error('planner tick failed', { error: String(error) }));
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
    amountCents: 1_000 + ((startAt + i) * 37) % 9_000,
  }));
  for (let i = 0; i < items.length; i += 25) {
    let requests = { [table]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) };
    while (Object.keys(requests).length > 0) {
      const { UnprocessedItems = {} } = await clients.doc.send(new BatchWriteCommand({ RequestItems: requests }));
      requests = UnprocessedItems as typeof requests;
    }
  }
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
