/**
 * Proving the tester (docs/testing.md): for each known defect class, a small patch in
 * tools/model/defects/ puts the defect back into the fixed code. `--prove` applies each patch to a
 * scratch git worktree of HEAD (outside the repository, under the OS temp directory), runs the
 * model there with a fixed seed until its first violation of that defect's class (bounded
 * scenarios), and reports how many scenarios it took and how short the shrunk scenario is; then
 * it removes the worktree. A tester that cannot find a known defect within the bound is not done.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandMix, FaultProfiles, JobMix } from './commands.js';
import { DIRECTED } from './directed.js';

export interface DefectClass {
  readonly defect: number;
  /** The patch file in tools/model/defects/ (without `.patch`). */
  readonly patch: string;
  readonly title: string;
  /** The invariants that show this defect: only their violations count in its proof. */
  readonly shows: readonly string[];
}

export const DEFECT_CLASSES: readonly DefectClass[] = [
  {
    defect: 1,
    patch: '01-coalesce-not-due',
    title: 'coalesce supersedes a due run in favour of one not yet due',
    shows: ['superseded-by-due'],
  },
  {
    defect: 2,
    patch: '02-stale-lane-marker',
    title: 'the active-run marker outlives its holder',
    shows: ['lane-not-blocked', 'no-lost-slot'],
  },
  {
    defect: 3,
    patch: '03-fenced-out-loops',
    title: 'fenced out by a newer slot: loops to DEAD instead of SUPERSEDED',
    shows: ['fenced-out-superseded'],
  },
  {
    defect: 4,
    patch: '04-increment-twice',
    title: 'a counter increment applied twice on an SDK retry after a lost response',
    shows: ['no-double-apply'],
  },
  { defect: 5, patch: '05-late-ctx-write', title: "a handler's ctx writes land after its attempt ended", shows: ['no-late-fenced-write'] },
  {
    defect: 6,
    patch: '06-outcome-write-gives-up',
    title: 'a failed outcome write re-runs a finished handler',
    shows: ['no-rerun-after-success', 'reconcile-before-rerun'],
  },
  {
    defect: 7,
    patch: '07-own-write-not-recognised',
    title: "a lost claim or completion response taken for someone else's lease",
    shows: ['own-write-recognised'],
  },
  {
    defect: 8,
    patch: '08-catch-up-expression',
    title: 'the planner wedges when ~90 jobs of a partition catch up (4 KB expression)',
    shows: ['watermark-caught-up'],
  },
  {
    defect: 9,
    patch: '09-sweep-oldest-100',
    title: 'the sweeper sees only the 100 oldest open runs of the table',
    shows: ['open-run-swept', 'no-lost-slot'],
  },
  { defect: 10, patch: '10-relayout-at-now', title: 'changing plannerPartitions drops slots', shows: ['no-lost-slot'] },
  {
    defect: 13,
    patch: '13-revive-ready',
    title: 'a revived run forgets that its last result was unknown (no reconcile)',
    shows: ['reconcile-before-rerun'],
  },
  {
    defect: 15,
    patch: '15-retry-skipped-without-history',
    title: 'ops retry of a slot created terminal (SKIPPED, no attempt history): every outcome write rejected, the run stuck',
    shows: ['no-expired-running', 'no-lost-slot', 'no-looping-message', 'open-run-swept', 'lane-not-blocked'],
  },
  // Issue 30's defects, put back one at a time (numbered 30N: its point N).
  {
    defect: 301,
    patch: '301-maxruns-frozen',
    title: "maxRuns frozen at the job's first planning: a raised bound plans no more runs",
    shows: ['max-runs-exact'],
  },
  {
    defect: 302,
    patch: '302-message-checked-against-current-shards',
    title: "a run's message checked against the job's current shards: runs created before a change of shards are refused for good",
    shows: ['no-lost-slot', 'one-run-per-slot', 'run-message-accepted'],
  },
  {
    defect: 303,
    patch: '303-yield-reuses-message',
    title: "a yield with progress re-uses its message: a long run's invocations use up maxReceiveCount and land it in the DLQ",
    shows: ['yield-never-dlq'],
  },
  {
    defect: 304,
    patch: '304-no-replan-after-config-change',
    title: "a job added or changed loses its slots before the partition's watermark",
    shows: ['no-lost-slot'],
  },
  {
    defect: 306,
    patch: '306-deadline-from-slot',
    title: "a backfilled or manual run's deadline counted from its slot: refused before it ever ran",
    shows: ['created-runs-run'],
  },
];

