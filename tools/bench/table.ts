/**
 * The printed table: sections and rows in reading order, each row a figure of the figure table
 * (figures.ts), which gives its label, note and target. The order differs from the `--json`
 * object's, which puts the figures with a target first.
 */
import { describePrices } from './cost.js';
import { FIGURE_BY_KEY, fmt, NA } from './figures.js';
import { OVERLAP_POLICIES } from './measurements.js';
import { PRECISION_START_LEAD } from './trigger-lag.js';
import {
  MAX_RUNS_PER_SEC_OF_ONE_JOB,
  PROJECTED_RUNS_PER_SEC,
  type BenchMode,
  type BenchSizes,
  type Details,
  type Figures,
  type TargetCheck,
} from './types.js';

/** A section heading, or the key of a figure printed as a row. */
type LayoutLine = { readonly section: (s: BenchSizes) => string } | string;

const section = (title: string | ((s: BenchSizes) => string)): LayoutLine => ({ section: typeof title === 'string' ? () => title : title });
const keyRows = (p: string) =>
  [
    'hotKeyWriteShare',
    'hotKeyWcuAt2000RunsPerSec',
    'hotKeyReadShare',
    'hotKeyRcuAt2000RunsPerSec',
    'jobKeyWcuWorstCase',
    'jobKeyRcuWorstCase',
    'indexWriteUnitsPerRun',
    'jobKeyWritesPerRun',
    'jobKeyReadsPerRun',
    'keyLoadUnattributed',
  ].map((name) => `${name}${p}`);

export const LAYOUT: readonly LayoutLine[] = [
  section(
    (s) =>
      `raw limit (DynamoDB Local, ledger table definition, document client, ${s.concurrency} in flight; on each phase's own table just before and after it; the better of the two)`,
  ),
  'rawWritesPerSec',
  'rawUpdatesPerSec',
  'rawPutsPerSec',
  'rawPutsPerSec1k',
  section('planner throughput (jobs every minute, one slot each, lookahead 60 s, one tick)'),
  'plannerSlotsPerSec1k',
  'plannerPutSlotsPerSec1k',
  'plannerTickVsRawPut1k',
  'plannerSlotsPerSec10k',
  'plannerPutSlotsPerSec10k',
  'plannerTickVsRawPut10k',
  'plannerPutVsRawPut10k',
  'plannerReadAndPlanMs10k',
  'plannerPutMs10k',
  'plannerSendMs10k',
  'plannerSendTailMs10k',
  'plannerAfterSendMs10k',
  'plannerDynamoCpuCores10k',
  'plannerNodeCpuCores10k',
  section(
    (s) => `planner cost (${fmt(s.costJobs)} jobs, ${fmt(s.costDue)} due in the tick, the rest hourly at other minutes, 1 partition)`,
  ),
  'plannerRequestsPerTick10kJobs100Due',
  'plannerSqsCallsPerTick10kJobs100Due',
  'plannerTickMs10kJobs100Due',
  'plannerReadAndPlanMs10kJobs100Due',
  section((s) => `end to end (${fmt(s.e2eRuns)} no-op runs due at once, overlap parallel, ${s.e2eWorkers} pollers × batch 10)`),
  'runsPerSec',
  'e2ePlannerTickMs',
  'e2eTickPutMs',
  'workerRunsPerSec',
  'e2eDynamoCpuCores',
  'e2eNodeCpuCores',
  'e2eDynamoCpuMsPerRun',
  'e2eNodeCpuMsPerRun',
  'e2eWallMsPerRun',
  'e2eIdleCpuShare',
  'e2eProfiled',
  'efficiency',
  'writesPerRun',
  'writeUnitsPerRun',
  'readsPerRun',
  'readUnitsPerRun',
  'sqsCallsPerRun',
  'eventSourceSqsCallsPerRun',
  'invocationsPerRun',
  'lambdaMsPerRun',
  'e2eViolations',
  section((s) => `overlap policies (same burst, ${fmt(s.overlapRuns)} runs, one slot per job)`),
  ...OVERLAP_POLICIES.flatMap(([p]) =>
    ['writesPerRun', 'writeUnitsPerRun', 'readsPerRun', 'sqsCallsPerRun', 'runsPerSec', 'efficiency'].map((name) => `${name}${p}`),
  ),
  section(
    `partition keys (every request of the bursts; units on each key value of the table and of its index; projected: units per run × ${fmt(PROJECTED_RUNS_PER_SEC)}, the burst's job mix; worst case: one job at ${MAX_RUNS_PER_SEC_OF_ONE_JOB} runs/s)`,
  ),
  ...keyRows(''),
  ...keyRows('ForbidQueue'),
  ...keyRows('Coalesce'),
  section(
    (s) =>
      `trigger lag (${s.lagJobs} jobs with startLead ${PRECISION_START_LEAD} + ${s.lagJobs} with the default, every 10 s, staggered 1 s, ${s.lagDurationMs / 1000} s on real time, planner every ${s.lagTickSeconds} s, ${s.lagWorkers} pollers)`,
  ),
  'triggerLagP50Ms',
  'triggerLagP99Ms',
  'triggerLagMaxMs',
  'triggerLagSamples',
  'triggerLagLateRuns',
  'leadWaitMeanMs',
  'triggerLagDefaultP50Ms',
  'triggerLagDefaultP99Ms',
  'triggerLagDefaultMaxMs',
  'sparseInvocationBilledMsDefault',
  'sparseInvocationBilledMsPrecision',
  'sqsCallsPerRunSteady',
  'eventSourceSqsCallsPerRunSteady',
  section((s) => `takeover after SIGKILL (worker processes, ${s.kills} kills spread over the heartbeat cycle)`),
  'leaseMs',
  'heartbeatMs',
  'takeoverP50Ms',
  'takeoverMaxMs',
  'takeoverLeaseRemainingMeanMs',
  'takeoverAfterLeaseMeanMs',
  'takeoverAfterLeaseMaxMs',
  'takeoverP50MsSkew0',
  'takeoverMaxMsSkew0',
  'takeoverAfterLeaseMeanMsSkew0',
  'takeoverViolations',
  section(
    (s) =>
      `console pages (server time over HTTP on 127.0.0.1, median of ${s.consoleSamples} fetches after one; ${fmt(s.consoleJobs)} jobs × ${s.consoleRunsPerJob} runs, one job with ${fmt(s.consoleBigJobRuns)} runs)`,
  ),
  'consoleJobsPageMs',
  'consoleJobPageMs',
  section('bundles (esbuild, node22, esm, minified, mainFields module/main, everything incl. AWS SDK bundled)'),
  'workerBundleBytes',
  'plannerBundleBytes',
  section("cost per million short runs (USD, marginal, from the burst's measured counts)"),
  'costPerMillionRunsUsd',
  'costPerMillionRunsDynamoUsd',
  'costPerMillionRunsSqsUsd',
  'costPerMillionRunsLambdaUsd',
  section("cost per million sparse runs (one run per invocation, default job settings; from the trigger-lag phase's default-mode jobs)"),
  'costPerMillionSparseRunsUsd',
  'costPerMillionSparseRunsDynamoUsd',
  'costPerMillionSparseRunsSqsUsd',
  'costPerMillionSparseRunsLambdaUsd',
  'costPerMillionSparseRunsPrecisionUsd',
];

