/**
 * The model's checks of config changes, long runs and operator-created runs
 * (tools/model/report-checks.ts), and the generator's job changes (tools/model/config-changes.ts):
 * each check with the history of the defect it exists for (issue 30's third review), and a
 * history of the fixed code that it must pass.
 */
import { describe, expect, it } from 'vitest';
import type { ExpectedSlot } from '../../tools/verify/checker.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import { RunOrigin, RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';
import { changedSpec, scheduleSoon } from '../../tools/model/config-changes.js';
import {
  checkCreatedRunsRun,
  checkMaxRuns,
  checkOneShardCountPerSlot,
  checkOnlyPoisonDeadLettered,
  checkReportsKept,
  checkYieldsNeverDeadLettered,
  owedScheduledCounts,
  withoutSpentMaxRuns,
  withSlotShards,
} from '../../tools/model/report-checks.js';
import { BehaviourKind } from '../../tools/model/handlers.js';
import { ofTheFaultPhase } from '../../tools/model/quiescence.js';
import type { JobSpec } from '../../tools/model/world.js';

const MIN = 60_000;
const T = Date.UTC(2031, 0, 1, 12, 0, 0);

function run(slot: number, over: Partial<Run> = {}): Run {
  const shards = over.shards ?? 1;
  const shard = over.shard ?? 0;
  return {
    job: 'j',
    slot,
    shard,
    shards,
    runKey: runKeyOf(over.job ?? 'j', slot, shard, shards),
    status: RunStatus.SUCCEEDED,
    fencingToken: 1,
    attempt: 1,
    createdAt: slot - 30_000,
    origin: RunOrigin.PLANNED,
    ...over,
  };
}
/** The planner's owed slots of `slots`, each under the bound `boundOf` gives it. */
const plannedUnder = (slots: readonly ExpectedSlot[], boundOf: (slot: number) => number | undefined) =>
  new Map([['j', new Map(slots.map((s) => [s.slot, boundOf(s.slot)]))]]);
const minutes = (n: number, over: Partial<Run> = {}) => Array.from({ length: n }, (_, i) => run(T + i * MIN, over));
const outcome = (runKey: string, at: number, status: RunStatus, code?: string): HistoryEvent => ({
  type: 'outcome',
  at,
  runKey,
  owner: 'w',
  token: 1,
  status,
  accepted: true,
  code,
});

