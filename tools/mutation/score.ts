/**
 * Mutation scores per file and per area from Stryker's JSON report (reports/mutation/mutation.json),
 * checked against each area's floor: Stryker's own `thresholds.break` is one number for the whole
 * run, and the floors differ (the pure core is held higher than the adapters).
 *
 *   npx tsx tools/mutation/score.ts [--markdown] [report.json]
 *
 * Exits 1 when an area is below its floor. Score = detected / (detected + survived + no coverage),
 * detected = killed + timed out, as Stryker counts it; ignored mutants and ones that do not compile
 * are left out.
 */
import { readFileSync } from 'node:fs';

interface Mutant {
  readonly status: 'Killed' | 'Survived' | 'NoCoverage' | 'Timeout' | 'CompileError' | 'RuntimeError' | 'Ignored' | 'Pending';
}

interface Report {
  readonly files: Record<string, { readonly mutants: readonly Mutant[] }>;
}

/** The worker's files under mutation (stryker.config.json): the attempt, its heartbeat and outcome, the lanes. */
const WORKER_MUTATED: readonly string[] = ['attempt', 'heartbeat', 'outcome', 'lanes', 'run-ended'].map(
  (name) => `shared/worker/${name}.ts`,
);

/** The floors (docs/testing.md, Mutation testing): an area's score must stay at or above its floor. */
export const AREAS = [
  { name: 'shared/core', floor: 90, matches: (file: string) => file.startsWith('shared/core/') },
  { name: 'store (conditions)', floor: 80, matches: (file: string) => file.startsWith('shared/store/') },
  { name: 'worker (outcome, heartbeat, lanes)', floor: 80, matches: (file: string) => WORKER_MUTATED.includes(file) },
] as const;

export interface Tally {
  readonly killed: number;
  readonly timeout: number;
  readonly survived: number;
  readonly noCoverage: number;
  readonly ignored: number;
}

export function tally(mutants: readonly Mutant[]): Tally {
  const count = (status: Mutant['status']) => mutants.filter((m) => m.status === status).length;
  return {
    killed: count('Killed'),
    timeout: count('Timeout'),
    survived: count('Survived'),
    noCoverage: count('NoCoverage'),
    ignored: count('Ignored'),
  };
}

export function score(t: Tally): number {
  const detected = t.killed + t.timeout;
  const valid = detected + t.survived + t.noCoverage;
  return valid === 0 ? 100 : (100 * detected) / valid;
}

function sum(tallies: readonly Tally[]): Tally {
  return tallies.reduce(
    (a, b) => ({
      killed: a.killed + b.killed,
      timeout: a.timeout + b.timeout,
      survived: a.survived + b.survived,
      noCoverage: a.noCoverage + b.noCoverage,
      ignored: a.ignored + b.ignored,
    }),
    {
      killed: 0,
      timeout: 0,
      survived: 0,
      noCoverage: 0,
      ignored: 0,
    },
  );
}

function main(): void {
  const args = process.argv.slice(2);
  const markdown = args.includes('--markdown');
  const path = args.find((a) => !a.startsWith('--')) ?? 'reports/mutation/mutation.json';
  const report = JSON.parse(readFileSync(path, 'utf8')) as Report;
  const files = Object.entries(report.files)
    .map(([file, { mutants }]) => ({ file: file.replace(/^.*?(?=shared\/)/, ''), t: tally(mutants) }))
    .sort((a, b) => a.file.localeCompare(b.file));
  const row = (name: string, t: Tally) =>
    markdown
      ? `| ${name} | ${score(t).toFixed(1)} | ${t.killed} | ${t.timeout} | ${t.survived} | ${t.noCoverage} |`
      : `${name.padEnd(44)} ${score(t).toFixed(1).padStart(6)}  killed ${t.killed}, timeout ${t.timeout}, survived ${t.survived}, no coverage ${t.noCoverage}`;
  if (markdown) console.log('| file | score % | killed | timed out | survived | no coverage |\n| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const { file, t } of files) console.log(row(`\`${file}\``.replace(/`/g, markdown ? '`' : ''), t));
  let failed = false;
  for (const area of AREAS) {
    const t = sum(files.filter((f) => area.matches(f.file)).map((f) => f.t));
    // A report that did not mutate this area (a run scoped with --mutate) says nothing about it.
    if (t.killed + t.timeout + t.survived + t.noCoverage === 0) {
      console.log(
        markdown
          ? `| **${area.name}** (floor ${area.floor} %) | not measured | | | | |`
          : `${`${area.name} (floor ${area.floor} %)`.padEnd(44)}   not measured`,
      );
      continue;
    }
    const s = score(t);
    const verdict = s >= area.floor ? 'ok' : 'BELOW FLOOR';
    if (s < area.floor) failed = true;
    console.log(
      markdown
        ? row(`**${area.name}** (floor ${area.floor} %)`, t)
        : `${`${area.name} (floor ${area.floor} %)`.padEnd(44)} ${s.toFixed(1).padStart(6)}  ${verdict}`,
    );
  }
  if (failed) {
    console.error('mutation score below an area floor: see docs/testing.md, Mutation testing');
    process.exitCode = 1;
  }
}

main();