/** The line a `--counts` child run prints for its first failure (then the usual JSON line). */
export const FIRST_FAILURE_PREFIX = 'MODEL_FIRST_FAILURE ';

export interface FirstFailure {
  readonly scenariosToFailure: number;
  readonly shrunkLength: number;
  readonly seed: number;
  readonly path: string;
  readonly invariant: string;
  readonly detail: string;
}

export interface DefectProof {
  readonly defect: number;
  readonly title: string;
  /**
   * Whether the class's directed scenario (directed.ts) trips its invariants in the patched tree:
   * the patch puts the defect back and the checker names it. Undefined: no directed scenario.
   */
  readonly directed?: boolean;
  readonly found: boolean;
  /** Scenarios run (all lanes) when the first violation of the class was seen. */
  readonly scenariosToFailure?: number;
  readonly shrunkLength?: number;
  /** Scenarios run in all (the bound when not found). */
  readonly scenarios: number;
  readonly seed: number;
  readonly path?: string;
  readonly example?: string;
  readonly durationMs: number;
  /** Why the proof could not run (the patch does not apply, the child failed). */
  readonly error?: string;
}

export interface ProveOptions {
  readonly seed: number;
  /** Scenarios per defect at most. */
  readonly scenarios: number;
  readonly defects?: readonly number[];
  readonly concurrency: number;
  readonly maxCommands?: number;
  /** Shrink runs per defect at most. @default 60 */
  readonly shrinkBudget?: number;
  /** Which commands the search draws from (commands.ts). @default the runner's */
  readonly commandMix?: CommandMix;
  /** Which fault profiles the search draws (commands.ts). @default the CLI's */
  readonly faultProfiles?: FaultProfiles;
  /** Which jobs the search configures (commands.ts). @default the CLI's */
  readonly jobMix?: JobMix;
  readonly log?: (line: string) => void;
}

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

function git(cwd: string, args: readonly string[]): { ok: boolean; out: string } {
  const result = spawnSync('git', args, { cwd, encoding: 'utf8' });
  return { ok: result.status === 0, out: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() };
}

/** Runs the model in `dir` (a child process with its own local stack); resolves with its output. */
function runChild(dir: string, args: readonly string[], log?: (line: string) => void): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(dir, 'tools', 'chaos.ts'), '--model', ...args], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) if (/^(lane|…|model:)/.test(line)) log?.(`  ${line}`);
  });
  const forward = () => child.kill('SIGTERM');
  process.once('SIGINT', forward);
  return new Promise((resolve) => {
    child.once('exit', (code) => {
      process.off('SIGINT', forward);
      resolve({ code, stdout });
    });
  });
}

