/**
 * The benchmark: every figure in one run. In full mode each phase gets its own fresh
 * local stack (DynamoDB Local + local SQS) and fresh tables and queues; smoke mode (and the smoke
 * test, which passes the test run's endpoints) shares one stack, with fresh tables and queues per
 * phase. `runBench` is the library entry point; tools/bench.ts is the CLI (`npm run bench`).
 * Method and results: docs/performance.md.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OverlapPolicy } from '../../shared/schedule/job-schema.js';
import type { LocalEndpoints, LocalStack } from '../local-stack.js';
import { bundleSize, type BundleResult } from './bundle.js';
import { costPerMillionRuns, describePrices, PRICES, type CostBreakdown } from './cost.js';
import { hottest, perJobUnits, unitsByKind } from './key-load.js';
import { measureEndToEnd, type EndToEndResult } from './end-to-end.js';
import { freshResources, onFreshStack, round, startTrackedStack, stopTrackedStack, type CpuUse, type StackBase } from './measure.js';
import { plannerCost, plannerThroughput, type PlannerCost, type PlannerThroughput } from './planner.js';
import { measureRawMix, measureRawPuts, warmUp, type RawMixResult, type RawPutsResult } from './raw.js';
import { measureTakeover, type TakeoverResult } from './takeover.js';
import { measureConsolePages, type ConsolePagesResult } from './console-pages.js';
import { measureTriggerLag, PRECISION_START_LEAD, type LagSet, type TriggerLagResult } from './trigger-lag.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type BenchMode = 'full' | 'smoke';
/** The raw limit is measured inside `planner` and `end-to-end`, on their own tables, before and after. */
export type Phase = 'bundle' | 'planner' | 'planner-cost' | 'end-to-end' | 'overlap' | 'trigger-lag' | 'takeover' | 'console';
export const ALL_PHASES: readonly Phase[] = ['bundle', 'planner', 'planner-cost', 'end-to-end', 'overlap', 'trigger-lag', 'takeover', 'console'];

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

/** Sizes per mode. Smoke keeps every phase but makes it tiny (the "1k"/"10k" keys then hold smaller sizes). */
export interface BenchSizes {
  /** Puts + claims + completions on the phase's own table before each throughput phase (JIT warm-up; raw.ts). */
  readonly warmupItems: number;
  readonly concurrency: number;
  readonly plannerSmallJobs: number;
  readonly plannerLargeJobs: number;
  readonly costJobs: number;
  readonly costDue: number;
  readonly e2eRuns: number;
  /**
   * Concurrent pollers (batches in flight) in the end-to-end phases. The deployed event source
   * mapping allows 20 concurrent worker invocations by default; 8 keeps the burst well inside
   * that. Measured on this machine: 2 pollers 0.74 efficiency, 4 → 0.77–0.81, 6 → 0.87–0.88,
   * 8 → 0.94 (fewer batches in flight leave DynamoDB Local idle between a batch's last write and
   * the next receive).
   */
  readonly e2eWorkers: number;
  readonly overlapRuns: number;
  readonly lagDurationMs: number;
  /** Jobs per set in the lag phase: as many with startLead 1500ms (precision) as with the default. */
  readonly lagJobs: number;
  readonly lagTickSeconds: number;
  /** Pollers in the lag phase: one per job (both sets), as Lambda gives each message its own invocation. */
  readonly lagWorkers: number;
  readonly lagWarmupMs: number;
  readonly kills: number;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  /** Extra kills with --clock-skew 0, to separate the skew allowance from SQS redelivery (0 = none). */
  readonly killsSkew0: number;
  /** The console phase: deployed jobs (the Jobs page), runs of each, runs of the one big job (its Job page), timed fetches of each page. */
  readonly consoleJobs: number;
  readonly consoleRunsPerJob: number;
  readonly consoleBigJobRuns: number;
  readonly consoleSamples: number;
}

export const SIZES: Readonly<Record<BenchMode, BenchSizes>> = {
  full: {
    warmupItems: 8_000,
    concurrency: 16,
    plannerSmallJobs: 1_000,
    plannerLargeJobs: 10_000,
    costJobs: 10_000,
    costDue: 100,
    e2eRuns: 2_000,
    e2eWorkers: 8,
    overlapRuns: 1_000,
    lagDurationMs: 180_000,
    lagJobs: 10,
    lagTickSeconds: 60,
    lagWorkers: 20,
    lagWarmupMs: 5_000,
    kills: 10,
    leaseMs: 3_000,
    heartbeatMs: 1_000,
    killsSkew0: 5,
    consoleJobs: 1_000,
    consoleRunsPerJob: 25,
    consoleBigJobRuns: 100_000,
    consoleSamples: 10,
  },
  smoke: {
    warmupItems: 50,
    concurrency: 16,
    plannerSmallJobs: 50,
    plannerLargeJobs: 300,
    costJobs: 500,
    costDue: 10,
    e2eRuns: 60,
    e2eWorkers: 2,
    overlapRuns: 20,
    lagDurationMs: 11_000,
    lagJobs: 3,
    lagTickSeconds: 10,
    lagWorkers: 6,
    lagWarmupMs: 3_000,
    kills: 1,
    leaseMs: 3_000,
    heartbeatMs: 1_000,
    killsSkew0: 0,
    consoleJobs: 60,
    consoleRunsPerJob: 5,
    consoleBigJobRuns: 300,
    consoleSamples: 2,
  },
};

/** The figures every bench run reports (the targets of docs/performance.md and the reported figures); `runBench` fills each with a number. */
export const REQUIRED_KEYS = [
  'rawWritesPerSec',
  'runsPerSec',
  'efficiency',
  'writesPerRun',
  'sqsCallsPerRun',
  'triggerLagP50Ms',
  'triggerLagP99Ms',
  'takeoverP50Ms',
  'takeoverMaxMs',
  'leaseMs',
  'heartbeatMs',
  'workerBundleBytes',
  'plannerBundleBytes',
  'plannerSlotsPerSec1k',
  'plannerSlotsPerSec10k',
  'plannerRequestsPerTick10kJobs100Due',
  'costPerMillionRunsUsd',
  'costPerMillionSparseRunsUsd',
  'sqsCallsPerRunSteady',
  'hotKeyWriteShare',
  'hotKeyWcuAt2000RunsPerSec',
  'hotKeyRcuAt2000RunsPerSec',
  'hotKeyWcuAt2000RunsPerSecForbidQueue',
  'hotKeyRcuAt2000RunsPerSecForbidQueue',
  'jobKeyWcuWorstCase',
  'jobKeyWcuWorstCaseForbidQueue',
  'writeUnitsPerRunForbidQueue',
  'readsPerRunForbidQueue',
  'writeUnitsPerRunCoalesce',
  'readsPerRunCoalesce',
  'triggerLagDefaultP99Ms',
] as const;

/** A consistent query of one job's window returning one run item (< 4 KB): one read unit. */
const SWEEP_QUERY_READ_UNITS = 1;

/** The sustained rate the partition-key figures are projected to. */
export const PROJECTED_RUNS_PER_SEC = 2_000;
/** A single job's most runs per second: one slot a second (the finest schedule) × 100 shards (the schema's limit). */
export const MAX_RUNS_PER_SEC_OF_ONE_JOB = 100;

export type Figure = number | string;

/** A planner tick with the raw put rate of the same count measured on its table just before and after. */
export interface BracketedPlanner {
  readonly tick: PlannerThroughput;
  readonly before: RawPutsResult;
  readonly after: RawPutsResult;
}

