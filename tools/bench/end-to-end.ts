/**
 * End to end: K jobs (every minute, no-op handler) whose slots all fall due together, through the
 * real planner tick → DynamoDB Local → local SQS → LocalPollers → processBatch, exactly as the
 * local runtime wires them, with SDK middleware counting every request.
 *
 * runs/s = K ÷ (planner tick start → last accepted SUCCEEDED outcome). The pollers are built here
 * rather than through LocalRuntime.start so that each batch (one Lambda invocation) is timed:
 * that measured duration is what the cost model bills.
 */
import { randomUUID } from 'node:crypto';
import { jobsByName } from '../../shared/config.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import { InvariantMonitor } from '../verify/invariants.js';
import { parseJobs, type OverlapPolicy } from '../../shared/schedule/job-schema.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { createAdapters } from '../../shared/runtime/clients.js';
import { processBatch } from '../../shared/worker/batch.js';
import type { LocalEndpoints } from '../local-stack.js';
import { LocalPoller } from '../local-poller.js';
import { startCpuProfile, type CpuProfileSummary } from './cpu-profile.js';
import { describeKeySchemas, KeyLoad, type KeyLoadSnapshot } from './key-load.js';
import { benchClients, cpuProbe, DynamoMeter, round, sleepMs, SqsMeter, sum, until, type CpuUse, type DynamoSnapshot } from './measure.js';
import { PlannerPhases } from './planner-phases.js';

const MINUTE = 60_000;

export const noopHandlers: Readonly<Record<string, JobHandler>> = {
  'bench-noop': { run: async () => undefined },
};

export interface EndToEndOptions {
  /** Fresh tables and queues the caller made (see raw.ts for why). */
  readonly endpoints: LocalEndpoints;
  readonly runs: number;
  /** Pollers (stand-ins for concurrent worker Lambda invocations), each with batches of 10. */
  readonly workers: number;
  readonly overlap: OverlapPolicy;
  readonly putConcurrency: number;
  readonly dynamoPid?: number;
  /** Job names are `${jobPrefix}-${i}`; a second burst on the same table needs another prefix. @default 'bench-e2e' */
  readonly jobPrefix?: string;
  /** Sample this process's CPU over the burst (slows it down: not for the figures with a target); a path also keeps the raw profile. */
  readonly cpuProfile?: boolean | string;
}

export interface EndToEndResult {
  readonly overlap: OverlapPolicy;
  readonly runs: number;
  /** Jobs of the burst (one run each). */
  readonly jobs: number;
  readonly workers: number;
  readonly succeeded: number;
  readonly elapsedMs: number;
  readonly plannerTickMs: number;
  /** First claim → last outcome: the workers' part alone. */
  readonly workerPhaseMs: number;
  readonly runsPerSec: number;
  readonly workerRunsPerSec: number;
  readonly dynamo: DynamoSnapshot;
  readonly sqsByCommand: Record<string, number>;
  readonly writesPerRun: number;
  readonly writeItemsPerRun: number;
  /** Billed units (key-load.ts): DynamoDB Local's, plus refused writes and read minimums it leaves out. */
  readonly writeUnitsPerRun: number;
  readonly readsPerRun: number;
  readonly readUnitsPerRun: number;
  /** The units DynamoDB Local reported (ConsumedCapacity of the requests that succeeded). */
  readonly reportedWriteUnitsPerRun: number;
  readonly reportedReadUnitsPerRun: number;
  readonly dynamoRequestsPerRun: number;
  readonly sqsCallsPerRun: number;
  readonly eventSourceSqsCallsPerRun: number;
  readonly emptyReceives: number;
  readonly invocations: number;
  readonly invocationsPerRun: number;
  readonly lambdaMsPerRun: number;
  readonly meanBatchMs: number;
  readonly violations: number;
  /** The planner tick's parts (ms): partition read + plan, puts, send calls summed (they overlap the puts). */
  readonly tickParts: { readonly readAndPlanMs: number; readonly putMs: number; readonly sendMs: number };
  /** CPU during the tick and during the whole burst (tick start → last outcome). */
  readonly cpuTick: CpuUse;
  readonly cpu: CpuUse;
  /** Units per partition key value of the table and its index, every request of the burst (key-load.ts). */
  readonly keyLoad: KeyLoadSnapshot;
  /** Requests whose partition key could not be told (0 unless a request shape is not understood). */
  readonly unattributedRequests: number;
  /** Only with options.cpuProfile: the main thread's self time by category over the burst. */
  readonly cpuProfile?: CpuProfileSummary;
}