async function proveOne(defect: DefectClass, options: ProveOptions): Promise<DefectProof> {
  const started = Date.now();
  const base = { defect: defect.defect, title: defect.title, seed: options.seed, scenarios: 0 };
  const patch = join(repoRoot, 'tools', 'model', 'defects', `${defect.patch}.patch`);
  if (!existsSync(patch)) return { ...base, found: false, durationMs: 0, error: `no patch ${patch}` };
  const dir = mkdtempSync(join(tmpdir(), `model-prove-${defect.defect}-`));
  try {
    const added = git(repoRoot, ['worktree', 'add', '--detach', dir, 'HEAD']);
    if (!added.ok) return { ...base, found: false, durationMs: Date.now() - started, error: `git worktree add: ${added.out}` };
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
    const applied = git(dir, ['apply', patch]);
    if (!applied.ok)
      return { ...base, found: false, durationMs: Date.now() - started, error: `the patch does not apply to HEAD: ${applied.out}` };
    let directed: boolean | undefined;
    if (DIRECTED[defect.defect]) {
      const shown = await runChild(dir, [
        '--directed',
        String(defect.defect),
        '--counts',
        defect.shows.join(','),
        '--quiet',
        '--seed',
        '1',
      ]);
      const line = shown.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .at(-1);
      directed = line ? (JSON.parse(line) as { violations: number }).violations > 0 : false;
      options.log?.(
        `  directed scenario (${DIRECTED[defect.defect]!.title}): ${directed ? 'shows the defect' : 'DOES NOT show the defect'}`,
      );
    }
    const args = [
      '--scenarios',
      String(options.scenarios),
      '--seed',
      String(options.seed),
      '--concurrency',
      String(options.concurrency),
      '--counts',
      defect.shows.join(','),
      '--shrink-budget',
      String(options.shrinkBudget ?? 60),
    ];
    if (options.maxCommands !== undefined) args.push('--max-commands', String(options.maxCommands));
    if (options.commandMix !== undefined) args.push('--command-mix', options.commandMix);
    if (options.faultProfiles !== undefined) args.push('--fault-profiles', options.faultProfiles);
    if (options.jobMix !== undefined) args.push('--job-mix', options.jobMix);
    const { stdout } = await runChild(dir, args, options.log);
    const lines = stdout.split('\n');
    const summary = lines.filter((l) => l.startsWith('{')).at(-1);
    const scenarios = summary ? (JSON.parse(summary) as { scenarios: number }).scenarios : 0;
    const failureLine = lines.find((l) => l.startsWith(FIRST_FAILURE_PREFIX));
    if (!summary)
      return {
        ...base,
        directed,
        found: false,
        durationMs: Date.now() - started,
        error: `the model run printed no summary:\n${stdout.slice(-2_000)}`,
      };
    if (!failureLine) return { ...base, directed, scenarios, found: false, durationMs: Date.now() - started };
    const failure = JSON.parse(failureLine.slice(FIRST_FAILURE_PREFIX.length)) as FirstFailure;
    return {
      ...base,
      directed,
      scenarios,
      found: true,
      scenariosToFailure: failure.scenariosToFailure,
      shrunkLength: failure.shrunkLength,
      seed: failure.seed,
      path: failure.path,
      example: `${failure.invariant}: ${failure.detail}`,
      durationMs: Date.now() - started,
    };
  } finally {
    git(repoRoot, ['worktree', 'remove', '--force', dir]);
    rmSync(dir, { recursive: true, force: true });
    git(repoRoot, ['worktree', 'prune']);
  }
}

export async function proveDefects(options: ProveOptions): Promise<DefectProof[]> {
  const proofs: DefectProof[] = [];
  // In the order asked for (the most wanted first, when time is short).
  const chosen = options.defects ? options.defects.flatMap((n) => DEFECT_CLASSES.filter((d) => d.defect === n)) : DEFECT_CLASSES;
  for (const defect of chosen) {
    options.log?.(`defect ${defect.defect} (${defect.patch}): ${defect.title}`);
    const proof = await proveOne(defect, options);
    options.log?.(
      proof.found
        ? `  found after ${proof.scenariosToFailure} scenario(s), shrunk to ${proof.shrunkLength} command(s): ${proof.example?.slice(0, 200)}`
        : `  NOT FOUND in ${proof.scenarios} scenario(s)${proof.error ? `: ${proof.error}` : ''}`,
    );
    proofs.push(proof);
  }
  return proofs;
}

export function formatProof(proofs: readonly DefectProof[]): string {
  const rows = proofs.map(
    (p) =>
      `| ${p.defect} | ${p.title} | ${p.directed === undefined ? '-' : p.directed ? 'shown' : 'NOT SHOWN'} | ${p.found ? 'found' : 'NOT FOUND'} | ${p.scenariosToFailure ?? `> ${p.scenarios}`} | ${p.shrunkLength ?? '-'} | ${p.found ? `--seed ${p.seed} --path ${p.path}` : (p.error ?? '-')} |`,
  );
  return [
    '| defect | class | directed scenario | search | scenarios to first failure | shrunk length | replay (in the patched tree) |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}