/** A burst with the raw rate of its write mix and volume measured on its table just before and after. */
export interface BracketedEndToEnd {
  readonly run: EndToEndResult;
  readonly before: RawMixResult;
  readonly after: RawMixResult;
}

export interface TargetCheck {
  readonly figure: string;
  readonly value: Figure;
  readonly target: string;
  readonly met: boolean | 'n/a';
}

export interface BenchResult {
  readonly mode: BenchMode;
  readonly figures: Record<string, Figure>;
  readonly targets: readonly TargetCheck[];
  readonly table: string;
  readonly details: {

    /** 1-minute load average of the machine when each phase started (other work on the machine skews rates). */
    load: Record<string, number>;
    plannerSmall?: BracketedPlanner;
    plannerLarge?: BracketedPlanner;
    plannerCost?: PlannerCost;
    endToEnd?: BracketedEndToEnd;
    overlap?: Partial<Record<OverlapPolicy, BracketedEndToEnd | string>>;
    triggerLag?: TriggerLagResult;
    takeover?: TakeoverResult;
    takeoverSkew0?: TakeoverResult;
    consolePages?: ConsolePagesResult;
    workerBundle?: BundleResult;
    plannerBundle?: BundleResult;
    cost?: CostBreakdown;
    sparseCost?: CostBreakdown;
  };
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

const NA = 'n/a';
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
      for (const [key, jobs] of [['plannerSmall', sizes.plannerSmallJobs], ['plannerLarge', sizes.plannerLargeJobs]] as const) {
        const result = await fresh(`planner-${jobs}`, `${jobs} jobs due in one tick, bracketed by ${jobs} raw puts before and after`, async (base) => {
          const endpoints = await freshResources(base, `plan${jobs}`);
          await warmOn(endpoints);
          const before = await measureRawPuts(endpoints, jobs, sizes.concurrency, 0, base.dynamoPid);
          const tick = await plannerThroughput(endpoints, jobs, sizes.concurrency, base.dynamoPid);
          const after = await measureRawPuts(endpoints, jobs, sizes.concurrency, jobs, base.dynamoPid);
          return { tick, before, after };
        });
        details[key] = result;
        log(`  raw puts/s before ${result.before.putsPerSec}, after ${result.after.putsPerSec}; tick ${result.tick.tickMs} ms (read + plan ${result.tick.readAndPlanMs} ms, puts ${result.tick.putMs} ms, sends beside them ${result.tick.sendMs} ms, then ${result.tick.sendTailMs} ms)`);
      }
    }
    if (phases.has('planner-cost')) {
      details.plannerCost = await fresh('planner-cost', `${sizes.costJobs} jobs, ${sizes.costDue} due in the measured tick`, (base) => plannerCost(base, sizes.costJobs, sizes.costDue));
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
          const run = await measureEndToEnd({ endpoints, runs, workers: sizes.e2eWorkers, overlap, putConcurrency: sizes.concurrency, dynamoPid: base.dynamoPid, cpuProfile: profile });
          const after = await measureRawMix(endpoints, runs, sizes.concurrency, runs, base.dynamoPid);
          return { run, before, after };
        },
      );
    if (phases.has('end-to-end')) {
      const result = await burst(OverlapPolicy.PARALLEL, sizes.e2eRuns);
      details.endToEnd = result;
      log(`  raw writes/s before ${result.before.writesPerSec}, after ${result.after.writesPerSec}; ${result.run.runsPerSec} runs/s, ${result.run.writesPerRun} writes/run`);
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
          return measureTriggerLag({ base, durationMs: sizes.lagDurationMs, jobs: sizes.lagJobs, tickSeconds: sizes.lagTickSeconds, workers: sizes.lagWorkers, warmupMs: sizes.lagWarmupMs });
        },
      );
      const { precision, defaults } = details.triggerLag;
      log(`  precision: p50 ${precision.p50Ms} ms, p99 ${precision.p99Ms} ms over ${precision.samples} runs; default: p50 ${defaults.p50Ms} ms, p99 ${defaults.p99Ms} ms over ${defaults.samples} runs`);
    }
    if (phases.has('takeover')) {
      details.takeover = await fresh('takeover', `${sizes.kills} SIGKILLs of worker processes, lease ${sizes.leaseMs} ms, heartbeat ${sizes.heartbeatMs} ms`, async (base) => {
        await warmUp(base, Math.min(300, sizes.warmupItems), sizes.concurrency);
        return measureTakeover({ base, kills: sizes.kills, leaseMs: sizes.leaseMs, heartbeatMs: sizes.heartbeatMs, log: (l) => log(`  ${l}`) });
      });
      if (sizes.killsSkew0 > 0) {
        details.takeoverSkew0 = await fresh('takeover-skew0', `${sizes.killsSkew0} kills with --clock-skew 0 (diagnostic)`, (base) =>
          measureTakeover({ base, kills: sizes.killsSkew0, leaseMs: sizes.leaseMs, heartbeatMs: sizes.heartbeatMs, clockSkewMs: 0, log: (l) => log(`  ${l}`) }),
        );
      }
    }
    if (phases.has('console')) {
      details.consolePages = await fresh('console', `the console's Jobs page with ${sizes.consoleJobs} jobs and Job page with ${sizes.consoleBigJobRuns} runs, seeded by BatchWriteItem`, (base) =>
        measureConsolePages({ base, jobs: sizes.consoleJobs, runsPerJob: sizes.consoleRunsPerJob, bigJobRuns: sizes.consoleBigJobRuns, samples: sizes.consoleSamples, log }),
      );
      log(`  Jobs page p50 ${details.consolePages.jobsPage.p50Ms} ms (max ${details.consolePages.jobsPage.maxMs}); Job page p50 ${details.consolePages.jobPage.p50Ms} ms (max ${details.consolePages.jobPage.maxMs})`);
    }

  } finally {
    if (ownStack) await stopTrackedStack(ownStack);
  }

  const figures = collectFigures(mode, sizes, details, (Date.now() - started) / 1000);
  figures.loadAvg1mByPhase = JSON.stringify(details.load);
  const targets = checkTargets(figures);
  return { mode, figures, targets, table: renderTable(mode, sizes, figures, targets, details), details };
}

function num(value: number | undefined): Figure {
  return value === undefined || Number.isNaN(value) ? NA : value;
}

/** The raw ceiling of a bracketed phase: the better of the measurements just before and just after it. */
function ceiling(before: number, after: number): number {
  return Math.max(before, after);
}

