/**
 * `./bin/fsched console` spawned as an operator runs it against a local target: it reads the
 * deployed config as the ops commands do (no warning when the checkout matches), prints its
 * address, serves the Jobs page there, and stops cleanly on SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeployedConfigStore } from '../../shared/store/deployed-config.js';
import { configuredJobDefinitions, loadJobs } from '../../shared/config.js';
import { PROJECT_ROOT } from '../../tools/local-stack.js';
import { sandbox, type Sandbox } from '../support/stack.js';

describe('fsched console', () => {
  let box: Sandbox;
  let endpoints: string;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'console-bin-')), 'endpoints.json');
    // As `npm start` writes it and its planner records the config on its first tick.
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1, exampleJobs: true }));
    await DeployedConfigStore.of(box.ledger).recordIfChanged(loadJobs(configuredJobDefinitions({ exampleJobs: true })), Date.now());
  });
  afterAll(() => {
    if (child?.exitCode === null) child.kill('SIGKILL');
    box.destroy();
  });

  it('prints its address, serves the deployed jobs there, and exits 0 on SIGTERM', async () => {
    const env = { ...process.env };
    delete env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED;
    const proc = spawn(join(PROJECT_ROOT, 'bin', 'fsched'), ['console', '--endpoints', endpoints, '--read-only'], {
      cwd: PROJECT_ROOT,
      env,
    });
    child = proc;
    let stdout = '';
    let stderr = '';
    proc.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    await expect
      .poll(() => stdout, { timeout: 60_000, interval: 200 })
      .toMatch(/^console: http:\/\/127\.0\.0\.1:\d+\/ \(local stack \(.*endpoints\.json\)\), read-only; Ctrl-C stops it\n$/);
    const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(stdout)![0];
    const response = await fetch(url);
    expect(response.status).toBe(200);
    const page = await response.text();
    for (const job of loadJobs(configuredJobDefinitions({ exampleJobs: true }))) expect(page).toContain(`data-job="${job.name}"`);
    expect(page).toContain('the deployed config');
    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
  }, 90_000);
});
