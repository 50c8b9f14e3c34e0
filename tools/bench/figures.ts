/**
 * The benchmark's figures as one table: each entry's key, how it is extracted from the
 * measurements, and (when the printed table shows it) its label, note and target. The `--json`
 * figures object is collected in this table's order; the printed table lays the rows out in its
 * own order (table.ts) and reads labels, notes and targets from here.
 */
import { cpus } from 'node:os';
import type { OverlapPolicy } from '../../shared/schedule/job-schema.js';
import { PRICES } from './cost.js';
import { round } from './measure.js';
import { unitsByKind } from './key-load.js';
import {
  coresBusy,
  ceiling,
  roundAll,
  OVERLAP_POLICIES,
  type BurstSuffix,
  type KeyLoadSummary,
  type Measurements,
} from './measurements.js';
import type { EndToEndResult } from './end-to-end.js';
import { PRECISION_START_LEAD, type LagSet } from './trigger-lag.js';
import {
  MAX_RUNS_PER_SEC_OF_ONE_JOB,
  PROJECTED_RUNS_PER_SEC,
  type BenchSizes,
  type Details,
  type Figure,
  type Figures,
  type TargetCheck,
} from './types.js';

export const NA = 'n/a';

export interface Target {
  /** The target as printed, e.g. '≤ 3.0' (some read other figures, e.g. the lease). */
  readonly text: (f: Figures) => string;
  readonly met: (value: number, f: Figures) => boolean;
}

export interface FigureSpec {
  readonly key: string;
  /** The figure's value; undefined leaves the key out of the figures (the printed row shows n/a). */
  readonly extract: (m: Measurements) => Figure | undefined;
  /** The printed row's label; a figure without one is in the JSON only. */
  readonly label?: string | ((s: BenchSizes) => string);
  /** Printed after the target: context for the value (other figures, breakdowns). */
  readonly note?: (f: Figures, d: Details) => string;
  readonly target?: Target;
  /** Every bench run must produce it as a number (the smoke test checks). */
  readonly required?: boolean;
}

export function num(value: number | undefined): Figure {
  return value === undefined || Number.isNaN(value) ? NA : value;
}

/** Every value in the printed table: integers with thousands separators, up to 4 decimals otherwise. */
export function fmt(value: Figure | undefined): string {
  if (value === undefined) return NA;
  if (typeof value === 'string') return value;
  return Number.isInteger(value) ? value.toLocaleString('en-US') : value.toLocaleString('en-US', { maximumFractionDigits: 4 });
}

const WORKER_BUNDLE_LIMIT = 400 * 1024;
const numberOr = (value: Figure | undefined, otherwise: number): number => (typeof value === 'number' ? value : otherwise);
const leasePlusBeat = (f: Figures) => numberOr(f.leaseMs, 0) + numberOr(f.heartbeatMs, 0);
const atMost = (limit: number, text = `≤ ${limit}`): Target => ({ text: () => text, met: (v) => v <= limit });
const consolePageTarget: Target = { text: () => '< 300', met: (v) => v < 300 };
const takeoverTarget: Target = { text: (f) => `≤ lease + heartbeat = ${leasePlusBeat(f)}`, met: (v, f) => v <= leasePlusBeat(f) };
const efficiency = (r: EndToEndResult, rawWrites: number) => round((r.runsPerSec * r.writesPerRun) / rawWrites, 3);
const bundleTop = (b: Details['workerBundle']) => (b ? b.top.map((t) => `${t.name} ${Math.round(t.bytes / 1024)}K`).join(', ') : '');

/** The latest runs, worst first: lag, the planner's notice (slot − the tick that created the run), when it was claimed. */
function lateList(result: LagSet, max = 6): string {
  const worst = [...result.lateRuns].sort((a, b) => b.lagMs - a.lagMs);
  const shown = worst
    .slice(0, max)
    .map((r) => `${r.lagMs} ms (notice ${r.noticeMs}, claimed at slot${r.claimedMs >= 0 ? '+' : ''}${r.claimedMs})`);
  return `worst: ${shown.join('; ')}${worst.length > max ? '; …' : ''}`;
}

