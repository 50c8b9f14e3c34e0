/**
 * `npm start` stops everything it started whichever of its processes gets the signal, as a script's
 * `npm start & … kill $!` sends it: to the npm process alone, not to its process group. npm
 * forwards SIGTERM and SIGINT to its child; a shell between them used to die of the SIGTERM and
 * leave the runtime running (re-parented, Java and SQS up), and to sit on a SIGINT. Every process
 * under npm (the runtime's node, esbuild, DynamoDB Local's Java) must be gone within the deadline,
 * the endpoints and lock files removed. Bad options are refused before anything starts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockPathFor } from '../../tools/local-lock.js';
import { PROJECT_ROOT } from '../../tools/local-stack.js';
import { allGone, descendants, endRecorded, npmStart, tempEndpoints, whenUp } from '../support/npm-start.js';

const started = new Set<number>();
afterAll(() => endRecorded(started));

async function stopsEverythingOn(signal: 'SIGTERM' | 'SIGINT', whileStarting = false): Promise<void> {
  const start = npmStart(tempEndpoints(`local-start-${signal.toLowerCase()}`));
  started.add(start.child.pid!);
  const { runtimePid, javaPid } = await whenUp(start, whileStarting);
  const tree = descendants(start.child.pid!);
  tree.forEach((pid) => started.add(pid));
  // npm's only child is the runtime itself (npm start execs node): no shell between them to die
  // of the SIGTERM or sit on the SIGINT.
  const underRuntime = descendants(runtimePid);
  expect(tree.filter((pid) => !underRuntime.includes(pid))).toEqual([runtimePid]);
  expect(tree).toContain(javaPid);
  expect(existsSync(lockPathFor(start.endpoints))).toBe(true);

  process.kill(start.child.pid!, signal);

  await allGone([start.child.pid!, ...tree], `${signal} to the npm process`, start.output);
  expect(await start.exited, start.output().slice(-3_000)).toBe(0);
  expect(start.output()).toContain(`stopping (${signal})`);
  expect(start.output()).toMatch(/\{"uptimeSeconds":\d+.*"violations":0\}/);
  expect(existsSync(start.endpoints)).toBe(false);
  expect(existsSync(lockPathFor(start.endpoints))).toBe(false);
}

describe('npm start and a signal to the npm process alone', () => {
  it('SIGTERM to npm (kill $! from a script) stops the runtime, DynamoDB Local and every other process it started', async () => {
    await stopsEverythingOn('SIGTERM');
  }, 600_000);

  it('SIGINT to npm stops them all the same way', async () => {
    await stopsEverythingOn('SIGINT');
  }, 600_000);

  // The start (relay, sample payments, pollers) ran on beside the stop, failed as the stack went
  // down and exited 1 with "connect ECONNREFUSED" although the stop was clean.
  it('SIGTERM while it is still starting (the stack just up) stops it cleanly, exit 0: the start gives way to the stop', async () => {
    await stopsEverythingOn('SIGTERM', true);
  }, 600_000);
});

describe('npm start --data-dir', () => {
  it('says on its startup line that the ledger is kept there and the queues are not', async () => {
    const endpoints = tempEndpoints('local-start-data-dir');
    const dataDir = join(dirname(endpoints), 'data');
    const start = npmStart(endpoints, ['--tick', '5', '--workers', '1', '--data-dir', dataDir]);
    started.add(start.child.pid!);
    await whenUp(start);
    const tree = descendants(start.child.pid!);
    tree.forEach((pid) => started.add(pid));
    expect(start.output()).toContain(
      `--data-dir ${dataDir}: the ledger (DynamoDB) is kept there across restarts; the run queue and its DLQ are not (in memory): ` +
        `an open run whose message is lost is sent again by the planner's sweep about 2 min after its slot, and dead-lettered messages are gone`,
    );
    process.kill(start.child.pid!, 'SIGTERM');
    await allGone([start.child.pid!, ...tree], 'SIGTERM to the npm process', start.output);
  }, 600_000);
});

describe('npm start options', () => {
  const startWith = (...args: string[]) =>
    spawnSync('npm', ['start', '--silent', '--', ...args, '--endpoints', tempEndpoints('local-start-options')], {
      cwd: PROJECT_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });

  it('--partitions above the stack limit (64) is refused with the limit and the value as written, before anything starts', () => {
    const result = startWith('--partitions', '65');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      `--partitions must be a whole number from 1 to 64 (the stack's limit: one planner rule per partition, MAX_PLANNER_PARTITIONS), got "65"`,
    );
    expect(result.stdout).not.toContain('local stack up');
  }, 180_000);

  it('a fractional --workers is refused, not rounded', () => {
    const result = startWith('--workers', '2.5');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--workers must be a whole number from 1 to 1000, got "2.5"');
  }, 180_000);
});
