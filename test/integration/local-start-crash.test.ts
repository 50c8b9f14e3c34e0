/**
 * `npm start` and its processes killed outright (SIGKILL: no handler runs).
 * - npm killed: the runtime is re-parented and, watching its parent pid, stops everything itself.
 * - the runtime killed: DynamoDB Local, in a session of its own, outlives it (hazard: a leaked
 *   Java process holding memory and a port). The lock file beside the endpoints file names it, and
 *   the next start on that endpoints file stops it (checked on /proc to be that DynamoDB Local).
 * - a second start on the endpoints file of a running one is refused, naming its pid, instead of
 *   overwriting its endpoints and removing them under it when it stops.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { lockPathFor, pidAlive } from '../../tools/local-lock.js';
import { PROJECT_ROOT } from '../../tools/local-stack.js';
import { waitFor } from '../support/helpers.js';
import {
  allGone,
  descendants,
  endRecorded,
  npmStart,
  STOP_TIMEOUT_MS,
  tempEndpoints,
  whenUp,
  type NpmStart,
  type Up,
} from '../support/npm-start.js';

const started = new Set<number>();
afterAll(() => endRecorded(started));

async function up(endpoints: string): Promise<{ start: NpmStart; up: Up; tree: number[] }> {
  const start = npmStart(endpoints);
  started.add(start.child.pid!);
  const pids = await whenUp(start);
  const tree = descendants(start.child.pid!);
  tree.forEach((pid) => started.add(pid));
  return { start, up: pids, tree };
}

describe('npm start killed with SIGKILL', () => {
  it('npm killed: the runtime notices its parent is gone and stops DynamoDB Local and the rest', async () => {
    const { start, tree } = await up(tempEndpoints('local-start-npm-killed'));
    process.kill(start.child.pid!, 'SIGKILL');
    await allGone(tree, 'the processes under a killed npm', start.output);
    expect(start.output()).toMatch(/stopping \(the process that started it \(pid \d+\) is gone\)/);
    expect(existsSync(start.endpoints)).toBe(false);
    expect(existsSync(lockPathFor(start.endpoints))).toBe(false);
  }, 600_000);

  const endpoints = tempEndpoints('local-start-runtime-killed');
  let second: { start: NpmStart; up: Up; tree: number[] } | undefined;

  it('the runtime killed leaves DynamoDB Local running; the next start on the same endpoints file stops it (leaked Java)', async () => {
    const first = await up(endpoints);
    process.kill(first.up.runtimePid, 'SIGKILL');
    await first.start.exited;
    // What the crash leaves: Java alive, and the lock naming it.
    expect(pidAlive(first.up.javaPid)).toBe(true);
    expect(JSON.parse(readFileSync(lockPathFor(endpoints), 'utf8'))).toMatchObject({
      pid: first.up.runtimePid,
      dynamoPid: first.up.javaPid,
    });

    second = await up(endpoints);
    expect(second.start.output()).toContain(`stopped DynamoDB Local (pid ${first.up.javaPid}, port `);
    expect(second.start.output()).toContain(`left running by an npm start that ended without stopping it (pid ${first.up.runtimePid})`);
    await allGone([first.up.javaPid], 'the leaked DynamoDB Local', second.start.output);
    expect(pidAlive(second.up.javaPid)).toBe(true);
  }, 600_000);

  it('a second npm start on the endpoints file of a running one is refused, naming its pid, and leaves it running', async () => {
    const running = second!;
    const refused = spawnSync('npm', ['start', '--silent', '--', '--endpoints', endpoints], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      `npm start is already running for this endpoints file (pid ${running.up.runtimePid}, lock ${lockPathFor(endpoints)}): stop it first`,
    );
    expect(refused.stdout).not.toContain('local stack up');
    expect(pidAlive(running.up.runtimePid) && pidAlive(running.up.javaPid)).toBe(true);
    expect(existsSync(endpoints)).toBe(true);

    process.kill(running.start.child.pid!, 'SIGTERM');
    await allGone([running.start.child.pid!, ...running.tree], 'the second start after SIGTERM', running.start.output);
    await waitFor(
      async () => (!existsSync(endpoints) && !existsSync(lockPathFor(endpoints)) ? true : undefined),
      STOP_TIMEOUT_MS,
      'endpoints and lock removed',
    );
  }, 600_000);
});