const HEADLINE: readonly FigureSpec[] = [
  {
    key: 'rawWritesPerSec',
    extract: (m) => num(m.rawWrites),
    required: true,
    label: (s) => `raw writes/s, ${fmt(s.e2eRuns)} puts + ${fmt(2 * s.e2eRuns)} updates`,
    note: (f) => `before ${fmt(f.rawWritesPerSecBefore)}, after ${fmt(f.rawWritesPerSecAfter)}`,
  },
  { key: 'runsPerSec', extract: (m) => num(m.e2e?.runsPerSec), required: true, label: 'runs/s (tick start → last outcome)' },
  {
    key: 'efficiency',
    extract: (m) => (m.e2e && m.rawWrites ? efficiency(m.e2e, m.rawWrites) : NA),
    required: true,
    label: 'efficiency = runs/s × writes/run ÷ raw writes/s',
    target: { text: () => '≥ 0.8', met: (v) => v >= 0.8 },
  },
  {
    key: 'writesPerRun',
    extract: (m) => num(m.e2e?.writesPerRun),
    required: true,
    label: 'ledger write requests per run',
    target: atMost(3.0, '≤ 3.0'),
    note: (_f, d) => (d.endToEnd ? JSON.stringify(d.endToEnd.run.dynamo.byCommand) : ''),
  },
  {
    key: 'sqsCallsPerRun',
    extract: (m) => num(m.e2e?.sqsCallsPerRun),
    required: true,
    label: "scheduler's own SQS calls per run",
    target: atMost(0.15),
    note: (_f, d) => (d.endToEnd ? JSON.stringify(d.endToEnd.run.sqsByCommand) : ''),
  },
  // The ≤ 100 ms target is precision mode's (startLead 1500ms); the default mode starts in the second after the slot.
  {
    key: 'triggerLagP50Ms',
    extract: (m) => num(m.lag?.precision.p50Ms),
    required: true,
    label: `p50 ms, startLead ${PRECISION_START_LEAD} (precision)`,
  },
  { key: 'triggerLagP99Ms', extract: (m) => num(m.lag?.precision.p99Ms), required: true, label: 'p99 ms, precision', target: atMost(100) },
  { key: 'takeoverP50Ms', extract: (m) => num(m.d.takeover?.p50Ms), required: true, label: 'takeover p50 ms', target: takeoverTarget },
  {
    key: 'takeoverMaxMs',
    extract: (m) => num(m.d.takeover?.maxMs),
    required: true,
    label: 'takeover max ms',
    target: takeoverTarget,
    note: (_f, d) => (d.takeover ? `all: ${d.takeover.samples.map((x) => x.takeoverMs).join(', ')}` : ''),
  },
  { key: 'leaseMs', extract: (m) => m.sizes.leaseMs, required: true, label: 'lease ms' },
  { key: 'heartbeatMs', extract: (m) => m.sizes.heartbeatMs, required: true, label: 'heartbeat ms' },
  {
    key: 'workerBundleBytes',
    extract: (m) => num(m.d.workerBundle?.bytes),
    required: true,
    label: 'worker bytes',
    target: atMost(WORKER_BUNDLE_LIMIT, `≤ 400 KB (${WORKER_BUNDLE_LIMIT} B)`),
    note: (_f, d) => bundleTop(d.workerBundle),
  },
  {
    key: 'plannerBundleBytes',
    extract: (m) => num(m.d.plannerBundle?.bytes),
    required: true,
    label: 'planner bytes',
    note: (_f, d) => bundleTop(d.plannerBundle),
  },
  {
    key: 'plannerSlotsPerSec1k',
    extract: (m) => num(m.small?.tick.slotsPerSec),
    required: true,
    label: (s) => `slots/s, ${fmt(s.plannerSmallJobs)} jobs, whole tick`,
  },
  {
    key: 'plannerSlotsPerSec10k',
    extract: (m) => num(m.large?.tick.slotsPerSec),
    required: true,
    label: (s) => `slots/s, ${fmt(s.plannerLargeJobs)} jobs, whole tick`,
    note: (_f, d) => (d.plannerLarge ? JSON.stringify(d.plannerLarge.tick.byCommand) : ''),
    target: {
      text: (f) => `≥ 0.8 × raw put rate = ${typeof f.rawPutsPerSec === 'number' ? round(0.8 * f.rawPutsPerSec, 1) : '?'}`,
      met: (v, f) => typeof f.rawPutsPerSec === 'number' && v >= 0.8 * f.rawPutsPerSec,
    },
  },
  {
    key: 'plannerRequestsPerTick10kJobs100Due',
    extract: (m) => num(m.d.plannerCost?.requests),
    required: true,
    label: 'ledger requests per tick',
    note: (_f, d) => (d.plannerCost ? JSON.stringify(d.plannerCost.byCommand) : ''),
    target: {
      text: (f) => `≤ 3 × due + partitions = ${numberOr(f.plannerRequestsTarget10kJobs100Due, 301)}`,
      met: (v, f) => v <= numberOr(f.plannerRequestsTarget10kJobs100Due, 301),
    },
  },
  {
    key: 'costPerMillionRunsUsd',
    extract: (m) => (m.cost ? round(m.cost.total, 3) : NA),
    required: true,
    label: 'total',
    target: atMost(2.5, '≤ $2.50'),
  },
];

/** One figure per overlap policy: the burst's figure with the policy's suffix and label. */
function perPolicy(
  key: string,
  label: string,
  pick: (r: EndToEndResult, raw: number) => number,
  more: (policy: OverlapPolicy) => Partial<FigureSpec> = () => ({}),
): FigureSpec[] {
  return OVERLAP_POLICIES.map(([suffix, policy]) => ({
    key: `${key}${suffix}`,
    label: `${label}, ${policy}`,
    extract: (m: Measurements) => {
      const r = m.overlap[suffix];
      return r ? pick(r.run, ceiling(r.before.writesPerSec, r.after.writesPerSec)) : NA;
    },
    ...more(policy),
  }));
}

const overlapNote = (policy: OverlapPolicy) => (_f: Figures, d: Details) => {
  const r = d.overlap?.[policy];
  return r === undefined
    ? ''
    : typeof r === 'string'
      ? r
      : `${JSON.stringify(r.run.dynamo.byCommand)}; SQS ${JSON.stringify(r.run.sqsByCommand)}`;
};