export async function measureEndToEnd(options: EndToEndOptions): Promise<EndToEndResult> {
  const endpoints = options.endpoints;
  const clients = benchClients(endpoints);
  const dynamo = new DynamoMeter().attach(clients.doc);
  const sqs = new SqsMeter().attach(clients.sqs);
  const keys = new KeyLoad(await describeKeySchemas(clients.dynamo, [endpoints.ledgerTable])).attach(clients.doc);
  const pollers: LocalPoller[] = [];
  try {
    const jobs = parseJobs(
      Array.from({ length: options.runs }, (_, i) => ({
        name: `${options.jobPrefix ?? 'bench-e2e'}-${i}`,
        schedule: '* * * * *',
        handler: 'bench-noop',
        overlap: options.overlap,
      })),
      { handlers: Object.keys(noopHandlers) },
    );
    const byName = jobsByName(jobs);
    const { ledger, queue } = createAdapters(clients, {
      ledgerTable: endpoints.ledgerTable,
      paymentsTable: endpoints.paymentsTable,
      runQueueUrl: endpoints.runQueueUrl,
      retentionDays: 30,
    });
    let offset = 0;
    const clock = () => Date.now() + offset;
    const logger = new JsonLineLogger(() => undefined);
    const metrics = new InMemoryMetrics();
    const monitor = new InvariantMonitor(0);
    let succeeded = 0;
    let firstClaimAt: number | undefined;
    let lastOutcomeAt = 0;
    const history = {
      record(event: HistoryEvent) {
        monitor.record(event);
        if (event.type === 'claimed') firstClaimAt ??= performance.now();
        if (event.type === 'outcome' && event.accepted && event.status === 'SUCCEEDED') {
          succeeded++;
          lastOutcomeAt = performance.now();
        }
      },
    };
    const batchMs: number[] = [];
    for (let i = 0; i < options.workers; i++) {
      // As long as the deployed worker's owner (the Lambda request id): item sizes, hence units, match.
      const owner = randomUUID();
      const poller = new LocalPoller(
        clients.sqs,
        async (records) => {
          const start = performance.now();
          try {
            return await processBatch(
              {
                ledger,
                queue,
                doc: clients.doc,
                jobs: byName,
                handlers: noopHandlers,
                tables: { ledger: endpoints.ledgerTable, payments: endpoints.paymentsTable },
                owner,
                clock,
                logger,
                metrics,
                history,
              },
              records,
            );
          } finally {
            batchMs.push(performance.now() - start);
          }
        },
        { queueUrl: endpoints.runQueueUrl, batchSize: 10 },
        () => undefined,
      );
      poller.start();
      pollers.push(poller);
    }
    await sleepMs(200);
    dynamo.reset();
    sqs.reset();
    keys.reset();
    // Shift the clock so the tick runs 20 ms before a minute boundary: every job's slot at that
    // boundary is planned by this tick and due at once (no startLead wait in the measurement).
    const boundary = Math.ceil(Date.now() / MINUTE) * MINUTE + MINUTE;
    offset = boundary - 20 - Date.now();
    // The planner's tick is split into parts by middleware on the clients it shares with the workers.
    const phases = new PlannerPhases().attach(clients);
    const stopProfile = options.cpuProfile
      ? await startCpuProfile(typeof options.cpuProfile === 'string' ? options.cpuProfile : undefined)
      : undefined;
    const probe = cpuProbe(options.dynamoPid);
    const start = performance.now();
    await phases.time(() =>
      runPlannerTick(
        { ledger, queue, jobs, clock, logger, metrics, history, options: { lookaheadMs: MINUTE, putConcurrency: options.putConcurrency } },
        { partition: 0, of: 1 },
      ),
    );
    const tickEnd = performance.now();
    const cpuTick = probe();
    await until(
      () => (succeeded >= options.runs ? true : undefined),
      120_000 + options.runs * 50,
      `${options.runs} runs (${options.overlap}) to succeed`,
      5,
    );
    const cpu = probe();
    const cpuProfile = await stopProfile?.();
    // Let the last batches' deletes go out before counting.
    await sleepMs(300);
    await Promise.all(pollers.map((p) => p.stop()));
    pollers.length = 0;
    const snapshot = dynamo.snapshot();
    const keyLoad = keys.snapshot();
    const sqsByCommand = sqs.byCommand();
    const k = options.runs;
    const elapsedMs = lastOutcomeAt - start;
    const workerPhaseMs = lastOutcomeAt - (firstClaimAt ?? start);
    const invocations = batchMs.length;
    return {
      overlap: options.overlap,
      runs: k,
      jobs: jobs.length,
      workers: options.workers,
      succeeded,
      elapsedMs: round(elapsedMs, 1),
      plannerTickMs: round(tickEnd - start, 1),
      workerPhaseMs: round(workerPhaseMs, 1),
      runsPerSec: round(k / (elapsedMs / 1000), 1),
      workerRunsPerSec: round(k / (workerPhaseMs / 1000), 1),
      dynamo: snapshot,
      sqsByCommand,
      writesPerRun: round(snapshot.writes / k, 4),
      writeItemsPerRun: round(snapshot.writeItems / k, 4),
      writeUnitsPerRun: round(keyLoad.totalWriteUnits / k, 4),
      readsPerRun: round(snapshot.reads / k, 4),
      readUnitsPerRun: round(keyLoad.totalReadUnits / k, 4),
      reportedWriteUnitsPerRun: round(snapshot.writeUnits / k, 4),
      reportedReadUnitsPerRun: round(snapshot.readUnits / k, 4),
      dynamoRequestsPerRun: round(snapshot.requests / k, 4),
      sqsCallsPerRun: round(sqs.schedulerCalls / k, 4),
      eventSourceSqsCallsPerRun: round(sqs.eventSourceCalls / k, 4),
      emptyReceives: sqs.emptyReceives,
      invocations,
      invocationsPerRun: round(invocations / k, 4),
      lambdaMsPerRun: round(sum(batchMs) / k, 3),
      meanBatchMs: round(sum(batchMs) / Math.max(1, invocations), 2),
      violations: monitor.violations.length,
      tickParts: {
        readAndPlanMs: round((phases.firstPutAt ?? start) - start, 1),
        putMs: round((phases.lastPutAt ?? start) - (phases.firstPutAt ?? start), 1),
        sendMs: round(phases.sendMs, 1),
      },
      cpuTick,
      cpu,
      keyLoad,
      unattributedRequests: keys.unattributed,
      ...(cpuProfile ? { cpuProfile } : {}),
    };
  } finally {
    await Promise.all(pollers.map((p) => p.stop()));
    clients.dynamo.destroy();
    clients.sqs.destroy();
  }
}
