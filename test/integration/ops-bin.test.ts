/**
 * The real command, spawned as an operator runs it: `./bin/fsched ops …` and `npx fsched ops …`
 * in the project. stdout holds the command's output and nothing else (one JSON document with
 * --json: no npm banner, no SDK notice about Node 22), errors are one line on stderr, and the
 * exit code is the command's.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeployedConfigStore } from '../../shared/store/deployed-config.js';
import { configuredJobDefinitions, loadJobs } from '../../shared/config.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { PROJECT_ROOT } from '../../tools/local-stack.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const exec = promisify(execFile);
const BIN = join(PROJECT_ROOT, 'bin', 'fsched');

/** The environment of an operator's shell: without the test runner's own SDK-notice switch. */
function operatorEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED;
  return env;
}

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function spawnCli(command: string, args: readonly string[], cwd = PROJECT_ROOT): Promise<Result> {
  try {
    const { stdout, stderr } = await exec(command, [...args], { cwd, env: operatorEnv(), timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the fsched command', () => {
  let box: Sandbox;
  let endpoints: string;
  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-bin-')), 'endpoints.json');
    // As `npm start` writes it: the example jobs are the target's jobs.
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1, exampleJobs: true }));
    // As its planner records it on its first tick: the config this checkout runs, so no warning.
    await DeployedConfigStore.of(box.ledger).recordIfChanged(loadJobs(configuredJobDefinitions({ exampleJobs: true })), Date.now());
    const slot = Date.now() - 60_000;
    await box.ledger.createRun({ job: 'cache-refresh', slot: slot - (slot % 10_000), shard: 0, shards: 1, status: RunStatus.READY }, slot);
  });
  afterAll(() => box.destroy());

  it('./bin/fsched ops jobs --json: exactly one JSON document on stdout, nothing on stderr (no SDK notice), exit 0', async () => {
    const r = await spawnCli(BIN, ['ops', 'jobs', '--endpoints', endpoints, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as { job: string; nextFireTimes: string[] }[];
    expect(rows.map((row) => row.job).sort()).toEqual(['cache-refresh', 'payments-reconcile']);
    expect(rows.every((row) => row.nextFireTimes.length === 3)).toBe(true);
  });

  it('from any directory, with the exit codes of the ops CLI: an unknown job 2 (one line), a stale target 1 (one line)', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'ops-bin-cwd-'));
    const unknown = await spawnCli(BIN, ['ops', 'runs', '--job', 'nope', '--endpoints', endpoints], elsewhere);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr.trimEnd().split('\n')).toEqual([expect.stringContaining('field "job": no configured job "nope"')]);
    const gone = join(elsewhere, 'gone.json');
    writeFileSync(gone, JSON.stringify({ ...box.endpoints, dynamoEndpoint: 'http://127.0.0.1:1', sqsEndpoint: 'http://127.0.0.1:1' }));
    const stale = await spawnCli(BIN, ['ops', 'status', '--endpoints', gone], elsewhere);
    expect(stale.code).toBe(1);
    expect(stale.stderr.trimEnd().split('\n')).toEqual([expect.stringContaining('is not running')]);
    const noTool = await spawnCli(BIN, [], elsewhere);
    expect(noTool.code).toBe(2);
    expect(noTool.stderr).toContain('usage: fsched <tool>');
  });

  it("npx fsched ops in the project runs the project's own bin (npm links it for npx): clean --json and --help", async () => {
    // --offline: the bin is the project's own; nothing may come from the registry.
    const preview = await spawnCli('npx', [
      '--offline',
      'fsched',
      'ops',
      'preview',
      '--schedule',
      '0 * * * *',
      '--from',
      '2026-01-01T00:00:00Z',
      '--limit',
      '2',
      '--json',
    ]);
    expect(preview.stderr).toBe('');
    expect(preview.code).toBe(0);
    expect(JSON.parse(preview.stdout)).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T01:00:00.000Z']);
    const help = await spawnCli('npx', ['--offline', 'fsched', 'ops', 'jobs', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout.split('\n')[0]).toBe('usage: fsched ops jobs [--job NAME]');
  });
});
