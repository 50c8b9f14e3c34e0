/**
 * `npm start`: the whole scheduler on this machine. Starts DynamoDB Local and local-aws-sqs on
 * free ports, creates the table and queues, ticks the planner every `--tick` seconds and runs
 * `--workers` pollers. Prints one line per run outcome (with its error), per run ended without an
 * attempt (SKIPPED, SUPERSEDED), per takeover, per fenced-out write, per poison message, per
 * message moved to the DLQ and per job paused by failure, and a summary every minute (tools/local-lines.ts); with `--duration` it
 * stops by itself and its last line is one JSON object. Exits 0 only if no invariant violation was
 * observed.
 *
 * It stops everything it started (pollers, planner, relay, then DynamoDB Local's Java process, and
 * removes its endpoints and lock files) whichever way it is told: SIGINT, SIGTERM or SIGHUP to it
 * or to npm (npm forwards SIGINT and SIGTERM; `npm start` execs node, so no shell stands between
 * them), or the process that started it going away (npm killed with SIGKILL: it watches its parent
 * pid). Killed itself with SIGKILL, it leaves DynamoDB Local running: the next start on the same
 * endpoints file stops it (tools/local-lock.ts), and refuses to start while this one runs.
 *
 *   npm start -- [--tick 60] [--workers 2] [--duration S] [--data-dir DIR] [--partitions 1] [--endpoints FILE] [--verbose]
 */
import './quiet-sdk.js';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { configuredJobDefinitions, loadJobs } from '../shared/config.js';
import { handlers } from '../shared/handlers/index.js';
import { readableDuration } from '../shared/schedule/duration.js';
import { describeSchedule } from '../shared/schedule/schedule-spec.js';
import { MAX_PLANNER_PARTITIONS } from '../shared/core/resources.js';
import { SWEEP_DEFAULTS } from '../shared/planner/sweeper.js';
import { endpointsOf, JavaMissingError, localEndpointsPath, startLocalStack, type LocalStack } from './local-stack.js';
import {
  deadLetterLine,
  eventLine,
  fencedOutLine,
  jobColumnWidth,
  outcomeLine,
  pausedLine,
  poisonLine,
  settledLine,
  summaryLine,
  takeoverLine,
} from './local-lines.js';
import { acquireRuntimeLock, lockPathFor, RuntimeAlreadyRunningError, type RuntimeLock } from './local-lock.js';
import { LocalRuntime, seedPayments } from './local-runtime.js';

const USAGE =
  'usage: npm start -- [--tick 60] [--workers 2] [--duration S] [--data-dir DIR] [--partitions 1] [--endpoints FILE] [--verbose]';

/** Signals that stop the runtime cleanly: Ctrl-C, a kill, and the terminal closing. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** How often the runtime checks that the process that started it (npm) is still its parent. */
const PARENT_WATCH_MS = 500;

class UsageError extends Error {}

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value <= 0) throw new UsageError(`--${name} must be a positive number, got "${raw}"`);
  return value;
}

function wholeNumber(name: string, raw: string | undefined, fallback: number, max: number, why: string): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(value) || value < 1 || value > max)
    throw new UsageError(`--${name} must be a whole number from 1 to ${max}${why}, got "${raw}"`);
  return value;
}

function options() {
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
  return {
    help: values.help,
    verbose: values.verbose,
    tick: positive('tick', values.tick, 60),
    workers: wholeNumber('workers', values.workers, 2, 1_000, ''),
    duration: values.duration === undefined ? undefined : positive('duration', values.duration, 0),
    partitions: wholeNumber(
      'partitions',
      values.partitions,
      1,
      MAX_PLANNER_PARTITIONS,
      ` (the stack's limit: one planner rule per partition, MAX_PLANNER_PARTITIONS)`,
    ),
    dataDir: values['data-dir'],
    endpointsArg: values.endpoints,
    endpointsFile: values.endpoints === undefined ? localEndpointsPath() : resolve(values.endpoints),
  };
}

async function main(): Promise<number> {
  let args: ReturnType<typeof options>;
  try {
    args = options();
  } catch (error) {
    if (!(error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))) throw error;
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  // Once the terminal is gone (SIGHUP) writes fail with EIO/EPIPE: that must not cut the shutdown short.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);

  // Handled from the start: a signal's default (dying at once) would leave Java running, as it
  // runs in a session of its own. `on`, not `once`: a second signal waits for the same stop.
  let shutdown: ((reason: string) => Promise<number>) | undefined;
  let requested: string | undefined;
  const requestStop = (reason: string) => {
    if (shutdown) void shutdown(reason).then((code) => process.exit(code), failed);
    else requested ??= reason;
  };
  for (const signal of STOP_SIGNALS) process.on(signal, () => requestStop(signal));
  // npm killed with SIGKILL forwards nothing: its child is re-parented, and notices here.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) requestStop(`the process that started it (pid ${parent}) is gone`);
  }, PARENT_WATCH_MS).unref();

  let lock: RuntimeLock;
  try {
    lock = await acquireRuntimeLock(lockPathFor(args.endpointsFile), (line) => console.log(line));
  } catch (error) {
    if (!(error instanceof RuntimeAlreadyRunningError)) throw error;
    console.error(error.message);
    return 1;
  }
  try {
    return await run(args, lock, (stop) => {
      shutdown = stop;
      return requested;
    });
  } finally {
    // A start that failed (or ended) leaves no lock behind; a stop by signal releases it in its shutdown.
    lock.release();
  }
}

