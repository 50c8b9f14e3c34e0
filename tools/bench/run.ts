/**
 * The benchmark: every figure in one run. In full mode each phase gets its own fresh
 * local stack (DynamoDB Local + local SQS) and fresh tables and queues; smoke mode (and the smoke
 * test, which passes the test run's endpoints) shares one stack, with fresh tables and queues per
 * phase. `runBench` is the library entry point; tools/bench.ts is the CLI (`npm run bench`).
 * The figures it reports are one table (figures.ts), printed by table.ts. Method and results:
 * docs/performance.md.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OverlapPolicy } from '../../shared/schedule/job-schema.js';
import type { LocalEndpoints, LocalStack } from '../local-stack.js';
import { bundleSize } from './bundle.js';
import { measureConsolePages, type ConsolePagesResult } from './console-pages.js';
import { measureEndToEnd } from './end-to-end.js';
import { checkTargets, collectFigures } from './figures.js';
import { freshResources, onFreshStack, round, startTrackedStack, stopTrackedStack, type StackBase } from './measure.js';
import { measurements } from './measurements.js';
import { plannerCost, plannerThroughput } from './planner.js';
import { measureRawMix, measureRawPuts, warmUp } from './raw.js';
import { renderTable } from './table.js';
import { measureTakeover } from './takeover.js';
import { measureTriggerLag, PRECISION_START_LEAD } from './trigger-lag.js';
import { ALL_PHASES, SIZES, type BenchMode, type BenchResult, type BracketedEndToEnd, type Phase } from './types.js';

export { checkTargets, REQUIRED_KEYS } from './figures.js';
export * from './types.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface BenchOptions {
  /** @default 'full' */
  readonly mode?: BenchMode;
  /** Use these running local servers (fresh tables and queues per phase) instead of starting a stack. */
  readonly endpoints?: Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint'>;
  /** Progress lines (stderr in the CLI). */
  readonly log?: (line: string) => void;
  /** Run only these phases (the others report 'n/a'). @default every phase */
  readonly phases?: readonly Phase[];
  /**
   * Start a fresh local stack for every phase (full mode default: DynamoDB Local slows down as
   * stream data accumulates). Smoke mode shares one stack to stay under a minute.
   */
  readonly stackPerPhase?: boolean;
  /**
   * Sample the bench process's CPU over the end-to-end burst and report its self time per run by
   * category (cpu-profile.ts); a string is also a path for the raw profile. Sampling slows the
   * burst, so a profiled run's rates and efficiency are not comparable. @default false
   */
  readonly cpuProfile?: boolean | string;
}

/**
 * True when the worker enforces the exclusive overlap policies (a worker without them has no
 * active-run marker to measure). A worker file that is not where this looks throws: read as "not
 * implemented", it would turn the overlap figures into n/a without a word.
 */
export function overlapPoliciesImplemented(): boolean {
  const worker = ['worker/batch.ts', 'worker/lanes.ts'].map((file) => readFileSync(join(ROOT, 'shared', file), 'utf8')).join('\n');
  return worker.includes('OverlapPolicy.FORBID_QUEUE') && worker.includes('OverlapPolicy.COALESCE');
}

/** Warm-up keys start here, far from the measured phases' keys. */
const WARMUP_KEY_OFFSET = 1_000_000;