const OVERLAP: readonly FigureSpec[] = [
  ...perPolicy(
    'writesPerRun',
    'write requests per run',
    (r) => r.writesPerRun,
    (policy) => ({ note: overlapNote(policy) }),
  ),
  ...perPolicy(
    'writeUnitsPerRun',
    'billed write units per run',
    (r) => r.writeUnitsPerRun,
    () => ({ target: atMost(8), required: true }),
  ),
  ...perPolicy(
    'readsPerRun',
    'read requests per run',
    (r) => r.readsPerRun,
    () => ({ required: true }),
  ),
  ...perPolicy('sqsCallsPerRun', "scheduler's SQS calls per run", (r) => r.sqsCallsPerRun),
  ...perPolicy('runsPerSec', 'runs/s', (r) => r.runsPerSec),
  ...perPolicy('efficiency', 'efficiency', (r, raw) => efficiency(r, raw)),
];

const RAW_AND_PLANNER: readonly FigureSpec[] = [
  // Raw limit, bracketing measurements.
  { key: 'rawWritesPerSecBefore', extract: (m) => num(m.burst?.before.writesPerSec) },
  { key: 'rawWritesPerSecAfter', extract: (m) => num(m.burst?.after.writesPerSec) },
  {
    key: 'rawUpdatesPerSec',
    extract: (m) => num(m.burst ? ceiling(m.burst.before.updatesPerSec, m.burst.after.updatesPerSec) : undefined),
    label: '  of which conditional updates/s',
  },
  {
    key: 'rawPutsPerSec',
    extract: (m) => num(m.rawPuts10k),
    label: (s) => `raw conditional puts/s, ${fmt(s.plannerLargeJobs)} puts`,
    note: (f) => `before ${fmt(f.rawPutsPerSecBefore10k)}, after ${fmt(f.rawPutsPerSecAfter10k)}`,
  },
  { key: 'rawPutsPerSecBefore10k', extract: (m) => num(m.large?.before.putsPerSec) },
  { key: 'rawPutsPerSecAfter10k', extract: (m) => num(m.large?.after.putsPerSec) },
  { key: 'rawPutsPerSec1k', extract: (m) => num(m.rawPuts1k), label: (s) => `raw conditional puts/s, ${fmt(s.plannerSmallJobs)} puts` },
  // Planner.
  {
    key: 'plannerPutSlotsPerSec1k',
    extract: (m) => num(m.small?.tick.putSlotsPerSec),
    label: (s) => `slots/s, ${fmt(s.plannerSmallJobs)} jobs, put phase`,
  },
  {
    key: 'plannerPutSlotsPerSec10k',
    extract: (m) => num(m.large?.tick.putSlotsPerSec),
    label: (s) => `slots/s, ${fmt(s.plannerLargeJobs)} jobs, put phase`,
  },
  {
    key: 'plannerTickVsRawPut1k',
    extract: (m) => (m.small && m.rawPuts1k ? round(m.small.tick.slotsPerSec / m.rawPuts1k, 3) : NA),
    label: '  whole tick ÷ raw put rate',
  },
  { key: 'plannerPutVsRawPut1k', extract: (m) => (m.small && m.rawPuts1k ? round(m.small.tick.putSlotsPerSec / m.rawPuts1k, 3) : NA) },
  {
    key: 'plannerTickVsRawPut10k',
    extract: (m) => (m.large && m.rawPuts10k ? round(m.large.tick.slotsPerSec / m.rawPuts10k, 3) : NA),
    label: '  whole tick ÷ raw put rate',
  },
  {
    key: 'plannerPutVsRawPut10k',
    extract: (m) => (m.large && m.rawPuts10k ? round(m.large.tick.putSlotsPerSec / m.rawPuts10k, 3) : NA),
    label: '  put phase ÷ raw put rate',
  },
  { key: 'plannerTickMs10k', extract: (m) => num(m.large?.tick.tickMs) },
  { key: 'plannerReadAndPlanMs10k', extract: (m) => num(m.large?.tick.readAndPlanMs), label: '  tick ms: read + plan' },
  { key: 'plannerPutMs10k', extract: (m) => num(m.large?.tick.putMs), label: '  tick ms: puts' },
  { key: 'plannerSendMs10k', extract: (m) => num(m.large?.tick.sendMs), label: '  SQS send calls, ms summed (beside the puts)' },
  { key: 'plannerSendTailMs10k', extract: (m) => num(m.large?.tick.sendTailMs), label: '  tick ms: sends after the last put' },
  { key: 'plannerAfterSendMs10k', extract: (m) => num(m.large?.tick.afterSendMs), label: '  tick ms: watermark + sweep' },
  { key: 'plannerTickMs10kJobs100Due', extract: (m) => num(m.d.plannerCost?.tickMs), label: 'tick ms' },
  {
    key: 'plannerReadAndPlanMs10kJobs100Due',
    extract: (m) => num(m.d.plannerCost?.readAndPlanMs),
    label: '  of which partition read + slot planning over every job',
  },
  { key: 'plannerSqsCallsPerTick10kJobs100Due', extract: (m) => num(m.d.plannerCost?.sqsCalls), label: 'SQS calls per tick' },
  {
    key: 'plannerRequestsTarget10kJobs100Due',
    extract: (m) => (m.d.plannerCost ? 3 * m.d.plannerCost.due + m.d.plannerCost.partitions : NA),
  },
];