describe('max-runs-exact: a job with maxRuns N has exactly N scheduled runs', () => {
  it('a bound frozen at the first planning is flagged: maxRuns raised 3 → 6, 3 scheduled runs though 8 slots were owed (D3-02)', () => {
    const violations = checkMaxRuns(new Map([['j', 6]]), new Map([['j', 8]]), minutes(3));
    expect(violations.map((v) => `${v.invariant}: ${v.detail}`)).toEqual([
      'max-runs-exact: 3 scheduled slots for maxRuns 6, though 8 were owed',
    ]);
  });

  it('a bound computed as an instant from the first schedule is flagged: an hourly job with maxRuns 3 changed to every minute ran 5 times', () => {
    expect(checkMaxRuns(new Map([['j', 3]]), new Map([['j', 5]]), minutes(5)).map((v) => v.detail)).toEqual([
      '5 scheduled slots for maxRuns 3',
    ]);
  });

  it('exactly N passes, fewer passes while fewer were owed, and backfilled or manual runs do not count', () => {
    const asked = [run(T - 10 * MIN, { origin: RunOrigin.BACKFILL }), run(T - 10 * MIN + 417, { origin: RunOrigin.MANUAL })];
    expect(checkMaxRuns(new Map([['j', 3]]), new Map([['j', 9]]), [...minutes(3), ...asked])).toEqual([]);
    expect(checkMaxRuns(new Map([['j', 3]]), new Map([['j', 2]]), minutes(2))).toEqual([]);
    // A slot of three shards is one scheduled slot.
    expect(
      checkMaxRuns(
        new Map([['j', 1]]),
        new Map([['j', 4]]),
        [0, 1, 2].map((shard) => run(T, { shard, shards: 3 })),
      ),
    ).toEqual([]);
  });

  it('the slots past a spent count are not owed (the planner rightly plans no more); while the count is not spent they are', () => {
    const owed: ExpectedSlot[] = [0, 1, 2, 3].map((i) => ({ job: 'j', slot: T + i * MIN }));
    const under = (bound: number | undefined) => ({ planned: plannedUnder(owed, () => bound), backfilled: new Set<string>() });
    expect(withoutSpentMaxRuns(owed, under(2), minutes(2)).map((s) => s.slot)).toEqual([T, T + MIN]);
    expect(withoutSpentMaxRuns(owed, under(3), minutes(2)).map((s) => s.slot)).toEqual(owed.map((s) => s.slot));
    expect(withoutSpentMaxRuns(owed, under(undefined), [])).toEqual(owed);
    // A backfilled slot is owed as a run whatever the count.
    expect(withoutSpentMaxRuns(owed, { ...under(2), backfilled: new Set([`j|${T + 3 * MIN}`]) }, minutes(2)).map((s) => s.slot)).toEqual([
      T,
      T + MIN,
      T + 3 * MIN,
    ]);
  });

  it('max-runs-exact false alarm (model seed 1063185818, path 13:0:0:0:0:0): the slots that passed while maxRuns 1 was spent are not owed once maxRuns is raised to 6', () => {
    // maxRuns 1: slot 0 ran, slots 1-4 passed while the job had ended; raised to 6 at slot 5, the
    // one slot the planner passed before the scenario ended. Judged by the final bound (6, of which
    // 2 are spent), slots 1-4 were owed: 4 lost slots and "2 scheduled slots, though 5 were owed".
    const owed: ExpectedSlot[] = Array.from({ length: 6 }, (_, i) => ({ job: 'j', slot: T + i * MIN }));
    const planned = plannedUnder(owed, (slot) => (slot < T + 5 * MIN ? 1 : 6));
    const runs = [run(T), run(T + 5 * MIN)];
    const kept = withoutSpentMaxRuns(owed, { planned, backfilled: new Set() }, runs);
    expect(kept.map((s) => (s.slot - T) / MIN)).toEqual([0, 5]);
    expect(checkMaxRuns(new Map([['j', 6]]), owedScheduledCounts(kept, planned), runs)).toEqual([]);
  });

  it('a raised bound that plans nothing more (maxRuns frozen at the first planning) is still flagged: its slots stay owed', () => {
    const owed: ExpectedSlot[] = Array.from({ length: 10 }, (_, i) => ({ job: 'j', slot: T + i * MIN }));
    const planned = plannedUnder(owed, (slot) => (slot < T + 5 * MIN ? 1 : 6));
    const runs = [run(T)];
    const kept = withoutSpentMaxRuns(owed, { planned, backfilled: new Set() }, runs);
    expect(kept.map((s) => (s.slot - T) / MIN)).toEqual([0, 5, 6, 7, 8, 9]);
    expect(checkMaxRuns(new Map([['j', 6]]), owedScheduledCounts(kept, planned), runs).map((v) => v.detail)).toEqual([
      '1 scheduled slots for maxRuns 6, though 6 were owed',
    ]);
  });

  it('a bound spent by a newer on-time slot before an older misfire was paged excuses that misfire (the count, not the order, is the rule)', () => {
    const owed: ExpectedSlot[] = Array.from({ length: 4 }, (_, i) => ({ job: 'j', slot: T + i * MIN }));
    const planned = plannedUnder(owed, () => 2);
    const runs = [run(T), run(T + 3 * MIN)];
    expect(withoutSpentMaxRuns(owed, { planned, backfilled: new Set() }, runs).map((s) => (s.slot - T) / MIN)).toEqual([0, 3]);
  });
});

describe('yield-never-dlq: a run that yields with progress is never dead-lettered (D3-04)', () => {
  const key = runKeyOf('j', T, 0, 1);

  it('a message moved to the DLQ after the run yielded with progress at each of its 15 receives is flagged', () => {
    const yields = Array.from({ length: 15 }, (_, i) => outcome(key, T + (i + 1) * MIN, RunStatus.RETRY, 'YIELDED'));
    const violations = checkYieldsNeverDeadLettered(yields, [{ runKey: key, at: T + 16 * MIN }]);
    expect(violations.map((v) => `${v.invariant}:${v.runKey}`)).toEqual([`yield-never-dlq:${key}`]);
    expect(violations[0]!.detail).toMatch(/after 15 yield\(s\) with progress/);
  });

  it('a poison message (its last outcome a failure, or no outcome at all) may reach the DLQ, and a yield after the move is no excuse', () => {
    const history = [
      outcome(key, T + MIN, RunStatus.RETRY, 'YIELDED'),
      outcome(key, T + 2 * MIN, RunStatus.RETRY, 'MODEL_RETRYABLE'),
      outcome(key, T + 9 * MIN, RunStatus.RETRY, 'YIELDED'),
    ];
    expect(checkYieldsNeverDeadLettered(history, [{ runKey: key, at: T + 3 * MIN }])).toEqual([]);
    expect(checkYieldsNeverDeadLettered([], [{ runKey: key, at: T }])).toEqual([]);
  });
});

