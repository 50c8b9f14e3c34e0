/**
 * Runs the drills with a shared run budget and seed and sums them up: what `npm run chaos` prints
 * and what the short chaos test asserts on.
 */
import type { LocalEndpoints } from '../local-stack.js';
import type { DrillResult } from './drill.js';
import { DRILLS, type DrillEntry } from './drills/index.js';

export interface ChaosOptions {
  readonly base: LocalEndpoints;
  /** Runs in total across the drills. */
  readonly runs: number;
  readonly seed: number;
  /** Drill names or letters; default all six. */
  readonly drills?: readonly string[];
  /** Iterations per worker-fault drill that use real child processes. @default 2 */
  readonly childIterations?: number;
  /**
   * 1: one drill at a time (default: every drill has the machine, so its timing facts mean
   * something). 2: the waiting drills run beside the CPU-bound ones in this same process: faster,
   * but the in-process workers then share one event loop and DynamoDB Local with a saturating
   * drill, and late timers show up as lease losses, not as what the drill is about. @default 1
   */
  readonly concurrency?: 1 | 2;
  readonly log?: (line: string) => void;
}

export interface ChaosTotals {
  readonly runs: number;
  readonly violations: number;
  readonly faults: number;
  readonly takeovers: number;
  readonly fencingRejections: number;
  readonly durationMs: number;
  readonly seed: number;
  readonly childIterations: number;
  readonly violationsByKind: Readonly<Record<string, number>>;
}

export interface ChaosReport {
  readonly results: readonly DrillResult[];
  readonly totals: ChaosTotals;
}

export function selectDrills(names?: readonly string[]): DrillEntry[] {
  if (!names || names.length === 0) return [...DRILLS];
  return names.map((name) => {
    const entry = DRILLS.find((d) => d.name === name || d.letter === name);
    if (!entry) throw new Error(`unknown drill "${name}"; known: ${DRILLS.map((d) => `${d.letter}=${d.name}`).join(', ')}`);
    return entry;
  });
}

/** Splits `runs` by weight; every selected drill gets at least one run. */
export function allocate(entries: readonly DrillEntry[], runs: number): Map<DrillEntry, number> {
  const total = entries.reduce((n, e) => n + e.weight, 0);
  return new Map(entries.map((e) => [e, Math.max(1, Math.round((runs * e.weight) / total))]));
}

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const entries = selectDrills(options.drills);
  const budget = allocate(entries, options.runs);
  const run = (entry: DrillEntry) =>
    entry.drill({
      base: options.base,
      runs: budget.get(entry)!,
      seed: options.seed,
      childIterations: options.childIterations ?? 2,
      log: options.log,
    });
  const lanes = (options.concurrency ?? 1) === 2 ? [entries.filter((e) => !e.waits), entries.filter((e) => e.waits)] : [entries];
  const byDrill = new Map<DrillEntry, DrillResult>();
  await Promise.all(
    lanes.map(async (lane) => {
      for (const entry of lane) byDrill.set(entry, await run(entry));
    }),
  );
  return summarize(
    entries.map((e) => byDrill.get(e)!),
    options.seed,
    Date.now() - started,
  );
}

/** Totals over drill results (also used when each drill ran in its own process). */
export function summarize(results: readonly DrillResult[], seed: number, durationMs: number): ChaosReport {
  const violationsByKind: Record<string, number> = {};
  for (const r of results) for (const v of r.violations) violationsByKind[v.invariant] = (violationsByKind[v.invariant] ?? 0) + 1;
  const sum = (f: (r: DrillResult) => number) => results.reduce((n, r) => n + f(r), 0);
  return {
    results,
    totals: {
      runs: sum((r) => r.runs),
      violations: sum((r) => r.violations.length),
      faults: sum((r) => r.faults),
      takeovers: sum((r) => r.takeovers),
      fencingRejections: sum((r) => r.fencingRejections),
      durationMs,
      seed,
      childIterations: sum((r) => r.childIterations),
      violationsByKind,
    },
  };
}

/** The table `npm run chaos` prints (drill, runs, faults injected, takeovers, fencing rejections, violations). */
export function formatTable(report: ChaosReport): string {
  const header = ['drill', 'runs', 'faults injected', 'takeovers', 'fencing rejections', 'violations', 'iterations', 'seconds'];
  const rows = report.results.map((r) => {
    const letter = DRILLS.find((d) => d.name === r.drill)?.letter ?? '?';
    return [
      `${letter}) ${r.drill}`,
      r.runs,
      r.faults,
      r.takeovers,
      r.fencingRejections,
      r.violations.length,
      `${r.iterations}${r.childIterations ? ` (${r.childIterations} child)` : ''}`,
      (r.durationMs / 1000).toFixed(1),
    ].map(String);
  });
  const t = report.totals;
  rows.push(['total', t.runs, t.faults, t.takeovers, t.fencingRejections, t.violations, '', (t.durationMs / 1000).toFixed(1)].map(String));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    line(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...rows.slice(0, -1).map(line),
    widths.map((w) => '-'.repeat(w)).join('  '),
    line(rows[rows.length - 1]!),
  ].join('\n');
}

/** Facts and observations per drill, and the first violations, after the table. */
export function formatDetails(report: ChaosReport, maxViolations = 25): string {
  const out: string[] = [];
  for (const r of report.results) {
    const facts = Object.entries(r.facts)
      .map(([k, v]) => `${k}=${Number.isFinite(v) ? Math.round(v * 100) / 100 : v}`)
      .join(' ');
    out.push(`${r.drill}: ${facts}`);
    for (const o of r.observations) out.push(`  observed: ${o}`);
  }
  const violations = report.results.flatMap((r) => r.violations.map((v) => ({ drill: r.drill, ...v })));
  if (violations.length > 0) {
    out.push('', `violations (${violations.length}${violations.length > maxViolations ? `, first ${maxViolations}` : ''}):`);
    for (const v of violations.slice(0, maxViolations))
      out.push(`  ${v.drill} #${v.iteration} [${v.invariant}] ${v.runKey}: ${v.detail.split('\n')[0]}`);
  }
  return out.join('\n');
}
