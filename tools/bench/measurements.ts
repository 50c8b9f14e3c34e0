/**
 * What the figure table (figures.ts) extracts from: a run's details plus the values several
 * figures share (the raw ceilings, the cost breakdowns, the key-load summaries), derived once.
 */
import { OverlapPolicy } from '../../shared/schedule/job-schema.js';
import { costPerMillionRuns, type CostBreakdown, type PerRunCounts } from './cost.js';
import type { EndToEndResult } from './end-to-end.js';
import { hottest, perJobUnits, type HotKey, type KeyLoadSnapshot } from './key-load.js';
import { round, type CpuUse } from './measure.js';
import type { RawMixResult, RawPutsResult } from './raw.js';
import type { TriggerLagResult } from './trigger-lag.js';
import type { BenchMode, BenchSizes, BracketedEndToEnd, BracketedPlanner, Details } from './types.js';

/** A consistent query of one job's window returning one run item (< 4 KB): one read unit. */
const SWEEP_QUERY_READ_UNITS = 1;

/** The figure-key suffix of each burst: '' for overlap parallel (the end-to-end phase). */
export type BurstSuffix = '' | 'ForbidQueue' | 'Coalesce';
export type OverlapSuffix = Exclude<BurstSuffix, ''>;
export const OVERLAP_POLICIES: readonly (readonly [OverlapSuffix, OverlapPolicy])[] = [
  ['ForbidQueue', OverlapPolicy.FORBID_QUEUE],
  ['Coalesce', OverlapPolicy.COALESCE],
];

/** The hottest keys of one burst and the most any one job's key took per run. */
export interface KeyLoadSummary {
  readonly run: EndToEndResult;
  readonly load: KeyLoadSnapshot;
  readonly write: HotKey | undefined;
  readonly read: HotKey | undefined;
  readonly jobWcuPerRun: number;
  readonly jobRcuPerRun: number;
  readonly indexWriteUnits: number;
}

/** A sparse run's counts (one run per invocation) and its cost at the default and at precision startLead. */
export interface SparseRun {
  readonly counts: PerRunCounts;
  readonly cost: CostBreakdown;
  readonly precise: CostBreakdown;
}

export interface Measurements {
  readonly mode: BenchMode;
  readonly sizes: BenchSizes;
  readonly d: Details;
  readonly elapsedSec: number;
  readonly burst: BracketedEndToEnd | undefined;
  readonly e2e: EndToEndResult | undefined;
  /** The raw ceiling of the burst's write mix. */
  readonly rawWrites: number | undefined;
  readonly small: BracketedPlanner | undefined;
  readonly large: BracketedPlanner | undefined;
  readonly rawPuts1k: number | undefined;
  readonly rawPuts10k: number | undefined;
  /** The bracketing measurement the ceiling came from (its CPU use is the one reported). */
  readonly rawMixUsed: RawMixResult | undefined;
  readonly rawPutsUsed: RawPutsResult | undefined;
  readonly lag: TriggerLagResult | undefined;
  readonly overlap: Readonly<Record<OverlapSuffix, BracketedEndToEnd | undefined>>;
  readonly keys: Readonly<Record<BurstSuffix, KeyLoadSummary | undefined>>;
  readonly cost: CostBreakdown | undefined;
  readonly sparse: SparseRun | undefined;
}

/** The raw ceiling of a bracketed phase: the better of the measurements just before and just after it. */
export function ceiling(before: number, after: number): number {
  return Math.max(before, after);
}

/** Cores busy over a measurement's wall time. */
export function coresBusy(cpu: CpuUse | undefined, which: 'node' | 'dynamo'): number | undefined {
  const ms = which === 'node' ? cpu?.nodeCpuMs : cpu?.dynamoCpuMs;
  return cpu && ms !== undefined ? round(ms / cpu.wallMs, 3) : undefined;
}

/** Units per run, by key kind. */
export function roundAll(byKind: Record<string, number>, runs: number): Record<string, number> {
  return Object.fromEntries(Object.entries(byKind).map(([kind, units]) => [kind, round(units / runs, 4)]));
}

function overlapResult(d: Details, policy: OverlapPolicy): BracketedEndToEnd | undefined {
  const result = d.overlap?.[policy];
  return result && typeof result !== 'string' ? result : undefined;
}

function sumOf(values: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const v of values.values()) total += v;
  return total;
}