export async function runBench(options: BenchOptions = {}): Promise<BenchResult> {
  const mode = options.mode ?? 'full';
  const sizes = SIZES[mode];
  const log = options.log ?? (() => undefined);
  const phases = new Set(options.phases ?? ALL_PHASES);
  const details: BenchResult['details'] = { load: {} };
  const started = Date.now();

  if (phases.has('bundle')) {
    details.load.bundle = round(loadavg()[0] ?? 0, 2);
    log('bundling functions/worker.ts and functions/planner.ts (esbuild, minified, SDK bundled)');
    details.workerBundle = await bundleSize('functions/worker.ts');
    details.plannerBundle = await bundleSize('functions/planner.ts');
  }

  const perPhase = options.stackPerPhase ?? mode === 'full';
  let ownStack: LocalStack | undefined;
  if (!options.endpoints && !perPhase && [...phases].some((p) => p !== 'bundle')) {
    log('starting one local stack for every phase');
    ownStack = await startTrackedStack();
  }
  const shared: StackBase | undefined = options.endpoints ?? ownStack;
  try {
    // JIT warm-up of a throughput phase's DynamoDB Local on the phase's own ledger table (keys apart
    // from everything measured): the exact code paths, index and stream included, and no second
    // table with stream data (which would slow the measurement down; see raw.ts).
    const warmOn = (endpoints: LocalEndpoints) => measureRawMix(endpoints, sizes.warmupItems, sizes.concurrency, WARMUP_KEY_OFFSET);
    // Every phase on its own DynamoDB Local (see measure.ts onFreshStack), throughput phases warmed alike.
    const fresh = <T>(phase: string, what: string, fn: (base: StackBase) => Promise<T>): Promise<T> => {
      details.load[phase] = round(loadavg()[0] ?? 0, 2);
      log(`${phase}: ${what}${shared ? '' : ' (fresh local stack)'}`);
      return onFreshStack(shared, fn);
    };

    if (phases.has('planner')) {
      for (const [key, jobs] of [
        ['plannerSmall', sizes.plannerSmallJobs],
        ['plannerLarge', sizes.plannerLargeJobs],
      ] as const) {
        const result = await fresh(
          `planner-${jobs}`,
          `${jobs} jobs due in one tick, bracketed by ${jobs} raw puts before and after`,
          async (base) => {
            const endpoints = await freshResources(base, `plan${jobs}`);
            await warmOn(endpoints);
            const before = await measureRawPuts(endpoints, jobs, sizes.concurrency, 0, base.dynamoPid);
            const tick = await plannerThroughput(endpoints, jobs, sizes.concurrency, base.dynamoPid);
            const after = await measureRawPuts(endpoints, jobs, sizes.concurrency, jobs, base.dynamoPid);
            return { tick, before, after };
          },
        );
        details[key] = result;
        log(
          `  raw puts/s before ${result.before.putsPerSec}, after ${result.after.putsPerSec}; tick ${result.tick.tickMs} ms (read + plan ${result.tick.readAndPlanMs} ms, puts ${result.tick.putMs} ms, sends beside them ${result.tick.sendMs} ms, then ${result.tick.sendTailMs} ms)`,
        );
      }
    }
    if (phases.has('planner-cost')) {
      details.plannerCost = await fresh('planner-cost', `${sizes.costJobs} jobs, ${sizes.costDue} due in the measured tick`, (base) =>
        plannerCost(base, sizes.costJobs, sizes.costDue),
      );
      log(`  ${details.plannerCost.requests} ledger requests, ${details.plannerCost.tickMs} ms`);
    }
    const burst = (overlap: OverlapPolicy, runs: number): Promise<BracketedEndToEnd> =>
      fresh(
        overlap === OverlapPolicy.PARALLEL ? 'end-to-end' : `overlap-${overlap}`,
        `${runs} no-op runs due at once, overlap ${overlap}, ${sizes.e2eWorkers} pollers × batches of 10, bracketed by raw ${runs} puts + ${2 * runs} updates before and after`,
        async (base) => {
          const endpoints = await freshResources(base, `e2e-${overlap}`);
          await warmOn(endpoints);
          const before = await measureRawMix(endpoints, runs, sizes.concurrency, 0, base.dynamoPid);
          const profile = overlap === OverlapPolicy.PARALLEL ? options.cpuProfile : undefined;
          const run = await measureEndToEnd({
            endpoints,
            runs,
            workers: sizes.e2eWorkers,
            overlap,
            putConcurrency: sizes.concurrency,
            dynamoPid: base.dynamoPid,
            cpuProfile: profile,
          });
          const after = await measureRawMix(endpoints, runs, sizes.concurrency, runs, base.dynamoPid);
          return { run, before, after };
        },
      );
    if (phases.has('end-to-end')) {
      const result = await burst(OverlapPolicy.PARALLEL, sizes.e2eRuns);
      details.endToEnd = result;
      log(
        `  raw writes/s before ${result.before.writesPerSec}, after ${result.after.writesPerSec}; ${result.run.runsPerSec} runs/s, ${result.run.writesPerRun} writes/run`,
      );
    }
    if (phases.has('overlap')) {
      details.overlap = {};
      if (!overlapPoliciesImplemented()) {
        log('overlap policies forbid-queue/coalesce: not implemented in shared/worker/batch.ts yet: n/a');
      } else {
        for (const overlap of [OverlapPolicy.FORBID_QUEUE, OverlapPolicy.COALESCE]) {
          try {
            details.overlap[overlap] = await burst(overlap, sizes.overlapRuns);
          } catch (error) {
            details.overlap[overlap] = `failed: ${error instanceof Error ? error.message : String(error)}`;
            log(`  ${details.overlap[overlap]}`);
          }
        }
      }
    }
    if (phases.has('trigger-lag')) {
      details.triggerLag = await fresh(
        'trigger-lag',
        `${sizes.lagJobs} jobs with startLead ${PRECISION_START_LEAD} and ${sizes.lagJobs} with the default, every 10 s for ${sizes.lagDurationMs / 1000} s, planner every ${sizes.lagTickSeconds} s`,
        async (base) => {
          await warmUp(base, Math.min(300, sizes.warmupItems), sizes.concurrency);
          return measureTriggerLag({
            base,
            durationMs: sizes.lagDurationMs,
            jobs: sizes.lagJobs,
            tickSeconds: sizes.lagTickSeconds,
            workers: sizes.lagWorkers,
            warmupMs: sizes.lagWarmupMs,
          });
        },
      );
      const { precision, defaults } = details.triggerLag;
      log(
        `  precision: p50 ${precision.p50Ms} ms, p99 ${precision.p99Ms} ms over ${precision.samples} runs; default: p50 ${defaults.p50Ms} ms, p99 ${defaults.p99Ms} ms over ${defaults.samples} runs`,
      );
    }
    if (phases.has('takeover')) {
      details.takeover = await fresh(
        'takeover',
        `${sizes.kills} SIGKILLs of worker processes, lease ${sizes.leaseMs} ms, heartbeat ${sizes.heartbeatMs} ms`,
        async (base) => {
          await warmUp(base, Math.min(300, sizes.warmupItems), sizes.concurrency);
          return measureTakeover({
            base,
            kills: sizes.kills,
            leaseMs: sizes.leaseMs,
            heartbeatMs: sizes.heartbeatMs,
            log: (l) => log(`  ${l}`),
          });
        },
      );
      if (sizes.killsSkew0 > 0) {
        details.takeoverSkew0 = await fresh('takeover-skew0', `${sizes.killsSkew0} kills with --clock-skew 0 (diagnostic)`, (base) =>
          measureTakeover({
            base,
            kills: sizes.killsSkew0,
            leaseMs: sizes.leaseMs,
            heartbeatMs: sizes.heartbeatMs,
            clockSkewMs: 0,
            log: (l) => log(`  ${l}`),
          }),
        );
      }
    }
    if (phases.has('console')) {
      details.consolePages = await fresh(
        'console',
        `the console's Jobs page with ${sizes.consoleJobs} jobs and Job page with ${sizes.consoleBigJobRuns} runs, seeded by BatchWriteItem`,
        (base) =>
          measureConsolePages({
            base,
            jobs: sizes.consoleJobs,
            runsPerJob: sizes.consoleRunsPerJob,
            bigJobRuns: sizes.consoleBigJobRuns,
            samples: sizes.consoleSamples,
            log,
          }),
      );
      const page = (name: string, t: ConsolePagesResult['jobsPage']) =>
        `${name} page p50 ${t.p50Ms} ms, p95 ${t.p95Ms} (max ${t.maxMs}), ${t.dynamoCalls} DynamoDB calls (${Object.entries(
          t.dynamoCallsByCommand,
        )
          .map(([c, n]) => `${c} ${n}`)
          .join(', ')})`;
      log(`  ${page('Jobs', details.consolePages.jobsPage)}; ${page('Job', details.consolePages.jobPage)}`);
    }
  } finally {
    if (ownStack) await stopTrackedStack(ownStack);
  }

  const figures = collectFigures(measurements(mode, sizes, details, (Date.now() - started) / 1000));
  const targets = checkTargets(figures);
  return { mode, figures, targets, table: renderTable(mode, sizes, figures, targets, details), details };
}
