/**
 * The model's owed slots (tools/model/owed.ts), the expectation no-lost-slot checks a scenario
 * against: every slot it owes must be one the planner contract really promises. Each test here is
 * a false alarm the model once raised, checked against the pure planner (planTick) driven through
 * the same ticks: what the model owes, the planner must have created.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../tools/verify/checker.js';
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import { planTick } from '../../shared/core/plan.js';
import { RunOrigin, RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';
import { defaultLookaheadMs } from '../../shared/planner/planner.js';
import { computeOwed, owedStatuses, type TickRecord, type TimelineEvent } from '../../tools/model/owed.js';

const SEC = 1_000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const T0 = Date.UTC(2031, 0, 1, 0, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString().slice(11, 19);

function job(schedule: string, misfire: { policy: 'all' | 'skip'; maxPerTick: number } = { policy: 'all', maxPerTick: 3 }): Job {
  return parseJobs([{ name: 'j', schedule, handler: 'h', misfire: { after: 5 * MIN, ...misfire } }], { handlers: ['h'] })[0]!;
}

/**
 * One-partition planner ticks at `at[i]` with definition `defs[i]`, through the pure planner and
 * the state the planner keeps between ticks (watermark, catch-up cursor and edge): the slots it
 * created, and the tick records the model keeps of them.
 */
function plannerRun(ticks: readonly { readonly now: number; readonly job: Job }[]) {
  let plannedUntil: number | undefined;
  const behind = new Map<string, number>();
  const edges = new Map<string, number>();
  const created = new Set<number>();
  const records: TickRecord[] = [];
  ticks.forEach(({ now, job: def }, i) => {
    // As the planner does when the partition's jobs differ from those its watermark was planned
    // under: it re-plans on time from the previous tick's now (replanFromOf).
    const previous = ticks[i - 1];
    const replanFrom = previous !== undefined && previous.job !== def ? previous.now : undefined;
    const plan = planTick({
      jobs: [def],
      plannedUntil,
      paused: new Set(),
      behind,
      catchUpEdges: edges,
      now,
      lookaheadMs: defaultLookaheadMs([def]),
      replanFrom,
    });
    for (const run of plan.runs) created.add(run.slot);
    for (const [name, cursor] of plan.behindSet) {
      behind.set(name, cursor);
      edges.set(name, plan.edgeSet.get(name) ?? cursor);
    }
    for (const name of plan.behindClear) {
      behind.delete(name);
      edges.delete(name);
    }
    plannedUntil = Math.max(plannedUntil ?? Number.NEGATIVE_INFINITY, plan.plannedUntil);
    records.push({
      id: i,
      command: i,
      partition: 0,
      of: 1,
      seqStart: 10 + 2 * i,
      seqEnd: 11 + 2 * i,
      now,
      jobs: [def],
      ok: true,
      horizon: plan.plannedUntil,
      advanced: true,
    });
  });
  return { created, records, behind };
}

function owedBy(ticks: readonly { readonly now: number; readonly job: Job }[]) {
  const { created, records, behind } = plannerRun(ticks);
  const timeline: TimelineEvent[] = [{ kind: 'add', seq: 0, job: ticks[0]!.job }];
  const owed = computeOwed({
    timeline,
    ticks: records,
    until: ticks[ticks.length - 1]!.now,
    plannerSkewMs: 0,
    configured: new Set(['j']),
    behindCursors: behind,
  });
  return { owed: owed.slots.map((s) => s.slot), created, behind };
}

