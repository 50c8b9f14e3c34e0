/**
 * The benchmark's shared shapes: modes, sizes per mode, the measurements a run keeps (details),
 * and its result. Apart from run.ts so the figure table (figures.ts) and the table rendering
 * (table.ts) read them without importing the orchestration.
 */
import type { OverlapPolicy } from '../../shared/schedule/job-schema.js';
import type { BundleResult } from './bundle.js';
import type { ConsolePagesResult } from './console-pages.js';
import type { CostBreakdown } from './cost.js';
import type { EndToEndResult } from './end-to-end.js';
import type { PlannerCost, PlannerThroughput } from './planner.js';
import type { RawMixResult, RawPutsResult } from './raw.js';
import type { TakeoverResult } from './takeover.js';
import type { TriggerLagResult } from './trigger-lag.js';

export type BenchMode = 'full' | 'smoke';
/** The raw limit is measured inside `planner` and `end-to-end`, on their own tables, before and after. */
export type Phase = 'bundle' | 'planner' | 'planner-cost' | 'end-to-end' | 'overlap' | 'trigger-lag' | 'takeover' | 'console';
export const ALL_PHASES: readonly Phase[] = [
  'bundle',
  'planner',
  'planner-cost',
  'end-to-end',
  'overlap',
  'trigger-lag',
  'takeover',
  'console',
];

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
    consoleSamples: 20,
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

export type Details = BenchResult['details'];
export type Figures = Record<string, Figure>;
