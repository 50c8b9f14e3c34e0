/**
 * The new schedule kinds through planTick (DESIGN §7), unchanged: the planner only calls
 * slotsBetween / nextSlotAfter, so misfire policies, catch-up and the active window must follow
 * from the slot math alone. Hazards: an interval job after an outage, a one-time job whose instant
 * passed during an outage (a misfire: created once, or SKIPPED, never twice across ticks), a
 * window that closed during the outage.
 */
import { describe, expect, it } from 'vitest';
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import { planTick, type PlannedRun, type TickPlan } from '../../shared/core/plan.js';
import { lastSlotOf, slotSpecOf } from '../../shared/schedule/slots.js';
import { RunStatus } from '../../shared/core/vocabulary.js';

const SEC = 1000;
const MIN = 60 * SEC;
const LOOKAHEAD = 60 * SEC;
const T0 = Date.UTC(2026, 5, 1, 12, 0, 30);

function job(overrides: Record<string, unknown>): Job {
  return parseJobs([{ name: 'j', handler: 'h', ...overrides }], { handlers: ['h'] })[0]!;
}

interface TickState {
  plannedUntil: number | undefined;
  behind: Map<string, number>;
  edges: Map<string, number>;
}

/** Runs planTick at each `now`, carrying watermark, catch-up cursors and edges as the planner does. */
function ticks(jobs: readonly Job[], plannedUntil: number | undefined, nows: readonly number[]): { plans: TickPlan[]; runs: PlannedRun[] } {
  const state: TickState = { plannedUntil, behind: new Map(), edges: new Map() };
  const plans: TickPlan[] = [];
  for (const now of nows) {
    const p = planTick({
      jobs,
      plannedUntil: state.plannedUntil,
      paused: new Set(),
      behind: state.behind,
      catchUpEdges: state.edges,
      now,
      lookaheadMs: LOOKAHEAD,
    });
    plans.push(p);
    state.plannedUntil = p.plannedUntil;
    for (const [name, cursor] of p.behindSet) state.behind.set(name, cursor);
    for (const [name, edge] of p.edgeSet) state.edges.set(name, edge);
    for (const name of p.behindClear) {
      state.behind.delete(name);
      state.edges.delete(name);
    }
  }
  return { plans, runs: plans.flatMap((p) => p.runs) };
}

const everyMinuteFor = (n: number, from = T0) => Array.from({ length: n }, (_, i) => from + i * MIN);

describe('an interval job after the planner was down: its misfire policy applies to interval slots', () => {
  const down = 30 * MIN; // plannedUntil is 30 minutes in the past
  const schedule = { every: '90s', phase: '15s' };

  it("policy 'skip': each missed 90 s slot is recorded SKIPPED, recent and upcoming ones run on time", () => {
    const j = job({ schedule, misfire: { after: '5m', policy: 'skip', maxPerTick: 1000 } });
    const [p] = ticks([j], T0 - down, [T0]).plans;
    const late = p!.runs.filter((r) => r.catchUp);
    const onTime = p!.runs.filter((r) => !r.catchUp);
    for (const r of [...late, ...onTime]) expect((r.slot - 15 * SEC) % (90 * SEC)).toBe(0);
    expect(late.every((r) => r.status === RunStatus.SKIPPED && r.slot <= T0 - 5 * MIN)).toBe(true);
    expect(onTime.every((r) => r.status === RunStatus.READY && r.slot > T0 - 5 * MIN - SEC)).toBe(true);
    // 25 missed minutes hold 16 or 17 slots at 90 s; with the on-time ones they tile the whole outage.
    expect(late.length).toBeGreaterThanOrEqual(16);
    const all = [...late, ...onTime].map((r) => r.slot).sort((a, b) => a - b);
    for (let i = 1; i < all.length; i++) expect(all[i]! - all[i - 1]!).toBe(90 * SEC);
  });

  it("policy 'latest': only the newest missed interval slot runs", () => {
    const j = job({ schedule, misfire: { after: '5m', policy: 'latest' } });
    const [p] = ticks([j], T0 - down, [T0]).plans;
    const late = p!.runs.filter((r) => r.catchUp);
    expect(late).toHaveLength(1);
    expect(late[0]!.status).toBe(RunStatus.READY);
    expect(late[0]!.slot).toBeLessThanOrEqual(T0 - 5 * MIN - 1);
    expect(late[0]!.slot + 90 * SEC).toBeGreaterThan(T0 - 5 * MIN - 1);
  });

  it("policy 'all' with maxPerTick: catch-up is paged over ticks, every missed slot exactly once", () => {
    const j = job({ schedule, misfire: { after: '5m', policy: 'all', maxPerTick: 4 } });
    const { runs } = ticks([j], T0 - down, everyMinuteFor(8));
    const slots = runs.map((r) => r.slot);
    expect(new Set(slots).size).toBe(slots.length);
    const sorted = [...slots].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBe(90 * SEC);
    expect(sorted[0]!).toBeLessThanOrEqual(T0 - down + 90 * SEC);
  });
});

