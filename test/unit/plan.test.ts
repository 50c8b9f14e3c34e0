/**
 * planTick (DESIGN §7): pure planning of one planner tick from the config, the partition
 * watermark and an injected `now`.
 */
import { describe, expect, it } from 'vitest';
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import { planTick, type PlanInput, type PlannedRun, type TickPlan } from '../../shared/core/plan.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { defaultLookaheadMs } from '../../shared/planner/planner.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const T = (hh: number, mm: number, ss = 0) => Date.UTC(2024, 0, 15, hh, mm, ss);
const iso = (ms: number) => new Date(ms).toISOString().slice(11, 19);

function job(overrides: Record<string, unknown> = {}): Job {
  return parseJobs([{ name: 'j', schedule: '* * * * *', handler: 'h', ...overrides }], { handlers: ['h'] })[0]!;
}

function plan(partial: Partial<PlanInput> & Pick<PlanInput, 'jobs' | 'now'>): TickPlan {
  return planTick({ plannedUntil: undefined, paused: new Set(), behind: new Map(), lookaheadMs: 60 * SEC, ...partial });
}

const slotsOf = (runs: readonly PlannedRun[]) => runs.map((r) => r.slot);
const onTime = (p: TickPlan) => p.runs.filter((r) => !r.catchUp);
const catchUp = (p: TickPlan) => p.runs.filter((r) => r.catchUp);

describe('first tick of a new partition: a new job never replays history (never starts in 1970)', () => {
  it('plans only slots in (now, now + lookahead] when the partition has no watermark', () => {
    const now = T(12, 0, 30);
    const p = plan({ jobs: [job({ schedule: '*/10 * * * * *' })], now });
    expect(p.runs.length).toBeGreaterThan(0);
    for (const run of p.runs) {
      expect(run.slot).toBeGreaterThan(now);
      expect(run.slot).toBeLessThanOrEqual(now + 60 * SEC);
      expect(run.catchUp).toBe(false);
    }
    expect(slotsOf(p.runs).map(iso)).toEqual(['12:00:40', '12:00:50', '12:01:00', '12:01:10', '12:01:20', '12:01:30']);
    expect(p.plannedUntil).toBe(now + 60 * SEC);
    expect(p.misfired.size).toBe(0);
    expect(p.behindSet.size).toBe(0);
  });

  it('no misfire catch-up on the first tick, even with misfire.policy all and a tiny misfire.after', () => {
    const p = plan({ jobs: [job({ misfire: { after: '1s', policy: 'all' } })], now: T(12, 0, 30) });
    expect(catchUp(p)).toEqual([]);
    expect(slotsOf(p.runs).map(iso)).toEqual(['12:01:00']);
  });

  it('a slot exactly at now is not planned by a fresh partition (window is half-open at now)', () => {
    const p = plan({ jobs: [job()], now: T(12, 1) });
    expect(slotsOf(p.runs).map(iso)).toEqual(['12:02:00']);
  });

  it('uses the lookahead it is given', () => {
    const p = plan({ jobs: [job()], now: T(12, 0, 30), lookaheadMs: 5 * MIN });
    expect(slotsOf(p.runs).map(iso)).toEqual(['12:01:00', '12:02:00', '12:03:00', '12:04:00', '12:05:00']);
    expect(p.plannedUntil).toBe(T(12, 5, 30));
  });
});

describe('steady state: consecutive ticks neither drop nor repeat a slot', () => {
  it('each slot is planned by exactly one of a sequence of regular ticks', () => {
    const jobs = [job({ schedule: '*/10 * * * * *' })];
    let plannedUntil: number | undefined;
    const seen: number[] = [];
    for (let k = 0; k < 10; k++) {
      const p = plan({ jobs, now: T(12, k, 7), plannedUntil });
      seen.push(...slotsOf(p.runs));
      plannedUntil = p.plannedUntil;
    }
    expect(new Set(seen).size).toBe(seen.length);
    const first = seen[0]!;
    const last = seen[seen.length - 1]!;
    expect(seen).toEqual(Array.from({ length: (last - first) / (10 * SEC) + 1 }, (_, i) => first + i * 10 * SEC));
  });

  it('a tick whose watermark is already beyond now + lookahead plans nothing (an overlapping slower planner)', () => {
    const p = plan({ jobs: [job()], now: T(12, 0), plannedUntil: T(12, 5) });
    expect(p.runs).toEqual([]);
  });
});

