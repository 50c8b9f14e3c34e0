/**
 * planTick over sequences of ticks (DESIGN §7), with the planner's state carried from tick to tick
 * the way shared/planner/planner.ts carries it: the watermark only moves forward, catch-up cursors and
 * edges are set and cleared, a maxRuns job's slots are counted as the puts create them (oldest
 * first, until the count is reached), a pause keeps (or sets) the cursor and drops the edge.
 * Hazards: a slot planned twice or never, a misfire run on time or an on-time slot skipped, a
 * cursor that loses its place, a catch-up budget overrun or one that never moves, a maxRuns job
 * with more or fewer than N scheduled runs.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import { DEFAULT_CATCH_UP_BUDGET, legacyRunCount, planTick, slotSpecOf, type PlanInput, type TickPlan } from '../../shared/core/plan.js';
import { nextSlotAfter, slotsBetween } from '../../shared/schedule/slots.js';
import { RunStatus } from '../../shared/core/vocabulary.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const LOOKAHEAD = MIN;
const T0 = Date.UTC(2026, 2, 2, 12, 0);

function jobs(...defs: readonly Record<string, unknown>[]): Job[] {
  return parseJobs(
    defs.map((d, i) => ({ name: `j${i}`, schedule: '* * * * *', handler: 'h', ...d })),
    { handlers: ['h'] },
  );
}

/** The planner's state between ticks, updated as runPlannerTick and the planner store update it. */
class PlannerState {
  plannedUntil: number | undefined;
  readonly behind = new Map<string, number>();
  readonly edges = new Map<string, number>();
  /** maxRuns jobs: the count of slots created, and the slots (as the puts would create them). */
  readonly counts = new Map<string, number>();
  readonly created = new Map<string, Set<number>>();
  readonly paused = new Set<string>();
  readonly plans: { now: number; budget: number | undefined; behindBefore: ReadonlySet<string>; plan: TickPlan }[] = [];

  constructor(readonly jobs: readonly Job[]) {}

  tick(now: number, budget?: number, extra: Partial<PlanInput> = {}): TickPlan {
    const behind = new Map([...this.behind].filter(([name]) => !this.paused.has(name)));
    const catchUpEdges = new Map([...this.edges].filter(([name]) => behind.has(name)));
    const plan = planTick({
      jobs: this.jobs,
      plannedUntil: this.plannedUntil,
      paused: new Set(this.paused),
      behind,
      catchUpEdges,
      now,
      lookaheadMs: LOOKAHEAD,
      catchUpBudget: budget,
      runCounts: new Map(this.counts),
      ...extra,
    });
    this.plans.push({ now, budget, behindBefore: new Set(behind.keys()), plan });
    // createCountedRun: a maxRuns job's slots, oldest first, each counted as it is created, until
    // the count refuses one; a slot that exists already is not counted again.
    for (const job of this.jobs) {
      if (job.maxRuns === undefined) continue;
      const created = this.created.get(job.name) ?? new Set<number>();
      this.created.set(job.name, created);
      const slots = [...new Set(plan.runs.filter((r) => r.job === job).map((r) => r.slot))].sort((a, b) => a - b);
      for (const slot of slots) {
        if (created.has(slot)) continue;
        if ((this.counts.get(job.name) ?? 0) >= job.maxRuns) break;
        created.add(slot);
        this.counts.set(job.name, (this.counts.get(job.name) ?? 0) + 1);
      }
    }
    for (const [name, cursor] of plan.behindSet) {
      this.behind.set(name, cursor);
      this.edges.set(name, plan.edgeSet.get(name) ?? cursor);
    }
    for (const name of plan.behindClear) {
      this.behind.delete(name);
      this.edges.delete(name);
    }
    // advancePartition: only forward.
    this.plannedUntil = Math.max(this.plannedUntil ?? Number.NEGATIVE_INFINITY, plan.plannedUntil);
    return plan;
  }

  /** The planner store's pause: the cursor stays, or starts at the watermark; the edge goes. */
  pause(name: string): void {
    if (this.paused.has(name) || this.plannedUntil === undefined) return;
    this.paused.add(name);
    if (!this.behind.has(name)) this.behind.set(name, this.plannedUntil);
    this.edges.delete(name);
  }

  resume(name: string): void {
    this.paused.delete(name);
  }