describe('a one-time job whose instant passed during an outage', () => {
  const at = new Date(T0 - 20 * MIN).toISOString();

  it.each([
    ['all', RunStatus.READY],
    ['latest', RunStatus.READY],
    ['skip', RunStatus.SKIPPED],
  ] as const)("policy '%s': a misfire, planned once (%s), never again on later ticks", (policy, status) => {
    const j = job({ schedule: { at }, misfire: { after: '5m', policy } });
    const { runs } = ticks([j], T0 - 60 * MIN, everyMinuteFor(10));
    expect(runs.map((r) => [r.slot, r.status, r.catchUp])).toEqual([[Date.parse(at), status, true]]);
  });

  it('planned on time when the planner is up, once, and the job is finished after it (lastSlotOf)', () => {
    const j = job({ schedule: { at: new Date(T0 + 3 * MIN).toISOString() } });
    const { runs } = ticks([j], T0 - MIN, everyMinuteFor(10));
    expect(runs.map((r) => [r.slot, r.status, r.catchUp])).toEqual([[T0 + 3 * MIN, RunStatus.READY, false]]);
    expect(lastSlotOf(slotSpecOf(j))).toBe(T0 + 3 * MIN);
  });

  it('every shard of it, once', () => {
    const j = job({ schedule: { at }, shards: 3, misfire: { after: '5m', policy: 'all' } });
    const { runs } = ticks([j], T0 - 60 * MIN, everyMinuteFor(5));
    expect(runs.map((r) => r.shard).sort()).toEqual([0, 1, 2]);
  });
});

describe('the active window through the planner', () => {
  it('endAt passed during the outage: catch-up stops at endAt, nothing after it is ever planned', () => {
    const endAt = new Date(T0 - 10 * MIN).toISOString();
    const j = job({ schedule: '* * * * *', endAt, misfire: { after: '5m', policy: 'all', maxPerTick: 1000 } });
    const { runs } = ticks([j], T0 - 30 * MIN, everyMinuteFor(5));
    expect(runs.length).toBeGreaterThan(0);
    // endAt is 11:50:30: the last minute slot before it is 11:50:00.
    expect(Math.max(...runs.map((r) => r.slot))).toBe(Date.parse(endAt) - 30 * SEC);
    expect(new Set(runs.map((r) => r.slot)).size).toBe(runs.length);
  });

  it('startAt in the future: nothing until it, then on time', () => {
    const startAt = new Date(T0 + 3 * MIN + 30 * SEC).toISOString();
    const j = job({ schedule: '* * * * *', startAt });
    const { runs } = ticks([j], T0 - MIN, everyMinuteFor(6));
    expect(runs.every((r) => r.slot >= Date.parse(startAt) && !r.catchUp)).toBe(true);
    expect(runs[0]!.slot).toBe(T0 + 3 * MIN + 30 * SEC);
  });

  it('an excluded day inside an outage is neither run nor recorded as skipped', () => {
    // The outage runs from 22:00 on May 31 to 12:00 on June 1; May 31 is excluded.
    const j = job({ schedule: { every: '10m' }, exclude: ['2026-05-31'], misfire: { after: '5m', policy: 'skip', maxPerTick: 1000 } });
    const { runs } = ticks([j], T0 - 14 * 60 * MIN, [T0]);
    const days = new Set(runs.map((r) => new Date(r.slot).toISOString().slice(0, 10)));
    expect([...days]).toEqual(['2026-06-01']);
    expect(runs.filter((r) => r.catchUp)).toHaveLength(72); // 00:00 .. 11:50 of June 1, SKIPPED
    expect(runs.filter((r) => !r.catchUp).map((r) => r.slot)).toEqual([T0 - 30 * SEC]); // 12:00
  });
});