function collectFigures(mode: BenchMode, sizes: BenchSizes, d: BenchResult['details'], elapsedSec: number): Record<string, Figure> {
  const burst = d.endToEnd;
  const e2e = burst?.run;
  const rawWrites = burst ? ceiling(burst.before.writesPerSec, burst.after.writesPerSec) : undefined;
  const small = d.plannerSmall;
  const large = d.plannerLarge;
  const rawPuts1k = small ? ceiling(small.before.putsPerSec, small.after.putsPerSec) : undefined;
  const rawPuts10k = large ? ceiling(large.before.putsPerSec, large.after.putsPerSec) : undefined;
  const f: Record<string, Figure> = {};
  // Figures with a target first, then the reported ones.
  f.rawWritesPerSec = num(rawWrites);
  f.runsPerSec = num(e2e?.runsPerSec);
  f.efficiency = e2e && rawWrites ? round((e2e.runsPerSec * e2e.writesPerRun) / rawWrites, 3) : NA;
  f.writesPerRun = num(e2e?.writesPerRun);
  f.sqsCallsPerRun = num(e2e?.sqsCallsPerRun);
  // The ≤ 100 ms target is precision mode's (startLead 1500ms); the default mode starts in the second after the slot.
  f.triggerLagP50Ms = num(d.triggerLag?.precision.p50Ms);
  f.triggerLagP99Ms = num(d.triggerLag?.precision.p99Ms);
  f.takeoverP50Ms = num(d.takeover?.p50Ms);
  f.takeoverMaxMs = num(d.takeover?.maxMs);
  f.leaseMs = sizes.leaseMs;
  f.heartbeatMs = sizes.heartbeatMs;
  f.workerBundleBytes = num(d.workerBundle?.bytes);
  f.plannerBundleBytes = num(d.plannerBundle?.bytes);
  f.plannerSlotsPerSec1k = num(small?.tick.slotsPerSec);
  f.plannerSlotsPerSec10k = num(large?.tick.slotsPerSec);
  f.plannerRequestsPerTick10kJobs100Due = num(d.plannerCost?.requests);

  let cost: CostBreakdown | undefined;
  if (e2e) {
    // Billed units: DynamoDB Local's, plus what it leaves out and DynamoDB bills (key-load.ts).
    cost = costPerMillionRuns({
      writeUnitsPerRun: e2e.writeUnitsPerRun,
      readUnitsPerRun: e2e.readUnitsPerRun,
      sqsRequestsPerRun: e2e.sqsCallsPerRun + e2e.eventSourceSqsCallsPerRun,
      invocationsPerRun: e2e.invocationsPerRun,
      lambdaMsPerRun: e2e.lambdaMsPerRun,
    });
    d.cost = cost;
  }
  f.costPerMillionRunsUsd = cost ? round(cost.total, 3) : NA;

  // Extra figures: overlap policies.
  f.writesPerRunForbidQueue = overlapFigure(d, OverlapPolicy.FORBID_QUEUE, (r) => r.writesPerRun);
  f.writesPerRunCoalesce = overlapFigure(d, OverlapPolicy.COALESCE, (r) => r.writesPerRun);
  f.writeUnitsPerRunForbidQueue = overlapFigure(d, OverlapPolicy.FORBID_QUEUE, (r) => r.writeUnitsPerRun);
  f.writeUnitsPerRunCoalesce = overlapFigure(d, OverlapPolicy.COALESCE, (r) => r.writeUnitsPerRun);
  f.readsPerRunForbidQueue = overlapFigure(d, OverlapPolicy.FORBID_QUEUE, (r) => r.readsPerRun);
  f.readsPerRunCoalesce = overlapFigure(d, OverlapPolicy.COALESCE, (r) => r.readsPerRun);
  f.sqsCallsPerRunForbidQueue = overlapFigure(d, OverlapPolicy.FORBID_QUEUE, (r) => r.sqsCallsPerRun);
  f.sqsCallsPerRunCoalesce = overlapFigure(d, OverlapPolicy.COALESCE, (r) => r.sqsCallsPerRun);
  f.runsPerSecForbidQueue = overlapFigure(d, OverlapPolicy.FORBID_QUEUE, (r) => r.runsPerSec);
  f.runsPerSecCoalesce = overlapFigure(d, OverlapPolicy.COALESCE, (r) => r.runsPerSec);
  f.efficiencyForbidQueue = overlapEfficiency(d, OverlapPolicy.FORBID_QUEUE);
  f.efficiencyCoalesce = overlapEfficiency(d, OverlapPolicy.COALESCE);

  // Raw limit, bracketing measurements.
  f.rawWritesPerSecBefore = num(burst?.before.writesPerSec);
  f.rawWritesPerSecAfter = num(burst?.after.writesPerSec);
  f.rawUpdatesPerSec = num(burst ? ceiling(burst.before.updatesPerSec, burst.after.updatesPerSec) : undefined);
  f.rawPutsPerSec = num(rawPuts10k);
  f.rawPutsPerSecBefore10k = num(large?.before.putsPerSec);
  f.rawPutsPerSecAfter10k = num(large?.after.putsPerSec);
  f.rawPutsPerSec1k = num(rawPuts1k);

  // Planner.
  f.plannerPutSlotsPerSec1k = num(small?.tick.putSlotsPerSec);
  f.plannerPutSlotsPerSec10k = num(large?.tick.putSlotsPerSec);
  f.plannerTickVsRawPut1k = small && rawPuts1k ? round(small.tick.slotsPerSec / rawPuts1k, 3) : NA;
  f.plannerPutVsRawPut1k = small && rawPuts1k ? round(small.tick.putSlotsPerSec / rawPuts1k, 3) : NA;
  f.plannerTickVsRawPut10k = large && rawPuts10k ? round(large.tick.slotsPerSec / rawPuts10k, 3) : NA;
  f.plannerPutVsRawPut10k = large && rawPuts10k ? round(large.tick.putSlotsPerSec / rawPuts10k, 3) : NA;
  f.plannerTickMs10k = num(large?.tick.tickMs);
  f.plannerReadAndPlanMs10k = num(large?.tick.readAndPlanMs);
  f.plannerPutMs10k = num(large?.tick.putMs);
  f.plannerSendMs10k = num(large?.tick.sendMs);
  f.plannerSendTailMs10k = num(large?.tick.sendTailMs);
  f.plannerAfterSendMs10k = num(large?.tick.afterSendMs);
  f.plannerTickMs10kJobs100Due = num(d.plannerCost?.tickMs);
  f.plannerReadAndPlanMs10kJobs100Due = num(d.plannerCost?.readAndPlanMs);
  f.plannerSqsCallsPerTick10kJobs100Due = num(d.plannerCost?.sqsCalls);
  f.plannerRequestsTarget10kJobs100Due = d.plannerCost ? 3 * d.plannerCost.due + d.plannerCost.partitions : NA;

  // End to end.
  f.workerRunsPerSec = num(e2e?.workerRunsPerSec);
  f.e2eElapsedMs = num(e2e?.elapsedMs);
  f.e2ePlannerTickMs = num(e2e?.plannerTickMs);
  f.e2eWorkerPhaseMs = num(e2e?.workerPhaseMs);
  f.writeItemsPerRun = num(e2e?.writeItemsPerRun);
  f.writeUnitsPerRun = num(e2e?.writeUnitsPerRun);
  f.writeUnitsPerRunReportedByLocal = num(e2e?.reportedWriteUnitsPerRun);
  f.readUnitsPerRunReportedByLocal = num(e2e?.reportedReadUnitsPerRun);
  f.readsPerRun = num(e2e?.readsPerRun);
  f.readUnitsPerRun = num(e2e?.readUnitsPerRun);
  f.dynamoRequestsPerRun = num(e2e?.dynamoRequestsPerRun);
  f.eventSourceSqsCallsPerRun = num(e2e?.eventSourceSqsCallsPerRun);
  f.invocationsPerRun = num(e2e?.invocationsPerRun);
  f.lambdaMsPerRun = num(e2e?.lambdaMsPerRun);
  f.e2eViolations = num(e2e?.violations);
  f.consoleJobsPageMs = num(d.consolePages?.jobsPage.p50Ms);
  f.consoleJobsPageMaxMs = num(d.consolePages?.jobsPage.maxMs);
  f.consoleJobPageMs = num(d.consolePages?.jobPage.p50Ms);
  f.consoleJobPageMaxMs = num(d.consolePages?.jobPage.maxMs);
  f.e2eTickPutMs = num(e2e?.tickParts.putMs);
  f.e2eTickSendMs = num(e2e?.tickParts.sendMs);
  const util = (cpu: CpuUse | undefined, which: 'node' | 'dynamo') => {
    const ms = which === 'node' ? cpu?.nodeCpuMs : cpu?.dynamoCpuMs;
    return cpu && ms !== undefined ? round(ms / cpu.wallMs, 3) : undefined;
  };
  const rawMixUsed = burst ? (burst.after.writesPerSec >= burst.before.writesPerSec ? burst.after : burst.before) : undefined;
  f.e2eNodeCpuCores = num(util(e2e?.cpu, 'node'));
  f.e2eDynamoCpuCores = num(util(e2e?.cpu, 'dynamo'));
  f.rawMixNodeCpuCores = num(util(rawMixUsed?.cpu, 'node'));
  f.rawMixDynamoCpuCores = num(util(rawMixUsed?.cpu, 'dynamo'));
  f.e2eNodeCpuMsPerRun = e2e ? round(e2e.cpu.nodeCpuMs / e2e.runs, 3) : NA;
  // Where a run's wall time goes: the two CPUs' busy share, and each worker request's round trip.
  f.e2eWallMsPerRun = e2e ? round(e2e.elapsedMs / e2e.runs, 3) : NA;
  f.e2eIdleCpuShare = e2e && e2e.cpu.dynamoCpuMs !== undefined ? round(1 - (e2e.cpu.nodeCpuMs + e2e.cpu.dynamoCpuMs) / (e2e.cpu.wallMs * cpus().length), 3) : NA;
  f.e2eRequestLatencyMs = e2e ? JSON.stringify(e2e.dynamo.meanLatencyMs) : NA;
  f.e2eMeanBatchMs = num(e2e?.meanBatchMs);
  // Only in a profiled run (--cpu-profile): the main thread's self time per run, by where the code lives.
  f.e2eProfiled = e2e?.cpuProfile ? 'yes (rates slowed by sampling)' : 'no';
  f.e2eProfileMsPerRun = e2e?.cpuProfile ? JSON.stringify(roundAll(e2e.cpuProfile.selfMs, e2e.runs)) : NA;
  f.e2eProfileTopFunctions = e2e?.cpuProfile ? e2e.cpuProfile.top.map((t) => `${t.name} ${t.where} ${round(t.ms / e2e.runs, 3)}`).join('; ') : NA;
  f.e2eDynamoCpuMsPerRun = e2e?.cpu.dynamoCpuMs !== undefined ? round(e2e.cpu.dynamoCpuMs / e2e.runs, 3) : NA;
  f.rawMixNodeCpuMsPer3Writes = rawMixUsed ? round((3 * rawMixUsed.cpu.nodeCpuMs) / (3 * rawMixUsed.items), 3) : NA;
  f.rawMixDynamoCpuMsPer3Writes = rawMixUsed?.cpu.dynamoCpuMs !== undefined ? round((3 * rawMixUsed.cpu.dynamoCpuMs) / (3 * rawMixUsed.items), 3) : NA;
  const rawPutsUsed = large ? (large.after.putsPerSec >= large.before.putsPerSec ? large.after : large.before) : undefined;
  f.plannerNodeCpuCores10k = num(util(large?.tick.cpu, 'node'));
  f.plannerDynamoCpuCores10k = num(util(large?.tick.cpu, 'dynamo'));
  f.rawPutsNodeCpuCores10k = num(util(rawPutsUsed?.cpu, 'node'));
  f.rawPutsDynamoCpuCores10k = num(util(rawPutsUsed?.cpu, 'dynamo'));

  // Trigger lag: precision mode (the target) and the default mode, side by side.
  const lag = d.triggerLag;
  f.triggerLagMaxMs = num(lag?.precision.maxMs);
  f.triggerLagSamples = num(lag?.precision.samples);
  f.triggerLagExpectedSamples = num(lag?.precision.expectedSamples);
  f.triggerLagLateRuns = num(lag?.precision.lateRuns.length);
  f.startLeadMs = num(lag?.precision.startLeadMs);
  f.leadWaitMeanMs = num(lag?.precision.leadWaitMeanMs);
  f.triggerLagDefaultP50Ms = num(lag?.defaults.p50Ms);
  f.triggerLagDefaultP99Ms = num(lag?.defaults.p99Ms);
  f.triggerLagDefaultMaxMs = num(lag?.defaults.maxMs);
  f.triggerLagDefaultSamples = num(lag?.defaults.samples);
  f.startLeadDefaultMs = num(lag?.defaults.startLeadMs);
  f.leadWaitMeanMsDefault = num(lag?.defaults.leadWaitMeanMs);
  f.sparseInvocationBilledMsDefault = num(lag?.defaults.soloInvocationBilledMeanMs);
  f.sparseInvocationBilledMsPrecision = num(lag?.precision.soloInvocationBilledMeanMs);
  f.sparseInvocationsMeasured = num(lag ? lag.defaults.soloInvocations : undefined);
  f.sqsCallsPerRunSteady = num(lag?.sqsCallsPerRun);
  f.eventSourceSqsCallsPerRunSteady = num(lag?.eventSourceSqsCallsPerRun);
  f.visibilityChangesSteady = num(lag ? (lag.sqsByCommand.ChangeMessageVisibilityCommand ?? 0) + (lag.sqsByCommand.ChangeMessageVisibilityBatchCommand ?? 0) : undefined);

  // Partition keys: the hottest key value of the table and of its index, projected to 2,000 runs/s.
  Object.assign(f, keyFigures(e2e, ''));
  Object.assign(f, keyFigures(overlapResult(d, OverlapPolicy.FORBID_QUEUE)?.run, 'ForbidQueue'));
  Object.assign(f, keyFigures(overlapResult(d, OverlapPolicy.COALESCE)?.run, 'Coalesce'));

  // Takeover.
  f.takeoverMinMs = num(d.takeover?.minMs);
  f.takeoverKills = num(d.takeover?.kills);
  f.takeoverLeaseRemainingMeanMs = num(d.takeover?.leaseRemainingMeanMs);
  f.takeoverAfterLeaseMeanMs = num(d.takeover?.afterLeaseMeanMs);
  f.takeoverAfterLeaseMaxMs = num(d.takeover?.afterLeaseMaxMs);
  f.takeoverViolations = num(d.takeover?.violations);
  f.takeoverP50MsSkew0 = num(d.takeoverSkew0?.p50Ms);
  f.takeoverMaxMsSkew0 = num(d.takeoverSkew0?.maxMs);
  f.takeoverAfterLeaseMeanMsSkew0 = num(d.takeoverSkew0?.afterLeaseMeanMs);

  // Cost breakdown.
  f.costPerMillionRunsDynamoUsd = cost ? round(cost.dynamo, 3) : NA;
  f.costPerMillionRunsSqsUsd = cost ? round(cost.sqs, 3) : NA;
  f.costPerMillionRunsLambdaUsd = cost ? round(cost.lambdaRequests + cost.lambdaDuration, 3) : NA;
  // A sparse run (one run per invocation, the usual case for schedules) at the default job
  // settings. Its writes are a burst run's (the same three writes of the same item: units on the
  // run's own job key, owner as long as a Lambda request id) plus the planner's per-tick writes as
  // the burst amortizes them; its reads, the window sweep's one consistent query (a job with one
  // slot per tick pays one per run); its SQS calls, the steady state of the default-mode jobs'
  // queue (the scheduler's per planned run, the event source's receive and delete per executed run); one
  // invocation, and the billed time measured on the default-mode jobs' one-run invocations.
  if (e2e && lag && lag.defaults.soloInvocations > 0) {
    const ownWrites = sumOf(perJobUnits(e2e.keyLoad.writes)) / e2e.runs;
    const perTickWrites = e2e.keyLoad.totalWriteUnits / e2e.runs - ownWrites;
    const counts = {
      writeUnitsPerRun: ownWrites + perTickWrites,
      readUnitsPerRun: SWEEP_QUERY_READ_UNITS,
      sqsRequestsPerRun: lag.defaults.sqsCallsPerRun + lag.defaults.eventSourceSqsCallsPerRun,
      invocationsPerRun: 1,
      lambdaMsPerRun: lag.defaults.soloInvocationBilledMeanMs,
    };
    f.sparseWriteUnitsPerRun = round(counts.writeUnitsPerRun, 4);
    f.sparseReadUnitsPerRun = counts.readUnitsPerRun;
    const sparse = costPerMillionRuns(counts);
    d.sparseCost = sparse;
    f.costPerMillionSparseRunsUsd = round(sparse.total, 3);
    f.costPerMillionSparseRunsDynamoUsd = round(sparse.dynamo, 3);
    f.costPerMillionSparseRunsSqsUsd = round(sparse.sqs, 3);
    f.costPerMillionSparseRunsLambdaUsd = round(sparse.lambdaRequests + sparse.lambdaDuration, 3);
    f.sparseSqsRequestsPerRun = round(counts.sqsRequestsPerRun, 4);
    // The same run with sub-second precision (startLead 1500ms): its invocation waits out the lead.
    const precise = costPerMillionRuns({
      ...counts,
      sqsRequestsPerRun: lag.precision.sqsCallsPerRun + lag.precision.eventSourceSqsCallsPerRun,
      lambdaMsPerRun: lag.precision.soloInvocationBilledMeanMs,
    });
    f.costPerMillionSparseRunsPrecisionUsd = round(precise.total, 3);
  } else {
    f.costPerMillionSparseRunsUsd = NA;
  }
  f.cpus = cpus().length;
  f.loadAvg1mMax = Math.max(0, ...Object.values(d.load));
  f.region = PRICES.region;
  f.mode = mode;
  f.benchSeconds = round(elapsedSec, 1);
  return f;
}

