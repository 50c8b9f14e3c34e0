/**
 * `ops jobs` against the local stack: one row per configured job with its schedule and zone, its
 * pause (who, when, why), its next three fire times (the planner's slot code through fireTimeOf
 * for a jittered job), its last run (the newest whose slot has come), its due open runs and its
 * DEAD runs of the last 24 h; a one-time job whose slot passed and whose run ended is finished.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fireTimeOf } from '../../shared/schedule/jitter.js';
import { nextSlotAfter, slotsBetween, slotSpecOf } from '../../shared/schedule/slots.js';
import { RunStatus, runKeyOf, type RunId } from '../../shared/core/vocabulary.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import type { JobRow } from '../../tools/ops/jobs.js';
import { testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
const M = Date.UTC(2026, 5, 15, 12, 0);
const NOW = M + 30_000;
const iso = (ms: number) => new Date(ms).toISOString();

const JOBS = testJobs([
  { name: 'minutely', schedule: '* * * * *', handler: 'noop' },
  { name: 'herd', schedule: '* * * * *', handler: 'noop', jitter: '45s' },
  { name: 'once-done', schedule: { at: iso(M - 60 * MINUTE) }, handler: 'noop' },
  { name: 'once-open', schedule: { at: iso(M - 60 * MINUTE) }, handler: 'noop' },
  { name: 'once-later', schedule: { at: iso(M + DAY) }, handler: 'noop' },
  { name: 'held', schedule: '*/5 * * * *', handler: 'noop' },
  { name: 'off', schedule: '0 * * * *', handler: 'noop', enabled: false },
  { name: 'zoned', schedule: '30 2 * * *', handler: 'noop', timezone: 'America/New_York' },
  { name: 'capped-done', schedule: '* * * * *', handler: 'noop', maxRuns: 3 },
  { name: 'capped-open', schedule: '* * * * *', handler: 'noop', maxRuns: 5 },
  { name: 'noted', schedule: '0 * * * *', handler: 'noop' },
]);

/** A pause note as an operator may paste it: long, and over two lines. */
const LONG_NOTE =
  'vendor outage: the bank API answers 503 to every call since 09:14,\nticket INC-4711 open with them, resume when they say so';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), now: () => NOW, jobs: JOBS, env: { USER: 'someone' } };
  return { io, out, err, json: <T>() => JSON.parse(out.join('\n')) as T };
}

