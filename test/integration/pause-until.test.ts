/**
 * `pause --until`: a job paused until T is not planned before T, and from T on the planner plans it
 * as one resumed (its missed slots by its misfire policy, the next ones on time) and its runs run,
 * with no resume and nothing written at T; a new pause then replaces the ended one. And the CLI's
 * `--until 14:00`: the next 14:00 on the job's clock.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../../shared/core/partition.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { pauseJob, resumeJob } from '../../shared/operations/pause.js';
import { jobPlanning } from '../../shared/store/job-planning.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { testJobs } from '../support/helpers.js';
import { Lab, plannerTick } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('a pause with an until', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('plans nothing before its until, then plans and runs the slots after it without a resume; the missed ones follow the misfire policy', async () => {
    const name = 'paused-until';
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'noop', startLead: 0, misfire: { policy: 'skip', after: '2m' } }]);
    const job = jobs[0]!;
    const tick = (now: number) => plannerTick(box, jobs, now);
    const slotsOf = async () => (await box.ledger.listRuns(name, { ascending: true })).map((r) => ({ slot: r.slot, status: r.status }));

    await tick(T0 + 5 * SEC);
    const until = T0 + 10 * MIN;
    const paused = await pauseJob(box.ledger.planning, { job, by: 'ops', note: 'vendor window', until, now: T0 + 30 * SEC });
    expect(paused).toMatchObject({ changed: true, pause: { by: 'ops', note: 'vendor window', until } });
    const beforePause = await slotsOf();
    expect(beforePause.map((r) => r.slot)).toEqual([T0 + MIN]);

    // Before its until: nothing new, at every tick, and the job reads as paused.
    for (const at of [T0 + 2 * MIN, T0 + 5 * MIN, until - 5 * SEC]) {
      await tick(at);
      expect(await slotsOf(), new Date(at).toISOString()).toEqual(beforePause);
      expect((await jobPlanning(box.ledger.planning, [name], partitionOf, at)).get(name)!.pause?.until).toBe(until);
    }

    // From its until: planned as one resumed, with the record left as it was.
    const after = until + 5 * SEC;
    expect((await jobPlanning(box.ledger.planning, [name], partitionOf, after)).get(name)!.pause).toBeUndefined();
    await tick(after);
    const runs = await slotsOf();
    const statusOf = (slot: number) => runs.find((r) => r.slot === slot)?.status;
    // Missed more than misfire.after (2 min) before the tick: skipped by policy.
    for (let slot = T0 + 2 * MIN; slot < until - 2 * MIN; slot += MIN)
      expect(statusOf(slot), new Date(slot).toISOString()).toBe(RunStatus.SKIPPED);
    // Within misfire.after, the expiry's own slot and the next one: to run.
    for (const slot of [until - MIN, until, until + MIN]) expect(statusOf(slot), new Date(slot).toISOString()).toBe(RunStatus.READY);
    expect((await box.ledger.planning.readJobPlan(name))?.pause).toMatchObject({ by: 'ops', until });

    const lab = new Lab(box, jobs, { noop: { run: async () => undefined } }, until + MIN + SEC);
    expect(await lab.deliver(name, until + MIN)).toBe('ack');
    expect(await lab.status(name, until + MIN)).toBe(RunStatus.SUCCEEDED);

    // The next tick keeps planning it on time; it has caught up.
    await tick(until + 2 * MIN);
    expect((await slotsOf()).find((r) => r.slot === until + 3 * MIN)?.status).toBe(RunStatus.READY);
    expect((await jobPlanning(box.ledger.planning, [name], partitionOf, until + 2 * MIN)).get(name)).toMatchObject({
      behind: false,
      pause: undefined,
    });

    // A new pause replaces the ended one; resume lifts it.
    const again = await pauseJob(box.ledger.planning, { job, by: 'erin', now: until + 3 * MIN });
    expect(again).toMatchObject({ changed: true, pause: { by: 'erin' }, replacedExpired: { by: 'ops', until } });
    expect(await resumeJob(box.ledger.planning, job, until + 4 * MIN)).toMatchObject({ changed: true, pause: undefined });
  });

  it('a resume after the until says the job was not paused, and clears the ended record', async () => {
    const name = 'ended-pause';
    const job = testJobs([{ name, schedule: '* * * * *', handler: 'noop' }])[0]!;
    await pauseJob(box.ledger.planning, { job, by: 'ops', until: T0 + MIN, now: T0 });
    const resumed = await resumeJob(box.ledger.planning, job, T0 + 2 * MIN);
    expect(resumed).toMatchObject({ changed: false, expired: { by: 'ops', until: T0 + MIN } });
    expect((await box.ledger.planning.readJobPlan(name))?.pause).toBeUndefined();
  });

  it('refuses an until that is not after now', async () => {
    const job = testJobs([{ name: 'never', schedule: '* * * * *', handler: 'noop' }])[0]!;
    await expect(pauseJob(box.ledger.planning, { job, by: 'ops', until: T0, now: T0 })).rejects.toThrow(/until|future/);
  });

  it("`ops pause --until 14:00` ends the pause at the next 14:00 on the job's clock: tomorrow's once today's has passed; an unreadable time is exit 2 naming it", async () => {
    const endpoints = join(mkdtempSync(join(tmpdir(), 'pause-until-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    const jobs = testJobs([{ name: 'paris-report', schedule: '0 * * * *', handler: 'noop', timezone: 'Europe/Paris' }]);
    // 14:30 UTC is 15:30 in Paris: its 14:00 (13:00 UTC) has passed today, its 16:00 (15:00 UTC) has not.
    const now = Date.UTC(2026, 11, 1, 14, 30);
    let out: string[] = [];
    let err: string[] = [];
    const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), now: () => now, jobs, env: { USER: 'alice' } };
    const ops = async (...args: string[]) => {
      out = [];
      err = [];
      return runOps([...args, '--endpoints', endpoints], io);
    };

    expect(await ops('pause', 'paris-report', '--note', 'vendor window', '--until', '14:00', '--json')).toBe(0);
    expect(JSON.parse(out.join('\n'))).toMatchObject({ changed: true, paused: true, pausedUntil: '2026-12-02T13:00:00.000Z' });
    expect((await box.ledger.planning.readJobPlan('paris-report'))?.pause).toMatchObject({
      by: 'alice',
      until: Date.UTC(2026, 11, 2, 13, 0),
    });

    expect(await ops('resume', 'paris-report')).toBe(0);
    expect(await ops('pause', 'paris-report', '--note', 'deploy', '--until', '16:00')).toBe(0);
    expect(out.join('\n')).toContain('until 2026-12-01T15:00:00.000Z (2026-12-01 16:00:00 +01:00 Europe/Paris), when it resumes by itself');

    expect(await ops('resume', 'paris-report')).toBe(0);
    expect(await ops('pause', 'paris-report', '--note', 'typo', '--until', '25:00')).toBe(2);
    expect(err.join('\n')).toMatch(/field "until": .*a time of day such as 14:00.*got "25:00"/);
    expect((await box.ledger.planning.readJobPlan('paris-report'))?.pause).toBeUndefined();
  });
});
