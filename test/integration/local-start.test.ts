/**
 * `npm start` as a terminal runs it: spawned in its own process group (a terminal's foreground
 * job), and the terminal closed (SIGHUP to the whole group). It stops as on Ctrl-C: the pollers
 * and the planner, then DynamoDB Local's Java process (which runs in a process group of its own,
 * so the hangup never reaches it), and its endpoints file is removed. Nothing is left running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../tools/local-stack.js';
import { waitFor } from '../support/helpers.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start and a closed terminal', () => {
  let child: ChildProcess | undefined;
  let javaPid: number | undefined;
  afterAll(() => {
    // Only if the test failed: end what it started (its process group, and that Java process).
    if (child?.pid !== undefined && alive(-child.pid)) process.kill(-child.pid, 'SIGKILL');
    if (javaPid !== undefined && alive(javaPid)) process.kill(javaPid, 'SIGKILL');
  });

  it('SIGHUP stops DynamoDB Local and removes the endpoints file, like Ctrl-C', async () => {
    const endpoints = join(mkdtempSync(join(tmpdir(), 'local-start-')), 'endpoints.json');
    const env = { ...process.env };
    delete env.npm_config_loglevel;
    child = spawn('npm', ['start', '--', '--tick', '1', '--workers', '1', '--endpoints', endpoints], {
      cwd: PROJECT_ROOT,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));

    // Up: the line that names Java's pid, and the endpoints file written.
    const pid = await waitFor(
      async () => {
        const match = /local stack up \(npm start pid \d+\): DynamoDB Local \S+ \(pid (\d+)\)/.exec(stdout);
        return match && existsSync(endpoints) ? Number(match[1]) : undefined;
      },
      120_000,
      `npm start to be up (stdout: ${stdout}, stderr: ${stderr})`,
    );
    javaPid = pid;
    expect(alive(pid)).toBe(true);
    // Up for at least one planner tick, so the stop has pollers and a tick to wind down.
    await waitFor(async () => (/jobs: /.test(stdout) ? true : undefined), 120_000, 'the jobs line');

    process.kill(-child.pid!, 'SIGHUP');

    await waitFor(
      async () => (!alive(pid) && !existsSync(endpoints) && !alive(-child!.pid!) ? true : undefined),
      120_000,
      `Java ${pid} gone, endpoints file removed, npm start's processes gone (stdout: ${stdout.slice(-2_000)}, stderr: ${stderr})`,
    );
    expect(stdout).toContain('stopping (SIGHUP)');
    expect(stdout).toMatch(/\{"uptimeSeconds":\d+.*"violations":0\}/);
  }, 900_000);
});