  /** Regular ticks, one a minute, until no job is behind (bounded). */
  settle(from: number, budget?: number): number {
    let now = from;
    for (let i = 0; i < 400 && (i === 0 || this.behind.size > 0); i++) this.tick((now += MIN), budget);
    expect(this.behind.size, 'still behind after 400 regular ticks').toBe(0);
    return now;
  }

  runs() {
    return this.plans.flatMap((p) => p.plan.runs);
  }

  /** The slots planned for a job (for a maxRuns job: those the counted puts created). */
  slotsOf(name: string): number[] {
    const created = this.created.get(name);
    if (created) return [...created].sort((a, b) => a - b);
    return this.runs()
      .filter((r) => r.job.name === name && r.shard === 0)
      .map((r) => r.slot);
  }
}

/** The slots a job is owed from its first tick to the final watermark. */
function owed(job: Job, firstNow: number, until: number): number[] {
  return slotsBetween(slotSpecOf(job), firstNow, until);
}

/**
 * A maxRuns job's slots: exactly min(N, owed) of them, each owed, none twice. Which ones depends
 * on the order the catch-up pages and on-time windows reached the puts: counted as created.
 */
function expectBounded(job: Job, slots: readonly number[], expected: readonly number[]): void {
  expect(new Set(slots).size, `${job.name}: a slot counted twice`).toBe(slots.length);
  expect(
    slots.filter((slot) => !expected.includes(slot)),
    `${job.name}: slots not owed`,
  ).toEqual([]);
  if (job.misfire.policy !== 'latest') expect(slots.length, `${job.name}: scheduled runs`).toBe(Math.min(job.maxRuns!, expected.length));
}

/** What every tick's plan must satisfy, whatever came before. */
function checkTick(state: PlannerState, index: number): void {
  const { now, budget, behindBefore, plan } = state.plans[index]!;
  const lateEdgeOf = (job: Job) => now - job.misfire.after - 1;
  const catchUp = plan.runs.filter((r) => r.catchUp);
  const onTime = plan.runs.filter((r) => !r.catchUp);
  // On-time runs precede catch-up runs.
  expect(plan.runs.slice(0, onTime.length).every((r) => !r.catchUp)).toBe(true);
  for (const run of onTime) {
    // On time means due at most misfire.after ago, and not past the horizon.
    expect(run.slot).toBeGreaterThan(lateEdgeOf(run.job));
    expect(run.slot).toBeLessThanOrEqual(now + LOOKAHEAD);
    expect(run.status).toBe(RunStatus.READY);
  }
  for (const run of catchUp) {
    // A catch-up run is a misfire, and the policy decides its status.
    // (A forbid-queue job that runs its misfires defers its on-time slots into its catch-up.)
    if (!(run.job.overlap === 'forbid-queue' && run.job.misfire.policy === 'all'))
      expect(run.slot).toBeLessThanOrEqual(lateEdgeOf(run.job));
    expect(run.status).toBe(run.job.misfire.policy === 'skip' ? RunStatus.SKIPPED : RunStatus.READY);
  }
  for (const run of plan.runs) {
    // A reason says the run was skipped; a run that will execute carries none.
    expect(run.reason === undefined).toBe(run.status === RunStatus.READY);
    // Jitter never moves a run to or past its job's next slot.
    const next = nextSlotAfter(slotSpecOf(run.job), run.slot);
    expect(run.fireAt).toBeGreaterThanOrEqual(run.slot);
    if (next !== undefined) expect(run.fireAt).toBeLessThan(next);
  }
  // Firing order, so that the run due first is sent first.
  for (let i = 1; i < onTime.length; i++) expect(onTime[i]!.fireAt).toBeGreaterThanOrEqual(onTime[i - 1]!.fireAt);
  // The catch-up budget bounds the tick's work.
  expect(catchUp.length).toBeLessThanOrEqual(Math.max(0, budget ?? DEFAULT_CATCH_UP_BUDGET));
  // Every shard of every slot, once in the tick.
  const keys = plan.runs.map((r) => `${r.job.name}@${r.slot}#${r.shard}`);
  expect(new Set(keys).size).toBe(keys.length);
  for (const run of plan.runs) for (let s = 0; s < run.job.shards; s++) expect(keys).toContain(`${run.job.name}@${run.slot}#${s}`);
  // `latest` runs one misfire per tick at most.
  for (const job of state.jobs.filter((j) => j.misfire.policy === 'latest')) {
    expect(new Set(catchUp.filter((r) => r.job === job).map((r) => r.slot)).size).toBeLessThanOrEqual(1);
  }
  // Only a job that was behind is cleared (else a state write per job per tick); never both.
  for (const name of plan.behindClear) expect(behindBefore.has(name), `${name} cleared but never behind`).toBe(true);
  for (const name of plan.behindSet.keys()) expect(plan.behindClear).not.toContain(name);
  // A cursor is a real instant, at or before its edge.
  for (const [name, cursor] of plan.behindSet) {
    expect(Number.isFinite(cursor), `${name}'s cursor`).toBe(true);
    expect(cursor).toBeLessThanOrEqual(plan.edgeSet.get(name)!);
  }
  // A maxRuns job's count never passes N.
  for (const job of state.jobs) if (job.maxRuns !== undefined) expect(state.counts.get(job.name) ?? 0).toBeLessThanOrEqual(job.maxRuns);
  // forbid-queue starts runs in slot order: after every tick, a job that runs its misfires has no
  // owed slot still to be created below one that exists.
  const upTo = state.plans.slice(0, index + 1).flatMap((p) => p.plan.runs);
  for (const job of state.jobs.filter((j) => j.overlap === 'forbid-queue' && j.misfire.policy === 'all' && j.maxRuns === undefined)) {
    const created = new Set(upTo.filter((r) => r.job === job && r.shard === 0).map((r) => r.slot));
    if (created.size === 0) continue;
    const newest = Math.max(...created);
    const missing = owed(job, T0, newest).filter((slot) => !created.has(slot));
    expect(
      missing.map((s) => new Date(s).toISOString()),
      `${job.name}: created out of slot order`,
    ).toEqual([]);
  }
}