describe('default lookahead: a late tick still gives every slot its startLead of notice', () => {
  const TICK = 60 * SEC;
  const notices = (startLead: number, lateBy: number) => {
    // Ticks every minute; every other one fires `lateBy` after its minute (EventBridge delivery,
    // a cold start), right after one that fired on time: the worst pair for the notice.
    const jobs = [job({ schedule: '* * * * * *', startLead, timeout: '30s' })];
    const lookaheadMs = defaultLookaheadMs(jobs);
    let plannedUntil: number | undefined;
    const worst: number[] = [];
    for (let k = 0; k < 6; k++) {
      const now = T(12, k) + (k % 2 === 1 ? lateBy : 0);
      const p = plan({ jobs, now, plannedUntil, lookaheadMs });
      if (k > 0) worst.push(Math.min(...slotsOf(p.runs).map((slot) => slot - now)));
      plannedUntil = p.plannedUntil;
    }
    return Math.min(...worst);
  };

  it('is one tick + the largest startLead + 3.5 s (63.5 s with the default startLead 0, 65 s with 1500ms)', () => {
    expect(defaultLookaheadMs([job()])).toBe(TICK + 3_500);
    expect(defaultLookaheadMs([job(), job({ startLead: '1500ms' })])).toBe(65 * SEC);
    expect(defaultLookaheadMs([job(), job({ startLead: '10s', timeout: '30s' })])).toBe(TICK + 10 * SEC + 3_500);
    expect(defaultLookaheadMs([])).toBe(TICK + 3_500);
  });

  it('a tick 3 s late after one on time still sends each slot at least startLead before it', () => {
    for (const startLead of [0, 1_500, 10_000]) {
      expect(notices(startLead, 3_000)).toBeGreaterThanOrEqual(startLead);
    }
  });

  it('the hazard it prevents: with a horizon of exactly one tick, a late tick sends slots with no notice', () => {
    const jobs = [job({ schedule: '* * * * * *', startLead: '1500ms' })];
    let plannedUntil: number | undefined;
    let worst = Infinity;
    for (let k = 0; k < 4; k++) {
      const now = T(12, k) + (k % 2 === 1 ? 3_000 : 0);
      const p = plan({ jobs, now, plannedUntil, lookaheadMs: TICK });
      if (k > 0) worst = Math.min(worst, ...slotsOf(p.runs).map((slot) => slot - now));
      plannedUntil = p.plannedUntil;
    }
    expect(worst).toBeLessThan(jobs[0]!.startLead);
  });
});

describe('cost grows with due slots, not with jobs', () => {
  it('a job with no slot in (plannedUntil, now + lookahead] yields no runs and no state change', () => {
    const p = plan({ jobs: [job({ schedule: '0 * * * *' })], now: T(12, 10), plannedUntil: T(12, 10) });
    expect(p.runs).toEqual([]);
    expect(p.behindSet.size).toBe(0);
    expect(p.behindClear).toEqual([]);
    expect(p.misfired.size).toBe(0);
  });

  it('10,000 hourly jobs in a tick where none is due produce 0 runs', () => {
    // Hourly at minutes 2..59; the window (12:00:00, 12:01:00] holds none of them.
    const inputs = Array.from({ length: 10_000 }, (_, i) => ({ name: `hourly-${i}`, schedule: `${2 + (i % 58)} * * * *`, handler: 'h' }));
    const jobs = parseJobs(inputs, { handlers: ['h'] });
    const p = plan({ jobs, now: T(12, 0), plannedUntil: T(12, 0) });
    expect(p.runs).toHaveLength(0);
    expect(p.misfired.size).toBe(0);
  });

  it('of 10,000 hourly jobs, only the ones with a slot in the window are planned', () => {
    const inputs = Array.from({ length: 10_000 }, (_, i) => ({ name: `hourly-${i}`, schedule: `${i % 60} * * * *`, handler: 'h' }));
    const jobs = parseJobs(inputs, { handlers: ['h'] });
    // Window (12:00:00, 12:01:00]: only minute 1 is due.
    const p = plan({ jobs, now: T(12, 0), plannedUntil: T(12, 0) });
    const expected = inputs.filter((_, i) => i % 60 === 1).map((j) => j.name);
    expect(p.runs.map((r) => r.job.name).sort()).toEqual(expected.sort());
    expect(new Set(slotsOf(p.runs))).toEqual(new Set([T(12, 1)]));
  });
});

