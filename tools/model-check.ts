/**
 * `npm run model-check`: runs Spin on the lane model (models/lanes.pml) in each of its fault
 * profiles (they must verify: no error), and on each put-back hazard (each must give a
 * counterexample). Prints a table, then one JSON line:
 *   {"models":N,"states":S,"depth":D,"errors":E,"hazardsFound":"k/n"}
 * states: the sum of states stored over every run; depth: the maximum depth reached; errors: the
 * errors found in the profiles (must be 0). Exit 0 only when errors is 0 and k = n.
 */
import { execFile, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MODEL = join(root, 'models', 'lanes.pml');

/** No faults but those named: each profile adds some, small enough to search exhaustively. */
const NONE = ['-DLOSSES=0', '-DDUPS=0', '-DPAUSES=0', '-DRETRIES=0', '-DOPS=0'];

type Mode = 'safety' | 'liveness';
interface Check {
  readonly name: string;
  readonly defines: readonly string[];
  readonly mode: Mode;
  /** A hazard put back: Spin must print a counterexample. */
  readonly hazard?: true;
}

const profile = (name: string, mode: Mode, ...faults: string[]): Check => ({ name, mode, defines: [...NONE, ...faults] });
const hazard = (name: string, mode: Mode, ...defines: string[]): Check => ({ name, mode, defines: [...NONE, ...defines], hazard: true });

export const CHECKS: readonly Check[] = [
  profile('backfill+advance', 'safety'),
  profile('backfill+advance', 'liveness'),
  profile('lost response', 'safety', '-DLOSSES=1', '-DNOBACKFILL'),
  profile('lost response', 'liveness', '-DLOSSES=1', '-DNOBACKFILL'),
  profile('duplicate', 'safety', '-DDUPS=1', '-DNOBACKFILL'),
  profile('retry outcome', 'safety', '-DRETRIES=1', '-DNOBACKFILL'),
  profile('pause+takeover', 'safety', '-DPAUSES=1', '-DNOBACKFILL'),
  profile('operator', 'safety', '-DOPS=1', '-DNOBACKFILL'),
  profile('crash', 'safety', '-DCRASH', '-DNOBACKFILL'),
  hazard('giving way: look before the release', 'liveness', '-DHAZARD_LOOK_BEFORE_RELEASE'),
  hazard('refused release never looks', 'liveness', '-DHAZARD_REFUSED_NO_LOOK', '-DLOSSES=1', '-DNOBACKFILL'),
  hazard('lowerFloor before the put', 'safety', '-DHAZARD_LOWER_BEFORE_PUT'),
  hazard('advanceFloor without lastWrite', 'safety', '-DHAZARD_ADVANCE_UNCONDITIONAL'),
  hazard('older run open: ack without release', 'liveness', '-DHAZARD_ACK_WITHOUT_RELEASE'),
  hazard('outcome without fence', 'safety', '-DHAZARD_UNFENCED_OUTCOME', '-DPAUSES=1', '-DRETRIES=1', '-DNOBACKFILL'),
  hazard('no confirm under the claim', 'safety', '-DHAZARD_NO_CONFIRM', '-DDUPS=1', '-DOPS=1', '-DNOBACKFILL'),
  hazard('leased: release whatever take holds', 'safety', '-DHAZARD_LEASED_RELEASES_ANY', '-DDUPS=1', '-DOPS=1', '-DNOBACKFILL'),
  hazard('order check before the claim', 'safety', '-DHAZARD_CHECK_BEFORE_CLAIM', '-DDUPS=1', '-DOPS=1', '-DNOBACKFILL'),
  hazard("order check on the take's floor", 'safety', '-DHAZARD_OLD_FLOOR', '-DOPS=1', '-DNOBACKFILL'),
  hazard('release names the run, not the incarnation', 'safety', '-DHAZARD_UNTOKENED_RELEASE', '-DOPS=1', '-DNOBACKFILL'),
  hazard('as written: lowerFloor writes nothing on an absent floor', 'safety', '-DASWRITTEN_LOWER', '-DOPS=1', '-DNOBACKFILL'),
];

export interface Result {
  readonly check: Check;
  readonly states: number;
  readonly depth: number;
  readonly errors: number;
  readonly seconds: number;
  /** What Spin reported first: the violated assertion, or an acceptance cycle. */
  readonly finding: string;
}

function num(text: string, pattern: RegExp): number {
  const m = pattern.exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

const run = promisify(execFile);

export async function runCheck(check: Check): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'model-check-'));
  try {
    copyFileSync(MODEL, join(dir, 'lanes.pml'));
    await run('spin', ['-a', ...check.defines, 'lanes.pml'], { cwd: dir });
    const cflags = check.mode === 'safety' ? ['-DSAFETY', '-DNOCLAIM'] : [];
    await run('gcc', ['-w', '-O2', '-DCOLLAPSE', '-DMEMLIM=3000', ...cflags, '-o', 'pan', 'pan.c'], { cwd: dir });
    const args = check.mode === 'safety' ? ['-m1000000'] : ['-m1000000', '-a', '-f'];
    // pan exits non-zero when it finds an error: that is a result here, read from its output.
    const pan = await run('./pan', args, { cwd: dir, maxBuffer: 64 * 1024 * 1024 }).catch((error: unknown) => {
      if (error instanceof Error && 'stdout' in error && typeof error.stdout === 'string')
        return { stdout: error.stdout, stderr: 'stderr' in error ? String(error.stderr) : '' };
      throw error;
    });
    const out = `${pan.stdout}${pan.stderr}`;
    const errors = num(out, /errors: (\d+)/);
    if (Number.isNaN(errors)) throw new Error(`${check.name} (${check.mode}): pan printed no result:\n${out.slice(-2000)}`);
    const first = /^pan:1: (.*)$/m.exec(out)?.[1] ?? '';
    return {
      check,
      states: num(out, /(\d+) states, stored/),
      depth: num(out, /depth reached (\d+)/),
      errors,
      seconds: num(out, /elapsed time ([\d.e+]+) seconds/),
      finding: first.replace(/\s+/g, ' ').slice(0, 90),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs the checks `width` at a time (each pan is single-threaded), resolving in the checks' order
 * so the table reads the same however the runs interleave.
 */
async function runAll(checks: readonly Check[], width: number, each: (r: Result) => void): Promise<Result[]> {
  const started: Promise<Result>[] = [];
  // When a check settles, the next one starts in its place: `width` run at a time.
  const startNext = (): void => {
    if (started.length >= checks.length) return;
    const p = runCheck(checks[started.length]!);
    started.push(p);
    p.then(startNext, startNext);
  };
  for (let i = 0; i < Math.max(1, width); i += 1) startNext();
  const rows: Result[] = [];
  for (let i = 0; i < checks.length; i += 1) {
    // Check i starts when check i - width settles, before this loop's await of check i - 1 resumes.
    const p = started[i];
    if (!p) throw new Error(`model-check: check ${i} was not started`);
    const r = await p;
    rows.push(r);
    each(r);
  }
  return rows;
}

async function main(): Promise<void> {
  const spin = spawnSync('spin', ['-V'], { encoding: 'utf8' });
  if (spin.error || spin.status !== 0) {
    console.error('model-check: spin not found (Debian/Ubuntu: apt-get install -y spin)');
    process.exit(2);
  }
  // `npm run model-check -- <text>` runs only the checks whose name contains it (`hazards`: the
  // hazards); the JSON line then covers those only.
  const only = process.argv[2];
  const checks = CHECKS.filter((c) => !only || (only === 'hazards' ? c.hazard : c.name.includes(only)));
  // Each pan is single-threaded: one per core (MODEL_CHECK_JOBS overrides).
  const width = Number(process.env.MODEL_CHECK_JOBS ?? availableParallelism());
  const rows = await runAll(checks, width, (r) => {
    const check = r.check;
    const verdict = check.hazard ? (r.errors > 0 ? 'FOUND' : 'MISSED') : r.errors === 0 ? 'ok' : 'ERROR';
    console.log(
      [
        (check.hazard ? 'hazard ' : 'model  ') + check.name.padEnd(56),
        check.mode.padEnd(8),
        String(r.states).padStart(9),
        String(r.depth).padStart(6),
        `${r.seconds.toFixed(1)}s`.padStart(7),
        verdict.padEnd(6),
        r.finding,
      ].join(' '),
    );
  });
  const models = rows.filter((r) => !r.check.hazard);
  const hazards = rows.filter((r) => r.check.hazard);
  const summary = {
    models: models.length,
    states: rows.reduce((n, r) => n + r.states, 0),
    depth: Math.max(...rows.map((r) => r.depth)),
    errors: models.reduce((n, r) => n + r.errors, 0),
    hazardsFound: `${hazards.filter((r) => r.errors > 0).length}/${hazards.length}`,
  };
  console.log(JSON.stringify(summary));
  const allFound = hazards.every((r) => r.errors > 0);
  process.exit(summary.errors === 0 && allFound ? 0 : 1);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