function sumOf(values: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const v of values.values()) total += v;
  return total;
}

/**
 * The partition-key figures of one burst (suffix '' for parallel, 'ForbidQueue', 'Coalesce').
 * Projection to 2,000 runs/s: a key's units per run of the burst × 2,000, i.e. 2,000 runs/s
 * spread over as many jobs as the burst has (one run each: every job once a second at that rate).
 * Per-tick items (PLANNER, the sweep's queries) are charged as if a tick planned only the burst's
 * runs; at 2,000 runs/s a minute's tick plans 120,000, so the projection overstates them.
 * jobKey*WorstCase: the most any one job can put on its key, whatever the mix: its units per run ×
 * 100 runs/s (one slot a second × 100 shards).
 */
function keyFigures(r: EndToEndResult | undefined, suffix: string): Record<string, Figure> {
  const k = (name: string) => `${name}${suffix}`;
  if (!r) {
    return Object.fromEntries(
      ['hotKeyWriteShare', 'hotKeyWrite', 'hotKeyWcuAt2000RunsPerSec', 'hotKeyReadShare', 'hotKeyRead', 'hotKeyRcuAt2000RunsPerSec', 'jobKeyWcuPerRun', 'jobKeyRcuPerRun', 'jobKeyWcuWorstCase', 'jobKeyRcuWorstCase', 'indexWriteUnitsPerRun', 'keyLoadUnattributed', 'writeUnitsByKeyKind', 'readUnitsByKeyKind', 'jobKeyWritesPerRun', 'jobKeyReadsPerRun', 'writeRequestsByKeyKind', 'readRequestsByKeyKind'].map((n) => [k(n), NA]),
    );
  }
  const load = r.keyLoad;
  const w = hottest(load.writes, load.totalWriteUnits, r.runs);
  const rd = hottest(load.reads, load.totalReadUnits, r.runs);
  // One run per job in the bursts: a job key's units per run are its units.
  const runsPerJob = r.runs / Math.max(1, r.jobs);
  const maxJob = (m: Map<string, number>) => Math.max(0, ...m.values()) / runsPerJob;
  const jobW = maxJob(perJobUnits(load.writes));
  const jobR = maxJob(perJobUnits(load.reads));
  const indexUnits = load.writes.filter((x) => x.index).reduce((s, x) => s + x.units, 0);
  const perRun = (byKind: Readonly<Record<string, number>>) => byKind['JOB#<name>'] ?? 0;
  return {
    [k('hotKeyWriteShare')]: w ? round(w.share, 4) : 0,
    [k('hotKeyWrite')]: w ? w.kind : NA,
    [k('hotKeyWcuAt2000RunsPerSec')]: w ? round(w.unitsPerRun * PROJECTED_RUNS_PER_SEC, 2) : 0,
    [k('hotKeyReadShare')]: rd ? round(rd.share, 4) : 0,
    [k('hotKeyRead')]: rd ? rd.kind : NA,
    [k('hotKeyRcuAt2000RunsPerSec')]: rd ? round(rd.unitsPerRun * PROJECTED_RUNS_PER_SEC, 2) : 0,
    [k('jobKeyWcuPerRun')]: round(jobW, 3),
    [k('jobKeyRcuPerRun')]: round(jobR, 3),
    [k('jobKeyWcuWorstCase')]: round(jobW * MAX_RUNS_PER_SEC_OF_ONE_JOB, 1),
    [k('jobKeyRcuWorstCase')]: round(jobR * MAX_RUNS_PER_SEC_OF_ONE_JOB, 1),
    [k('indexWriteUnitsPerRun')]: round(indexUnits / r.runs, 4),
    [k('keyLoadUnattributed')]: r.unattributedRequests,
    // Requests on the runs' own job keys per run, apart from the planner's per-tick requests.
    [k('jobKeyWritesPerRun')]: round(perRun(load.writeRequestsByKind) / r.runs, 4),
    [k('jobKeyReadsPerRun')]: round(perRun(load.readRequestsByKind) / r.runs, 4),
    [k('writeRequestsByKeyKind')]: JSON.stringify(load.writeRequestsByKind),
    [k('readRequestsByKeyKind')]: JSON.stringify(load.readRequestsByKind),
    [k('writeUnitsByKeyKind')]: JSON.stringify(roundAll(unitsByKind(load.writes), r.runs)),
    [k('readUnitsByKeyKind')]: JSON.stringify(roundAll(unitsByKind(load.reads), r.runs)),
  };
}