const END_TO_END: readonly FigureSpec[] = [
  { key: 'workerRunsPerSec', extract: (m) => num(m.e2e?.workerRunsPerSec), label: 'runs/s (first claim → last outcome)' },
  { key: 'e2eElapsedMs', extract: (m) => num(m.e2e?.elapsedMs) },
  {
    key: 'e2ePlannerTickMs',
    extract: (m) => num(m.e2e?.plannerTickMs),
    label: '  planner tick ms / first claim → last outcome ms',
    note: (f) => `${fmt(f.e2eWorkerPhaseMs)} ms worker phase`,
  },
  { key: 'e2eWorkerPhaseMs', extract: (m) => num(m.e2e?.workerPhaseMs) },
  { key: 'writeItemsPerRun', extract: (m) => num(m.e2e?.writeItemsPerRun) },
  {
    key: 'writeUnitsPerRun',
    extract: (m) => num(m.e2e?.writeUnitsPerRun),
    label: 'billed write units per run (table + index)',
    note: (f) => `DynamoDB Local reported ${fmt(f.writeUnitsPerRunReportedByLocal)}; billed adds refused writes`,
  },
  { key: 'writeUnitsPerRunReportedByLocal', extract: (m) => num(m.e2e?.reportedWriteUnitsPerRun) },
  { key: 'readUnitsPerRunReportedByLocal', extract: (m) => num(m.e2e?.reportedReadUnitsPerRun) },
  { key: 'readsPerRun', extract: (m) => num(m.e2e?.readsPerRun), label: 'ledger read requests per run' },
  {
    key: 'readUnitsPerRun',
    extract: (m) => num(m.e2e?.readUnitsPerRun),
    label: 'billed read units per run',
    note: (f) => `DynamoDB Local reported ${fmt(f.readUnitsPerRunReportedByLocal)}; billed adds the minimum read of empty results`,
  },
  { key: 'dynamoRequestsPerRun', extract: (m) => num(m.e2e?.dynamoRequestsPerRun) },
  {
    key: 'eventSourceSqsCallsPerRun',
    extract: (m) => num(m.e2e?.eventSourceSqsCallsPerRun),
    label: 'event source SQS calls per run (receive + delete)',
  },
  { key: 'invocationsPerRun', extract: (m) => num(m.e2e?.invocationsPerRun), label: 'worker invocations (batches) per run' },
  { key: 'lambdaMsPerRun', extract: (m) => num(m.e2e?.lambdaMsPerRun), label: 'worker ms per run (batch time ÷ runs)' },
  { key: 'e2eViolations', extract: (m) => num(m.e2e?.violations), label: 'invariant violations' },
  {
    key: 'consoleJobsPageMs',
    extract: (m) => num(m.d.consolePages?.jobsPage.p50Ms),
    label: (s) => `Jobs page ms, ${fmt(s.consoleJobs)} jobs`,
    target: consolePageTarget,
    note: (f) =>
      `p95 ${fmt(f.consoleJobsPageP95Ms)}, max ${fmt(f.consoleJobsPageMaxMs)}; ${fmt(f.consoleJobsPageDynamoCalls)} DynamoDB calls a page`,
  },
  { key: 'consoleJobsPageP95Ms', extract: (m) => num(m.d.consolePages?.jobsPage.p95Ms) },
  { key: 'consoleJobsPageMaxMs', extract: (m) => num(m.d.consolePages?.jobsPage.maxMs) },
  { key: 'consoleJobsPageDynamoCalls', extract: (m) => num(m.d.consolePages?.jobsPage.dynamoCalls) },
  {
    key: 'consoleJobPageMs',
    extract: (m) => num(m.d.consolePages?.jobPage.p50Ms),
    label: (s) => `Job page ms, ${fmt(s.consoleBigJobRuns)} runs`,
    target: consolePageTarget,
    note: (f, d) =>
      `p95 ${fmt(f.consoleJobPageP95Ms)}, max ${fmt(f.consoleJobPageMaxMs)}; ${fmt(f.consoleJobPageDynamoCalls)} DynamoDB calls a page${d.consolePages ? `; seeded ${fmt(d.consolePages.runsSeeded)} runs at ${fmt(d.consolePages.seedItemsPerSec)} items/s` : ''}`,
  },
  { key: 'consoleJobPageP95Ms', extract: (m) => num(m.d.consolePages?.jobPage.p95Ms) },
  { key: 'consoleJobPageDynamoCalls', extract: (m) => num(m.d.consolePages?.jobPage.dynamoCalls) },
  { key: 'consoleJobPageMaxMs', extract: (m) => num(m.d.consolePages?.jobPage.maxMs) },
  {
    key: 'e2eTickPutMs',
    extract: (m) => num(m.e2e?.tickParts.putMs),
    label: '  planner tick: puts ms / SQS send calls ms (beside the puts)',
    note: (f) => `${fmt(f.e2eTickSendMs)} ms sends`,
  },
  { key: 'e2eTickSendMs', extract: (m) => num(m.e2e?.tickParts.sendMs) },
  {
    key: 'e2eNodeCpuCores',
    extract: (m) => num(coresBusy(m.e2e?.cpu, 'node')),
    label: '  CPU cores busy: bench Node process (workers, SDK, local SQS)',
    note: (f) => `raw mix: ${fmt(f.rawMixNodeCpuCores)}`,
  },
  {
    key: 'e2eDynamoCpuCores',
    extract: (m) => num(coresBusy(m.e2e?.cpu, 'dynamo')),
    label: '  CPU cores busy: DynamoDB Local',
    note: (f) => `raw mix: ${fmt(f.rawMixDynamoCpuCores)}`,
  },
  { key: 'rawMixNodeCpuCores', extract: (m) => num(coresBusy(m.rawMixUsed?.cpu, 'node')) },
  { key: 'rawMixDynamoCpuCores', extract: (m) => num(coresBusy(m.rawMixUsed?.cpu, 'dynamo')) },
  {
    key: 'e2eNodeCpuMsPerRun',
    extract: (m) => (m.e2e ? round(m.e2e.cpu.nodeCpuMs / m.e2e.runs, 3) : NA),
    label: '  Node CPU ms per run',
    note: (f) => `raw, per 3 writes: ${fmt(f.rawMixNodeCpuMsPer3Writes)}`,
  },
  // Where a run's wall time goes: the two CPUs' busy share, and each worker request's round trip.
  {
    key: 'e2eWallMsPerRun',
    extract: (m) => (m.e2e ? round(m.e2e.elapsedMs / m.e2e.runs, 3) : NA),
    label: '  wall ms per run (tick start → last outcome ÷ runs)',
    note: (f) => `mean batch (invocation) ms ${fmt(f.e2eMeanBatchMs)}`,
  },
  {
    key: 'e2eIdleCpuShare',
    extract: ({ e2e }) =>
      e2e && e2e.cpu.dynamoCpuMs !== undefined
        ? round(1 - (e2e.cpu.nodeCpuMs + e2e.cpu.dynamoCpuMs) / (e2e.cpu.wallMs * cpus().length), 3)
        : NA,
    label: '  CPU idle share (neither process busy)',
    note: (f) => `mean request round trip ms: ${fmt(f.e2eRequestLatencyMs)}`,
  },
  { key: 'e2eRequestLatencyMs', extract: (m) => (m.e2e ? JSON.stringify(m.e2e.dynamo.meanLatencyMs) : NA) },
  { key: 'e2eMeanBatchMs', extract: (m) => num(m.e2e?.meanBatchMs) },
  // Only in a profiled run (--cpu-profile): the main thread's self time per run, by where the code lives.
  {
    key: 'e2eProfiled',
    extract: (m) => (m.e2e?.cpuProfile ? 'yes (rates slowed by sampling)' : 'no'),
    label: '  main-thread ms per run by category (--cpu-profile only)',
    note: (f) => fmt(f.e2eProfileMsPerRun),
  },
  { key: 'e2eProfileMsPerRun', extract: ({ e2e }) => (e2e?.cpuProfile ? JSON.stringify(roundAll(e2e.cpuProfile.selfMs, e2e.runs)) : NA) },
  {
    key: 'e2eProfileTopFunctions',
    extract: ({ e2e }) =>
      e2e?.cpuProfile ? e2e.cpuProfile.top.map((t) => `${t.name} ${t.where} ${round(t.ms / e2e.runs, 3)}`).join('; ') : NA,
  },
  {
    key: 'e2eDynamoCpuMsPerRun',
    extract: ({ e2e }) => (e2e?.cpu.dynamoCpuMs !== undefined ? round(e2e.cpu.dynamoCpuMs / e2e.runs, 3) : NA),
    label: '  DynamoDB Local CPU ms per run',
    note: (f) => `raw, per 3 writes: ${fmt(f.rawMixDynamoCpuMsPer3Writes)}`,
  },
  { key: 'rawMixNodeCpuMsPer3Writes', extract: ({ rawMixUsed: r }) => (r ? round((3 * r.cpu.nodeCpuMs) / (3 * r.items), 3) : NA) },
  {
    key: 'rawMixDynamoCpuMsPer3Writes',
    extract: ({ rawMixUsed: r }) => (r?.cpu.dynamoCpuMs !== undefined ? round((3 * r.cpu.dynamoCpuMs) / (3 * r.items), 3) : NA),
  },
  {
    key: 'plannerNodeCpuCores10k',
    extract: (m) => num(coresBusy(m.large?.tick.cpu, 'node')),
    label: '  CPU cores busy during the tick: bench Node process',
    note: (f) => `raw puts: ${fmt(f.rawPutsNodeCpuCores10k)}`,
  },
  {
    key: 'plannerDynamoCpuCores10k',
    extract: (m) => num(coresBusy(m.large?.tick.cpu, 'dynamo')),
    label: '  CPU cores busy during the tick: DynamoDB Local',
    note: (f) => `raw puts: ${fmt(f.rawPutsDynamoCpuCores10k)}`,
  },
  { key: 'rawPutsNodeCpuCores10k', extract: (m) => num(coresBusy(m.rawPutsUsed?.cpu, 'node')) },
  { key: 'rawPutsDynamoCpuCores10k', extract: (m) => num(coresBusy(m.rawPutsUsed?.cpu, 'dynamo')) },
];