describe('ops jobs', () => {
  let box: Sandbox;
  let endpoints: string;
  const id = (job: string, slot: number): RunId => ({ job, slot, shard: 0 });

  async function runTo(job: string, slot: number, end: 'SUCCEEDED' | 'DEAD' | 'RUNNING' | 'READY', maxRuns?: number): Promise<void> {
    const run = { job, slot, shard: 0, shards: 1, status: RunStatus.READY } as const;
    if (maxRuns === undefined) await box.ledger.createRun(run, slot - 5_000);
    else await box.ledger.createCountedRun(run, slot - 5_000, 'test', { maxRuns, start: 0 });
    if (end === 'READY') return;
    const claim = await box.ledger.claim(id(job, slot), 'w-1', slot + 200, end === 'RUNNING' ? 10 * DAY : 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    if (end === 'SUCCEEDED') await box.ledger.complete(claim.run, { status: RunStatus.SUCCEEDED }, slot + 1_200);
    if (end === 'DEAD')
      await box.ledger.complete(claim.run, { status: RunStatus.DEAD, lastError: { code: 'BOOM', message: 'gave up' } }, slot + 1_200);
  }

  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-jobs-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    await runTo('minutely', M, 'SUCCEEDED');
    await runTo('minutely', M - 2 * MINUTE, 'READY');
    await runTo('minutely', M - 10 * MINUTE, 'DEAD');
    await runTo('minutely', M - 2 * DAY, 'DEAD'); // outside the 24 h window
    await runTo('minutely', M + MINUTE, 'READY'); // planned ahead: not its last run
    await runTo('once-done', M - 60 * MINUTE, 'SUCCEEDED');
    await runTo('once-open', M - 60 * MINUTE, 'RUNNING');
    // maxRuns: the planner counts each scheduled slot with its put.
    for (const slot of [M - 4 * MINUTE, M - 3 * MINUTE, M - 2 * MINUTE]) await runTo('capped-done', slot, 'SUCCEEDED', 3);
    for (const slot of [M - 2 * MINUTE, M - MINUTE, M]) await runTo('capped-open', slot, 'SUCCEEDED', 5);
    const paused = capture();
    expect(await runOps(['pause', 'held', '--note', 'vendor outage', '--by', 'alice', '--endpoints', endpoints], paused.io)).toBe(0);
    expect(await runOps(['pause', 'noted', '--note', LONG_NOTE, '--by', 'bob', '--endpoints', endpoints], paused.io)).toBe(0);
  });
  afterAll(() => box.destroy());

  it('--json: one object per configured job with schedule, zone, pause, next fire times, last run, open and DEAD counts', async () => {
    const c = capture();
    expect(await runOps(['jobs', '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    expect(c.out).toHaveLength(1);
    const rows = c.json<JobRow[]>();
    expect(rows.map((r) => r.job)).toEqual(JOBS.map((j) => j.name));
    const row = (name: string) => rows.find((r) => r.job === name)!;

    expect(row('minutely')).toMatchObject({
      schedule: '* * * * *',
      timezone: 'UTC',
      enabled: true,
      paused: false,
      finished: false,
      nextFireTimes: [iso(M + MINUTE), iso(M + 2 * MINUTE), iso(M + 3 * MINUTE)],
      nextSlots: [iso(M + MINUTE), iso(M + 2 * MINUTE), iso(M + 3 * MINUTE)],
      lastRun: { runKey: runKeyOf('minutely', M, 0, 1), slot: iso(M), status: 'SUCCEEDED', finishedAt: iso(M + 1_200) },
      openRuns: 1,
      deadLast24h: 1,
    });
    expect(row('minutely').jitterMs).toBeUndefined();

    // Jitter: when the runs fire, from the planner's slot code and fireTimeOf, the slots alongside.
    const herd = JOBS.find((j) => j.name === 'herd')!;
    const spec = slotSpecOf(herd);
    const expected = slotsBetween(spec, NOW - 2 * MINUTE, NOW + 10 * MINUTE)
      .map((slot) => ({ slot, fireAt: fireTimeOf(herd, slot, nextSlotAfter(spec, slot)) }))
      .filter((e) => e.fireAt >= NOW)
      .slice(0, 3);
    expect(row('herd')).toMatchObject({
      jitterMs: 45_000,
      nextFireTimes: expected.map((e) => iso(e.fireAt)),
      nextSlots: expected.map((e) => iso(e.slot)),
    });
    expect(expected.some((e) => e.fireAt !== e.slot)).toBe(true);

    // One-time jobs: finished once the slot passed and its run ended; not while it runs; not before.
    expect(row('once-done')).toMatchObject({
      schedule: `at ${iso(M - 60 * MINUTE)}`,
      finished: true,
      nextFireTimes: [],
      lastRun: { status: 'SUCCEEDED' },
    });
    expect(row('once-open')).toMatchObject({ finished: false, nextFireTimes: [], lastRun: { status: 'RUNNING' }, openRuns: 1 });
    expect(row('once-later')).toMatchObject({ finished: false, nextFireTimes: [iso(M + DAY)] });
    expect(row('once-later').lastRun).toBeUndefined();
    // maxRuns: finished after its N-th slot ran; before that, no fire time past the N-th slot.
    expect(row('capped-done')).toMatchObject({
      finished: true,
      nextFireTimes: [],
      lastRun: { slot: iso(M - 2 * MINUTE), status: 'SUCCEEDED' },
    });
    expect(row('capped-open')).toMatchObject({ finished: false, nextFireTimes: [iso(M + MINUTE), iso(M + 2 * MINUTE)] });

    expect(row('held')).toMatchObject({ paused: true, pausedBy: 'alice', pauseNote: 'vendor outage', pausedAt: iso(NOW) });
    expect(row('off')).toMatchObject({ enabled: false, paused: false });
    expect(row('zoned')).toMatchObject({
      timezone: 'America/New_York',
      nextFireTimes: [iso(Date.UTC(2026, 5, 16, 6, 30)), iso(Date.UTC(2026, 5, 17, 6, 30)), iso(Date.UTC(2026, 5, 18, 6, 30))],
    });
  });

  it('the table: a row per job, paused with who and why, finished, jitter explained', async () => {
    const c = capture();
    expect(await runOps(['jobs', '--endpoints', endpoints], c.io)).toBe(0);
    const [header, ...lines] = c.out;
    expect(header).toMatch(
      /^JOB\s+SCHEDULE\s+TIMEZONE\s+JITTER\s+STATE\s+NEXT FIRES \(UTC\)\s+NEXT FIRES \(JOB ZONE\)\s+LAST RUN\s+FINISHED\s+OPEN\s+DEAD 24H$/,
    );
    const line = (name: string) => lines.find((l) => l.startsWith(`${name} `))!;
    expect(line('minutely')).toMatch(
      /^minutely\s+\* \* \* \* \*\s+UTC\s+-\s+active\s+2026-06-15T12:01:00Z, 2026-06-15T12:02:00Z, 2026-06-15T12:03:00Z\s+2026-06-15 12:01:00 \+00:00, 2026-06-15 12:02:00 \+00:00, 2026-06-15 12:03:00 \+00:00\s+2026-06-15T12:00:00Z SUCCEEDED\s+2026-06-15T12:00:01\.200Z\s+1\s+1$/,
    );
    expect(line('held')).toContain('PAUSED by alice 0s ago: vendor outage');
    expect(line('once-done')).toMatch(/finished\s+none \(finished\)/);
    expect(line('off')).toContain('disabled');
    expect(line('herd')).toMatch(/^herd\s+\* \* \* \* \*\s+UTC\s+45s\s+active/);
    expect(c.out.at(-1)).toContain("NEXT FIRES: slot + the job's jitter offset where JITTER is set");
  });

  it("next fire times in the job's zone beside UTC: a New York job's 02:30 reads 02:30 -04:00, not only 06:30Z", async () => {
    const c = capture();
    expect(await runOps(['jobs', '--job', 'zoned', '--endpoints', endpoints], c.io)).toBe(0);
    expect(c.out[1]).toMatch(
      /^zoned\s+30 2 \* \* \*\s+America\/New_York\s+-\s+active\s+2026-06-16T06:30:00Z, 2026-06-17T06:30:00Z, 2026-06-18T06:30:00Z\s+2026-06-16 02:30:00 -04:00, 2026-06-17 02:30:00 -04:00, 2026-06-18 02:30:00 -04:00\s/,
    );
  });

  it('a long pause note over two lines is cut with an ellipsis on one line: the rows keep their columns (the whole note is in --json)', async () => {
    const c = capture();
    expect(await runOps(['jobs', '--endpoints', endpoints], c.io)).toBe(0);
    const [header, ...lines] = c.out;
    expect(c.out).toHaveLength(JOBS.length + 2); // header, one line per job, the jitter note: no line of its own for the note's second line
    const noted = lines.find((l) => l.startsWith('noted '))!;
    expect(noted).toContain('PAUSED by bob 0s ago: vendor outage: the bank API answers 503…');
    expect(noted).not.toContain('INC-4711');
    // Every row's next fire times start under their header.
    const column = header!.indexOf('NEXT FIRES (UTC)');
    for (const name of ['noted', 'minutely', 'held', 'zoned']) {
      const row = lines.find((l) => l.startsWith(`${name} `))!;
      expect(row.slice(column), name).toMatch(/^2026-06-1\dT\d\d:\d\d:00Z, /);
    }
    const json = capture();
    expect(await runOps(['jobs', '--job', 'noted', '--endpoints', endpoints, '--json'], json.io)).toBe(0);
    expect(json.json<JobRow[]>()[0]).toMatchObject({ pauseNote: LONG_NOTE, pausedBy: 'bob' });
  });

  it('--job NAME: that job only; an unknown job exits 2 with one line', async () => {
    const one = capture();
    expect(await runOps(['jobs', '--job', 'held', '--endpoints', endpoints, '--json'], one.io)).toBe(0);
    expect(one.json<JobRow[]>().map((r) => r.job)).toEqual(['held']);
    const bad = capture();
    expect(await runOps(['jobs', '--job', 'nope', '--endpoints', endpoints], bad.io)).toBe(2);
    expect(bad.err).toHaveLength(1);
    expect(bad.err[0]).toContain('field "job": no configured job "nope"');
  });

  it('pause --note: who, when and why in the JSON of pause, status and jobs alike', async () => {
    const again = capture();
    expect(await runOps(['pause', 'held', '--note', 'another reason', '--endpoints', endpoints, '--json'], again.io)).toBe(0);
    // Already paused: the first pause's note and author stay.
    expect(again.json()).toMatchObject({ changed: false, paused: true, pausedBy: 'alice', pausedAt: iso(NOW), pauseNote: 'vendor outage' });
    const status = capture();
    expect(await runOps(['status', '--endpoints', endpoints, '--json'], status.io)).toBe(0);
    const held = status.json<{ jobs: { job: string }[] }>().jobs.find((j) => j.job === 'held');
    expect(held).toMatchObject({ paused: true, pausedBy: 'alice', pausedAt: iso(NOW), pauseNote: 'vendor outage' });
  });
});
