/**
 * `npm start`: the whole scheduler on this machine. Starts DynamoDB Local and local-aws-sqs on
 * free ports, creates the table and queues, ticks the planner every `--tick` seconds and runs
 * `--workers` pollers. Prints one line per run outcome and a summary every minute; with
 * `--duration` it stops by itself and its last line is one JSON object. Exits 0 only if no
 * invariant violation was observed.
 *
 *   npm start -- [--tick 60] [--workers 2] [--duration S] [--data-dir DIR] [--partitions 1] [--verbose]
 */
import './quiet-sdk.js';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { configuredJobDefinitions, loadJobs } from '../shared/config.js';
import { handlers } from '../shared/handlers/index.js';
import { slotIso } from '../shared/core/vocabulary.js';
import { describeSchedule } from '../shared/core/schedule-spec.js';
import { JavaMissingError, LOCAL_ENDPOINTS_FILE, startLocalStack, type LocalStack } from './local-stack.js';
import { LocalRuntime, percentile, seedPayments } from './local-runtime.js';

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`--${name} must be a positive number, got "${raw}"`);
    process.exit(2);
  }
  return value;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      tick: { type: 'string' },
      workers: { type: 'string' },
      duration: { type: 'string' },
      'data-dir': { type: 'string' },
      partitions: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log('usage: npm start -- [--tick 60] [--workers 2] [--duration S] [--data-dir DIR] [--partitions 1] [--verbose]');
    return 0;
  }
  const tick = positive('tick', values.tick, 60);
  const workers = Math.floor(positive('workers', values.workers, 2));
  const duration = values.duration === undefined ? undefined : positive('duration', values.duration, 0);
  const partitions = Math.floor(positive('partitions', values.partitions, 1));
  // The local runtime runs the example jobs beside the team's (a deployment only with -c exampleJobs=true).
  const jobs = loadJobs(configuredJobDefinitions({ exampleJobs: true }));

  let stack: LocalStack;
  try {
    stack = await startLocalStack({ dataDir: values['data-dir'] });
  } catch (error) {
    if (error instanceof JavaMissingError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  const { stop: _stop, dynamoPid: _pid, ...endpoints } = stack;
  mkdirSync('.local-data', { recursive: true });
  writeFileSync(LOCAL_ENDPOINTS_FILE, JSON.stringify({ ...endpoints, partitions, exampleJobs: true }, null, 2));
  console.log(`local stack up: DynamoDB Local ${stack.dynamoEndpoint}, SQS ${stack.sqsEndpoint} (ops: npm run ops -- status --local)`);
  console.log(`jobs: ${jobs.map((j) => `${j.name} [${describeSchedule(j)}${j.timezone === 'UTC' ? '' : ` ${j.timezone}`}]`).join(', ')}`);

  const started = Date.now();
  const runtime = new LocalRuntime({
    endpoints,
    jobs,
    handlers,
    workers,
    partitions,
    log: values.verbose ? (line) => console.log(line) : undefined,
    onOutcome: (o) =>
      console.log(`${o.status.padEnd(9)} ${o.job.padEnd(20)} slot=${slotIso(o.slot)} runKey=${o.runKey} attempt=${o.attempt} token=${o.token} duration=${o.durationMs}ms`),
    onViolation: (v) => console.error(`VIOLATION ${v.invariant} ${v.runKey}: ${v.detail}`),
    onOutboxEvent: (e) => console.log(`EVENT     ${e.detailType.padEnd(20)} eventKey=${e.eventKey} ${JSON.stringify(e.detail)}`),
  });
  await runtime.startRelay();
  await seedPayments(runtime.clients, endpoints.paymentsTable, 25);

  const summary = () => ({
    uptimeSeconds: Math.round((Date.now() - started) / 1000),
    ticks: runtime.ticks,
    runsSucceeded: runtime.runsSucceeded,
    runsFailed: runtime.runsFailed,
    duplicatesAcked: runtime.metrics.get('DuplicateDeliveries'),
    takeovers: runtime.metrics.get('Takeovers'),
    fencingRejections: runtime.metrics.get('FencingRejections'),
    poisonMessages: runtime.metrics.get('PoisonMessages'),
    outboxEvents: runtime.outboxEvents.length,
    triggerLagP50Ms: percentile(runtime.triggerLags, 50),
    triggerLagP99Ms: percentile(runtime.triggerLags, 99),
    violations: runtime.violations.length,
  });
  const printSummary = () => {
    const s = summary();
    console.log(
      `summary: ${s.uptimeSeconds}s up, ${s.ticks} ticks, ${s.runsSucceeded} succeeded, ${s.runsFailed} dead, ${s.duplicatesAcked} duplicates acked, ` +
        `${s.takeovers} takeovers, trigger lag p50 ${s.triggerLagP50Ms} ms / p99 ${s.triggerLagP99Ms} ms, ${s.violations} violations`,
    );
  };
  runtime.start(tick);
  const minutely = setInterval(printSummary, 60_000);

  let stopping: Promise<number> | undefined;
  const shutdown = (reason: string) => {
    stopping ??= (async () => {
      clearInterval(minutely);
      console.log(`stopping (${reason})…`);
      try {
        await runtime.stop();
      } finally {
        await stack.stop();
        rmSync(LOCAL_ENDPOINTS_FILE, { force: true });
      }
      printSummary();
      const final = summary();
      console.log(JSON.stringify(final));
      return final.violations === 0 ? 0 : 1;
    })();
    return stopping;
  };
  process.once('SIGINT', () => void shutdown('SIGINT').then((code) => process.exit(code)));
  process.once('SIGTERM', () => void shutdown('SIGTERM').then((code) => process.exit(code)));
  if (duration !== undefined) {
    await new Promise((r) => setTimeout(r, duration * 1000));
    return shutdown(`--duration ${duration}`);
  }
  return new Promise<number>(() => undefined);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
