/**
 * `npm run chaos`: the six fault drills of DESIGN §9 with randomized timing, against embedded
 * local stacks (DynamoDB Local + local-aws-sqs on free ports), workers partly as real child
 * processes (SIGKILL, SIGSTOP/SIGCONT, a TCP proxy that drops their ledger connection).
 *
 *   npm run chaos -- [--runs 10000] [--seed N] [--drills a,b,...|names] [--children 2]
 *                    [--in-process] [--concurrency 1] [--quiet]
 *
 * By default each drill runs in its own Node process on its own fresh local stack, one after the
 * other: a drill's timing facts (trigger lag, lease ends) then measure that drill, not the heap,
 * event loop or emulator state another drill left behind. --in-process runs them all in this
 * process on one stack (what the short test inside `npm test` does).
 *
 * Prints progress on stderr, then on stdout a table (drill, runs, faults injected, takeovers,
 * fencing rejections, violations), facts and observations per drill, the first violations, and
 * as its last line one JSON object with the totals. Exits 0 only with 0 violations.
 *
 * Model-based mode (tools/model/): generated scenarios with faults at every I/O boundary and a
 * safety + liveness checker; ends with one JSON line {scenarios, operations, faults, violations, seed}:
 *
 *   npm run chaos -- --model [--scenarios 5000] [--seed S] [--path P] [--concurrency 4]
 *   npm run chaos -- --model --prove [--defects 1,2,...] [--scenarios N]   (per-defect proof, docs/testing.md)
 *
 * Debugging: CHAOS_TRACE=1 prints step timings, CHAOS_DEBUG=1 the planner-down jobs and watermarks
 * per tick, CHAOS_VERBOSE=1 the in-process workers' error logs.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { JavaMissingError, startLocalStack, type LocalStack } from './local-stack.js';
import type { DrillResult } from './chaos/drill.js';
import { DRILLS } from './chaos/drills/index.js';
import { allocate, formatDetails, formatTable, runChaos, selectDrills, summarize, type ChaosReport } from './chaos/run.js';
import { warmUp } from './chaos/sandbox.js';
import { modelMain } from './model/cli.js';

const RESULT_PREFIX = 'CHAOS_DRILL_RESULT ';

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

function positiveInt(name: string, raw: string | undefined, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) fail(`--${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

async function withStack<T>(fn: (stack: LocalStack) => Promise<T>): Promise<T> {
  const stack = await startLocalStack({});
  await warmUp(stack);
  const stop = () => {
    void stack.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await fn(stack);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await stack.stop();
  }
}

/** Runs one drill in a fresh Node process with its own local stack; its result comes back on stdout. */
function drillInChildProcess(name: string, runs: number, seed: number, children: number, quiet: boolean): Promise<DrillResult> {
  const started = Date.now();
  const args = [
    '--import',
    'tsx',
    fileURLToPath(import.meta.url),
    '--drill-process',
    name,
    '--runs',
    String(runs),
    '--seed',
    String(seed),
    '--children',
    String(children),
  ];
  if (quiet) args.push('--quiet');
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const forward = () => child.kill('SIGTERM');
  process.once('SIGINT', forward);
  let stdout = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => (stdout += chunk));
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      process.off('SIGINT', forward);
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
      if (line) return resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as DrillResult);
      resolve({
        drill: name,
        runs: 0,
        iterations: 0,
        childIterations: 0,
        faults: 0,
        takeovers: 0,
        fencingRejections: 0,
        violations: [
          { invariant: 'drill-error', runKey: '-', detail: `drill process exited (${signal ?? code}) without a result`, iteration: 0 },
        ],
        facts: {},
        observations: [],
        durationMs: Date.now() - started,
      });
    });
  });
}

async function main(): Promise<number> {
  if (process.argv.includes('--model')) return modelMain(process.argv.slice(2).filter((a) => a !== '--model'));
  const { values } = parseArgs({
    options: {
      runs: { type: 'string' },
      seed: { type: 'string' },
      drills: { type: 'string' },
      children: { type: 'string' },
      concurrency: { type: 'string' },
      'in-process': { type: 'boolean', default: false },
      'drill-process': { type: 'string' },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(
      'usage: npm run chaos -- [--runs 10000] [--seed N] [--drills a,b,...] [--children 2] [--in-process] [--concurrency 1] [--quiet]',
    );
    console.log(`drills: ${DRILLS.map((d) => `${d.letter}=${d.name}`).join(', ')}`);
    return 0;
  }
  const runs = positiveInt('runs', values.runs, 10_000);
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : positiveInt('seed', values.seed, 0, 0);
  const childIterations = positiveInt('children', values.children, 2, 0);
  const concurrency = positiveInt('concurrency', values.concurrency, 1);
  if (concurrency !== 1 && concurrency !== 2) fail('--concurrency must be 1 or 2');
  const log = values.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`);

  // Internal: one drill, in this (child) process, on a fresh stack.
  if (values['drill-process']) {
    const [entry] = selectDrills([values['drill-process']]);
    const result = await withStack((stack) => entry!.drill({ base: stack, runs, seed, childIterations, log }));
    process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
    return 0;
  }

  const drills = selectDrills(
    values.drills
      ?.split(',')
      .map((d) => d.trim())
      .filter(Boolean),
  );
  const inProcess = values['in-process'] || concurrency === 2;
  log?.(
    `chaos: ${runs} runs, seed ${seed}, ${childIterations} child-process iteration(s) per worker drill, ` +
      (inProcess ? `in one process, concurrency ${concurrency}` : 'each drill in its own process on a fresh local stack'),
  );
  let report: ChaosReport;
  try {
    if (inProcess) {
      report = await withStack((stack) =>
        runChaos({ base: stack, runs, seed, drills: drills.map((d) => d.name), childIterations, concurrency: concurrency as 1 | 2, log }),
      );
    } else {
      const started = Date.now();
      const budget = allocate(drills, runs);
      const results: DrillResult[] = [];
      for (const entry of drills)
        results.push(await drillInChildProcess(entry.name, budget.get(entry)!, seed, childIterations, values.quiet));
      report = summarize(results, seed, Date.now() - started);
    }
  } catch (error) {
    if (error instanceof JavaMissingError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  console.log(formatTable(report));
  console.log('');
  console.log(formatDetails(report));
  console.log(JSON.stringify(report.totals));
  return report.totals.violations === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