describe('owed slots: a schedule changed in the middle of a catch-up', () => {
  it("no-lost-slot false alarm: after a three-hour outage paged at 3 slots a tick, a change from every 30 s to every 20 s leaves the rest of the catch-up on the new schedule; the old schedule's :30 slots past the change are not owed", () => {
    const every30 = job('*/30 * * * * *');
    const every20 = job('*/20 * * * * *');
    const outageEnd = T0 + 3 * HOUR + 2 * MIN;
    const ticks = [
      { now: T0, job: every30 },
      { now: T0 + MIN, job: every30 },
      // The planner comes back: the first page of the catch-up still under every 30 s.
      { now: outageEnd, job: every30 },
      // The schedule changed before the next tick: the next pages follow every 20 s.
      ...Array.from({ length: 6 }, (_, i) => ({ now: outageEnd + (i + 1) * MIN, job: every20 })),
    ];
    const { owed, created, behind } = owedBy(ticks);
    expect(behind.has('j')).toBe(true);
    const cursor = behind.get('j')!;
    // The first page (every 30 s) and the later ones (every 20 s), as the planner made them.
    expect(
      [...created]
        .filter((s) => s < T0 + 10 * MIN)
        .sort((a, b) => a - b)
        .map(iso),
    ).toEqual([
      '00:00:30',
      '00:01:00',
      '00:01:30',
      '00:02:00',
      '00:02:30',
      '00:03:00',
      '00:03:30',
      '00:03:40',
      '00:04:00',
      '00:04:20',
      '00:04:40',
      '00:05:00',
      '00:05:20',
      '00:05:40',
      '00:06:00',
      '00:06:20',
      '00:06:40',
      '00:07:00',
      '00:07:20',
      '00:07:40',
      '00:08:00',
      '00:08:20',
      '00:08:40',
      '00:09:00',
      '00:09:20',
    ]);
    const catchUpOwed = owed.filter((s) => s > T0 + 2 * MIN + 5 * SEC && s <= cursor);
    // Still owed: the slots both schedules have (:00), so the catch-up stays checked.
    expect(catchUpOwed.map(iso)).toEqual(['00:03:00', '00:04:00', '00:05:00', '00:06:00', '00:07:00', '00:08:00', '00:09:00']);
    // And the on-time window the first tick after the outage planned whole, every 30 s.
    expect(owed.filter((s) => s > outageEnd - 5 * MIN && s <= outageEnd).map(iso)).toEqual([
      '02:57:30',
      '02:58:00',
      '02:58:30',
      '02:59:00',
      '02:59:30',
      '03:00:00',
      '03:00:30',
      '03:01:00',
      '03:01:30',
      '03:02:00',
    ]);
    expect(owed.filter((s) => !created.has(s)).map(iso)).toEqual([]);
  });

  it('no-lost-slot false alarm, generated: whatever the schedules, the outage, the page size and the tick of the change, every owed slot is one the planner created', () => {
    const schedules = ['* * * * *', '*/30 * * * * *', '*/20 * * * * *', '*/15 * * * * *', '15,45 * * * * *', '*/2 * * * *'];
    fc.assert(
      fc.property(
        fc.constantFrom(...schedules),
        fc.constantFrom(...schedules),
        fc.constantFrom<'all' | 'skip'>('all', 'skip'),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 0, max: 240 }),
        fc.integer({ min: 0, max: 8 }),
        (before, after, policy, maxPerTick, outageMinutes, changeAt) => {
          const defs = [job(before, { policy, maxPerTick }), job(after, { policy, maxPerTick })];
          const back = T0 + MIN + outageMinutes * MIN + 7 * SEC;
          const ticks = [
            { now: T0, job: defs[0]! },
            { now: T0 + MIN, job: defs[0]! },
            ...Array.from({ length: 9 }, (_, i) => ({ now: back + i * MIN, job: defs[i < changeAt ? 0 : 1]! })),
          ];
          const { owed, created } = owedBy(ticks);
          expect(owed.filter((s) => !created.has(s)).map(iso)).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('owed slots: a backfill racing a schedule change', () => {
  it('no-lost-slot false alarm: a backfill owes the slots of the definition it was given, not those of a schedule changed before it returned', () => {
    const every30 = job('*/30 * * * * *');
    const every20 = job('*/20 * * * * *');
    const timeline: TimelineEvent[] = [
      { kind: 'add', seq: 0, job: every30 },
      { kind: 'backfill-started', seq: 1, job: 'j', slotFrom: T0, slotTo: T0 + MIN },
      { kind: 'change', seq: 2, job: every20 },
      { kind: 'backfill', seq: 3, job: 'j', definition: every30, slotFrom: T0, slotTo: T0 + MIN },
    ];
    const owed = computeOwed({
      timeline,
      ticks: [],
      until: T0 + HOUR,
      plannerSkewMs: 0,
      configured: new Set(['j']),
      behindCursors: new Map(),
    });
    expect(owed.slots.map((s) => iso(s.slot))).toEqual(['00:00:00', '00:00:30']);
  });

  it("max-runs-exact false alarm (model seed 20269227, path 15:0): a backfill's slots are owed as runs, never as scheduled slots that maxRuns counts", () => {
    const every30 = job('*/30 * * * * *');
    const timeline: TimelineEvent[] = [
      { kind: 'add', seq: 0, job: every30 },
      { kind: 'backfill-started', seq: 1, job: 'j', slotFrom: T0, slotTo: T0 + MIN },
      { kind: 'backfill', seq: 2, job: 'j', definition: every30, slotFrom: T0, slotTo: T0 + MIN },
    ];
    const owed = computeOwed({
      timeline,
      ticks: [],
      until: T0 + HOUR,
      plannerSkewMs: 0,
      configured: new Set(['j']),
      behindCursors: new Map(),
    });
    expect(owed.slots).toHaveLength(2);
    expect(owed.planned.get('j')?.size ?? 0).toBe(0);
    expect([...owed.backfilled].sort()).toEqual([`j|${T0}`, `j|${T0 + 30_000}`]);
  });
});

describe('owed statuses at the end of quiescence', () => {
  const slot = T0 + 5 * MIN;
  const run = (origin: RunOrigin, status: RunStatus): Run => ({
    job: 'j',
    slot,
    shard: 0,
    shards: 1,
    runKey: runKeyOf('j', slot, 0, 1),
    status,
    fencingToken: 1,
    attempt: 0,
    createdAt: T0 + 3 * HOUR,
    origin,
  });
  const lost = (r: Run, progressing: string[]) => {
    const slots = owedStatuses(
      [{ job: 'j', slot, shard: 0, shards: 1 }],
      new Map([[r.runKey, r]]),
      new Set(),
      new Set(progressing),
      new Set(),
    );
    return checkHistory([], { runs: [r] }, { slots }).violations.map((v) => v.invariant);
  };

  it('no-lost-slot false alarm: a catch-up run of the last pages of a backlog still moving when quiescence ended may still wait for its exclusive lane', () => {
    expect(lost(run(RunOrigin.CATCH_UP, RunStatus.READY), ['j'])).toEqual([]);
  });

  it('no-lost-slot: an on-time run still open, or a catch-up run of a job no longer moving, is still flagged', () => {
    expect(lost(run(RunOrigin.PLANNED, RunStatus.READY), ['j'])).toEqual(['no-lost-slot']);
    expect(lost(run(RunOrigin.CATCH_UP, RunStatus.READY), [])).toEqual(['no-lost-slot']);
  });

  describe('an on-time run behind the catch-up of a forbid-queue lane', () => {
    // Forbid-queue runs in slot order (README, Overlap): a run that finds an older open run waits,
    // so the on-time runs planned while a catch-up pages an outage of hours wait for all of it.
    const onTime = (at: number, shard = 0): Run => ({
      job: 'j',
      slot: at,
      shard,
      shards: 2,
      runKey: runKeyOf('j', at, shard, 2),
      status: RunStatus.READY,
      fencingToken: 1,
      attempt: 0,
      createdAt: T0 + 3 * HOUR,
      origin: RunOrigin.PLANNED,
    });
    const catchUp = (at: number, shard: number, status: RunStatus): Run => ({ ...onTime(at, shard), origin: RunOrigin.CATCH_UP, status });
    const flagged = (runs: readonly Run[], slotOrdered: readonly string[], progressing: readonly string[] = ['j']) => {
      const target = runs[0]!;
      const slots = owedStatuses(
        [{ job: 'j', slot: target.slot, shard: target.shard, shards: 2 }],
        new Map(runs.map((r) => [r.runKey, r])),
        new Set(),
        new Set(progressing),
        new Set(slotOrdered),
      );
      return checkHistory([], { runs: [...runs] }, { slots })
        .violations.filter((v) => v.runKey === target.runKey)
        .map((v) => v.invariant);
    };
    const planned = T0 + 3 * HOUR;
    const older = T0 + HOUR;

    it('no-lost-slot false alarm: an on-time run of a forbid-queue job still waits behind an older open catch-up run of its lane when the catch-up was still moving at the end of quiescence', () => {
      expect(flagged([onTime(planned), catchUp(older, 0, RunStatus.READY)], ['j'])).toEqual([]);
    });

    it('no-lost-slot: the on-time run is still flagged with nothing older open on its lane, behind another shard only, under another overlap, or when the catch-up no longer moves', () => {
      expect(flagged([onTime(planned), catchUp(older, 0, RunStatus.DEAD)], ['j'])).toEqual(['no-lost-slot']);
      expect(flagged([onTime(planned), catchUp(older, 1, RunStatus.READY)], ['j'])).toEqual(['no-lost-slot']);
      expect(flagged([onTime(planned), catchUp(planned + HOUR, 0, RunStatus.READY)], ['j'])).toEqual(['no-lost-slot']);
      expect(flagged([onTime(planned), catchUp(older, 0, RunStatus.READY)], [])).toEqual(['no-lost-slot']);
      expect(flagged([onTime(planned), catchUp(older, 0, RunStatus.READY)], ['j'], [])).toEqual(['no-lost-slot']);
    });
  });
});
