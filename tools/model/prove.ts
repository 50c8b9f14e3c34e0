/**
 * Proving the tester (docs/testing.md): for each known defect class, run the generator with
 * only that class's violations counting, and record how many scenarios it took to find it and
 * how short the shrunk scenario is. A tester that cannot find a known bug is not done.
 */
import type { CheckViolation } from '../../shared/core/checker.js';
import { runModel } from './runner.js';
import type { ModelStack } from './world.js';

export interface DefectClass {
  readonly defect: number;
  readonly title: string;
  /** The violations that show this defect. */
  readonly shows: (violation: CheckViolation) => boolean;
}

const is = (...invariants: string[]) => (v: CheckViolation) => invariants.includes(v.invariant);

export const DEFECT_CLASSES: readonly DefectClass[] = [
  { defect: 1, title: 'coalesce supersedes a run by one not yet due', shows: is('superseded-by-due') },
  { defect: 2, title: 'active-run marker outlives its holder', shows: is('lane-not-blocked') },
  { defect: 3, title: 'fenced out by a newer slot: loops to DEAD instead of SUPERSEDED', shows: is('fenced-out-superseded') },
  { defect: 4, title: 'counter increment applied twice on an SDK retry', shows: is('no-double-apply') },
  { defect: 5, title: 'handler writes after its attempt ended', shows: is('no-late-fenced-write') },
  { defect: 6, title: 'failed outcome write: a takeover re-runs the finished handler', shows: is('no-rerun-after-success') },
  { defect: 7, title: 'own committed claim/completion read as someone else’s', shows: is('own-write-recognised') },
  { defect: 8, title: 'planner wedges when many jobs catch up', shows: is('watermark-caught-up') },
  { defect: 9, title: 'sweeper sees only the oldest page of open runs', shows: is('open-run-swept') },
  { defect: 10, title: 'plannerPartitions change drops slots / forgets pauses', shows: (v) => (v.invariant === 'no-lost-slot' || v.invariant === 'no-unexpected-run') && /partition/i.test(v.detail) },
  { defect: 13, title: 'redrive revives an unknown result without reconcile', shows: (v) => v.invariant === 'reconcile-before-rerun' && /redrive/.test(v.detail) },
];

export interface DefectProof {
  readonly defect: number;
  readonly title: string;
  readonly found: boolean;
  readonly scenariosToFailure?: number;
  readonly shrunkLength?: number;
  readonly seed: number;
  readonly path?: string;
  readonly example?: string;
}

export async function proveDefects(
  stack: ModelStack,
  options: { readonly seed: number; readonly scenarios: number; readonly defects?: readonly number[]; readonly concurrency: number; readonly log?: (line: string) => void },
): Promise<DefectProof[]> {
  const proofs: DefectProof[] = [];
  for (const defect of DEFECT_CLASSES.filter((d) => !options.defects || options.defects.includes(d.defect))) {
    options.log?.(`defect ${defect.defect}: ${defect.title}`);
    const summary = await runModel(stack, { scenarios: options.scenarios, seed: options.seed, concurrency: options.concurrency, counts: defect.shows, log: options.log });
    const first = [...summary.failures].sort((a, b) => a.scenariosToFailure - b.scenariosToFailure)[0];
    proofs.push({
      defect: defect.defect,
      title: defect.title,
      found: first !== undefined,
      scenariosToFailure: first?.scenariosToFailure,
      shrunkLength: first?.shrunkLength,
      seed: first?.seed ?? options.seed,
      path: first?.path,
      example: first ? `${first.violations[0]?.invariant}: ${first.violations[0]?.detail}` : undefined,
    });
  }
  return proofs;
}

export function formatProof(proofs: readonly DefectProof[]): string {
  const rows = proofs.map((p) => `| ${p.defect} | ${p.title} | ${p.found ? 'found' : 'NOT FOUND'} | ${p.scenariosToFailure ?? '-'} | ${p.shrunkLength ?? '-'} | ${p.found ? `--seed ${p.seed} --path ${p.path}` : '-'} |`);
  return ['| defect | class | result | scenarios to first failure | shrunk length | replay |', '| --- | --- | --- | --- | --- | --- |', ...rows].join('\n');
}