// Trigger lag: precision mode (the target) and the default mode, side by side.
const TRIGGER_LAG: readonly FigureSpec[] = [
  { key: 'triggerLagMaxMs', extract: (m) => num(m.lag?.precision.maxMs), label: 'max ms, precision' },
  {
    key: 'triggerLagSamples',
    extract: (m) => num(m.lag?.precision.samples),
    label: 'samples, precision',
    note: (f) => `expected ${fmt(f.triggerLagExpectedSamples)}`,
  },
  { key: 'triggerLagExpectedSamples', extract: (m) => num(m.lag?.precision.expectedSamples) },
  {
    key: 'triggerLagLateRuns',
    extract: (m) => num(m.lag?.precision.lateRuns.length),
    label: 'runs more than 50 ms late, precision',
    note: (_f, d) => (d.triggerLag ? lateList(d.triggerLag.precision) : ''),
  },
  { key: 'startLeadMs', extract: (m) => num(m.lag?.precision.startLeadMs) },
  {
    key: 'leadWaitMeanMs',
    extract: (m) => num(m.lag?.precision.leadWaitMeanMs),
    label: 'startLead wait per run (claim → handler start), ms, precision',
    note: (f) => `startLead ${fmt(f.startLeadMs)} ms`,
  },
  {
    key: 'triggerLagDefaultP50Ms',
    extract: (m) => num(m.lag?.defaults.p50Ms),
    label: 'p50 ms, default startLead',
    note: (f) => `startLead ${fmt(f.startLeadDefaultMs)} ms: starts in the second after the slot`,
  },
  { key: 'triggerLagDefaultP99Ms', extract: (m) => num(m.lag?.defaults.p99Ms), required: true, label: 'p99 ms, default' },
  {
    key: 'triggerLagDefaultMaxMs',
    extract: (m) => num(m.lag?.defaults.maxMs),
    label: 'max ms, default',
    note: (f) => `${fmt(f.triggerLagDefaultSamples)} samples`,
  },
  { key: 'triggerLagDefaultSamples', extract: (m) => num(m.lag?.defaults.samples) },
  { key: 'startLeadDefaultMs', extract: (m) => num(m.lag?.defaults.startLeadMs) },
  { key: 'leadWaitMeanMsDefault', extract: (m) => num(m.lag?.defaults.leadWaitMeanMs) },
  {
    key: 'sparseInvocationBilledMsDefault',
    extract: (m) => num(m.lag?.defaults.soloInvocationBilledMeanMs),
    label: 'one-run invocation, billed ms, default',
    note: (f) => `${fmt(f.sparseInvocationsMeasured)} invocations`,
  },
  {
    key: 'sparseInvocationBilledMsPrecision',
    extract: (m) => num(m.lag?.precision.soloInvocationBilledMeanMs),
    label: 'one-run invocation, billed ms, precision',
  },
  { key: 'sparseInvocationsMeasured', extract: (m) => num(m.lag ? m.lag.defaults.soloInvocations : undefined) },
  {
    key: 'sqsCallsPerRunSteady',
    extract: (m) => num(m.lag?.sqsCallsPerRun),
    required: true,
    label: "scheduler's SQS calls per planned run, steady state",
    target: atMost(0.15),
    note: (_f, d) => (d.triggerLag ? `${d.triggerLag.runsCreated} runs planned; ${JSON.stringify(d.triggerLag.sqsByCommand)}` : ''),
  },
  {
    key: 'eventSourceSqsCallsPerRunSteady',
    extract: (m) => num(m.lag?.eventSourceSqsCallsPerRun),
    label: 'event source SQS calls per run, steady state',
  },
  {
    key: 'visibilityChangesSteady',
    extract: ({ lag }) =>
      num(
        lag
          ? (lag.sqsByCommand.ChangeMessageVisibilityCommand ?? 0) + (lag.sqsByCommand.ChangeMessageVisibilityBatchCommand ?? 0)
          : undefined,
      ),
  },
];

