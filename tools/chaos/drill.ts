/**
 * What a drill is and how its iterations add up. A drill is a function of (base endpoints, run
 * budget, seed) that repeats randomized iterations until it has exercised `runs` runs, each
 * iteration on its own sandbox, and reports faults injected, takeovers, fencing rejections,
 * violations (the checker's five invariants and the drill's own facts), facts and observations.
 */
import type { CheckResult } from '../verify/checker.js';
import type { LocalEndpoints } from '../local-stack.js';
import { Rng, hash32 } from './rng.js';

export interface DrillViolation {
  /** One of the five invariants, or a drill-specific fact (e.g. `catch-up-rate`). */
  readonly invariant: string;
  readonly runKey: string;
  readonly detail: string;
}

export interface DrillOptions {
  readonly base: LocalEndpoints;
  /** Runs to exercise in total (each iteration adds the runs it created). */
  readonly runs: number;
  readonly seed: number;
  /** Iterations (the first ones) that use worker child processes where the drill has them. @default 1 */
  readonly childIterations?: number;
  /** Stop after this many iterations even below `runs`. */
  readonly maxIterations?: number;
  readonly log?: (line: string) => void;
}

export interface IterationReport {
  readonly runs: number;
  readonly faults: number;
  readonly violations: readonly DrillViolation[];
  readonly check?: CheckResult;
  /** Default: the checker's count of claims taken from RUNNING. */
  readonly takeovers?: number;
  /** Default: the checker's count of fenced-out writes. */
  readonly fencingRejections?: number;
  /** Summed across iterations; keys starting with `max` keep the maximum. */
  readonly facts?: Readonly<Record<string, number>>;
  readonly observations?: readonly string[];
}

export interface DrillResult {
  readonly drill: string;
  readonly runs: number;
  readonly iterations: number;
  readonly childIterations: number;
  readonly faults: number;
  readonly takeovers: number;
  readonly fencingRejections: number;
  readonly violations: readonly (DrillViolation & { readonly iteration: number })[];
  readonly facts: Readonly<Record<string, number>>;
  readonly observations: readonly string[];
  readonly durationMs: number;
}

export interface IterationContext {
  readonly index: number;
  readonly rng: Rng;
  /** Runs still wanted by the drill. */
  readonly budget: number;
  /** Use child processes in this iteration. */
  readonly child: boolean;
  readonly seed: number;
}

export type Drill = (options: DrillOptions) => Promise<DrillResult>;

export async function iterate(
  name: string,
  options: DrillOptions,
  body: (ctx: IterationContext) => Promise<IterationReport>,
  /** Whether the drill has a child-process variant at all. */
  hasChildVariant = false,
): Promise<DrillResult> {
  const started = Date.now();
  const rng = new Rng(hash32(`${options.seed}:${name}`));
  const childIterations = hasChildVariant ? (options.childIterations ?? 1) : 0;
  let runs = 0;
  let iterations = 0;
  let children = 0;
  let faults = 0;
  let takeovers = 0;
  let fencingRejections = 0;
  let failuresInARow = 0;
  const violations: (DrillViolation & { iteration: number })[] = [];
  const facts: Record<string, number> = {};
  const observations = new Set<string>();
  while (runs < options.runs && (options.maxIterations === undefined || iterations < options.maxIterations)) {
    const index = iterations++;
    const child = index < childIterations;
    if (child) children++;
    const iterationRng = rng.fork(index);
    let report: IterationReport;
    try {
      report = await body({
        index,
        rng: iterationRng,
        budget: options.runs - runs,
        child,
        seed: hash32(`${options.seed}:${name}:${index}`),
      });
      failuresInARow = 0;
    } catch (error) {
      failuresInARow++;
      report = {
        runs: 0,
        faults: 0,
        violations: [
          { invariant: 'drill-error', runKey: '-', detail: error instanceof Error ? (error.stack ?? error.message) : String(error) },
        ],
      };
    }
    runs += report.runs;
    faults += report.faults;
    takeovers += report.takeovers ?? report.check?.stats.takeovers ?? 0;
    fencingRejections += report.fencingRejections ?? report.check?.stats.fencedOut ?? 0;
    for (const v of report.violations) violations.push({ ...v, iteration: index });
    for (const [key, value] of Object.entries(report.facts ?? {})) {
      if (key.startsWith('max')) facts[key] = Math.max(facts[key] ?? -Infinity, value);
      else facts[key] = (facts[key] ?? 0) + value;
    }
    for (const o of report.observations ?? []) observations.add(o);
    options.log?.(
      `${name} #${index}${child ? ' (child process)' : ''}: ${report.runs} runs, ${report.faults} faults, ${report.violations.length} violations (${runs}/${options.runs})`,
    );
    for (const v of report.violations.slice(0, 5)) options.log?.(`  [${v.invariant}] ${v.runKey}: ${v.detail.split('\n')[0]}`);
    if (failuresInARow >= 3) break;
  }
  return {
    drill: name,
    runs,
    iterations,
    childIterations: children,
    faults,
    takeovers,
    fencingRejections,
    violations,
    facts,
    observations: [...observations],
    durationMs: Date.now() - started,
  };
}

/** Violations of the five invariants from a checker result, for an iteration report. */
export function invariantViolations(check: CheckResult): DrillViolation[] {
  return check.violations.map((v) => ({ invariant: v.invariant, runKey: v.runKey, detail: v.detail }));
}

/** Timing breadcrumbs for slow drills: set CHAOS_TRACE=1. */
export function tracer(label: string, log?: (line: string) => void): (step: string) => void {
  if (!process.env.CHAOS_TRACE) return () => undefined;
  let last = Date.now();
  return (step) => {
    const now = Date.now();
    (log ?? console.error)(`  ${label} ${step}: ${now - last} ms`);
    last = now;
  };
}

/** One line per violation of a drill result (for assertion messages). */
export function describeViolations(result: DrillResult): string {
  return result.violations.map((v) => `#${v.iteration} [${v.invariant}] ${v.runKey}: ${v.detail}`).join('\n') || 'none';
}