/** Units per run, by key kind. */
function roundAll(byKind: Record<string, number>, runs: number): Record<string, number> {
  return Object.fromEntries(Object.entries(byKind).map(([kind, units]) => [kind, round(units / runs, 4)]));
}

function overlapResult(d: BenchResult['details'], policy: OverlapPolicy): BracketedEndToEnd | undefined {
  const result = d.overlap?.[policy];
  return result && typeof result !== 'string' ? result : undefined;
}

function overlapFigure(d: BenchResult['details'], policy: OverlapPolicy, pick: (r: EndToEndResult) => number): Figure {
  const result = overlapResult(d, policy);
  return result ? pick(result.run) : NA;
}

function overlapEfficiency(d: BenchResult['details'], policy: OverlapPolicy): Figure {
  const r = overlapResult(d, policy);
  return r ? round((r.run.runsPerSec * r.run.writesPerRun) / ceiling(r.before.writesPerSec, r.after.writesPerSec), 3) : NA;
}

const WORKER_BUNDLE_LIMIT = 400 * 1024;

function check(figure: string, value: Figure, target: string, ok: (v: number) => boolean): TargetCheck {
  return { figure, value, target, met: typeof value === 'number' ? ok(value) : NA };
}

export function checkTargets(f: Record<string, Figure>): TargetCheck[] {
  const lease = typeof f.leaseMs === 'number' ? f.leaseMs : 0;
  const beat = typeof f.heartbeatMs === 'number' ? f.heartbeatMs : 0;
  const rawPut = typeof f.rawPutsPerSec === 'number' ? f.rawPutsPerSec : NaN;
  const bound = typeof f.plannerRequestsTarget10kJobs100Due === 'number' ? f.plannerRequestsTarget10kJobs100Due : 301;
  return [
    check('writesPerRun', f.writesPerRun!, '≤ 3.0', (v) => v <= 3.0),
    check('sqsCallsPerRun', f.sqsCallsPerRun!, '≤ 0.15', (v) => v <= 0.15),
    check('efficiency', f.efficiency!, '≥ 0.8', (v) => v >= 0.8),
    check('triggerLagP99Ms', f.triggerLagP99Ms!, '≤ 100', (v) => v <= 100),
    check('takeoverP50Ms', f.takeoverP50Ms!, `≤ lease + heartbeat = ${lease + beat}`, (v) => v <= lease + beat),
    check('takeoverMaxMs', f.takeoverMaxMs!, `≤ lease + heartbeat = ${lease + beat}`, (v) => v <= lease + beat),
    check('workerBundleBytes', f.workerBundleBytes!, `≤ 400 KB (${WORKER_BUNDLE_LIMIT} B)`, (v) => v <= WORKER_BUNDLE_LIMIT),
    check('plannerRequestsPerTick10kJobs100Due', f.plannerRequestsPerTick10kJobs100Due!, `≤ 3 × due + partitions = ${bound}`, (v) => v <= bound),
    check('plannerSlotsPerSec10k', f.plannerSlotsPerSec10k!, `≥ 0.8 × raw put rate = ${Number.isNaN(rawPut) ? '?' : round(0.8 * rawPut, 1)}`, (v) => !Number.isNaN(rawPut) && v >= 0.8 * rawPut),
    check('costPerMillionRunsUsd', f.costPerMillionRunsUsd!, '≤ $2.50', (v) => v <= 2.5),
    check('costPerMillionSparseRunsUsd', f.costPerMillionSparseRunsUsd!, '≤ $3.00', (v) => v <= 3.0),
    check('sqsCallsPerRunSteady', f.sqsCallsPerRunSteady!, '≤ 0.15', (v) => v <= 0.15),
    check('consoleJobsPageMs', f.consoleJobsPageMs!, '< 300', (v) => v < 300),
    check('consoleJobPageMs', f.consoleJobPageMs!, '< 300', (v) => v < 300),
    ...(['', 'ForbidQueue', 'Coalesce'] as const).flatMap((p) => [
      check(`hotKeyWcuAt2000RunsPerSec${p}`, f[`hotKeyWcuAt2000RunsPerSec${p}`]!, '≤ 500 (half of 1,000 WCU)', (v) => v <= 500),
      check(`hotKeyRcuAt2000RunsPerSec${p}`, f[`hotKeyRcuAt2000RunsPerSec${p}`]!, '≤ 1,500 (half of 3,000 RCU)', (v) => v <= 1500),
      check(`jobKeyWcuWorstCase${p}`, f[`jobKeyWcuWorstCase${p}`]!, '≤ 500 (half of 1,000 WCU)', (v) => v <= 500),
    ]),
    ...(['ForbidQueue', 'Coalesce'] as const).flatMap((p) => [
      check(`writeUnitsPerRun${p}`, f[`writeUnitsPerRun${p}`]!, '≤ 8', (v) => v <= 8),
      // Per run on the job's own key; the planner's per-tick reads (the watch and DEAD buckets, the
      // layout) come on top and do not grow with runs.
      check(`jobKeyReadsPerRun${p}`, f[`jobKeyReadsPerRun${p}`]!, '≤ 2 (+ per-tick reads)', (v) => v <= 2),
    ]),
  ];
}