describe('created-runs-run: a run an operator created is not refused before its deadline counted from its creation (D3-11)', () => {
  const backfilled = run(T - 20 * MIN, { origin: RunOrigin.BACKFILL, createdAt: T, status: RunStatus.DEAD });

  it('a backfilled run of a slot 20 minutes old refused at once for a 60 s deadline counted from its slot is flagged: it never ran', () => {
    const violations = checkCreatedRunsRun(
      [outcome(backfilled.runKey, T + 2_000, RunStatus.DEAD, 'DEADLINE_BEFORE_START')],
      [backfilled],
      new Map([['j', MIN]]),
      1_000,
    );
    expect(violations.map((v) => `${v.invariant}:${v.runKey}`)).toEqual([`created-runs-run:${backfilled.runKey}`]);
  });

  it("one refused after its deadline from creation passed, a catch-up run (the slot's deadline, by design) and a deadline exceeded after attempts pass", () => {
    const deadlines = new Map([['j', MIN]]);
    expect(
      checkCreatedRunsRun(
        [outcome(backfilled.runKey, T + MIN + 1, RunStatus.DEAD, 'DEADLINE_BEFORE_START')],
        [backfilled],
        deadlines,
        1_000,
      ),
    ).toEqual([]);
    const catchUp = run(T - 20 * MIN, { origin: RunOrigin.CATCH_UP, createdAt: T });
    expect(
      checkCreatedRunsRun([outcome(catchUp.runKey, T + 1, RunStatus.DEAD, 'DEADLINE_BEFORE_START')], [catchUp], deadlines, 1_000),
    ).toEqual([]);
    expect(
      checkCreatedRunsRun([outcome(backfilled.runKey, T + 1, RunStatus.DEAD, 'DEADLINE_EXCEEDED')], [backfilled], deadlines, 1_000),
    ).toEqual([]);
  });
});

describe('shard counts across a change of shards (D3-03)', () => {
  it('runs of two shard counts for one slot (1 → 3 mixed: job@slot beside job@slot#1 and #2) are flagged as a doubled slot', () => {
    const mixed = [run(T), run(T, { shard: 1, shards: 3 }), run(T, { shard: 2, shards: 3 })];
    expect(checkOneShardCountPerSlot(mixed).map((v) => `${v.invariant}: ${v.detail}`)).toEqual([
      'one-run-per-slot: runs of 1 and 3 shards for one slot',
    ]);
    expect(checkOneShardCountPerSlot([run(T), ...[0, 1, 2].map((shard) => run(T + MIN, { shard, shards: 3 }))])).toEqual([]);
  });

  it("an owed slot is owed under its runs' shard count (the slot's first put decides), under the config's when it has none", () => {
    const owed: ExpectedSlot[] = [0, 1, 2].map((shard) => ({ job: 'j', slot: T, shard, shards: 3 }));
    const later: ExpectedSlot[] = [0, 1, 2].map((shard) => ({ job: 'j', slot: T + MIN, shard, shards: 3 }));
    expect(withSlotShards([...owed, ...later], [run(T)])).toEqual([{ job: 'j', slot: T, shard: 0, shards: 1 }, ...later]);
  });
});

