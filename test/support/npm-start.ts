/**
 * `npm start` as a real child process for the tests: on a temporary endpoints file (so its lock and
 * endpoints never meet another engineer's or test's runtime), with every process it started found
 * from /proc, and anything a failed test left behind ended by the pids it recorded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pidAlive } from '../../tools/local-lock.js';
import { PROJECT_ROOT } from '../../tools/local-stack.js';
import { waitFor } from './helpers.js';

/** Generous: Java starting on a loaded 2-core machine; only there to catch a hang. */
export const UP_TIMEOUT_MS = 180_000;
/** How long a stop may take before the test calls it a leak (the runtime stops in seconds). */
export const STOP_TIMEOUT_MS = 60_000;

/** A fresh endpoints file path in a temporary folder of its own. */
export function tempEndpoints(prefix: string): string {
  return join(mkdtempSync(join(tmpdir(), `${prefix}-`)), 'endpoints.json');
}

/** The parent pid of every process now, from /proc/<pid>/stat (its fourth field, after the command in parentheses). */
function parentPids(): Map<number, number> {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(name), ppid);
    } catch {
      // Gone between the listing and the read: not a descendant any more.
    }
  }
  return parents;
}

/** Every live descendant of `pid` (children, their children, …). */
export function descendants(pid: number): number[] {
  const parents = parentPids();
  const found: number[] = [];
  const frontier = [pid];
  while (frontier.length > 0) {
    const current = frontier.pop()!;
    for (const [child, parent] of parents) {
      if (parent === current && !found.includes(child)) {
        found.push(child);
        frontier.push(child);
      }
    }
  }
  return found;
}

export interface NpmStart {
  readonly child: ChildProcess;
  readonly endpoints: string;
  output(): string;
  /** Resolves with npm's exit code (or the signal that ended it). */
  readonly exited: Promise<number | NodeJS.Signals>;
}

/** Spawns `npm start -- <args> --endpoints <endpoints>` in a process group of its own. */
export function npmStart(endpoints: string, args: readonly string[] = ['--tick', '5', '--workers', '1']): NpmStart {
  const env = { ...process.env };
  delete env.npm_config_loglevel;
  const child = spawn('npm', ['start', '--', ...args, '--endpoints', endpoints], {
    cwd: PROJECT_ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, endpoints, output: () => output, exited };
}

export interface Up {
  /** The runtime's own pid and DynamoDB Local's, from the line `npm start` prints once up. */
  readonly runtimePid: number;
  readonly javaPid: number;
}

/** Waits for the "local stack up" line and, unless `stackOnly`, the jobs line that follows it. */
export async function whenUp(start: NpmStart, stackOnly = false): Promise<Up> {
  const up = await waitFor(
    async () => {
      const match = /local stack up \(npm start pid (\d+)\): DynamoDB Local \S+ \(pid (\d+)\)/.exec(start.output());
      return match && (stackOnly || /\njobs: /.test(start.output()))
        ? { runtimePid: Number(match[1]), javaPid: Number(match[2]) }
        : undefined;
    },
    UP_TIMEOUT_MS,
    `npm start to be up (output: ${start.output().slice(-2_000)})`,
  );
  return up;
}

/** Waits until none of `pids` is alive. */
export async function allGone(pids: readonly number[], what: string, output: () => string): Promise<void> {
  await waitFor(
    async () => (pids.every((pid) => !pidAlive(pid)) ? true : undefined),
    STOP_TIMEOUT_MS,
    `${what}: still alive ${pids.filter(pidAlive).join(', ')} (output: ${output().slice(-2_000)})`,
  );
}

/** Ends what a failed test left: the pids it recorded, never anything else. */
export function endRecorded(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      if (pidAlive(pid)) process.kill(pid, 'SIGKILL');
    } catch (error) {
      // Ended between the look and the kill.
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}