function fmt(value: Figure | undefined): string {
  if (value === undefined) return NA;
  if (typeof value === 'string') return value;
  return Number.isInteger(value) ? value.toLocaleString('en-US') : value.toLocaleString('en-US', { maximumFractionDigits: 4 });
}

const large = (d: BenchResult['details']) => d.plannerLarge?.tick;

/** The latest runs, worst first: lag, the planner's notice (slot − the tick that created the run), when it was claimed. */
function lateList(result: LagSet, max = 6): string {
  const worst = [...result.lateRuns].sort((a, b) => b.lagMs - a.lagMs);
  const shown = worst.slice(0, max).map((r) => `${r.lagMs} ms (notice ${r.noticeMs}, claimed at slot${r.claimedMs >= 0 ? '+' : ''}${r.claimedMs})`);
  return `worst: ${shown.join('; ')}${worst.length > max ? '; …' : ''}`;
}

function renderTable(mode: BenchMode, sizes: BenchSizes, f: Record<string, Figure>, targets: readonly TargetCheck[], d: BenchResult['details']): string {
  const byFigure = new Map(targets.map((t) => [t.figure, t]));
  const rows: [string, string, string, string][] = [];
  const section = (title: string) => rows.push([`— ${title}`, '', '', '']);
  const row = (label: string, key: string, note = '') => {
    const t = byFigure.get(key);
    const verdict = t ? (t.met === NA ? 'n/a' : t.met ? 'met' : 'MISSED') : '';
    rows.push([label, fmt(f[key]), t ? `${t.target} ${verdict}` : '', note]);
  };
  const e2e = d.endToEnd?.run;
  section(`raw limit (DynamoDB Local, ledger table definition, document client, ${sizes.concurrency} in flight; on each phase's own table just before and after it; the better of the two)`);
  row(`raw writes/s, ${fmt(sizes.e2eRuns)} puts + ${fmt(2 * sizes.e2eRuns)} updates`, 'rawWritesPerSec', `before ${fmt(f.rawWritesPerSecBefore)}, after ${fmt(f.rawWritesPerSecAfter)}`);
  row('  of which conditional updates/s', 'rawUpdatesPerSec');
  row(`raw conditional puts/s, ${fmt(sizes.plannerLargeJobs)} puts`, 'rawPutsPerSec', `before ${fmt(f.rawPutsPerSecBefore10k)}, after ${fmt(f.rawPutsPerSecAfter10k)}`);
  row(`raw conditional puts/s, ${fmt(sizes.plannerSmallJobs)} puts`, 'rawPutsPerSec1k');
  section('planner throughput (jobs every minute, one slot each, lookahead 60 s, one tick)');
  row(`slots/s, ${fmt(sizes.plannerSmallJobs)} jobs, whole tick`, 'plannerSlotsPerSec1k');
  row(`slots/s, ${fmt(sizes.plannerSmallJobs)} jobs, put phase`, 'plannerPutSlotsPerSec1k');
  row('  whole tick ÷ raw put rate', 'plannerTickVsRawPut1k');
  row(`slots/s, ${fmt(sizes.plannerLargeJobs)} jobs, whole tick`, 'plannerSlotsPerSec10k', large(d) ? JSON.stringify(large(d)!.byCommand) : '');
  row(`slots/s, ${fmt(sizes.plannerLargeJobs)} jobs, put phase`, 'plannerPutSlotsPerSec10k');
  row('  whole tick ÷ raw put rate', 'plannerTickVsRawPut10k');
  row('  put phase ÷ raw put rate', 'plannerPutVsRawPut10k');
  row('  tick ms: read + plan', 'plannerReadAndPlanMs10k');
  row('  tick ms: puts', 'plannerPutMs10k');
  row('  SQS send calls, ms summed (beside the puts)', 'plannerSendMs10k');
  row('  tick ms: sends after the last put', 'plannerSendTailMs10k');
  row('  tick ms: watermark + sweep', 'plannerAfterSendMs10k');
  row('  CPU cores busy during the tick: DynamoDB Local', 'plannerDynamoCpuCores10k', `raw puts: ${fmt(f.rawPutsDynamoCpuCores10k)}`);
  row('  CPU cores busy during the tick: bench Node process', 'plannerNodeCpuCores10k', `raw puts: ${fmt(f.rawPutsNodeCpuCores10k)}`);
  section(`planner cost (${fmt(sizes.costJobs)} jobs, ${fmt(sizes.costDue)} due in the tick, the rest hourly at other minutes, 1 partition)`);
  row('ledger requests per tick', 'plannerRequestsPerTick10kJobs100Due', d.plannerCost ? JSON.stringify(d.plannerCost.byCommand) : '');
  row('SQS calls per tick', 'plannerSqsCallsPerTick10kJobs100Due');
  row('tick ms', 'plannerTickMs10kJobs100Due');
  row('  of which partition read + slot planning over every job', 'plannerReadAndPlanMs10kJobs100Due');
  section(`end to end (${fmt(sizes.e2eRuns)} no-op runs due at once, overlap parallel, ${sizes.e2eWorkers} pollers × batch 10)`);
  row('runs/s (tick start → last outcome)', 'runsPerSec');
  row('  planner tick ms / first claim → last outcome ms', 'e2ePlannerTickMs', `${fmt(f.e2eWorkerPhaseMs)} ms worker phase`);
  row('  planner tick: puts ms / SQS send calls ms (beside the puts)', 'e2eTickPutMs', `${fmt(f.e2eTickSendMs)} ms sends`);
  row('runs/s (first claim → last outcome)', 'workerRunsPerSec');
  row('  CPU cores busy: DynamoDB Local', 'e2eDynamoCpuCores', `raw mix: ${fmt(f.rawMixDynamoCpuCores)}`);
  row('  CPU cores busy: bench Node process (workers, SDK, local SQS)', 'e2eNodeCpuCores', `raw mix: ${fmt(f.rawMixNodeCpuCores)}`);
  row('  DynamoDB Local CPU ms per run', 'e2eDynamoCpuMsPerRun', `raw, per 3 writes: ${fmt(f.rawMixDynamoCpuMsPer3Writes)}`);
  row('  Node CPU ms per run', 'e2eNodeCpuMsPerRun', `raw, per 3 writes: ${fmt(f.rawMixNodeCpuMsPer3Writes)}`);
  row('  wall ms per run (tick start → last outcome ÷ runs)', 'e2eWallMsPerRun', `mean batch (invocation) ms ${fmt(f.e2eMeanBatchMs)}`);
  row('  CPU idle share (neither process busy)', 'e2eIdleCpuShare', `mean request round trip ms: ${fmt(f.e2eRequestLatencyMs)}`);
  row('  main-thread ms per run by category (--cpu-profile only)', 'e2eProfiled', fmt(f.e2eProfileMsPerRun));
  row('efficiency = runs/s × writes/run ÷ raw writes/s', 'efficiency');
  row('ledger write requests per run', 'writesPerRun', e2e ? JSON.stringify(e2e.dynamo.byCommand) : '');
  row('billed write units per run (table + index)', 'writeUnitsPerRun', `DynamoDB Local reported ${fmt(f.writeUnitsPerRunReportedByLocal)}; billed adds refused writes`);
  row('ledger read requests per run', 'readsPerRun');
  row('billed read units per run', 'readUnitsPerRun', `DynamoDB Local reported ${fmt(f.readUnitsPerRunReportedByLocal)}; billed adds the minimum read of empty results`);
  row("scheduler's own SQS calls per run", 'sqsCallsPerRun', e2e ? JSON.stringify(e2e.sqsByCommand) : '');
  row('event source SQS calls per run (receive + delete)', 'eventSourceSqsCallsPerRun');
  row('worker invocations (batches) per run', 'invocationsPerRun');
  row('worker ms per run (batch time ÷ runs)', 'lambdaMsPerRun');
  row('invariant violations', 'e2eViolations');
  section(`overlap policies (same burst, ${fmt(sizes.overlapRuns)} runs, one slot per job)`);
  const overlapNote = (policy: OverlapPolicy) => {
    const r = d.overlap?.[policy];
    return r === undefined ? '' : typeof r === 'string' ? r : `${JSON.stringify(r.run.dynamo.byCommand)}; SQS ${JSON.stringify(r.run.sqsByCommand)}`;
  };
  row('write requests per run, forbid-queue', 'writesPerRunForbidQueue', overlapNote(OverlapPolicy.FORBID_QUEUE));
  row('billed write units per run, forbid-queue', 'writeUnitsPerRunForbidQueue');
  row('read requests per run, forbid-queue', 'readsPerRunForbidQueue');
  row("scheduler's SQS calls per run, forbid-queue", 'sqsCallsPerRunForbidQueue');
  row('runs/s, forbid-queue', 'runsPerSecForbidQueue');
  row('efficiency, forbid-queue', 'efficiencyForbidQueue');
  row('write requests per run, coalesce', 'writesPerRunCoalesce', overlapNote(OverlapPolicy.COALESCE));
  row('billed write units per run, coalesce', 'writeUnitsPerRunCoalesce');
  row('read requests per run, coalesce', 'readsPerRunCoalesce');
  row("scheduler's SQS calls per run, coalesce", 'sqsCallsPerRunCoalesce');
  row('runs/s, coalesce', 'runsPerSecCoalesce');
  row('efficiency, coalesce', 'efficiencyCoalesce');
  section(`partition keys (every request of the bursts; units on each key value of the table and of its index; projected: units per run × ${fmt(PROJECTED_RUNS_PER_SEC)}, the burst's job mix; worst case: one job at ${MAX_RUNS_PER_SEC_OF_ONE_JOB} runs/s)`);
  for (const [p, label] of [['', 'parallel'], ['ForbidQueue', 'forbid-queue'], ['Coalesce', 'coalesce']] as const) {
    row(`hot write key share, ${label}`, `hotKeyWriteShare${p}`, fmt(f[`hotKeyWrite${p}`]));
    row(`  its WCU/s at ${fmt(PROJECTED_RUNS_PER_SEC)} runs/s`, `hotKeyWcuAt2000RunsPerSec${p}`);
    row(`hot read key share, ${label}`, `hotKeyReadShare${p}`, fmt(f[`hotKeyRead${p}`]));
    row(`  its RCU/s at ${fmt(PROJECTED_RUNS_PER_SEC)} runs/s`, `hotKeyRcuAt2000RunsPerSec${p}`);
    row(`  one job's key, WCU/s at ${MAX_RUNS_PER_SEC_OF_ONE_JOB} runs/s`, `jobKeyWcuWorstCase${p}`, `${fmt(f[`jobKeyWcuPerRun${p}`])} WCU per run`);
    row(`  one job's key, RCU/s at ${MAX_RUNS_PER_SEC_OF_ONE_JOB} runs/s`, `jobKeyRcuWorstCase${p}`, `${fmt(f[`jobKeyRcuPerRun${p}`])} RCU per run`);
    row(`  index write units per run`, `indexWriteUnitsPerRun${p}`, `write units per run by key: ${fmt(f[`writeUnitsByKeyKind${p}`])}`);
    row(`  write requests per run on the job's own key`, `jobKeyWritesPerRun${p}`, `write requests by key: ${fmt(f[`writeRequestsByKeyKind${p}`])}`);
    row(`  read requests per run on the job's own key`, `jobKeyReadsPerRun${p}`, `read units per run by key: ${fmt(f[`readUnitsByKeyKind${p}`])}; requests: ${fmt(f[`readRequestsByKeyKind${p}`])}`);
    row(`  requests with no key told`, `keyLoadUnattributed${p}`);
  }
  section(`trigger lag (${sizes.lagJobs} jobs with startLead ${PRECISION_START_LEAD} + ${sizes.lagJobs} with the default, every 10 s, staggered 1 s, ${sizes.lagDurationMs / 1000} s on real time, planner every ${sizes.lagTickSeconds} s, ${sizes.lagWorkers} pollers)`);
  row(`p50 ms, startLead ${PRECISION_START_LEAD} (precision)`, 'triggerLagP50Ms');
  row('p99 ms, precision', 'triggerLagP99Ms');
  row('max ms, precision', 'triggerLagMaxMs');
  row('samples, precision', 'triggerLagSamples', `expected ${fmt(f.triggerLagExpectedSamples)}`);
  row('runs more than 50 ms late, precision', 'triggerLagLateRuns', d.triggerLag ? lateList(d.triggerLag.precision) : '');
  row('startLead wait per run (claim → handler start), ms, precision', 'leadWaitMeanMs', `startLead ${fmt(f.startLeadMs)} ms`);
  row('p50 ms, default startLead', 'triggerLagDefaultP50Ms', `startLead ${fmt(f.startLeadDefaultMs)} ms: starts in the second after the slot`);
  row('p99 ms, default', 'triggerLagDefaultP99Ms');
  row('max ms, default', 'triggerLagDefaultMaxMs', `${fmt(f.triggerLagDefaultSamples)} samples`);
  row('one-run invocation, billed ms, default', 'sparseInvocationBilledMsDefault', `${fmt(f.sparseInvocationsMeasured)} invocations`);
  row('one-run invocation, billed ms, precision', 'sparseInvocationBilledMsPrecision');
  row("scheduler's SQS calls per planned run, steady state", 'sqsCallsPerRunSteady', d.triggerLag ? `${d.triggerLag.runsCreated} runs planned; ${JSON.stringify(d.triggerLag.sqsByCommand)}` : '');
  row('event source SQS calls per run, steady state', 'eventSourceSqsCallsPerRunSteady');
  section(`takeover after SIGKILL (worker processes, ${sizes.kills} kills spread over the heartbeat cycle)`);
  row('lease ms', 'leaseMs');
  row('heartbeat ms', 'heartbeatMs');
  row('takeover p50 ms', 'takeoverP50Ms');
  row('takeover max ms', 'takeoverMaxMs', d.takeover ? `all: ${d.takeover.samples.map((x) => x.takeoverMs).join(', ')}` : '');
  row('  lease left at the kill, mean ms', 'takeoverLeaseRemainingMeanMs');
  row('  lease end → successor claim, mean ms', 'takeoverAfterLeaseMeanMs', 'clock-skew allowance + SQS redelivery');
  row('  lease end → successor claim, max ms', 'takeoverAfterLeaseMaxMs');
  row('takeover p50 ms with --clock-skew 0', 'takeoverP50MsSkew0');
  row('takeover max ms with --clock-skew 0', 'takeoverMaxMsSkew0');
  row('  lease end → successor claim, mean ms, skew 0', 'takeoverAfterLeaseMeanMsSkew0', 'SQS redelivery alone');
  row('invariant violations', 'takeoverViolations');
  section(`console pages (server time over HTTP on 127.0.0.1, median of ${sizes.consoleSamples} fetches after one; ${fmt(sizes.consoleJobs)} jobs × ${sizes.consoleRunsPerJob} runs, one job with ${fmt(sizes.consoleBigJobRuns)} runs)`);
  row(`Jobs page ms, ${fmt(sizes.consoleJobs)} jobs`, 'consoleJobsPageMs', `max ${fmt(f.consoleJobsPageMaxMs)}`);
  row(`Job page ms, ${fmt(sizes.consoleBigJobRuns)} runs`, 'consoleJobPageMs', `max ${fmt(f.consoleJobPageMaxMs)}${d.consolePages ? `; seeded ${fmt(d.consolePages.runsSeeded)} runs at ${fmt(d.consolePages.seedItemsPerSec)} items/s` : ''}`);
  section('bundles (esbuild, node22, esm, minified, mainFields module/main, everything incl. AWS SDK bundled)');
  row('worker bytes', 'workerBundleBytes', d.workerBundle ? d.workerBundle.top.map((t) => `${t.name} ${Math.round(t.bytes / 1024)}K`).join(', ') : '');
  row('planner bytes', 'plannerBundleBytes', d.plannerBundle ? d.plannerBundle.top.map((t) => `${t.name} ${Math.round(t.bytes / 1024)}K`).join(', ') : '');
  section('cost per million short runs (USD, marginal, from the burst\'s measured counts)');
  row('total', 'costPerMillionRunsUsd');
  row('  DynamoDB', 'costPerMillionRunsDynamoUsd');
  row('  SQS (scheduler + event source)', 'costPerMillionRunsSqsUsd');
  row('  Lambda (requests + duration)', 'costPerMillionRunsLambdaUsd');
  section('cost per million sparse runs (one run per invocation, default job settings; from the trigger-lag phase\'s default-mode jobs)');
  row('total', 'costPerMillionSparseRunsUsd', d.sparseCost ? `${fmt(f.sparseWriteUnitsPerRun)} WCU, ${fmt(f.sparseReadUnitsPerRun)} RCU, ${fmt(f.sparseSqsRequestsPerRun)} SQS requests, 1 invocation of ${fmt(f.sparseInvocationBilledMsDefault)} ms billed per run` : '');
  row('  DynamoDB', 'costPerMillionSparseRunsDynamoUsd');
  row('  SQS (scheduler + event source)', 'costPerMillionSparseRunsSqsUsd');
  row('  Lambda (requests + duration)', 'costPerMillionSparseRunsLambdaUsd');
  row(`the same with startLead ${PRECISION_START_LEAD} (sub-second precision)`, 'costPerMillionSparseRunsPrecisionUsd');

  const body = rows.filter((r) => !r[0].startsWith('—'));
  const widths = [0, 1, 2].map((i) => Math.max(...body.map((r) => (r[i] ?? '').length)));
  const lines = rows.map((r) => (r[0].startsWith('—') ? r[0] : [r[0].padEnd(widths[0]!), r[1].padStart(widths[1]!), r[2].padEnd(widths[2]!), r[3]].join('  ').trimEnd()));
  lines.unshift(`scheduler benchmark (${mode} mode, ${fmt(f.benchSeconds)} s, ${fmt(f.cpus)} CPUs, 1-min load average at phase starts ${JSON.stringify(d.load)})`);
  lines.push('', describePrices(), "fixed costs not in the per-run figure: one planner invocation per partition per minute; the event source mapping's empty polls.");
  return lines.join('\n');
}
