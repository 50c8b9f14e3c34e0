/**
 * `ops pause`/`resume` and `ops backfill` against the local stack with the real planner tick:
 * a paused job gets nothing materialized; after 10 simulated minutes, resuming follows the job's
 * misfire policy (skip / latest / all with maxPerTick), never an unbounded burst. Backfill creates
 * a past range once (a second call creates nothing), dispatches what it created, and keeps its
 * rate limit on a fake clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backfill } from '../../shared/operations/backfill.js';
import { RunStatus, type Run } from '../../shared/core/vocabulary.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { drain, ManualClock, metrics, silentLogger, testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);

function capture(extra: Partial<OpsIo> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), ...extra };
  return { io, out, err, json: () => JSON.parse(out.join('\n')) as Record<string, unknown> };
}

function endpointsFile(box: Sandbox): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ops-schedule-')), 'endpoints.json');
  writeFileSync(path, JSON.stringify({ ...box.endpoints, partitions: 1 }));
  return path;
}

describe('ops pause / resume with the planner', () => {
  // misfire.after 90 s: after the pause almost every missed slot is a misfire.
  const misfire = (policy: 'skip' | 'latest' | 'all') => ({ after: '90s' as const, policy, maxPerTick: 3 });
  const JOBS = testJobs([
    { name: 'p-skip', schedule: '* * * * *', handler: 'noop', misfire: misfire('skip') },
    { name: 'p-latest', schedule: '* * * * *', handler: 'noop', misfire: misfire('latest') },
    { name: 'p-all', schedule: '* * * * *', handler: 'noop', misfire: misfire('all') },
    { name: 'control', schedule: '* * * * *', handler: 'noop' },
  ]);
  const PAUSED = ['p-skip', 'p-latest', 'p-all'];
  let box: Sandbox;
  let endpoints: string;
  beforeAll(async () => {
    box = await sandbox();
    endpoints = endpointsFile(box);
  });
  afterAll(() => box.destroy());

  it('paused: nothing materialized; resumed after 10 minutes: missed slots follow each misfire policy, at most maxPerTick per tick', async () => {
    const clock = new ManualClock(T0);
    const deps = { ledger: box.ledger, queue: box.queue, jobs: JOBS, clock: clock.read, logger: silentLogger(), metrics: metrics() };
    const tick = () => runPlannerTick(deps, { partition: 0, of: 1 });
    const runsOf = (job: string) => box.ledger.listRuns(job, { ascending: true });
    const io = () => capture({ now: clock.read, jobs: JOBS });

    await tick(); // plans (T0, T0 + 60 s]
    for (const job of PAUSED) {
      const c = io();
      expect(await runOps(['pause', job, '--endpoints', endpoints], c.io)).toBe(0);
      expect(c.out.join('\n')).toContain(`paused ${job}`);
    }
    const again = io();
    expect(await runOps(['pause', 'p-all', '--endpoints', endpoints, '--json'], again.io)).toBe(0);
    expect(again.json()).toMatchObject({ job: 'p-all', changed: false, paused: true });

    for (let minute = 1; minute <= 10; minute++) {
      clock.advance(MINUTE);
      await tick();
    }
    for (const job of PAUSED) expect((await runsOf(job)).map((r) => r.slot)).toEqual([T0 + MINUTE]);
    expect((await runsOf('control')).length).toBe(11); // the planner itself kept going

    const status = io();
    expect(await runOps(['status', '--endpoints', endpoints, '--json'], status.io)).toBe(0);
    const jobs = (status.json() as { jobs: { job: string; paused: boolean }[] }).jobs;
    expect(
      jobs
        .filter((j) => j.paused)
        .map((j) => j.job)
        .sort(),
    ).toEqual([...PAUSED].sort());

    for (const job of PAUSED) {
      const c = io();
      expect(await runOps(['resume', job, '--endpoints', endpoints], c.io)).toBe(0);
      expect(c.out.join('\n')).toContain(`resumed ${job}`);
    }
    const notPaused = io();
    expect(await runOps(['resume', 'control', '--endpoints', endpoints], notPaused.io)).toBe(0);
    expect(notPaused.out.join('\n')).toContain('was not paused');

    // Resume tick at T0 + 10 min. Planned up to T0 + 1 min; misfires are slots before now - 90 s.
    const before = new Map<string, number>();
    for (const job of PAUSED) before.set(job, (await runsOf(job)).length);
    const report = await tick();
    const late = Array.from({ length: 7 }, (_, i) => T0 + (i + 2) * MINUTE); // T0+2m … T0+8m
    const onTime = [T0 + 9 * MINUTE, T0 + 10 * MINUTE, T0 + 11 * MINUTE];
    const byStatus = (runs: Run[], status: RunStatus) => runs.filter((r) => r.status === status).map((r) => r.slot);

    const skip = await runsOf('p-skip');
    expect(byStatus(skip, RunStatus.SKIPPED)).toEqual(late.slice(0, 3));
    expect(byStatus(skip, RunStatus.READY)).toEqual([T0 + MINUTE, ...onTime]);
    const latest = await runsOf('p-latest');
    expect(latest.map((r) => r.slot)).toEqual([T0 + MINUTE, late[6], ...onTime]);
    expect(latest.every((r) => r.status === RunStatus.READY)).toBe(true);
    const all = await runsOf('p-all');
    expect(all.map((r) => r.slot)).toEqual([T0 + MINUTE, ...late.slice(0, 3), ...onTime]);
    // Bounded: per job, the on-time window plus at most maxPerTick catch-up slots.
    // skip: 3 SKIPPED + 3 on time; latest: 1 + 3; all: 3 + 3; control: already planned this minute.
    expect(report.created).toBe(6 + 4 + 6);

    // Later ticks finish the catch-up at the same pace; nothing is lost or doubled.
    for (let i = 0; i < 3; i++) {
      clock.advance(MINUTE);
      const slotsBefore = new Map<string, number>();
      for (const job of PAUSED) slotsBefore.set(job, (await runsOf(job)).length);
      await tick();
      for (const job of PAUSED) expect((await runsOf(job)).length - slotsBefore.get(job)!).toBeLessThanOrEqual(3 + 1);
    }
    expect(byStatus(await runsOf('p-skip'), RunStatus.SKIPPED)).toEqual(late);
    expect((await runsOf('p-all')).map((r) => r.slot)).toEqual([
      T0 + MINUTE,
      ...late,
      ...onTime,
      T0 + 12 * MINUTE,
      T0 + 13 * MINUTE,
      T0 + 14 * MINUTE,
    ]);
    expect((await runsOf('p-all')).every((r) => r.status === RunStatus.READY)).toBe(true);
    const latestSlots = (await runsOf('p-latest')).map((r) => r.slot);
    expect(latestSlots.filter((s) => late.includes(s))).toEqual([late[6]]);
  });

  it('pause of an unknown job is a usage error naming the job', async () => {
    const c = capture({ jobs: JOBS });
    expect(await runOps(['pause', 'nope', '--endpoints', endpoints], c.io)).toBe(2);
    expect(c.err).toHaveLength(1);
    expect(c.err[0]).toContain('"job"');
  });
});

describe('ops backfill', () => {
  const JOBS = testJobs([
    { name: 'bf', schedule: '* * * * *', handler: 'noop' },
    { name: 'bf-sharded', schedule: '*/10 * * * *', handler: 'noop', shards: 2 },
    { name: 'bf-seconds', schedule: '* * * * * *', handler: 'noop' },
  ]);
  let box: Sandbox;
  let endpoints: string;
  beforeAll(async () => {
    box = await sandbox();
    endpoints = endpointsFile(box);
  });
  afterAll(() => box.destroy());

  /** A clock that only moves when the code under test sleeps. */
  function fakeTime(start: number) {
    const clock = new ManualClock(start);
    const sleeps: number[] = [];
    return {
      clock,
      sleeps,
      sleep: async (ms: number) => {
        sleeps.push(ms);
        clock.advance(ms);
      },
    };
  }

  it('creates the runs of [from, to) once, dispatches them, and a second call creates nothing', async () => {
    const now = T0 + 60 * MINUTE;
    const time = fakeTime(now);
    const args = [
      'backfill',
      'bf',
      '--from',
      new Date(T0).toISOString(),
      '--to',
      new Date(T0 + 25 * MINUTE).toISOString(),
      '--endpoints',
      endpoints,
    ];
    const first = capture({ now: time.clock.read, sleep: time.sleep, jobs: JOBS });
    expect(await runOps([...args, '--max-per-second', '10', '--json'], first.io)).toBe(0);
    expect(first.json()).toMatchObject({
      job: 'bf',
      slots: 25,
      runs: 25,
      created: 25,
      existing: 0,
      sent: 25,
      firstSlot: new Date(T0).toISOString(),
    });
    // 25 creations at 10/s: three one-second windows, i.e. two waits of a second on the fake clock.
    expect(time.sleeps).toEqual([1_000, 1_000]);
    const runs = await box.ledger.listRuns('bf', { ascending: true });
    expect(runs.map((r) => r.slot)).toEqual(Array.from({ length: 25 }, (_, i) => T0 + i * MINUTE));
    expect(runs.every((r) => r.status === RunStatus.READY)).toBe(true);
    const messages = await drain(box.clients.sqs, box.endpoints.runQueueUrl, { expected: 25, idleMs: 1_500 });
    expect(new Set(messages.map((m) => JSON.parse(m.Body!).runKey as string))).toEqual(new Set(runs.map((r) => r.runKey)));

    const second = capture({ now: time.clock.read, sleep: time.sleep, jobs: JOBS });
    expect(await runOps(args, second.io)).toBe(0);
    expect(second.out.join('\n')).toContain('0 created, 25 already existed, 0 dispatched');
    expect((await box.ledger.listRuns('bf')).length).toBe(25);

    const dry = capture({ now: time.clock.read, sleep: time.sleep, jobs: JOBS });
    expect(
      await runOps(
        [
          ...args.slice(0, 2),
          '--from',
          new Date(T0 + 20 * MINUTE).toISOString(),
          '--to',
          new Date(T0 + 30 * MINUTE).toISOString(),
          '--endpoints',
          endpoints,
          '--dry-run',
        ],
        dry.io,
      ),
    ).toBe(0);
    expect(dry.out.join('\n')).toContain('10 slot(s) (10 run(s))');
    expect(dry.out.join('\n')).toContain('5 already in the ledger, 5 would be created');
    expect((await box.ledger.listRuns('bf')).length).toBe(25);
  });

  it('never makes more than N creations in any one-second window of the (fake) clock', async () => {
    const time = fakeTime(T0 + 10 * 3_600_000);
    const at: number[] = [];
    const report = await backfill(
      { ledger: box.ledger, queue: box.queue, clock: time.clock.read, sleep: time.sleep, onCreate: (e) => at.push(e.at) },
      { job: JOBS[1]!, from: T0, to: T0 + 3 * 3_600_000, maxPerSecond: 4 },
    );
    expect(report).toMatchObject({ slots: 18, runs: 36, created: 36, existing: 0, sent: 36 });
    for (const start of at) expect(at.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(4);
    expect(at.at(-1)! - at[0]!).toBeGreaterThanOrEqual(8_000); // 36 at 4/s: windows 0 … 8 s
    const shards = (await box.ledger.listRuns('bf-sharded')).map((r) => r.runKey);
    expect(shards).toContain(`bf-sharded@${new Date(T0).toISOString()}#1`);
  });

  it('refuses ranges in the future and, without --force, over 10,000 slots (exit 2 naming the field); a dry run counts such a range without refusing it', async () => {
    const now = T0 + 60 * MINUTE;
    const future = capture({ now: () => now, jobs: JOBS });
    expect(
      await runOps(
        [
          'backfill',
          'bf',
          '--from',
          new Date(now - MINUTE).toISOString(),
          '--to',
          new Date(now + MINUTE).toISOString(),
          '--endpoints',
          endpoints,
        ],
        future.io,
      ),
    ).toBe(2);
    expect(future.err).toHaveLength(1);
    expect(future.err[0]).toContain('"to"');
    expect(future.err[0]).toContain('future');

    // The dry run counts the same range without --force: its true size, and what the backfill needs.
    const counted = capture({ now: () => now, jobs: JOBS });
    expect(
      await runOps(
        [
          'backfill',
          'bf-seconds',
          '--from',
          new Date(T0 - 3 * 3_600_000).toISOString(),
          '--to',
          new Date(T0).toISOString(),
          '--endpoints',
          endpoints,
          '--dry-run',
        ],
        counted.io,
      ),
    ).toBe(0);
    expect(counted.out).toEqual([
      expect.stringMatching(
        /^dry run: bf-seconds has 10800 slot\(s\) \(10800 run\(s\)\) in \[.*\); 0 already in the ledger, 10800 would be created at 10\/s \(~18m00s\)$/,
      ),
      `first ${new Date(T0 - 3 * 3_600_000).toISOString()}, last ${new Date(T0 - 1_000).toISOString()}`,
      'the range holds more than 10000 slots: the backfill itself needs --force',
    ]);

    const huge = capture({ now: () => now, jobs: JOBS });
    expect(
      await runOps(
        [
          'backfill',
          'bf-seconds',
          '--from',
          new Date(T0 - 3 * 3_600_000).toISOString(),
          '--to',
          new Date(T0).toISOString(),
          '--endpoints',
          endpoints,
        ],
        huge.io,
      ),
    ).toBe(2);
    expect(huge.err[0]).toContain('--force');
    const forced = capture({ now: () => now, jobs: JOBS });
    expect(
      await runOps(
        [
          'backfill',
          'bf-seconds',
          '--from',
          new Date(T0 - 3 * 3_600_000).toISOString(),
          '--to',
          new Date(T0).toISOString(),
          '--endpoints',
          endpoints,
          '--force',
          '--dry-run',
          '--json',
        ],
        forced.io,
      ),
    ).toBe(0);
    expect(forced.json()).toMatchObject({ slots: 10_800, created: 0, dryRun: true });

    const badRate = capture({ now: () => now, jobs: JOBS });
    expect(
      await runOps(
        [
          'backfill',
          'bf',
          '--from',
          new Date(T0).toISOString(),
          '--to',
          new Date(T0 + MINUTE).toISOString(),
          '--max-per-second',
          '0',
          '--endpoints',
          endpoints,
        ],
        badRate.io,
      ),
    ).toBe(2);
    expect(badRate.err[0]).toContain('"max-per-second"');
  });
});