describe('ordering: catch-up never delays on-time work', () => {
  it('on-time runs come first sorted by slot (across jobs), catch-up runs after', () => {
    const jobs = [
      job({ name: 'late-starter', schedule: '*/20 * * * * *', misfire: { after: '1m', policy: 'all' } }),
      job({ name: 'minutely', schedule: '* * * * *', misfire: { after: '1m', policy: 'all' } }),
      job({ name: 'tens', schedule: '*/10 * * * * *', misfire: { after: '1m', policy: 'all', maxPerTick: 100 } }),
    ];
    const p = plan({ jobs, now: T(12, 11), plannedUntil: T(12, 1) });
    const firstCatchUp = p.runs.findIndex((r) => r.catchUp);
    expect(firstCatchUp).toBeGreaterThan(0);
    expect(p.runs.slice(firstCatchUp).every((r) => r.catchUp)).toBe(true);
    const onTimeSlots = slotsOf(onTime(p));
    expect(onTimeSlots).toEqual([...onTimeSlots].sort((a, b) => a - b));
    // Every on-time run is at or after now - misfire.after.
    for (const run of onTime(p)) expect(run.slot).toBeGreaterThanOrEqual(T(12, 10));
    for (const run of catchUp(p)) expect(run.slot).toBeLessThan(T(12, 10));
  });
});