describe('run-message-accepted: only real poison reaches the DLQ', () => {
  const old = run(T + 3 * MIN, { status: RunStatus.READY });

  it('a run created before shards changed 1 → 3, whose message the worker refused as INCONSISTENT until it went to the DLQ, never claimed, is flagged (D3-03)', () => {
    const violations = checkOnlyPoisonDeadLettered([], [{ runKey: old.runKey, at: T + 20 * MIN }], [old], new Set(['j']));
    expect(violations.map((v) => `${v.invariant}:${v.runKey}`)).toEqual([`run-message-accepted:${old.runKey}`]);
  });

  it("a removed job's message (an orphan), a message whose run does not exist, and one of a run claimed before the move are real poison or a retry budget spent", () => {
    expect(checkOnlyPoisonDeadLettered([], [{ runKey: old.runKey, at: T + 20 * MIN }], [old], new Set())).toEqual([]);
    expect(checkOnlyPoisonDeadLettered([], [{ runKey: 'j@nowhere', at: T }], [old], new Set(['j']))).toEqual([]);
    const claimed: HistoryEvent = {
      type: 'claimed',
      at: T + 4 * MIN,
      runKey: old.runKey,
      owner: 'w',
      token: 1,
      attempt: 1,
      from: RunStatus.READY,
      leaseUntil: T + 5 * MIN,
    };
    expect(checkOnlyPoisonDeadLettered([claimed], [{ runKey: old.runKey, at: T + 20 * MIN }], [old], new Set(['j']))).toEqual([]);
  });
});

describe("report-kept: a command's report is an assertion", () => {
  const J = new Set(['j']);
  const dead = run(T, { status: RunStatus.READY });
  const claimedAt = (at: number): HistoryEvent => ({
    type: 'claimed',
    at,
    runKey: dead.runKey,
    owner: 'w',
    token: 2,
    attempt: 1,
    from: RunStatus.READY,
    leaseUntil: at + MIN,
  });

  it('ops retry that reported a run revived, which then never ran, is flagged (a revival that forgets to send, or revives a state no worker claims)', () => {
    const violations = checkReportsKept(
      { revived: [{ runKey: dead.runKey, at: T + MIN }], triggers: [] },
      [claimedAt(T)],
      [dead],
      new Set(),
      J,
    );
    expect(violations.map((v) => `${v.invariant}:${v.runKey}`)).toEqual([`report-kept:${dead.runKey}`]);
  });

  it('a revival that ran, was refused on arrival by its overlap policy, acted on again by an operator, or left by the sweeper for one keeps its report', () => {
    const revived = { revived: [{ runKey: dead.runKey, at: T + MIN }], triggers: [] };
    expect(checkReportsKept(revived, [claimedAt(T + 2 * MIN)], [dead], new Set(), J)).toEqual([]);
    expect(checkReportsKept(revived, [], [{ ...dead, status: RunStatus.SKIPPED }], new Set(), J)).toEqual([]);
    expect(
      checkReportsKept(
        revived,
        [{ type: 'ops', at: T + 3 * MIN, runKey: dead.runKey, action: 'resolve', from: RunStatus.READY, to: RunStatus.MANUAL }],
        [dead],
        new Set(),
        J,
      ),
    ).toEqual([]);
    expect(checkReportsKept(revived, [], [dead], new Set([dead.runKey]), J)).toEqual([]);
  });

  it('a revival resolved by an operator at the same virtual instant keeps its report, one resolved before the revival does not (model seed 1626809289: a false alarm)', () => {
    const revived = { revived: [{ runKey: dead.runKey, at: T + MIN }], triggers: [] };
    const retry: HistoryEvent = {
      type: 'ops',
      at: T + MIN,
      runKey: dead.runKey,
      action: 'retry',
      from: RunStatus.DEAD,
      to: RunStatus.READY,
    };
    const resolve: HistoryEvent = {
      type: 'ops',
      at: T + MIN,
      runKey: dead.runKey,
      action: 'resolve',
      from: RunStatus.READY,
      to: RunStatus.MANUAL,
    };
    const manual = { ...dead, status: RunStatus.MANUAL };
    expect(checkReportsKept(revived, [retry, resolve], [manual], new Set(), J)).toEqual([]);
    expect(checkReportsKept(revived, [resolve, retry], [manual], new Set(), J).map((v) => v.invariant)).toEqual(['report-kept']);
  });

  it('a manual run no trigger reported is flagged (a trigger that exited non-zero had created it: a second try without the key would add another, D3-09); a reported one that ran passes', () => {
    const manual = run(T + 417, { origin: RunOrigin.MANUAL });
    expect(
      checkReportsKept({ revived: [], triggers: [{ job: 'j', key: 'k', runKeys: [] }] }, [], [manual], new Set(), J).map((v) => v.detail),
    ).toEqual(['a manual run no ops trigger reported (SUCCEEDED): a command that exited non-zero created it']);
    expect(
      checkReportsKept({ revived: [], triggers: [{ job: 'j', key: 'k', runKeys: [manual.runKey] }] }, [], [manual], new Set(), J),
    ).toEqual([]);
  });

  it("a trigger's or a revival's run of a job removed from the config since is an orphan, not a broken report (model seed 20269227: a false alarm)", () => {
    const open = run(T + 417, { origin: RunOrigin.MANUAL, status: RunStatus.READY });
    expect(
      checkReportsKept(
        { revived: [{ runKey: open.runKey, at: T }], triggers: [{ job: 'j', key: 'k', runKeys: [open.runKey] }] },
        [],
        [open],
        new Set(),
        new Set(),
      ),
    ).toEqual([]);
  });

  it('a run a trigger reported created that does not exist, or never ran and is still open, is flagged', () => {
    const open = run(T + 417, { origin: RunOrigin.MANUAL, status: RunStatus.READY });
    const violations = checkReportsKept(
      { revived: [], triggers: [{ job: 'j', key: 'k', runKeys: [open.runKey, 'j@missing'] }] },
      [],
      [open],
      new Set(),
      J,
    );
    expect(violations.map((v) => v.detail)).toEqual([
      'ops trigger j --idempotency-key k reported it created, but it never ran (now READY)',
      'ops trigger j --idempotency-key k reported it created, but it does not exist',
    ]);
  });
});