const jobDef = fc.record({
  schedule: fc.constantFrom<unknown>('* * * * *', '*/20 * * * * *', '*/7 * * * *', '0 * * * *', { every: '90s', phase: '15s' }),
  shards: fc.integer({ min: 1, max: 3 }),
  misfire: fc.record({
    after: fc.constantFrom('1m', '3m'),
    policy: fc.constantFrom('all', 'skip', 'latest'),
    maxPerTick: fc.integer({ min: 3, max: 40 }),
  }),
  maxRuns: fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
  jitter: fc.option(fc.constantFrom('5s', '2m'), { nil: undefined }),
  overlap: fc.constantFrom('parallel', 'forbid-queue'),
});
/** A tick: minutes since the one before (more than one is an outage), and its catch-up budget. */
const tickDef = fc.record({
  gap: fc.oneof(fc.constant(1), fc.constant(1), fc.integer({ min: 2, max: 60 })),
  budget: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12 }), fc.constant(undefined)),
});

describe('planTick over generated sequences of ticks', () => {
  it('one outage, then regular ticks under any budgets: every slot owed is planned exactly once, misfires by their policy', () => {
    fc.assert(
      fc.property(
        fc.array(jobDef, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 2, max: 60 }),
        fc.array(
          tickDef.map((t) => t.budget),
          { maxLength: 12 },
        ),
        (defs, outage, budgets) => {
          const config = jobs(...defs);
          const state = new PlannerState(config);
          state.tick(T0);
          let now = T0 + outage * MIN;
          state.tick(now, budgets[0]);
          for (const budget of budgets.slice(1)) state.tick((now += MIN), budget);
          state.settle(now);
          state.plans.forEach((_, i) => checkTick(state, i));
          for (const job of config) {
            const slots = state.slotsOf(job.name);
            expect(new Set(slots).size, `${job.name}: a slot planned twice`).toBe(slots.length);
            const expected = owed(job, T0, state.plannedUntil!);
            if (job.maxRuns !== undefined) expectBounded(job, slots, expected);
            else if (job.misfire.policy === 'latest') expect(expected).toEqual(expect.arrayContaining(slots));
            else
              expect(
                [...slots].sort((a, b) => a - b),
                `${job.name}: slots lost`,
              ).toEqual(expected);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('outages during a catch-up, pauses and resumes, any budgets: no slot owed is ever lost', () => {
    const step = fc.record({ tick: tickDef, pause: fc.option(fc.nat(3), { nil: undefined }), resume: fc.boolean() });
    fc.assert(
      fc.property(
        fc.array(
          jobDef.filter((d) => d.misfire.policy !== 'latest'),
          { minLength: 1, maxLength: 4 },
        ),
        fc.array(step, { minLength: 1, maxLength: 12 }),
        (defs, steps) => {
          const config = jobs(...defs);
          const state = new PlannerState(config);
          let now = T0;
          state.tick(now);
          for (const { tick, pause, resume } of steps) {
            if (pause !== undefined && pause < config.length) state.pause(config[pause]!.name);
            if (resume) for (const name of [...state.paused]) state.resume(name);
            state.tick((now += tick.gap * MIN), tick.budget);
          }
          for (const name of [...state.paused]) state.resume(name);
          state.settle(now);
          state.plans.forEach((_, i) => checkTick(state, i));
          for (const job of config) {
            const slots = new Set(state.slotsOf(job.name));
            const expected = owed(job, T0, state.plannedUntil!);
            if (job.maxRuns !== undefined) {
              expectBounded(job, [...slots], expected);
              continue;
            }
            expect(
              expected.filter((slot) => !slots.has(slot)).map((s) => new Date(s).toISOString()),
              `${job.name}: slots lost`,
            ).toEqual([]);
            expect(
              [...slots].filter((slot) => !expected.includes(slot)),
              `${job.name}: slots not owed`,
            ).toEqual([]);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('a second outage while a job is catching up', () => {
  it('with the budget spent in the tick that finds it, the slots of the second outage are still planned later', () => {
    const config = jobs({ misfire: { after: '1m', policy: 'all', maxPerTick: 2 } });
    const state = new PlannerState(config);
    state.tick(T0);
    state.tick(T0 + 10 * MIN);
    expect(state.behind.has('j0')).toBe(true);
    // Down again for 20 minutes; that tick's catch-up budget is spent.
    const found = state.tick(T0 + 30 * MIN, 0);
    expect(found.deferred).toBe(1);
    // The cursor stays where it was; the edge moves to the new late edge.
    expect(found.behindSet.get('j0')).toBe(state.plans[1]!.plan.behindSet.get('j0'));
    expect(found.edgeSet.get('j0')).toBe(T0 + 29 * MIN - 1);
    const end = state.settle(T0 + 30 * MIN);
    const slots = new Set(state.slotsOf('j0'));
    for (let slot = T0 + MIN; slot <= end + LOOKAHEAD; slot += MIN) expect(slots.has(slot), new Date(slot).toISOString()).toBe(true);
  });

  it('found with budget to spare: the new misfires join the catch-up, none lost', () => {
    const config = jobs({ misfire: { after: '1m', policy: 'skip', maxPerTick: 2 } });
    const state = new PlannerState(config);
    state.tick(T0);
    state.tick(T0 + 10 * MIN);
    const found = state.tick(T0 + 30 * MIN);
    expect(found.edgeSet.get('j0')).toBe(T0 + 29 * MIN - 1);
    state.settle(T0 + 30 * MIN);
    const skipped = new Set(
      state
        .runs()
        .filter((r) => r.status === RunStatus.SKIPPED)
        .map((r) => r.slot),
    );
    for (let slot = T0 + 2 * MIN; slot < T0 + 29 * MIN; slot += MIN) expect(skipped.has(slot), new Date(slot).toISOString()).toBe(true);
  });
});

describe('forbid-queue catch-up is created in slot order', () => {
  it('after a 10-minute outage with maxPerTick 3, no on-time slot of a forbid-queue job exists before every older missed slot does (it would start first)', () => {
    const config = jobs({ overlap: 'forbid-queue', misfire: { after: '1m', policy: 'all', maxPerTick: 3 } });
    const state = new PlannerState(config);
    state.tick(T0);
    for (let now = T0 + 10 * MIN; now <= T0 + 16 * MIN; now += MIN) state.tick(now);
    state.plans.forEach((_, i) => checkTick(state, i));
    const slots = state.slotsOf('j0');
    expect([...slots].sort((a, b) => a - b)).toEqual(owed(config[0]!, T0, state.plannedUntil!));
  });

  it('a forbid-queue job with as many slots a tick as its maxPerTick (every 20 s, 3) catches up after an outage: the on-time slots it defers do not use its misfire budget', () => {
    const config = jobs({ schedule: '*/20 * * * * *', overlap: 'forbid-queue', misfire: { after: '1m', policy: 'all', maxPerTick: 3 } });
    const state = new PlannerState(config);
    state.tick(T0);
    const now = state.settle(T0 + 4 * MIN);
    expect(now - (T0 + 4 * MIN)).toBeLessThanOrEqual(10 * MIN);
    state.plans.forEach((_, i) => checkTick(state, i));
    expect([...state.slotsOf('j0')].sort((a, b) => a - b)).toEqual(owed(config[0]!, T0, state.plannedUntil!));
  });

  it('a parallel job under the same outage still gets its on-time slots at once', () => {
    const config = jobs({ misfire: { after: '1m', policy: 'all', maxPerTick: 3 } });
    const state = new PlannerState(config);
    state.tick(T0);
    const plan = state.tick(T0 + 10 * MIN);
    expect(plan.runs.filter((r) => !r.catchUp).map((r) => (r.slot - T0) / MIN)).toEqual([9, 10, 11]);
  });
});

describe('the catch-up edge', () => {
  it('a tick whose watermark is exactly the late edge keeps the recorded edge: slots planned on time are not planned again as catch-up', () => {
    const [job] = jobs({ misfire: { after: '1m', policy: 'all', maxPerTick: 100 } });
    const now = T0 + 30 * MIN;
    const lateEdge = now - MIN - 1;
    // Catching up (12:02, 12:09:59.999]; everything after the edge was planned on time up to lateEdge.
    const p = planTick({
      jobs: [job!],
      plannedUntil: lateEdge,
      paused: new Set(),
      behind: new Map([['j0', T0 + 2 * MIN]]),
      catchUpEdges: new Map([['j0', T0 + 10 * MIN - 1]]),
      now,
      lookaheadMs: LOOKAHEAD,
    });
    expect(p.runs.filter((r) => r.catchUp).map((r) => (r.slot - T0) / MIN)).toEqual([3, 4, 5, 6, 7, 8, 9]);
    expect(p.runs.filter((r) => !r.catchUp).map((r) => (r.slot - T0) / MIN)).toEqual([29, 30, 31]);
  });

  it('an edge with no cursor (the job caught up) starts no catch-up: on-time slots are not planned twice', () => {
    const [job] = jobs({ misfire: { after: '1m', policy: 'all', maxPerTick: 100 } });
    const p = planTick({
      jobs: [job!],
      plannedUntil: T0 + 20 * MIN,
      paused: new Set(),
      behind: new Map(),
      catchUpEdges: new Map([['j0', T0 + 30 * MIN]]),
      now: T0 + 20 * MIN,
      lookaheadMs: LOOKAHEAD,
    });
    expect(p.runs.map((r) => [(r.slot - T0) / MIN, r.catchUp])).toEqual([[21, false]]);
    expect(p.behindSet.size + p.behindClear.length).toBe(0);
  });

  it('a job resumed from a pause plans its recent slots on time and the older ones by its policy, none lost', () => {
    const [job] = jobs({ misfire: { after: '5m', policy: 'skip', maxPerTick: 100 } });
    // Paused at 12:00 (cursor there, edge dropped); resumed at 12:30 with the watermark at 12:31.
    const p = planTick({
      jobs: [job!],
      plannedUntil: T0 + 31 * MIN,
      paused: new Set(),
      behind: new Map([['j0', T0]]),
      now: T0 + 30 * MIN,
      lookaheadMs: LOOKAHEAD,
    });
    const minutes = (runs: typeof p.runs) => runs.map((r) => (r.slot - T0) / MIN);
    expect(minutes(p.runs.filter((r) => r.catchUp))).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(minutes(p.runs.filter((r) => !r.catchUp))).toEqual([25, 26, 27, 28, 29, 30, 31]);
    expect(p.behindClear).toEqual(['j0']);
  });
});

describe('jobs with nothing to plan', () => {
  it('a spent budget defers only jobs with misfires: a job with nothing due is neither deferred nor listed behind', () => {
    // Down 10 minutes: the minutely job missed 8 slots; the hourly one none; to the third, with
    // misfire.after 30m, every one of them is still on time; the one-time job was done before.
    const config = jobs(
      { misfire: { after: '1m' } },
      { schedule: '0 * * * *', misfire: { after: '1m' } },
      { misfire: { after: '30m' } },
      { schedule: { at: new Date(T0 - 60 * MIN).toISOString() }, misfire: { after: '1m' }, maxRuns: 1 },
    );
    const p = planTick({
      jobs: config,
      plannedUntil: T0 + MIN,
      paused: new Set(),
      behind: new Map(),
      now: T0 + 11 * MIN,
      lookaheadMs: LOOKAHEAD,
      catchUpBudget: 0,
    });
    expect(p.deferred).toBe(1);
    expect([...p.behindSet]).toEqual([['j0', T0 + MIN]]);
    expect([...p.edgeSet]).toEqual([['j0', T0 + 10 * MIN - 1]]);
    expect(p.runs.filter((r) => r.catchUp)).toEqual([]);
    expect(p.runs.filter((r) => r.job.name === 'j2').map((r) => (r.slot - T0) / MIN)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it('deferred counts the runs a spent budget holds back, shards included', () => {
    const config = jobs({ shards: 3, misfire: { after: '1m' } }, { shards: 2, misfire: { after: '1m', policy: 'latest' } });
    const p = planTick({
      jobs: config,
      plannedUntil: T0 + MIN,
      paused: new Set(),
      behind: new Map([['j1', T0]]),
      now: T0 + 11 * MIN,
      lookaheadMs: LOOKAHEAD,
      catchUpBudget: 2,
    });
    // j1 (most behind) fits: one newest misfire, 2 shards. j0's 3 shards no longer do.
    expect(p.runs.filter((r) => r.catchUp).map((r) => `${r.job.name}@${(r.slot - T0) / MIN}#${r.shard}`)).toEqual(['j1@9#0', 'j1@9#1']);
    expect(p.deferred).toBe(3);
    expect(p.behindClear).toEqual(['j1']);
  });

  it('a catching-up job whose schedule has ended is cleared, not left behind for every later tick to read', () => {
    const [job] = jobs({ schedule: { at: new Date(T0 + 5 * MIN).toISOString() }, misfire: { after: '1m' } });
    const p = planTick({
      jobs: [job!],
      plannedUntil: T0 + 20 * MIN,
      paused: new Set(),
      behind: new Map([['j0', T0 + 5 * MIN]]),
      catchUpEdges: new Map([['j0', T0 + 6 * MIN]]),
      now: T0 + 20 * MIN,
      lookaheadMs: LOOKAHEAD,
    });
    expect(p.runs).toEqual([]);
    expect(p.behindClear).toEqual(['j0']);
  });

  it('latest with no slot among the misfires plans nothing late and never re-plans a slot already planned', () => {
    // Hourly; 12:00 was planned; the planner was down 12:01-12:20: no hourly slot in between.
    const [job] = jobs({ schedule: '0 * * * *', misfire: { after: '1m', policy: 'latest' } });
    const lookaheadMs = 45 * MIN;
    const p = planTick({ jobs: [job!], plannedUntil: T0 + MIN, paused: new Set(), behind: new Map(), now: T0 + 20 * MIN, lookaheadMs });
    expect(p.runs.map((r) => [(r.slot - T0) / MIN, r.catchUp])).toEqual([[60, false]]);
    expect([...p.misfired.values()].reduce((a, b) => a + b, 0)).toBe(0);
    // Behind, with its cursor on a slot and nothing due up to its edge.
    const q = planTick({
      jobs: [job!],
      plannedUntil: T0 + 20 * MIN,
      paused: new Set(),
      behind: new Map([['j0', T0]]),
      catchUpEdges: new Map([['j0', T0 + 10 * MIN]]),
      now: T0 + 20 * MIN,
      lookaheadMs,
    });
    expect(q.runs.map((r) => [(r.slot - T0) / MIN, r.catchUp])).toEqual([[60, false]]);
    expect(q.behindClear).toEqual(['j0']);
  });
});

describe('the catch-up budget', () => {
  it('a budget of exactly one slot of runs still moves every job forward until all have caught up', () => {
    const config = jobs(
      { shards: 3, misfire: { after: '1m', maxPerTick: 5 } },
      { shards: 3, schedule: '*/20 * * * * *', misfire: { after: '1m', maxPerTick: 5 } },
    );
    const state = new PlannerState(config);
    state.tick(T0);
    let now = T0 + 15 * MIN;
    for (let i = 0; i < 200 && (i === 0 || state.behind.size > 0); i++) state.tick((now += MIN), 3);
    expect(state.behind.size).toBe(0);
    state.plans.forEach((_, i) => checkTick(state, i));
    for (const job of config) expect(new Set(state.slotsOf(job.name))).toEqual(new Set(owed(job, T0, state.plannedUntil!)));
  });

  it('the most-behind job goes first, whatever the order of the config', () => {
    const config = jobs({ misfire: { after: '1m', maxPerTick: 10 } }, { misfire: { after: '1m', maxPerTick: 10 } });
    // j1 has been behind since 12:00, j0 since 12:05: a budget of 4 goes to j1.
    const input = (list: Job[]): PlanInput => ({
      jobs: list,
      plannedUntil: T0 + 20 * MIN,
      paused: new Set(),
      behind: new Map([
        ['j0', T0 + 5 * MIN],
        ['j1', T0],
      ]),
      catchUpEdges: new Map([
        ['j0', T0 + 15 * MIN],
        ['j1', T0 + 15 * MIN],
      ]),
      now: T0 + 20 * MIN,
      lookaheadMs: LOOKAHEAD,
      catchUpBudget: 4,
    });
    for (const order of [config, [...config].reverse()]) {
      const p = planTick(input(order));
      expect(p.runs.filter((r) => r.catchUp).map((r) => `${r.job.name}@${(r.slot - T0) / MIN}`)).toEqual(['j1@1', 'j1@2', 'j1@3', 'j1@4']);
      expect(p.deferred).toBe(1);
      // Deferred with its edge as recorded: no state write (thousands of deferred jobs would
      // otherwise cost thousands of writes a tick, the work the budget is there to bound).
      expect(p.behindSet.has('j0')).toBe(false);
    }
  });

  it('jobs equally behind share a short budget the same way whatever the order of the config', () => {
    fc.assert(
      fc.property(
        fc.shuffledSubarray(
          Array.from({ length: 8 }, (_, i) => i),
          { minLength: 8 },
        ),
        fc.integer({ min: 1, max: 20 }),
        (order, budget) => {
          const config = jobs(...Array.from({ length: 8 }, () => ({ misfire: { after: '1m', maxPerTick: 3 } })));
          const plan = (list: Job[]) =>
            planTick({
              jobs: list,
              plannedUntil: T0 + MIN,
              paused: new Set(),
              behind: new Map(),
              now: T0 + 11 * MIN,
              lookaheadMs: LOOKAHEAD,
              catchUpBudget: budget,
            });
          const key = (p: TickPlan) => [
            p.runs
              .filter((r) => r.catchUp)
              .map((r) => `${r.job.name}@${r.slot}`)
              .sort(),
            [...p.behindSet].sort(),
          ];
          expect(key(plan(order.map((i) => config[i]!)))).toEqual(key(plan(config)));
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('maxRuns', () => {
  it('a job first planned after an outage counts its runs from its first misfire: the puts take its slots oldest first', () => {
    const [job] = jobs({ maxRuns: 3, misfire: { after: '1m', policy: 'all', maxPerTick: 100 } });
    const state = new PlannerState([job!]);
    state.plannedUntil = T0 + MIN;
    state.tick(T0 + 11 * MIN);
    expect(state.slotsOf('j0').map((s) => (s - T0) / MIN)).toEqual([2, 3, 4]);
  });

  it('a job whose count reached maxRuns plans nothing on later ticks', () => {
    const state = new PlannerState(jobs({ maxRuns: 4 }));
    for (let k = 0; k <= 8; k++) state.tick(T0 + k * MIN);
    expect(state.slotsOf('j0').map((s) => (s - T0) / MIN)).toEqual([1, 2, 3, 4]);
    expect(state.plans.slice(5).every((p) => p.plan.runs.length === 0)).toBe(true);
  });

  it('maxRuns raised after the count was reached plans the next slots up to the new N', () => {
    const [three] = jobs({ maxRuns: 3 });
    const [five] = jobs({ maxRuns: 5 });
    const p = planTick({
      jobs: [three!],
      plannedUntil: T0 + 5 * MIN,
      paused: new Set(),
      behind: new Map(),
      now: T0 + 5 * MIN,
      lookaheadMs: LOOKAHEAD,
      runCounts: new Map([['j0', 3]]),
    });
    expect(p.runs).toEqual([]);
    const raised = planTick({
      jobs: [five!],
      plannedUntil: T0 + 5 * MIN,
      paused: new Set(),
      behind: new Map(),
      now: T0 + 5 * MIN,
      lookaheadMs: LOOKAHEAD,
      runCounts: new Map([['j0', 3]]),
    });
    expect(raised.runs.map((r) => (r.slot - T0) / MIN)).toEqual([6]);
  });

  it('a catching-up job whose count reached maxRuns is cleared', () => {
    const [job] = jobs({ maxRuns: 3, misfire: { after: '1m', maxPerTick: 1 } });
    const p = planTick({
      jobs: [job!],
      plannedUntil: T0 + 20 * MIN,
      paused: new Set(),
      behind: new Map([['j0', T0 + 3 * MIN]]),
      catchUpEdges: new Map([['j0', T0 + 10 * MIN]]),
      now: T0 + 20 * MIN,
      lookaheadMs: LOOKAHEAD,
      runCounts: new Map([['j0', 3]]),
    });
    expect(p.runs).toEqual([]);
    expect(p.behindClear).toEqual(['j0']);
  });

  it('legacyRunCount: the slots of the schedule from the recorded first slot up to the bound or the watermark', () => {
    const [job] = jobs({ maxRuns: 5 });
    const spec = slotSpecOf(job!);
    expect(legacyRunCount(spec, { firstSlot: T0 + MIN, lastSlot: T0 + 5 * MIN }, T0 + 3 * MIN, 5)).toBe(3);
    expect(legacyRunCount(spec, { firstSlot: T0 + MIN, lastSlot: T0 + 5 * MIN }, T0 + 60 * MIN, 5)).toBe(5);
    expect(legacyRunCount(spec, { firstSlot: T0 + MIN, lastSlot: Number.POSITIVE_INFINITY }, T0 + 2 * MIN, 5)).toBe(2);
    expect(legacyRunCount(spec, { firstSlot: T0 + MIN, lastSlot: T0 + 5 * MIN }, T0, 5)).toBe(0);
  });
});

describe('a config change: re-planning from the previous tick', () => {
  it('a job added with a slot before the watermark gets it; a job catching up keeps its edge', () => {
    const [old, added] = jobs({ schedule: '*/10 * * * * *' }, { schedule: '5 * * * * *' });
    // The previous tick ran at T0 and planned to T0 + 1 min; this one runs at T0 + 40 s.
    const steady = planTick({
      jobs: [old!, added!],
      plannedUntil: T0 + MIN,
      paused: new Set(),
      behind: new Map(),
      now: T0 + 40 * SEC,
      lookaheadMs: LOOKAHEAD,
    });
    expect(steady.runs.filter((r) => r.job === added).map((r) => r.slot)).toEqual([T0 + MIN + 5 * SEC]);
    const replanned = planTick({
      jobs: [old!, added!],
      plannedUntil: T0 + MIN,
      paused: new Set(),
      behind: new Map(),
      now: T0 + 40 * SEC,
      lookaheadMs: LOOKAHEAD,
      replanFrom: T0,
    });
    expect(replanned.runs.filter((r) => r.job === added).map((r) => r.slot)).toEqual([T0 + 5 * SEC, T0 + MIN + 5 * SEC]);
    // Slots already planned for the old job come again (their puts create nothing).
    expect(replanned.runs.filter((r) => r.job === old).map((r) => (r.slot - T0) / SEC)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    // Never a misfire: the re-plan stops at the job's late edge.
    const late = planTick({
      jobs: [added!],
      plannedUntil: T0 + MIN,
      paused: new Set(),
      behind: new Map(),
      now: T0 + 40 * SEC,
      lookaheadMs: LOOKAHEAD,
      replanFrom: T0 - 60 * MIN,
    });
    expect(late.runs.every((r) => r.slot > T0 + 40 * SEC - added!.misfire.after)).toBe(true);
  });
});

describe('firing order', () => {
  it('on-time runs of jittered jobs go out by fire time, not by slot', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('10s', '40s', '2m'), { minLength: 2, maxLength: 5 }),
        fc.integer({ min: 0, max: 59 }),
        (jitters, minute) => {
          const config = jobs(...jitters.map((jitter) => ({ schedule: '*/30 * * * * *', jitter })));
          const now = T0 + minute * MIN;
          const p = planTick({ jobs: config, plannedUntil: now, paused: new Set(), behind: new Map(), now, lookaheadMs: 5 * MIN });
          const fireAts = p.runs.map((r) => r.fireAt);
          expect(fireAts).toEqual([...fireAts].sort((a, b) => a - b));
        },
      ),
      { numRuns: 40 },
    );
  });
});