function keyLoadSummary(run: EndToEndResult | undefined): KeyLoadSummary | undefined {
  if (!run) return undefined;
  const load = run.keyLoad;
  // One run per job in the bursts: a job key's units per run are its units.
  const runsPerJob = run.runs / Math.max(1, run.jobs);
  const maxJob = (m: Map<string, number>) => Math.max(0, ...m.values()) / runsPerJob;
  return {
    run,
    load,
    write: hottest(load.writes, load.totalWriteUnits, run.runs),
    read: hottest(load.reads, load.totalReadUnits, run.runs),
    jobWcuPerRun: maxJob(perJobUnits(load.writes)),
    jobRcuPerRun: maxJob(perJobUnits(load.reads)),
    indexWriteUnits: load.writes.filter((x) => x.index).reduce((s, x) => s + x.units, 0),
  };
}

/**
 * A sparse run (one run per invocation, the usual case for schedules) at the default job
 * settings. Its writes are a burst run's (the same three writes of the same item: units on the
 * run's own job key, owner as long as a Lambda request id) plus the planner's per-tick writes as
 * the burst amortizes them; its reads, the window sweep's one consistent query (a job with one
 * slot per tick pays one per run); its SQS calls, the steady state of the default-mode jobs'
 * queue (the scheduler's per planned run, the event source's receive and delete per executed run); one
 * invocation, and the billed time measured on the default-mode jobs' one-run invocations.
 */
function sparseRun(e2e: EndToEndResult | undefined, lag: TriggerLagResult | undefined): SparseRun | undefined {
  if (!e2e || !lag || lag.defaults.soloInvocations <= 0) return undefined;
  const ownWrites = sumOf(perJobUnits(e2e.keyLoad.writes)) / e2e.runs;
  const perTickWrites = e2e.keyLoad.totalWriteUnits / e2e.runs - ownWrites;
  const counts: PerRunCounts = {
    writeUnitsPerRun: ownWrites + perTickWrites,
    readUnitsPerRun: SWEEP_QUERY_READ_UNITS,
    sqsRequestsPerRun: lag.defaults.sqsCallsPerRun + lag.defaults.eventSourceSqsCallsPerRun,
    invocationsPerRun: 1,
    lambdaMsPerRun: lag.defaults.soloInvocationBilledMeanMs,
  };
  // The same run with sub-second precision (startLead 1500ms): its invocation waits out the lead.
  const precise = costPerMillionRuns({
    ...counts,
    sqsRequestsPerRun: lag.precision.sqsCallsPerRun + lag.precision.eventSourceSqsCallsPerRun,
    lambdaMsPerRun: lag.precision.soloInvocationBilledMeanMs,
  });
  return { counts, cost: costPerMillionRuns(counts), precise };
}

/** Derives the shared values; records the cost breakdowns in the details, where the report reads them. */
export function measurements(mode: BenchMode, sizes: BenchSizes, d: Details, elapsedSec: number): Measurements {
  const burst = d.endToEnd;
  const e2e = burst?.run;
  const small = d.plannerSmall;
  const large = d.plannerLarge;
  const overlap = { ForbidQueue: overlapResult(d, OverlapPolicy.FORBID_QUEUE), Coalesce: overlapResult(d, OverlapPolicy.COALESCE) };
  // Billed units: DynamoDB Local's, plus what it leaves out and DynamoDB bills (key-load.ts).
  const cost = e2e
    ? costPerMillionRuns({
        writeUnitsPerRun: e2e.writeUnitsPerRun,
        readUnitsPerRun: e2e.readUnitsPerRun,
        sqsRequestsPerRun: e2e.sqsCallsPerRun + e2e.eventSourceSqsCallsPerRun,
        invocationsPerRun: e2e.invocationsPerRun,
        lambdaMsPerRun: e2e.lambdaMsPerRun,
      })
    : undefined;
  const sparse = sparseRun(e2e, d.triggerLag);
  if (cost) d.cost = cost;
  if (sparse) d.sparseCost = sparse.cost;
  return {
    mode,
    sizes,
    d,
    elapsedSec,
    burst,
    e2e,
    rawWrites: burst ? ceiling(burst.before.writesPerSec, burst.after.writesPerSec) : undefined,
    small,
    large,
    rawPuts1k: small ? ceiling(small.before.putsPerSec, small.after.putsPerSec) : undefined,
    rawPuts10k: large ? ceiling(large.before.putsPerSec, large.after.putsPerSec) : undefined,
    rawMixUsed: burst ? (burst.after.writesPerSec >= burst.before.writesPerSec ? burst.after : burst.before) : undefined,
    rawPutsUsed: large ? (large.after.putsPerSec >= large.before.putsPerSec ? large.after : large.before) : undefined,
    lag: d.triggerLag,
    overlap,
    keys: {
      '': keyLoadSummary(e2e),
      ForbidQueue: keyLoadSummary(overlap.ForbidQueue?.run),
      Coalesce: keyLoadSummary(overlap.Coalesce?.run),
    },
    cost,
    sparse,
  };
}