const BURSTS: readonly (readonly [BurstSuffix, string])[] = [['', 'parallel'], ...OVERLAP_POLICIES];
const halfWcu = atMost(500, '≤ 500 (half of 1,000 WCU)');
/** The smoke test holds these partition-key figures to be numbers (coalesce's are reported only). */
const requiredKeyFigure = (name: string, p: BurstSuffix) =>
  p !== 'Coalesce' &&
  (['hotKeyWcuAt2000RunsPerSec', 'hotKeyRcuAt2000RunsPerSec', 'jobKeyWcuWorstCase'].includes(name) ||
    (p === '' && name === 'hotKeyWriteShare'));

/**
 * The partition-key figures of one burst (suffix '' for parallel, 'ForbidQueue', 'Coalesce').
 * Projection to 2,000 runs/s: a key's units per run of the burst × 2,000, i.e. 2,000 runs/s
 * spread over as many jobs as the burst has (one run each: every job once a second at that rate).
 * Per-tick items (PLANNER, the sweep's queries) are charged as if a tick planned only the burst's
 * runs; at 2,000 runs/s a minute's tick plans 120,000, so the projection overstates them.
 * jobKey*WorstCase: the most any one job can put on its key, whatever the mix: its units per run ×
 * 100 runs/s (one slot a second × 100 shards).
 */
