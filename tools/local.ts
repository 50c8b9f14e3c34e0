/**
 * `npm start`: the whole scheduler on this machine. Starts DynamoDB Local and local-aws-sqs on
 * free ports, creates the table and queues, ticks the planner every `--tick` seconds and runs
 * `--workers` pollers. Prints one line per run outcome (with its error), per run ended without an
 * attempt (SKIPPED, SUPERSEDED), per takeover and per fenced-out write, and a summary every
 * minute (tools/local-lines.ts); with `--duration` it stops by itself and its last line is one
 * JSON object. Ctrl-C, SIGTERM and SIGHUP (the terminal closed) all stop it the same way: pollers,
 * planner, then the Java process, and the endpoints file is removed. Exits 0 only if no invariant
 * violation was observed.
 *
 *   npm start -- [--tick 60] [--workers 2] [--duration S] [--data-dir DIR] [--partitions 1] [--endpoints FILE] [--verbose]
 */
import './quiet-sdk.js';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { configuredJobDefinitions, loadJobs } from '../shared/config.js';
import { handlers } from '../shared/handlers/index.js';
import { describeSchedule } from '../shared/core/schedule-spec.js';
import { JavaMissingError, localEndpointsPath, startLocalStack, type LocalStack } from './local-stack.js';
import { fencedOutLine, outcomeLine, settledLine, summaryLine, takeoverLine } from './local-lines.js';
import { LocalRuntime, seedPayments } from './local-runtime.js';

const USAGE = 'usage: npm start -- [--tick 60] [--workers 2] [--duration S] [--data-dir DIR] [--partitions 1] [--endpoints FILE] [--verbose]';

/** Signals that stop the runtime cleanly: Ctrl-C, a kill, and the terminal closing. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

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
      endpoints: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  // Once the terminal is gone (SIGHUP) writes fail with EIO/EPIPE: that must not cut the shutdown short.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  const endpointsFile = values.endpoints === undefined ? localEndpointsPath() : resolve(values.endpoints);
  // Handled from the start: a signal's default (dying at once) would leave Java running, as it
  // runs in its own process group. `on`, not `once`: a second signal waits for the same stop.
  let shutdown: ((reason: string) => Promise<number>) | undefined;
  let requested: string | undefined;
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      if (shutdown) void shutdown(signal).then((code) => process.exit(code));
      else requested ??= signal;
    });
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
  const { stop: _stop, dynamoPid, ...endpoints } = stack;
  mkdirSync(dirname(endpointsFile), { recursive: true });
  writeFileSync(endpointsFile, JSON.stringify({ ...endpoints, partitions, exampleJobs: true }, null, 2));
  const opsTarget = values.endpoints === undefined ? '--local' : `--endpoints ${values.endpoints}`;
  console.log(`local stack up: DynamoDB Local ${stack.dynamoEndpoint} (pid ${dynamoPid ?? '?'}), SQS ${stack.sqsEndpoint} (ops: npx fsched ops jobs ${opsTarget})`);
  console.log(`jobs: ${jobs.map((j) => `${j.name} [${describeSchedule(j)}${j.timezone === 'UTC' ? '' : ` ${j.timezone}`}]`).join(', ')}`);

  const runtime = new LocalRuntime({
    endpoints,
    jobs,
    handlers,
    workers,
    partitions,
    log: values.verbose ? (line) => console.log(line) : undefined,
    onOutcome: (o) => console.log(outcomeLine(o)),
    onSettled: (s) => console.log(settledLine(s)),
    onTakeover: (t) => console.log(takeoverLine(t)),
    onFencedOut: (f) => console.log(fencedOutLine(f)),
    onViolation: (v) => console.error(`VIOLATION ${v.invariant} ${v.runKey}: ${v.detail}`),
    onOutboxEvent: (e) => console.log(`EVENT     ${e.detailType.padEnd(20)} eventKey=${e.eventKey} ${JSON.stringify(e.detail)}`),
  });
  await runtime.startRelay();
  await seedPayments(runtime.clients, endpoints.paymentsTable, 25);

  const printSummary = () => console.log(summaryLine(runtime.summary()));
  runtime.start(tick);
  const minutely = setInterval(printSummary, 60_000);

  let stopping: Promise<number> | undefined;
  shutdown = (reason: string) => {
    stopping ??= (async () => {
      clearInterval(minutely);
      console.log(`stopping (${reason})…`);
      try {
        await runtime.stop();
      } finally {
        await stack.stop();
        rmSync(endpointsFile, { force: true });
      }
      printSummary();
      const final = runtime.summary();
      console.log(JSON.stringify(final));
      return final.violations === 0 ? 0 : 1;
    })();
    return stopping;
  };
  // A signal that came while starting: stop now that there is something to stop.
  if (requested !== undefined) return shutdown(requested);
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
