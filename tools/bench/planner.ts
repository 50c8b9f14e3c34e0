/**
 * Planner throughput and planner cost, through runPlannerTick with a manual clock.
 *
 * Throughput: N jobs every minute, lookahead 60 s, one tick that materializes one slot per job.
 * The whole tick is timed, and so is its put phase alone (first run put sent to last answer) and
 * its send phase, through SDK middleware (planner-phases.ts).
 *
 * Cost: N jobs of which D are due in the measured tick (D every minute, the rest hourly at other
 * minutes); the second tick of a partition is measured (the first only creates its watermark),
 * counting every ledger request with CountingMiddleware on the DocumentClient.
 */
import { Ledger } from '../../shared/store/ledger.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import { parseJobs, type Job, type JobInput } from '../../shared/schedule/job-schema.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import { runPlannerTick, type PlannerDeps } from '../../shared/planner/planner.js';
import { CountingMiddleware } from '../../test/support/counting.js';
import type { LocalEndpoints } from '../local-stack.js';
import { PlannerPhases } from './planner-phases.js';
import { benchClients, cpuProbe, DynamoMeter, freshResources, round, SqsMeter, sum, type CpuUse } from './measure.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

function benchJobs(inputs: JobInput[]): Job[] {
  return parseJobs(inputs, { handlers: ['noop'] });
}

const silent = () => new JsonLineLogger(() => undefined);

export interface PlannerThroughput {
  readonly jobs: number;
  readonly created: number;
  readonly tickMs: number;
  readonly putMs: number;
  /** Partition read + pure slot planning, before the first put. */
  readonly readAndPlanMs: number;
  /** Time in SendMessageBatch calls, summed: they overlap the puts (sent as puts complete). */
  readonly sendMs: number;
  /** From the last put to the last send's answer: what the sends add to the tick. */
  readonly sendTailMs: number;
  /** Watermark advance + sweep, after the last put and send. */
  readonly afterSendMs: number;
  readonly slotsPerSec: number;
  readonly putSlotsPerSec: number;
  readonly cpu: CpuUse;
  readonly byCommand: Record<string, number>;
}

/** One tick on `endpoints` (fresh tables and queues the caller made; see raw.ts for why). */
export async function plannerThroughput(
  endpoints: LocalEndpoints,
  jobCount: number,
  putConcurrency: number,
  dynamoPid?: number,
): Promise<PlannerThroughput> {
  const clients = benchClients(endpoints);
  // Counted like every measured phase (ReturnConsumedCapacity on, as for the raw puts it is compared with).
  const meter = new DynamoMeter().attach(clients.doc);
  try {
    const jobs = benchJobs(
      Array.from({ length: jobCount }, (_, i) => ({ name: `bench-plan-${i}`, schedule: '* * * * *', handler: 'noop' })),
    );
    const phases = new PlannerPhases().attach(clients);
    const ledger = new Ledger(clients.doc, { tableName: endpoints.ledgerTable });
    const queue = new RunQueue(clients.sqs, endpoints.runQueueUrl);
    // One second past a minute: the window (now, now + 60 s] holds exactly the next minute's slot.
    const now = Math.floor(Date.now() / MINUTE) * MINUTE + 1_000;
    const deps: PlannerDeps = {
      ledger,
      queue,
      jobs,
      clock: () => now,
      logger: silent(),
      metrics: new InMemoryMetrics(),
      options: { lookaheadMs: MINUTE, putConcurrency },
    };
    const probe = cpuProbe(dynamoPid);
    const start = performance.now();
    const report = await phases.time(() => runPlannerTick(deps, { partition: 0, of: 1 }));
    const end = performance.now();
    const cpu = probe();
    if (report.created !== jobCount) throw new Error(`bench: planner created ${report.created} runs for ${jobCount} jobs`);
    const putMs = (phases.lastPutAt ?? end) - (phases.firstPutAt ?? start);
    const tickMs = end - start;
    const readAndPlanMs = (phases.firstPutAt ?? start) - start;
    const lastPutAt = phases.lastPutAt ?? end;
    const dispatchedAt = Math.max(lastPutAt, phases.lastSendAt ?? lastPutAt);
    return {
      jobs: jobCount,
      created: report.created,
      tickMs: round(tickMs, 1),
      putMs: round(putMs, 1),
      readAndPlanMs: round(readAndPlanMs, 1),
      sendMs: round(phases.sendMs, 1),
      sendTailMs: round(dispatchedAt - lastPutAt, 1),
      afterSendMs: round(end - dispatchedAt, 1),
      slotsPerSec: round(report.created / (tickMs / 1000), 1),
      putSlotsPerSec: round(report.created / (putMs / 1000), 1),
      cpu,
      byCommand: meter.byCommand(),
    };
  } finally {
    clients.dynamo.destroy();
    clients.sqs.destroy();
  }
}

export interface PlannerCost {
  readonly jobs: number;
  readonly due: number;
  readonly partitions: number;
  readonly requests: number;
  readonly byCommand: Record<string, number>;
  readonly sqsCalls: number;
  readonly tickMs: number;
  /** Partition read + pure slot planning over every job, before the first put. */
  readonly readAndPlanMs: number;
  readonly created: number;
}

export async function plannerCost(
  base: Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint'>,
  jobCount: number,
  due: number,
): Promise<PlannerCost> {
  const endpoints = await freshResources(base, `plancost${jobCount}`);
  const clients = benchClients(endpoints);
  const counting = new CountingMiddleware();
  counting.attach(clients.doc);
  const sqs = new SqsMeter().attach(clients.sqs);
  try {
    // Tick 1 at H:00:30 plans (H:00:30, H:01:30]; the measured tick 2 at H:01:30 plans (H:01:30, H:02:30].
    // `due` jobs run every minute; the others are hourly at minutes 3..59, so none of them is due in tick 2.
    const inputs: JobInput[] = Array.from({ length: jobCount }, (_, i) =>
      i < due
        ? { name: `bench-cost-minutely-${i}`, schedule: '* * * * *', handler: 'noop' }
        : { name: `bench-cost-hourly-${i}`, schedule: `${3 + (i % 57)} * * * *`, handler: 'noop' },
    );
    const jobs = benchJobs(inputs);
    const phases = new PlannerPhases().attach(clients);
    const ledger = new Ledger(clients.doc, { tableName: endpoints.ledgerTable });
    const queue = new RunQueue(clients.sqs, endpoints.runQueueUrl);
    let now = Math.floor(Date.now() / HOUR) * HOUR + 30_000;
    const deps: PlannerDeps = {
      ledger,
      queue,
      jobs,
      clock: () => now,
      logger: silent(),
      metrics: new InMemoryMetrics(),
      options: { lookaheadMs: MINUTE },
    };
    await runPlannerTick(deps, { partition: 0, of: 1 });
    now += MINUTE;
    counting.reset();
    sqs.reset();
    phases.reset();
    const start = performance.now();
    const report = await phases.time(() => runPlannerTick(deps, { partition: 0, of: 1 }));
    const tickMs = performance.now() - start;
    const byCommand = counting.byCommand();
    return {
      jobs: jobCount,
      due,
      partitions: 1,
      requests: sum(Object.values(byCommand)),
      byCommand,
      sqsCalls: sqs.schedulerCalls,
      tickMs: round(tickMs, 1),
      readAndPlanMs: round((phases.firstPutAt ?? start) - start, 1),
      created: report.created,
    };
  } finally {
    clients.dynamo.destroy();
    clients.sqs.destroy();
  }
}