function keyFigures(p: BurstSuffix, burst: string): FigureSpec[] {
  const perRun = (byKind: Readonly<Record<string, number>>) => byKind['JOB#<name>'] ?? 0;
  const specs: [string, (k: KeyLoadSummary) => Figure, Omit<FigureSpec, 'key' | 'extract'>?][] = [
    [
      'hotKeyWriteShare',
      (k) => (k.write ? round(k.write.share, 4) : 0),
      { label: `hot write key share, ${burst}`, note: (f) => fmt(f[`hotKeyWrite${p}`]) },
    ],
    ['hotKeyWrite', (k) => (k.write ? k.write.kind : NA)],
    [
      'hotKeyWcuAt2000RunsPerSec',
      (k) => (k.write ? round(k.write.unitsPerRun * PROJECTED_RUNS_PER_SEC, 2) : 0),
      { label: `  its WCU/s at ${fmt(PROJECTED_RUNS_PER_SEC)} runs/s`, target: halfWcu },
    ],
    [
      'hotKeyReadShare',
      (k) => (k.read ? round(k.read.share, 4) : 0),
      { label: `hot read key share, ${burst}`, note: (f) => fmt(f[`hotKeyRead${p}`]) },
    ],
    ['hotKeyRead', (k) => (k.read ? k.read.kind : NA)],
    [
      'hotKeyRcuAt2000RunsPerSec',
      (k) => (k.read ? round(k.read.unitsPerRun * PROJECTED_RUNS_PER_SEC, 2) : 0),
      { label: `  its RCU/s at ${fmt(PROJECTED_RUNS_PER_SEC)} runs/s`, target: atMost(1500, '≤ 1,500 (half of 3,000 RCU)') },
    ],
    ['jobKeyWcuPerRun', (k) => round(k.jobWcuPerRun, 3)],
    ['jobKeyRcuPerRun', (k) => round(k.jobRcuPerRun, 3)],
    [
      'jobKeyWcuWorstCase',
      (k) => round(k.jobWcuPerRun * MAX_RUNS_PER_SEC_OF_ONE_JOB, 1),
      {
        label: `  one job's key, WCU/s at ${MAX_RUNS_PER_SEC_OF_ONE_JOB} runs/s`,
        target: halfWcu,
        note: (f) => `${fmt(f[`jobKeyWcuPerRun${p}`])} WCU per run`,
      },
    ],
    [
      'jobKeyRcuWorstCase',
      (k) => round(k.jobRcuPerRun * MAX_RUNS_PER_SEC_OF_ONE_JOB, 1),
      {
        label: `  one job's key, RCU/s at ${MAX_RUNS_PER_SEC_OF_ONE_JOB} runs/s`,
        note: (f) => `${fmt(f[`jobKeyRcuPerRun${p}`])} RCU per run`,
      },
    ],
    [
      'indexWriteUnitsPerRun',
      (k) => round(k.indexWriteUnits / k.run.runs, 4),
      { label: '  index write units per run', note: (f) => `write units per run by key: ${fmt(f[`writeUnitsByKeyKind${p}`])}` },
    ],
    ['keyLoadUnattributed', (k) => k.run.unattributedRequests, { label: '  requests with no key told' }],
    // Requests on the runs' own job keys per run, apart from the planner's per-tick requests.
    [
      'jobKeyWritesPerRun',
      (k) => round(perRun(k.load.writeRequestsByKind) / k.run.runs, 4),
      {
        label: "  write requests per run on the job's own key",
        note: (f) => `write requests by key: ${fmt(f[`writeRequestsByKeyKind${p}`])}`,
      },
    ],
    [
      'jobKeyReadsPerRun',
      (k) => round(perRun(k.load.readRequestsByKind) / k.run.runs, 4),
      {
        label: "  read requests per run on the job's own key",
        note: (f) => `read units per run by key: ${fmt(f[`readUnitsByKeyKind${p}`])}; requests: ${fmt(f[`readRequestsByKeyKind${p}`])}`,
        // Per run on the job's own key; the planner's per-tick reads (the watch and DEAD buckets, the
        // layout) come on top and do not grow with runs. Parallel runs have no lane to read.
        ...(p === '' ? {} : { target: atMost(2, '≤ 2 (+ per-tick reads)') }),
      },
    ],
    ['writeRequestsByKeyKind', (k) => JSON.stringify(k.load.writeRequestsByKind)],
    ['readRequestsByKeyKind', (k) => JSON.stringify(k.load.readRequestsByKind)],
    ['writeUnitsByKeyKind', (k) => JSON.stringify(roundAll(unitsByKind(k.load.writes), k.run.runs))],
    ['readUnitsByKeyKind', (k) => JSON.stringify(roundAll(unitsByKind(k.load.reads), k.run.runs))],
  ];
  return specs.map(([name, pick, row]) => ({
    key: `${name}${p}`,
    extract: (m: Measurements) => {
      const k = m.keys[p];
      return k ? pick(k) : NA;
    },
    required: requiredKeyFigure(name, p),
    ...row,
  }));
}