async function run(
  args: ReturnType<typeof options>,
  lock: RuntimeLock,
  onStoppable: (stop: (reason: string) => Promise<number>) => string | undefined,
): Promise<number> {
  // The local runtime runs the example jobs beside the team's (a deployment only with -c exampleJobs=true).
  const jobs = loadJobs(configuredJobDefinitions({ exampleJobs: true }));
  const width = jobColumnWidth(jobs.map((j) => j.name));
  let stack: LocalStack;
  try {
    stack = await startLocalStack({ dataDir: args.dataDir, onDynamoSpawned: (pid, port) => lock.noteDynamo(pid, port) });
  } catch (error) {
    if (error instanceof JavaMissingError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  const { endpointsFile } = args;
  const endpoints = endpointsOf(stack);
  mkdirSync(dirname(endpointsFile), { recursive: true });
  writeFileSync(endpointsFile, JSON.stringify({ ...endpoints, partitions: args.partitions, exampleJobs: true }, null, 2));
  const opsTarget = args.endpointsArg === undefined ? '--local' : `--endpoints ${args.endpointsArg}`;
  console.log(
    `local stack up (npm start pid ${process.pid}): DynamoDB Local ${stack.dynamoEndpoint} (pid ${stack.dynamoPid ?? '?'}), SQS ${stack.sqsEndpoint} (ops: npx fsched ops jobs ${opsTarget})`,
  );
  if (args.dataDir !== undefined) {
    console.log(
      `--data-dir ${args.dataDir}: the ledger (DynamoDB) is kept there across restarts; the run queue and its DLQ are not (in memory): ` +
        `an open run whose message is lost is sent again by the planner's sweep about ${readableDuration(SWEEP_DEFAULTS.graceMs)} after its slot, and dead-lettered messages are gone`,
    );
  }
  console.log(`jobs: ${jobs.map((j) => `${j.name} [${describeSchedule(j)}${j.timezone === 'UTC' ? '' : ` ${j.timezone}`}]`).join(', ')}`);

  const runtime = new LocalRuntime({
    endpoints,
    jobs,
    handlers,
    workers: args.workers,
    partitions: args.partitions,
    log: args.verbose ? (line) => console.log(line) : undefined,
    onOutcome: (o) => console.log(outcomeLine(o, width)),
    onSettled: (s) => console.log(settledLine(s, width)),
    onTakeover: (t) => console.log(takeoverLine(t, width)),
    onFencedOut: (f) => console.log(fencedOutLine(f, width)),
    onPoison: (p) => console.log(poisonLine(p, width)),
    onPaused: (p) => console.log(pausedLine(p, width)),
    onDeadLetter: (d) => console.log(deadLetterLine(d, width)),
    onViolation: (v) => console.error(`VIOLATION ${v.invariant} ${v.runKey}: ${v.detail}`),
    onOutboxEvent: (e) => console.log(eventLine(e, width)),
  });

  const printSummary = () => console.log(summaryLine(runtime.summary()));
  let minutely: NodeJS.Timeout | undefined;
  let stopping: Promise<number> | undefined;
  const shutdown = (reason: string) => {
    stopping ??= (async () => {
      clearInterval(minutely);
      console.log(`stopping (${reason})…`);
      try {
        await runtime.stop();
      } finally {
        await stack.stop();
        rmSync(endpointsFile, { force: true });
        lock.release();
      }
      printSummary();
      const final = runtime.summary();
      console.log(JSON.stringify(final));
      return final.violations === 0 ? 0 : 1;
    })();
    return stopping;
  };
  // A stop asked for while starting: stop now that there is something to stop.
  const requested = onStoppable(shutdown);
  if (requested !== undefined) return shutdown(requested);

  // A stop asked for from here on runs beside the start: once it has begun, the start gives way
  // (its calls fail as the stack goes down) and the stop's exit code is the one that counts.
  try {
    await runtime.startRelay();
    await seedPayments(runtime.clients, endpoints.paymentsTable, 25);
  } catch (error) {
    if (stopping) return stopping;
    throw error;
  }
  if (stopping) return stopping;
  stack.onDeadLetter((message) => runtime.deadLetter(message));
  runtime.start(args.tick);
  minutely = setInterval(printSummary, 60_000);
  const { duration } = args;
  if (duration !== undefined) {
    await new Promise((r) => setTimeout(r, duration * 1000));
    return shutdown(`--duration ${duration}`);
  }
  return new Promise<number>(() => undefined);
}

/** An error the runtime cannot go on from: said on stderr, exit 1 (the exit handler still kills Java). */
function failed(error: unknown): never {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}

main().then((code) => process.exit(code), failed);