describe('misfire policies after the planner was down 10 minutes (per-minute job, misfire.after = 1m)', () => {
  // Last tick planned up to 12:01; the next tick runs at 12:11. Slots 12:02..12:09 are more than
  // 1 minute late (misfires); 12:10 is exactly 1 minute late (still on time); 12:11, 12:12 on time.
  const plannedUntil = T(12, 1);
  const now = T(12, 11);
  const LATE = [2, 3, 4, 5, 6, 7, 8, 9].map((m) => T(12, m));
  const ON_TIME = [T(12, 10), T(12, 11), T(12, 12)];

  it('on-time slots are unaffected by the policy and a slot exactly misfire.after old is still on time', () => {
    for (const policy of ['skip', 'latest', 'all'] as const) {
      const p = plan({ jobs: [job({ misfire: { after: '1m', policy } })], now, plannedUntil });
      expect(slotsOf(onTime(p))).toEqual(ON_TIME);
      expect(onTime(p).every((r) => r.status === RunStatus.READY)).toBe(true);
    }
  });

  it('skip → the late slots are recorded as SKIPPED (visible), never run', () => {
    const p = plan({ jobs: [job({ misfire: { after: '1m', policy: 'skip' } })], now, plannedUntil });
    const late = catchUp(p);
    expect(slotsOf(late)).toEqual(LATE);
    for (const run of late) {
      expect(run.status).toBe(RunStatus.SKIPPED);
      expect(run.catchUp).toBe(true);
      expect(run.reason).toMatch(/skip/);
    }
    expect(p.misfired.get('j')).toBe(LATE.length);
    expect(p.behindSet.size).toBe(0);
  });

  it('latest → exactly one catch-up run, at the newest late slot', () => {
    const p = plan({ jobs: [job({ misfire: { after: '1m', policy: 'latest' } })], now, plannedUntil });
    const late = catchUp(p);
    expect(late).toHaveLength(1);
    expect(late[0]).toMatchObject({ slot: T(12, 9), status: RunStatus.READY, catchUp: true });
    expect(p.misfired.get('j')).toBe(LATE.length);
    expect(p.behindSet.size).toBe(0);
  });

  it('latest finds the newest late slot even for a sparse schedule long ago (bounded search)', () => {
    // Daily at 03:00, planner down 3 days: newest missed slot is today 03:00.
    const p = plan({
      jobs: [job({ schedule: '0 3 * * *', misfire: { after: '1m', policy: 'latest' } })],
      now: T(12, 0),
      plannedUntil: T(12, 0) - 3 * 24 * HOUR,
    });
    expect(catchUp(p).map((r) => r.slot)).toEqual([T(3, 0)]);
    expect(p.misfired.get('j')).toBe(3);
  });

  it('all → at most maxPerTick catch-up runs per tick, and behindSet records the last one planned', () => {
    const p = plan({ jobs: [job({ misfire: { after: '1m', policy: 'all', maxPerTick: 3 } })], now, plannedUntil });
    expect(slotsOf(catchUp(p))).toEqual(LATE.slice(0, 3));
    expect(catchUp(p).every((r) => r.status === RunStatus.READY)).toBe(true);
    expect(p.behindSet.get('j')).toBe(LATE[2]);
    expect(slotsOf(onTime(p))).toEqual(ON_TIME);
  });

  it('all → following ticks with the returned behind continue where they stopped, lose nothing, and clear behind', () => {
    const jobs = [job({ misfire: { after: '1m', policy: 'all', maxPerTick: 3 } })];
    let state = { plannedUntil: plannedUntil as number | undefined, behind: new Map<string, number>() };
    const planned = new Set<number>();
    let cleared = false;
    for (let tick = 0; tick < 10 && !cleared; tick++) {
      const p = plan({ jobs, now: now + tick * MIN, ...state });
      const cu = catchUp(p);
      expect(cu.length).toBeLessThanOrEqual(3);
      if (tick > 0 && state.behind.has('j')) {
        // Continues strictly after where the previous tick stopped.
        for (const run of cu) expect(run.slot).toBeGreaterThan(state.behind.get('j')!);
      }
      for (const run of p.runs) planned.add(run.slot);
      const behind = new Map(state.behind);
      for (const name of p.behindClear) behind.delete(name);
      for (const [name, slot] of p.behindSet) behind.set(name, slot);
      if (state.behind.has('j') && !behind.has('j')) {
        expect(p.behindClear).toContain('j');
        cleared = true;
      }
      state = { plannedUntil: p.plannedUntil, behind };
    }
    expect(cleared).toBe(true);
    expect(state.behind.has('j')).toBe(false);
    // Every minute from 12:02 up to the final horizon was planned (none silently lost).
    const lastHorizon = state.plannedUntil!;
    for (let slot = T(12, 2); slot <= lastHorizon; slot += MIN) expect(planned.has(slot), iso(slot)).toBe(true);
  });

  it('all with maxPerTick larger than the backlog catches up in one tick and is not left behind', () => {
    const p = plan({ jobs: [job({ misfire: { after: '1m', policy: 'all', maxPerTick: 100 } })], now, plannedUntil });
    expect(slotsOf(catchUp(p))).toEqual(LATE);
    expect(p.behindSet.size).toBe(0);
  });

  it('a backlog of exactly maxPerTick is planned in one tick and the job is caught up at once (no extra tick, no state write)', () => {
    const jobs = [job({ misfire: { after: '1m', policy: 'all', maxPerTick: 8 } })];
    const first = plan({ jobs, now, plannedUntil });
    expect(catchUp(first)).toHaveLength(8);
    expect(first.behindSet.size).toBe(0);
    expect(first.behindClear).toEqual([]);
  });

  it('a backlog of maxPerTick + 1 stays behind after the first page, then clears', () => {
    const jobs = [job({ misfire: { after: '1m', policy: 'all', maxPerTick: 7 } })];
    const first = plan({ jobs, now, plannedUntil });
    expect(catchUp(first)).toHaveLength(7);
    expect(first.behindSet.get('j')).toBe(T(12, 8));
    const second = plan({
      jobs,
      now: now + 30 * SEC,
      plannedUntil: first.plannedUntil,
      behind: first.behindSet,
      catchUpEdges: first.edgeSet,
    });
    expect(catchUp(second)).toHaveLength(1);
    expect(second.behindClear).toEqual(['j']);
  });
});

