/**
 * The ops CLI's read commands against the local stack, in-process (runOps with a captured io):
 * status (runs by state, oldest open run, paused flag, DLQ depth), runs (filters), show (every
 * field), preview (planner slot code, DST, bad input) — and the real CLI spawned once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { freePort } from '../../tools/local-stack.js';

const run = promisify(execFile);
const MINUTE = 60_000;
const isoOf = (ms: number) => new Date(ms).toISOString();
const NOW = Date.UTC(2026, 5, 15, 12, 0, 0);
const JOBS = testJobs([
  { name: 'alpha', schedule: '* * * * *', handler: 'noop', retry: { maxAttempts: 3 } },
  { name: 'beta', schedule: '*/5 * * * *', handler: 'noop', timezone: 'Europe/London' },
]);

function capture(extra: Partial<OpsIo> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), now: () => NOW, jobs: JOBS, ...extra };
  return { io, out, err, json: () => JSON.parse(out.join('\n')) as unknown };
}

function endpointsFile(box: Sandbox, partitions = 1): string {
  const dir = mkdtempSync(join(tmpdir(), 'ops-read-'));
  const path = join(dir, 'endpoints.json');
  writeFileSync(path, JSON.stringify({ ...box.endpoints, partitions }));
  return path;
}

describe('ops status, runs, show', () => {
  let box: Sandbox;
  let endpoints: string;
  const slots = [4, 3, 2, 1].map((m) => NOW - m * MINUTE); // oldest first
  beforeAll(async () => {
    box = await sandbox();
    endpoints = endpointsFile(box);
    for (const slot of slots)
      await box.ledger.createRun({ job: 'alpha', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - 5_000);
    // slot 1: SUCCEEDED; slot 2: DEAD; slot 3: RUNNING with a live lease; slot 4: READY.
    const claim = async (slot: number) => {
      const c = await box.ledger.claim({ job: 'alpha', slot, shard: 0 }, 'worker-1', slot + 100, 30_000, 2_000);
      if (c.kind !== 'claimed') throw new Error(`claim failed: ${c.kind}`);
      return c.run;
    };
    await box.ledger.complete(await claim(slots[0]!), { status: RunStatus.SUCCEEDED, evidence: { settled: 5 } }, slots[0]! + 1_000);
    await box.ledger.complete(
      await claim(slots[1]!),
      { status: RunStatus.DEAD, lastError: { code: 'BOOM', message: 'exploded' } },
      slots[1]! + 1_000,
    );
    await box.ledger.claim({ job: 'alpha', slot: slots[2]!, shard: 0 }, 'worker-2', NOW - 1_000, 60_000, 2_000);
    // A run the planner made ahead of its slot: not the job's last run.
    await box.ledger.createRun({ job: 'alpha', slot: NOW + MINUTE, shard: 0, shards: 1, status: RunStatus.READY }, NOW - 5_000);
    // A run far outside the default 24 h window: not counted by status.
    await box.ledger.createRun(
      { job: 'alpha', slot: NOW - 3 * 86_400_000, shard: 0, shards: 1, status: RunStatus.SKIPPED, reason: 'old' },
      NOW,
    );
    await box.ledger.planning.pause('beta', NOW, { by: 'alice', note: 'vendor outage', at: NOW });
    // A run of a job since removed from the config, watched by the sweeper.
    await box.ledger.createRun(
      { job: 'removed-job', slot: NOW - 10 * MINUTE, shard: 0, shards: 1, status: RunStatus.READY, watch: true },
      NOW - 10 * MINUTE,
    );
    for (const body of ['{"not":"a run"}', 'garbage']) {
      await box.clients.sqs.send(new SendMessageCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, MessageBody: body }));
    }
  });
  afterAll(() => box.destroy());

  it('status counts runs by state, finds the oldest open run, the paused flag and the DLQ depth', async () => {
    const c = capture();
    expect(await runOps(['status', '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    expect(c.out).toHaveLength(1);
    const report = c.json() as {
      jobs: {
        job: string;
        paused: boolean;
        pausedBy?: string;
        pausedAt?: string;
        pauseNote?: string;
        runs: Record<string, number>;
        openDue: number;
        oldestOpenRunKey?: string;
        oldestOpenAgeMs?: number;
        lastRun?: { runKey: string; slot: string; status: string; finishedAt?: string };
      }[];
      deadLetterQueue: { visible: number };
      orphans: { count: number; oldestRunKey?: string; jobs: string[] };
    };
    const alpha = report.jobs.find((j) => j.job === 'alpha')!;
    const beta = report.jobs.find((j) => j.job === 'beta')!;
    // The window's runs include the one planned ahead (slot after now); the open-due count does not.
    expect(alpha.runs).toEqual({ SUCCEEDED: 1, DEAD: 1, RUNNING: 1, READY: 2 });
    expect(alpha.paused).toBe(false);
    expect(alpha.openDue).toBe(2);
    expect(alpha.oldestOpenRunKey).toBe(runKeyOf('alpha', slots[2]!, 0, 1));
    expect(alpha.oldestOpenAgeMs).toBe(2 * MINUTE);
    // The last run is the newest whose slot has come, with its state: not the run planned ahead.
    expect(alpha.lastRun).toEqual({ runKey: runKeyOf('alpha', slots[3]!, 0, 1), slot: new Date(slots[3]!).toISOString(), status: 'READY' });
    expect(beta).toMatchObject({ paused: true, pausedBy: 'alice', pausedAt: new Date(NOW).toISOString(), pauseNote: 'vendor outage' });
    expect(beta.runs).toEqual({});
    expect(report.deadLetterQueue.visible).toBe(2);
    expect(report.orphans).toEqual({ count: 1, oldestRunKey: runKeyOf('removed-job', NOW - 10 * MINUTE, 0, 1), jobs: ['removed-job'] });

    // --since widens the window; the human table names the paused job and the DLQ.
    const wide = capture();
    expect(await runOps(['status', '--endpoints', endpoints, '--since', '7d', '--json'], wide.io)).toBe(0);
    expect((wide.json() as typeof report).jobs.find((j) => j.job === 'alpha')!.runs.SKIPPED).toBe(1);
    const human = capture();
    expect(await runOps(['status', '--endpoints', endpoints], human.io)).toBe(0);
    const text = human.out.join('\n');
    expect(text).toMatch(/beta\s+PAUSED by alice 0s ago: vendor outage/);
    expect(text).toMatch(/^JOB\s+PAUSED\s+PLANNED UNTIL\s+LAST RUN\s/m);
    expect(text).toContain(`${new Date(slots[3]!).toISOString()} READY`);
    expect(text).not.toContain(new Date(NOW + MINUTE).toISOString());
    expect(text).toMatch(/orphaned: 1 open run\(s\) of job\(s\) no longer configured \(removed-job\)/);
    expect(text).toContain('succeeded 1, dead 1');
    expect(text).toContain('DLQ: 2 visible');
  });

  it('runs filters by state, since and limit, newest first', async () => {
    const dead = capture();
    expect(await runOps(['runs', '--job', 'alpha', '--state', 'dead', '--endpoints', endpoints, '--json'], dead.io)).toBe(0);
    expect((dead.json() as { runKey: string }[]).map((r) => r.runKey)).toEqual([runKeyOf('alpha', slots[1]!, 0, 1)]);

    const open = capture();
    expect(await runOps(['runs', '--job', 'alpha', '--state', 'READY,RUNNING', '--endpoints', endpoints, '--json'], open.io)).toBe(0);
    expect((open.json() as { slot: string }[]).map((r) => r.slot)).toEqual([NOW + MINUTE, slots[3]!, slots[2]!].map(isoOf));

    const recent = capture();
    expect(await runOps(['runs', '--job', 'alpha', '--since', '150s', '--endpoints', endpoints, '--json'], recent.io)).toBe(0);
    expect((recent.json() as { slot: string }[]).map((r) => r.slot)).toEqual([NOW + MINUTE, slots[3]!, slots[2]!].map(isoOf));

    const limited = capture();
    expect(await runOps(['runs', '--job', 'alpha', '--limit', '1', '--endpoints', endpoints, '--json'], limited.io)).toBe(0);
    expect((limited.json() as { slot: string }[]).map((r) => r.slot)).toEqual([isoOf(NOW + MINUTE)]);

    const table = capture();
    expect(await runOps(['runs', '--job', 'alpha', '--endpoints', endpoints], table.io)).toBe(0);
    expect(table.out[0]).toMatch(/^RUN KEY\s+STATUS/);
    expect(table.out.join('\n')).toContain('BOOM: exploded');

    const bad = capture();
    expect(await runOps(['runs', '--job', 'alpha', '--state', 'sleeping', '--endpoints', endpoints], bad.io)).toBe(2);
    expect(bad.err).toHaveLength(1);
    expect(bad.err[0]).toContain('"state"');
    // An unknown job is a usage error (exit 2), not an empty list.
    const unknown = capture();
    expect(await runOps(['runs', '--job', 'nope', '--endpoints', endpoints], unknown.io)).toBe(2);
    expect(unknown.out).toEqual([]);
    expect(unknown.err).toEqual([expect.stringMatching(/^ops runs: field "job": no configured job "nope"; configured: alpha, beta$/)]);
  });

  it('show prints every field of the run, times also as ISO', async () => {
    const key = runKeyOf('alpha', slots[0]!, 0, 1);
    const c = capture();
    expect(await runOps(['show', key, '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    const item = c.json() as Record<string, unknown>;
    expect(item).toMatchObject({
      runKey: key,
      status: 'SUCCEEDED',
      owner: 'worker-1',
      attempt: 1,
      evidence: { settled: 5 },
      slot: isoOf(slots[0]!),
    });
    for (const field of ['fencingToken', 'createdAt', 'startedAt', 'finishedAt', 'expiresAt', 'pk', 'sk', 'claimedFrom'])
      expect(item).toHaveProperty(field);

    const human = capture();
    expect(await runOps(['show', key, '--endpoints', endpoints], human.io)).toBe(0);
    const text = human.out.join('\n');
    expect(text).toMatch(/status\s+SUCCEEDED/);
    expect(text).toMatch(new RegExp(`\\nslot\\s+${slots[0]} \\(${new Date(slots[0]!).toISOString().replace(/\./g, '\\.')}\\)`));
    expect(text).toMatch(/evidence\s+\{"settled":5\}/);

    const missing = capture();
    expect(await runOps(['show', `alpha@${new Date(NOW - 86_400_000).toISOString()}`, '--endpoints', endpoints], missing.io)).toBe(1);
    expect(missing.err[0]).toContain('no run');
    const malformed = capture();
    expect(await runOps(['show', 'alpha-yesterday', '--endpoints', endpoints], malformed.io)).toBe(2);
    expect(malformed.err[0]).toContain('"runKey"');
  });

  it('--local without a running `npm start` fails with a one-line hint', async () => {
    const c = capture({ cwd: mkdtempSync(join(tmpdir(), 'ops-nolocal-')) });
    expect(await runOps(['status', '--local'], c.io)).toBe(1);
    expect(c.err).toHaveLength(1);
    expect(c.err[0]).toContain('`npm start` is not running');
  });

  it('a stale endpoints file (its `npm start` is gone, its ports answer nothing): exit 1, one line saying `npm start` is not running, in every command', async () => {
    // Ports that were free a moment ago and nobody listens on.
    const [dynamoPort, sqsPort] = [await freePort(), await freePort()];
    const project = mkdtempSync(join(tmpdir(), 'ops-stale-'));
    mkdirSync(join(project, '.local-data'));
    const stale = {
      ...box.endpoints,
      dynamoEndpoint: `http://127.0.0.1:${dynamoPort}`,
      sqsEndpoint: `http://127.0.0.1:${sqsPort}`,
      exampleJobs: true,
    };
    writeFileSync(join(project, '.local-data', 'endpoints.json'), JSON.stringify(stale));
    for (const args of [
      ['status'],
      ['jobs'],
      ['runs', '--job', 'alpha'],
      ['show', runKeyOf('alpha', slots[0]!, 0, 1)],
      ['pause', 'alpha'],
      ['redrive', '--dry-run'],
    ]) {
      const c = capture({ cwd: project });
      const started = Date.now();
      expect(await runOps([...args, '--local'], c.io), args.join(' ')).toBe(1);
      expect(c.out).toEqual([]);
      expect(c.err, args.join(' ')).toHaveLength(1);
      expect(c.err[0]).toMatch(
        /`npm start` is not running \(\.local-data\/endpoints\.json is left from an earlier run\): DynamoDB Local at http:\/\/127\.0\.0\.1:\d+ and local SQS at .* do not answer/,
      );
      // Told at once, not after the SDK's retries.
      expect(Date.now() - started).toBeLessThan(5_000);
    }
    // The same file given with --endpoints: the same check, naming the file.
    const file = join(project, '.local-data', 'endpoints.json');
    const c = capture();
    expect(await runOps(['status', '--endpoints', file], c.io)).toBe(1);
    expect(c.err[0]).toContain(`the local stack of ${file} is not running`);
  });
});

describe('ops preview', () => {
  const NY = [
    '--schedule',
    '30 2 * * *',
    '--timezone',
    'America/New_York',
    '--from',
    '2026-03-07T00:00:00Z',
    '--to',
    '2026-03-10T00:00:00Z',
  ];

  it('lists slots in [from, to) as UTC ISO strings; New York spring-forward 02:30 shifts to 07:30Z', async () => {
    const shift = capture();
    expect(await runOps(['preview', ...NY, '--dst-gap', 'shift', '--json'], shift.io)).toBe(0);
    expect(shift.json()).toEqual(['2026-03-07T07:30:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z']);
    const skip = capture();
    expect(await runOps(['preview', ...NY, '--dst-gap', 'skip', '--json'], skip.io)).toBe(0);
    expect(skip.json()).toEqual(['2026-03-07T07:30:00.000Z', '2026-03-09T06:30:00.000Z']);
    // [from, to): a slot exactly at `to` is out, one exactly at `from` is in.
    const edges = capture();
    expect(
      await runOps(
        ['preview', '--schedule', '0 * * * *', '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-01T02:00:00Z', '--json'],
        edges.io,
      ),
    ).toBe(0);
    expect(edges.json()).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T01:00:00.000Z']);
  });

  it('the table shows local time with offset, UTC and the DST mark; --job uses the configured job', async () => {
    const c = capture();
    expect(await runOps(['preview', ...NY], c.io)).toBe(0);
    const row = c.out.find((l) => l.includes('2026-03-08T07:30:00.000Z'))!;
    expect(row).toMatch(/^2026-03-08 03:30:00 -04:00\s+2026-03-08T07:30:00.000Z\s+gap-shifted$/);
    const job = capture();
    expect(
      await runOps(['preview', '--job', 'beta', '--from', '2026-06-01T00:00:00Z', '--to', '2026-06-01T00:12:00Z', '--json'], job.io),
    ).toBe(0);
    expect(job.json()).toEqual(['2026-06-01T00:00:00.000Z', '2026-06-01T00:05:00.000Z', '2026-06-01T00:10:00.000Z']);
  });

  it('bad zone, expression or policy: one line naming the field, exit 2', async () => {
    const cases: [string[], string][] = [
      [['--schedule', '30 2 * * *', '--timezone', 'Mars/Olympus', '--from', '2026-03-07', '--to', '2026-03-08'], 'timezone'],
      [['--schedule', '61 2 * * *', '--from', '2026-03-07', '--to', '2026-03-08'], 'schedule'],
      [['--schedule', '30 2 * * *', '--dst-gap', 'jump', '--from', '2026-03-07', '--to', '2026-03-08'], 'dst-gap'],
      [['--schedule', '30 2 * * *', '--from', 'yesterday', '--to', '2026-03-08'], 'from'],
      [['--schedule', '30 2 * * *', '--from', '2026-03-08', '--to', '2026-03-07'], 'to'],
      [['--job', 'nope', '--from', '2026-03-07', '--to', '2026-03-08'], 'job'],
    ];
    for (const [args, field] of cases) {
      const c = capture();
      expect(await runOps(['preview', ...args, '--json'], c.io), field).toBe(2);
      expect(c.out).toEqual([]);
      expect(c.err).toHaveLength(1);
      expect(c.err[0]).toContain(`"${field}"`);
    }
  });

  it('the real CLI (bin/fsched): JSON on stdout and exit 0; bad zone exits 2 with one line on stderr', async () => {
    const ok = await run('./bin/fsched', ['ops', 'preview', ...NY, '--json'], { cwd: process.cwd() });
    expect(JSON.parse(ok.stdout)).toEqual(['2026-03-07T07:30:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z']);
    const bad = await run('./bin/fsched', [
      'ops',
      'preview',
      '--schedule',
      '30 2 * * *',
      '--timezone',
      'Nowhere/Land',
      '--from',
      '2026-03-07',
      '--to',
      '2026-03-08',
      '--json',
    ]).then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(bad?.code).toBe(2);
    expect(bad?.stdout).toBe('');
    expect(bad?.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad?.stderr).toContain('"timezone"');
  });
});