const TAKEOVER_AND_COST: readonly FigureSpec[] = [
  { key: 'takeoverMinMs', extract: (m) => num(m.d.takeover?.minMs) },
  { key: 'takeoverKills', extract: (m) => num(m.d.takeover?.kills) },
  {
    key: 'takeoverLeaseRemainingMeanMs',
    extract: (m) => num(m.d.takeover?.leaseRemainingMeanMs),
    label: '  lease left at the kill, mean ms',
  },
  {
    key: 'takeoverAfterLeaseMeanMs',
    extract: (m) => num(m.d.takeover?.afterLeaseMeanMs),
    label: '  lease end → successor claim, mean ms',
    note: () => 'clock-skew allowance + SQS redelivery',
  },
  { key: 'takeoverAfterLeaseMaxMs', extract: (m) => num(m.d.takeover?.afterLeaseMaxMs), label: '  lease end → successor claim, max ms' },
  { key: 'takeoverViolations', extract: (m) => num(m.d.takeover?.violations), label: 'invariant violations' },
  { key: 'takeoverP50MsSkew0', extract: (m) => num(m.d.takeoverSkew0?.p50Ms), label: 'takeover p50 ms with --clock-skew 0' },
  { key: 'takeoverMaxMsSkew0', extract: (m) => num(m.d.takeoverSkew0?.maxMs), label: 'takeover max ms with --clock-skew 0' },
  {
    key: 'takeoverAfterLeaseMeanMsSkew0',
    extract: (m) => num(m.d.takeoverSkew0?.afterLeaseMeanMs),
    label: '  lease end → successor claim, mean ms, skew 0',
    note: () => 'SQS redelivery alone',
  },
  // Cost breakdown.
  { key: 'costPerMillionRunsDynamoUsd', extract: (m) => (m.cost ? round(m.cost.dynamo, 3) : NA), label: '  DynamoDB' },
  { key: 'costPerMillionRunsSqsUsd', extract: (m) => (m.cost ? round(m.cost.sqs, 3) : NA), label: '  SQS (scheduler + event source)' },
  {
    key: 'costPerMillionRunsLambdaUsd',
    extract: (m) => (m.cost ? round(m.cost.lambdaRequests + m.cost.lambdaDuration, 3) : NA),
    label: '  Lambda (requests + duration)',
  },
  // A sparse run (measurements.ts): without the trigger-lag phase only its total is reported, as n/a.
  { key: 'sparseWriteUnitsPerRun', extract: (m) => (m.sparse ? round(m.sparse.counts.writeUnitsPerRun, 4) : undefined) },
  { key: 'sparseReadUnitsPerRun', extract: (m) => m.sparse?.counts.readUnitsPerRun },
  {
    key: 'costPerMillionSparseRunsUsd',
    extract: (m) => (m.sparse ? round(m.sparse.cost.total, 3) : NA),
    required: true,
    label: 'total',
    target: atMost(3.0, '≤ $3.00'),
    note: (f, d) =>
      d.sparseCost
        ? `${fmt(f.sparseWriteUnitsPerRun)} WCU, ${fmt(f.sparseReadUnitsPerRun)} RCU, ${fmt(f.sparseSqsRequestsPerRun)} SQS requests, 1 invocation of ${fmt(f.sparseInvocationBilledMsDefault)} ms billed per run`
        : '',
  },
  {
    key: 'costPerMillionSparseRunsDynamoUsd',
    extract: (m) => (m.sparse ? round(m.sparse.cost.dynamo, 3) : undefined),
    label: '  DynamoDB',
  },
  {
    key: 'costPerMillionSparseRunsSqsUsd',
    extract: (m) => (m.sparse ? round(m.sparse.cost.sqs, 3) : undefined),
    label: '  SQS (scheduler + event source)',
  },
  {
    key: 'costPerMillionSparseRunsLambdaUsd',
    extract: (m) => (m.sparse ? round(m.sparse.cost.lambdaRequests + m.sparse.cost.lambdaDuration, 3) : undefined),
    label: '  Lambda (requests + duration)',
  },
  { key: 'sparseSqsRequestsPerRun', extract: (m) => (m.sparse ? round(m.sparse.counts.sqsRequestsPerRun, 4) : undefined) },
  {
    key: 'costPerMillionSparseRunsPrecisionUsd',
    extract: (m) => (m.sparse ? round(m.sparse.precise.total, 3) : undefined),
    label: `the same with startLead ${PRECISION_START_LEAD} (sub-second precision)`,
  },
  // The run itself.
  { key: 'cpus', extract: () => cpus().length },
  { key: 'loadAvg1mMax', extract: (m) => Math.max(0, ...Object.values(m.d.load)) },
  { key: 'region', extract: () => PRICES.region },
  { key: 'mode', extract: (m) => m.mode },
  { key: 'benchSeconds', extract: (m) => round(m.elapsedSec, 1) },
  { key: 'loadAvg1mByPhase', extract: (m) => JSON.stringify(m.d.load) },
];

/** Every figure, in the order of the `--json` object: the ones with a target first, then the reported ones. */
export const FIGURES: readonly FigureSpec[] = [
  ...HEADLINE,
  ...OVERLAP,
  ...RAW_AND_PLANNER,
  ...END_TO_END,
  ...TRIGGER_LAG,
  // Partition keys: the hottest key value of the table and of its index, projected to 2,000 runs/s.
  ...BURSTS.flatMap(([p, burst]) => keyFigures(p, burst)),
  ...TAKEOVER_AND_COST,
];

export const FIGURE_BY_KEY: ReadonlyMap<string, FigureSpec> = new Map(FIGURES.map((spec) => [spec.key, spec]));

/** The figures every bench run reports as numbers (the targets of docs/performance.md and the reported figures). */
export const REQUIRED_KEYS: readonly string[] = FIGURES.filter((spec) => spec.required).map((spec) => spec.key);

export function collectFigures(m: Measurements): Figures {
  const f: Figures = {};
  for (const spec of FIGURES) {
    const value = spec.extract(m);
    if (value !== undefined) f[spec.key] = value;
  }
  return f;
}

/** The figures with a target, judged: n/a when the figure is not a number. */
export function checkTargets(f: Figures): TargetCheck[] {
  return FIGURES.flatMap(({ key, target }) => {
    if (!target) return [];
    const value = f[key] ?? NA;
    return [{ figure: key, value, target: target.text(f), met: typeof value === 'number' ? target.met(value, f) : NA }];
  });
}