describe('paused and disabled jobs', () => {
  it('a paused job produces nothing and keeps its behind entry (resuming continues from there)', () => {
    const behind = new Map([['j', T(12, 3)]]);
    const p = plan({ jobs: [job({ misfire: { after: '1m' } })], now: T(12, 11), plannedUntil: T(12, 1), paused: new Set(['j']), behind });
    expect(p.runs).toEqual([]);
    expect(p.behindClear).not.toContain('j');
    expect(p.behindSet.has('j')).toBe(false);
  });

  it('resuming a paused job with a behind entry applies its misfire policy from there', () => {
    const behind = new Map([['j', T(12, 3)]]);
    const p = plan({ jobs: [job({ misfire: { after: '1m', policy: 'latest' } })], now: T(12, 11), plannedUntil: T(12, 10), behind });
    expect(catchUp(p).map((r) => r.slot)).toEqual([T(12, 9)]);
    expect(p.behindClear).toEqual(['j']);
  });

  it('pausing one job does not stop the others', () => {
    const jobs = [job({ name: 'a' }), job({ name: 'b' })];
    const p = plan({ jobs, now: T(12, 0, 30), plannedUntil: T(12, 0, 30), paused: new Set(['a']) });
    expect(p.runs.map((r) => r.job.name)).toEqual(['b']);
  });

  it('a disabled job produces nothing and keeps its behind entry', () => {
    const behind = new Map([['j', T(12, 3)]]);
    const p = plan({ jobs: [job({ enabled: false })], now: T(12, 11), plannedUntil: T(12, 1), behind });
    expect(p.runs).toEqual([]);
    expect(p.behindClear).toEqual([]);
  });
});

describe('shards: a slot becomes N runs, one per shard', () => {
  it('shards=3 → 3 runs per slot with shard 0..2', () => {
    const p = plan({ jobs: [job({ schedule: '*/20 * * * * *', shards: 3 })], now: T(12, 0), plannedUntil: T(12, 0) });
    expect(p.runs.map((r) => `${iso(r.slot)}#${r.shard}`)).toEqual([
      '12:00:20#0',
      '12:00:20#1',
      '12:00:20#2',
      '12:00:40#0',
      '12:00:40#1',
      '12:00:40#2',
      '12:01:00#0',
      '12:01:00#1',
      '12:01:00#2',
    ]);
  });

  it('misfire catch-up is sharded too (and maxPerTick counts slots, not shard runs)', () => {
    const p = plan({
      jobs: [job({ shards: 3, misfire: { after: '1m', policy: 'all', maxPerTick: 2 } })],
      now: T(12, 11),
      plannedUntil: T(12, 1),
    });
    expect(catchUp(p).map((r) => `${iso(r.slot)}#${r.shard}`)).toEqual([
      '12:02:00#0',
      '12:02:00#1',
      '12:02:00#2',
      '12:03:00#0',
      '12:03:00#1',
      '12:03:00#2',
    ]);
    expect(p.behindSet.get('j')).toBe(T(12, 3));
  });
});

describe('purity: the plan depends only on its input', () => {
  it('the same input gives the same plan', () => {
    const input: PlanInput = {
      jobs: [job({ misfire: { after: '1m', policy: 'all', maxPerTick: 3 } }), job({ name: 'k', schedule: '*/15 * * * * *' })],
      plannedUntil: T(12, 1),
      paused: new Set(),
      behind: new Map(),
      now: T(12, 11),
      lookaheadMs: 60 * SEC,
    };
    const a = planTick(input);
    const b = planTick(input);
    expect(b.runs.map((r) => [r.job.name, r.slot, r.shard, r.status, r.catchUp])).toEqual(
      a.runs.map((r) => [r.job.name, r.slot, r.shard, r.status, r.catchUp]),
    );
    expect([...b.behindSet]).toEqual([...a.behindSet]);
  });
});