describe('the generator: config changes of any job field, jobs due inside the lookahead', () => {
  const spec: JobSpec = {
    name: 'j',
    schedule: '* * * * *',
    overlap: 'parallel',
    misfire: { policy: 'all', afterMs: 300_000, maxPerTick: 10 },
    shards: 1,
    maxAttempts: 2,
    backoffBaseMs: 200,
    backoffMaxMs: 2_000,
    leaseMs: 15_000,
    timeoutMs: 4_000,
    startLeadMs: 0,
    checkpoints: false,
    reconcile: false,
    group: 'g',
    behaviours: [{ kind: BehaviourKind.OK, workMs: 100, writes: 1 }],
  };

  it('a change to the value a job has is no change; maxRuns is only raised, and only on a job that has a bound (runs counted under it stay)', () => {
    expect(changedSpec(spec, { field: 'shards', to: 1 })).toBeUndefined();
    expect(changedSpec(spec, { field: 'shards', to: 3 })).toMatchObject({ shards: 3 });
    expect(changedSpec(spec, { field: 'maxRuns', raiseBy: 2 })).toBeUndefined();
    expect(changedSpec({ ...spec, maxRuns: 3 }, { field: 'maxRuns', raiseBy: 2 })).toMatchObject({ maxRuns: 5 });
    expect(changedSpec({ ...spec, deadlineMs: MIN }, { field: 'deadline', toMs: undefined })).toMatchObject({ deadlineMs: undefined });
  });

  it('a job added due soon has its first slot after the next whole minute (the next tick) and before the watermark the last tick left, whole seconds', () => {
    const now = T + 55_000;
    expect(scheduleSoon(now, 2_000, 'at')).toEqual({ at: new Date(T + MIN + 2_000).toISOString() });
    expect(scheduleSoon(now, 2_400, 'daily')).toBe('2 1 12 * * *');
    // Never in the past: an offset before now moves a minute on.
    expect(scheduleSoon(now, -10_000, 'at')).toEqual({ at: new Date(T + 2 * MIN - 10_000).toISOString() });
  });
});

describe('quiescence waits for the runs of the fault phase', () => {
  const END = T;
  it('report-kept false alarm (model seed 1982399355, path 4:20:…): a run ops trigger created at the fault phase end, its slot a millisecond past it, is waited for', () => {
    expect(ofTheFaultPhase({ slot: END + 1, origin: RunOrigin.MANUAL }, END, 0)).toBe(true);
    expect(ofTheFaultPhase({ slot: END - MIN, origin: RunOrigin.BACKFILL }, END, 0)).toBe(true);
    // A planned slot after the fault phase is the quiet world's own work, not waited for.
    expect(ofTheFaultPhase({ slot: END + MIN, origin: RunOrigin.PLANNED }, END, 0)).toBe(false);
    expect(ofTheFaultPhase({ slot: END, origin: RunOrigin.PLANNED }, END, 0)).toBe(true);
    expect(ofTheFaultPhase({ slot: END + 500, origin: RunOrigin.PLANNED }, END, 1_000)).toBe(true);
  });
});