export function renderTable(mode: BenchMode, sizes: BenchSizes, f: Figures, targets: readonly TargetCheck[], d: Details): string {
  const byFigure = new Map(targets.map((t) => [t.figure, t]));
  const rows: [string, string, string, string][] = LAYOUT.map((line) => {
    if (typeof line !== 'string') return [`— ${line.section(sizes)}`, '', '', ''];
    const spec = FIGURE_BY_KEY.get(line);
    if (!spec?.label) throw new Error(`the table lays out ${line}, which the figure table has no label for`);
    const t = byFigure.get(line);
    const verdict = t ? (t.met === NA ? 'n/a' : t.met ? 'met' : 'MISSED') : '';
    const label = typeof spec.label === 'string' ? spec.label : spec.label(sizes);
    return [label, fmt(f[line]), t ? `${t.target} ${verdict}` : '', spec.note?.(f, d) ?? ''];
  });
  const body = rows.filter((r) => !r[0].startsWith('—'));
  const widths = [0, 1, 2].map((i) => Math.max(...body.map((r) => (r[i] ?? '').length)));
  const lines = rows.map((r) =>
    r[0].startsWith('—') ? r[0] : [r[0].padEnd(widths[0]!), r[1].padStart(widths[1]!), r[2].padEnd(widths[2]!), r[3]].join('  ').trimEnd(),
  );
  lines.unshift(
    `scheduler benchmark (${mode} mode, ${fmt(f.benchSeconds)} s, ${fmt(f.cpus)} CPUs, 1-min load average at phase starts ${JSON.stringify(d.load)})`,
  );
  lines.push(
    '',
    describePrices(),
    "fixed costs not in the per-run figure: one planner invocation per partition per minute; the event source mapping's empty polls.",
  );
  return lines.join('\n');
}
