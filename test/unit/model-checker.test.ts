/**
 * The model-based invariants of the checker (tools/verify/model-safety.ts, liveness.ts): each one,
 * fed a deliberately broken history or final state, is caught and names the run at fault.
 */
import { describe, expect, it } from 'vitest';
import { checkHistory, type Expected, type ModelExpectations } from '../../tools/verify/checker.js';
import { checkLiveness } from '../../tools/verify/liveness.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import { RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';

const T = Date.UTC(2031, 0, 1, 12, 0, 0);
const KEY = runKeyOf('pay', T, 0, 1);
const model = (over: Partial<ModelExpectations> = {}): Expected => ({
  model: { reconciling: [], itemGroups: {}, overlap: {}, clockToleranceMs: 0, ...over },
});
const run = (over: Partial<Run> = {}): Run => ({
  job: 'pay',
  slot: T,
  shard: 0,
  shards: 1,
  runKey: KEY,
  status: RunStatus.SUCCEEDED,
  fencingToken: 2,
  attempt: 1,
  createdAt: T - 60_000,
  ...over,
});
const claimed = (token: number, owner: string, at: number, from: RunStatus = RunStatus.READY): HistoryEvent => ({
  type: 'claimed',
  at,
  runKey: KEY,
  owner,
  token,
  attempt: 1,
  from,
  leaseUntil: at + 30_000,
});
const started = (token: number, owner: string, at: number): HistoryEvent => ({
  type: 'handler-started',
  at,
  runKey: KEY,
  owner,
  token,
  slot: T,
});
const invariants = (history: HistoryEvent[], runs: Run[], expected: Expected) =>
  checkHistory(history, { runs }, expected).violations.map((v) => `${v.invariant}:${v.runKey}`);

describe('model safety invariants', () => {
  it('no-late-fenced-write: a zombie write landing after its attempt recorded its outcome', () => {
    const history: HistoryEvent[] = [
      claimed(1, 'A', T),
      { type: 'outcome', at: T + 5_000, runKey: KEY, owner: 'A', token: 1, status: RunStatus.UNKNOWN, accepted: true },
      { type: 'effect', at: T + 9_000, runKey: KEY, token: 1, resource: 'items/X/S', result: 'accepted' },
    ];
    expect(invariants(history, [run({ status: RunStatus.UNKNOWN, fencingToken: 1 })], model())).toContain(`no-late-fenced-write:${KEY}`);
  });

  it('reconcile-before-rerun: a run whose attempt ended unknown is run again without a reconcile', () => {
    const history: HistoryEvent[] = [
      claimed(1, 'A', T),
      started(1, 'A', T),
      { type: 'handler-finished', at: T + 1_000, runKey: KEY, owner: 'A', token: 1, result: 'unknown' },
      { type: 'ops', at: T + 2_000, runKey: KEY, action: 'redrive', from: RunStatus.DEAD, to: RunStatus.READY },
      claimed(2, 'B', T + 3_000),
      started(2, 'B', T + 3_000),
    ];
    expect(invariants(history, [run()], model({ reconciling: ['pay'] }))).toContain(`reconcile-before-rerun:${KEY}`);
    // With the reconcile first, it is fine.
    const reconciled = [
      ...history.slice(0, 5),
      { type: 'reconciled', at: T + 3_000, runKey: KEY, owner: 'B', token: 2, outcome: 'not-done' } as HistoryEvent,
      history[5]!,
    ];
    expect(invariants(reconciled, [run()], model({ reconciling: ['pay'] }))).not.toContain(`reconcile-before-rerun:${KEY}`);
  });

  it('reconcile-before-rerun: a reconcile that found nothing done settles the attempts before it; the run after a known-not-done end needs none (seed 586660020)', () => {
    // Attempt 1 ended unknown (or never finished); attempt 2 reconciled (not done), ran and ended
    // retryable, which says its effect did not happen: attempt 3 may run without a reconcile.
    const history = (first: 'unknown' | 'crashed', second: 'retryable' | 'unknown'): HistoryEvent[] => [
      claimed(1, 'A', T),
      started(1, 'A', T),
      ...(first === 'unknown'
        ? [{ type: 'handler-finished', at: T + 1_000, runKey: KEY, owner: 'A', token: 1, result: 'unknown' } as HistoryEvent]
        : []),
      claimed(2, 'B', T + 40_000, first === 'unknown' ? RunStatus.UNKNOWN : RunStatus.RUNNING),
      { type: 'reconciled', at: T + 40_000, runKey: KEY, owner: 'B', token: 2, outcome: 'not-done' },
      started(2, 'B', T + 40_000),
      { type: 'handler-finished', at: T + 41_000, runKey: KEY, owner: 'B', token: 2, result: second },
      claimed(3, 'C', T + 60_000, second === 'retryable' ? RunStatus.RETRY : RunStatus.UNKNOWN),
      started(3, 'C', T + 60_000),
    ];
    const reconciling = model({ reconciling: ['pay'] });
    expect(invariants(history('unknown', 'retryable'), [run()], reconciling)).not.toContain(`reconcile-before-rerun:${KEY}`);
    expect(invariants(history('crashed', 'retryable'), [run()], reconciling)).not.toContain(`reconcile-before-rerun:${KEY}`);
    // Attempt 2's own unknown end still asks for a reconcile before attempt 3.
    expect(invariants(history('unknown', 'unknown'), [run()], reconciling)).toContain(`reconcile-before-rerun:${KEY}`);
    // Attempt 1's zombie handler reports its aborted end only after attempt 2's reconcile (seed
    // 20261208): the reconcile settled it all the same (its writes could no longer land).
    const late: HistoryEvent = { type: 'handler-finished', at: T + 40_500, runKey: KEY, owner: 'A', token: 1, result: 'aborted' };
    const zombie = history('crashed', 'retryable');
    expect(invariants([...zombie.slice(0, 4), late, ...zombie.slice(4)], [run()], reconciling)).not.toContain(
      `reconcile-before-rerun:${KEY}`,
    );
  });

  it('reconcile-before-rerun: an attempt the fence stopped after it tried its effect needs a reconcile before the next run; one stopped before it does not', () => {
    const history = (result: 'aborted' | 'stopped'): HistoryEvent[] => [
      claimed(1, 'A', T),
      started(1, 'A', T),
      { type: 'handler-finished', at: T + 1_000, runKey: KEY, owner: 'A', token: 1, result },
      { type: 'ops', at: T + 2_000, runKey: KEY, action: 'retry', from: RunStatus.SUPERSEDED, to: RunStatus.READY },
      claimed(2, 'B', T + 3_000),
      started(2, 'B', T + 3_000),
    ];
    expect(invariants(history('aborted'), [run()], model({ reconciling: ['pay'] }))).toContain(`reconcile-before-rerun:${KEY}`);
    expect(invariants(history('stopped'), [run()], model({ reconciling: ['pay'] }))).not.toContain(`reconcile-before-rerun:${KEY}`);
  });

  it('superseded-by-due: a run superseded in its lane is excused only by a due run of its own lane, not by another job of its item group', () => {
    const coalesced = run({
      status: RunStatus.SUPERSEDED,
      finishedAt: T + 100,
      lastError: { code: RunStatus.SUPERSEDED, message: 'superseded (coalesce)' },
    });
    const nextOwn = run({ runKey: runKeyOf('pay', T + 60_000, 0, 1), slot: T + 60_000, status: RunStatus.SUCCEEDED });
    const otherJob = run({ job: 'refund', runKey: runKeyOf('refund', T + 50, 0, 1), slot: T + 50, status: RunStatus.SUCCEEDED });
    const expected = model({ itemGroups: { pay: 'a', refund: 'a' } });
    expect(invariants([], [coalesced, nextOwn, otherJob], expected)).toContain(`superseded-by-due:${KEY}`);
    // Fenced out by a newer slot's write, the other job's due run is a reason.
    const fenced = { ...coalesced, lastError: { code: 'SUPERSEDED_BY_NEWER_SLOT', message: 'fenced out' } };
    expect(invariants([], [fenced, nextOwn, otherJob], expected)).not.toContain(`superseded-by-due:${KEY}`);
  });

  it('no-rerun-after-success: a handler that succeeded under an undisturbed worker that recorded nothing is run again', () => {
    const history: HistoryEvent[] = [
      claimed(1, 'A', T),
      started(1, 'A', T),
      { type: 'handler-finished', at: T + 1_000, runKey: KEY, owner: 'A', token: 1, result: 'succeeded' },
      claimed(2, 'B', T + 40_000, RunStatus.RUNNING),
      started(2, 'B', T + 40_000),
    ];
    expect(invariants(history, [run()], model())).toContain(`no-rerun-after-success:${KEY}`);
    const killed: HistoryEvent[] = [
      ...history.slice(0, 3),
      { type: 'actor-disturbed', at: T + 1_500, owner: 'A', kind: 'killed', runKey: KEY },
      ...history.slice(3),
    ];
    expect(invariants(killed, [run()], model())).not.toContain(`no-rerun-after-success:${KEY}`);
  });

  it('no-rerun-after-success: a worker that gives its success up with most of its lease left is caught; one whose lease had run out, or whose run another claim took, is not', () => {
    const gaveUp = (at: number): HistoryEvent[] => [
      claimed(1, 'A', T), // lease until T + 30 s
      started(1, 'A', T),
      { type: 'handler-finished', at: T + 1_000, runKey: KEY, owner: 'A', token: 1, result: 'succeeded' },
      { type: 'outcome', at, runKey: KEY, owner: 'A', token: 1, status: RunStatus.SUCCEEDED, accepted: false },
      claimed(2, 'B', T + 40_000, RunStatus.RUNNING),
      started(2, 'B', T + 40_000),
    ];
    expect(invariants(gaveUp(T + 1_100), [run()], model())).toContain(`no-rerun-after-success:${KEY}`);
    expect(invariants(gaveUp(T + 30_000), [run()], model())).not.toContain(`no-rerun-after-success:${KEY}`);
    const takenFirst: HistoryEvent[] = [
      claimed(1, 'A', T),
      started(1, 'A', T),
      { type: 'handler-finished', at: T + 1_000, runKey: KEY, owner: 'A', token: 1, result: 'succeeded' },
      claimed(2, 'B', T + 2_000, RunStatus.RUNNING),
      { type: 'outcome', at: T + 2_100, runKey: KEY, owner: 'A', token: 1, status: RunStatus.SUCCEEDED, accepted: false },
      started(2, 'B', T + 2_200),
    ];
    expect(invariants(takenFirst, [run()], model())).not.toContain(`no-rerun-after-success:${KEY}`);
  });

  it('no-rerun-after-success: an operator action from before the attempt claimed the run does not excuse giving its success up', () => {
    // The run was revived by an ops retry, then claimed; its worker gave the success up after one
    // refused write with most of the lease left. Only an action while the attempt held the run
    // (a resolve, say) could have been why its write was refused.
    const revivedThenGaveUp = (opsAt: number): HistoryEvent[] => [
      { type: 'ops', at: opsAt, runKey: KEY, action: 'retry', from: RunStatus.DEAD, to: RunStatus.READY },
      claimed(1, 'A', T), // lease until T + 30 s
      started(1, 'A', T),
      { type: 'handler-finished', at: T + 1_000, runKey: KEY, owner: 'A', token: 1, result: 'succeeded' },
      { type: 'outcome', at: T + 1_100, runKey: KEY, owner: 'A', token: 1, status: RunStatus.SUCCEEDED, accepted: false },
      claimed(2, 'B', T + 40_000, RunStatus.RUNNING),
      started(2, 'B', T + 40_000),
    ];
    expect(invariants(revivedThenGaveUp(T - 60_000), [run()], model())).toContain(`no-rerun-after-success:${KEY}`);
    expect(invariants(revivedThenGaveUp(T + 500), [run()], model())).not.toContain(`no-rerun-after-success:${KEY}`);
  });

  it('own-write-recognised: an outcome refused although nobody else touched the run', () => {
    const history: HistoryEvent[] = [
      claimed(1, 'A', T),
      { type: 'outcome', at: T + 1_000, runKey: KEY, owner: 'A', token: 1, status: RunStatus.SUCCEEDED, accepted: false },
    ];
    expect(invariants(history, [run({ fencingToken: 1 })], model())).toContain(`own-write-recognised:${KEY}`);
  });

  it('own-write-recognised: a takeover of a claim nobody reported, with no actor stopped', () => {
    expect(invariants([claimed(2, 'B', T + 40_000, RunStatus.RUNNING)], [run()], model())).toContain(`own-write-recognised:${KEY}`);
  });

  it('no-double-apply: an item that logged one increment twice', () => {
    const result = checkHistory(
      [],
      {
        runs: [],
        business: [
          {
            resource: 'items/X/S',
            effects: [
              { token: 1, runKey: KEY, writeId: 'w1' },
              { token: 1, runKey: KEY, writeId: 'w1' },
            ],
          },
        ],
      },
      model(),
    );
    expect(result.violations.map((v) => v.invariant)).toContain('no-double-apply');
  });

  it('fenced-out-superseded: fenced out by a newer slot, the run ended DEAD', () => {
    const newer = runKeyOf('pay', T + 60_000, 0, 1);
    const history: HistoryEvent[] = [
      { type: 'effect', at: T + 60_000, runKey: newer, token: 10, resource: 'items/X/S', result: 'accepted' },
      { type: 'effect', at: T + 61_000, runKey: KEY, token: 2, resource: 'items/X/S', result: 'fenced-out' },
    ];
    const runs = [
      run({ status: RunStatus.DEAD, lastError: { code: 'ATTEMPTS_EXHAUSTED', message: '' } }),
      run({ slot: T + 60_000, runKey: newer, fencingToken: 10 }),
    ];
    expect(invariants(history, runs, model())).toContain(`fenced-out-superseded:${KEY}`);
  });

  it('fenced-out-superseded: the attempt that met the fence died before recording it, and a takeover ended the run DEAD past its deadline, its result unknown: not flagged (seed 20269049 path 6); a retry recorded after the fence still is', () => {
    const newer = runKeyOf('pay', T + 60_000, 0, 1);
    const fenced: HistoryEvent[] = [
      { type: 'effect', at: T + 60_000, runKey: newer, token: 10, resource: 'items/X/S', result: 'accepted' },
      { type: 'effect', at: T + 61_000, runKey: KEY, token: 2, resource: 'items/X/S', result: 'fenced-out' },
    ];
    const takenOver = run({
      status: RunStatus.DEAD,
      fencingToken: 3,
      resultUnknown: true,
      lastError: { code: 'DEADLINE_EXCEEDED', message: '' },
    });
    const other = run({ slot: T + 60_000, runKey: newer, fencingToken: 10 });
    expect(invariants(fenced, [takenOver, other], model())).not.toContain(`fenced-out-superseded:${KEY}`);
    // The fenced attempt recorded a retry (class 3's defect): judged, whatever came after.
    const retried: HistoryEvent[] = [
      ...fenced,
      { type: 'outcome', at: T + 62_000, runKey: KEY, owner: 'w', token: 2, status: RunStatus.READY, accepted: true },
    ];
    expect(invariants(retried, [takenOver, other], model())).toContain(`fenced-out-superseded:${KEY}`);
    // Ended by the fenced attempt's own token, or with its result known: judged.
    expect(invariants(fenced, [{ ...takenOver, fencingToken: 2 }, other], model())).toContain(`fenced-out-superseded:${KEY}`);
    expect(invariants(fenced, [{ ...takenOver, resultUnknown: false }, other], model())).toContain(`fenced-out-superseded:${KEY}`);
  });

  it('superseded-by-due: superseded while the only newer run was not due yet', () => {
    const runs = [
      run({ status: RunStatus.SUPERSEDED, finishedAt: T - 2_000 }),
      run({ slot: T + 60_000, runKey: runKeyOf('pay', T + 60_000, 0, 1), status: RunStatus.READY }),
    ];
    expect(invariants([], runs, model())).toContain(`superseded-by-due:${KEY}`);
    const due = [run({ status: RunStatus.SUPERSEDED, finishedAt: T + 61_000 }), runs[1]!];
    expect(invariants([], due, model())).not.toContain(`superseded-by-due:${KEY}`);
    // A startLead makes the newer run due (it may start, and supersede) that long before its slot.
    const early = [run({ status: RunStatus.SUPERSEDED, finishedAt: T + 55_000 }), runs[1]!];
    expect(invariants([], early, model())).toContain(`superseded-by-due:${KEY}`);
    expect(invariants([], early, model({ startLeadMs: { pay: 5_000 } }))).not.toContain(`superseded-by-due:${KEY}`);
  });

  it('no-unexpected-run: a run the model says nobody could have created exists', () => {
    const unexpected = [{ runKey: KEY, why: 'the job was paused throughout the tick' }];
    expect(invariants([], [run()], model({ unexpected }))).toContain(`no-unexpected-run:${KEY}`);
    expect(invariants([], [], model({ unexpected }))).not.toContain(`no-unexpected-run:${KEY}`);
  });
});

describe('liveness invariants', () => {
  const base = { now: T + 3_600_000, clockToleranceMs: 0, partitions: 1, jobsByPartition: { 0: ['pay'] }, paused: [], jobs: ['pay'] };
  const names = (v: { invariant: string }[]) => v.map((x) => x.invariant);

  it('lane-not-blocked: a marker held by a missing run, or by a terminal one that a newer run of the lane met after it ended (skipped as overlapping, or ran) without taking it over', () => {
    const planner = [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }];
    const held = { job: 'pay', shard: 0, holderSlot: T };
    const holder = run({ status: RunStatus.SUPERSEDED, finishedAt: T + 1_000 });
    const next = (over: Partial<Run>) => run({ slot: T + 60_000, runKey: runKeyOf('pay', T + 60_000, 0, 1), ...over });
    expect(names(checkLiveness({ runs: [], markers: [held], planner }, base))).toEqual(['lane-not-blocked']);
    const skipped = next({
      status: RunStatus.SKIPPED,
      finishedAt: T + 60_000,
      lastError: { code: RunStatus.SKIPPED, message: 'skipped: run of … still open (forbid-skip)' },
    });
    expect(names(checkLiveness({ runs: [holder, skipped], markers: [held], planner }, base))).toEqual(['lane-not-blocked']);
    expect(
      names(
        checkLiveness(
          {
            runs: [holder, next({ status: RunStatus.SUCCEEDED, startedAt: T + 60_000, finishedAt: T + 61_000 })],
            markers: [held],
            planner,
          },
          base,
        ),
      ),
    ).toEqual(['lane-not-blocked']);
    // Met before the holder ended (skipped while it still ran): the marker was live then.
    expect(
      names(
        checkLiveness(
          {
            runs: [holder, next({ status: RunStatus.SKIPPED, finishedAt: T + 500, lastError: { code: RunStatus.SKIPPED, message: '' } })],
            markers: [held],
            planner,
          },
          base,
        ),
      ),
    ).toEqual([]);
    // Run before the marker was last taken (a duplicate delivery of the ended holder took the freed lane again).
    const retaken = { ...held, since: T + 120_000 };
    expect(
      names(
        checkLiveness(
          {
            runs: [holder, next({ status: RunStatus.SUCCEEDED, startedAt: T + 60_000, finishedAt: T + 61_000 })],
            markers: [retaken],
            planner,
          },
          base,
        ),
      ),
    ).toEqual([]);
  });

  it('lane-not-blocked false alarm (model seed 668288444, path 6:0:0:0:0): a coalesce job made parallel while a run held its lane, the run taken over and ended under parallel, its later runs never look at the lane', () => {
    const planner = [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }];
    const held = { job: 'pay', shard: 0, holderSlot: T };
    const holder = run({ status: RunStatus.SUCCEEDED, startedAt: T + 500, finishedAt: T + 1_000 });
    const later = run({
      slot: T + 60_000,
      runKey: runKeyOf('pay', T + 60_000, 0, 1),
      status: RunStatus.SUCCEEDED,
      startedAt: T + 60_000,
      finishedAt: T + 61_000,
    });
    const state = { runs: [holder, later], markers: [held], planner };
    expect(names(checkLiveness(state, { ...base, exclusive: [] }))).toEqual([]);
    // Still exclusive, the later run met the ended holder's marker without taking it over.
    expect(names(checkLiveness(state, { ...base, exclusive: ['pay'] }))).toEqual(['lane-not-blocked']);
  });

  it('lane-not-blocked: a lane left held by its ended run (its release refused: the worker does not retry it) blocks nothing until a run waits behind it or meets it (model seed 20277044)', () => {
    const planner = [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }];
    const dead = run({ status: RunStatus.DEAD, finishedAt: T + 1_000, lastError: { code: 'DEADLINE_EXCEEDED', message: '' } });
    const v = checkLiveness({ runs: [dead], markers: [{ job: 'pay', shard: 0, holderSlot: T }], planner }, base);
    expect(names(v)).toEqual([]);
    // A run planned ahead of its slot, not due when quiescence ends, has not met the marker yet (model seed 7941).
    const ahead = run({ slot: base.now + 30_000, runKey: runKeyOf('pay', base.now + 30_000, 0, 1), status: RunStatus.READY });
    expect(names(checkLiveness({ runs: [dead, ahead], markers: [{ job: 'pay', shard: 0, holderSlot: T }], planner }, base))).toEqual([]);
    const due = run({ slot: base.now - 30_000, runKey: runKeyOf('pay', base.now - 30_000, 0, 1), status: RunStatus.READY });
    expect(
      names(
        checkLiveness(
          { runs: [dead, due], markers: [{ job: 'pay', shard: 0, holderSlot: T }], planner },
          { ...base, withMessage: [due.runKey] },
        ),
      ),
    ).toEqual(['lane-not-blocked']);
  });

  it("lane-not-blocked: a paused job's lane left held by its ended run (its release lost) blocks nothing until a run waits behind it (model seed 20261202)", () => {
    // The next claimer takes a lane over from an ended holder, and a paused job has no next run:
    // flagging it was a false alarm of the checker. A run waiting behind the marker still counts.
    const planner = [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: ['pay'], behind: [] }];
    const held = { job: 'pay', shard: 0, holderSlot: T };
    const pausedBase = { ...base, paused: ['pay'] };
    expect(names(checkLiveness({ runs: [run({ status: RunStatus.SUCCEEDED })], markers: [held], planner }, pausedBase))).toEqual([]);
    const behind = run({ slot: T + 300_000, runKey: `pay@${new Date(T + 300_000).toISOString()}`, status: RunStatus.READY });
    expect(
      names(
        checkLiveness(
          { runs: [run({ status: RunStatus.SUCCEEDED }), behind], markers: [held], planner },
          { ...pausedBase, withMessage: [behind.runKey] },
        ),
      ),
    ).toEqual(['lane-not-blocked']);
  });

  it('watermark-caught-up: a partition planned only up to an hour ago, and a job still behind', () => {
    const v = checkLiveness({ runs: [], planner: [{ partition: 0, of: 1, plannedUntil: T, paused: [], behind: ['pay'] }] }, base);
    expect(names(v)).toEqual(['watermark-caught-up', 'watermark-caught-up']);
  });

  it('no-expired-running: RUNNING long after its lease', () => {
    const v = checkLiveness(
      {
        runs: [run({ status: RunStatus.RUNNING, leaseUntil: T })],
        planner: [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }],
      },
      base,
    );
    expect(names(v)).toEqual(['no-expired-running']);
  });

  it('open-run-swept: an open run with no message past the sweep grace', () => {
    const v = checkLiveness(
      { runs: [run({ status: RunStatus.READY })], planner: [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }] },
      { ...base, withMessage: [], sweepGraceMs: 180_000 },
    );
    expect(names(v)).toEqual(['open-run-swept']);
  });

  it('open-run-swept: a waiting run of an exclusive lane is owed a re-send only from when its lane was let go (a long backlog ahead of it is no lost message)', () => {
    const older = runKeyOf('pay', T - 3_600_000, 0, 1);
    const backlogEnd = base.now - 10_000; // the last older run of the lane ended just now
    const runs = [
      run({ status: RunStatus.READY }),
      run({
        runKey: older,
        slot: T - 3_600_000,
        status: RunStatus.DEAD,
        finishedAt: backlogEnd,
        lastError: { code: 'DEADLINE_EXCEEDED', message: 'late' },
      }),
    ];
    const planner = [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }];
    const expected = { ...base, withMessage: [], sweepGraceMs: 180_000 };
    expect(names(checkLiveness({ runs, planner }, { ...expected, exclusive: ['pay'] }))).toEqual([]);
    // A parallel job has no lane: the same run is flagged.
    expect(names(checkLiveness({ runs, planner }, expected))).toEqual(['open-run-swept']);
  });

  it('open-run-swept: a run the sweeper gave up on (stuck, left for an operator) is not flagged', () => {
    const v = checkLiveness(
      {
        runs: [run({ status: RunStatus.READY, redispatches: 10 })],
        planner: [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }],
      },
      { ...base, withMessage: [], sweepGraceMs: 180_000, stuck: [KEY] },
    );
    expect(names(v)).toEqual([]);
  });

  it('pause-kept: the planner forgot a pause, or lists a job nobody paused', () => {
    const planner = [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }];
    expect(names(checkLiveness({ runs: [], planner }, { ...base, paused: ['pay'], pausedInLedger: [] }))).toEqual(['pause-kept']);
    expect(names(checkLiveness({ runs: [], planner }, { ...base, paused: [], pausedInLedger: ['pay'] }))).toEqual(['pause-kept']);
    expect(names(checkLiveness({ runs: [], planner }, { ...base, paused: ['pay'], pausedInLedger: ['pay'] }))).toEqual([]);
  });

  it('watermark-caught-up: a job still catching up whose cursor moves is a long backlog, not a wedge', () => {
    const v = checkLiveness(
      { runs: [], planner: [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: ['pay'] }] },
      { ...base, progressing: ['pay'] },
    );
    expect(names(v)).toEqual([]);
  });

  it('no-looping-message: a message still due at the end', () => {
    const v = checkLiveness(
      { runs: [run({ status: RunStatus.READY })], planner: [{ partition: 0, of: 1, plannedUntil: T + 4_000_000, paused: [], behind: [] }] },
      { ...base, queue: [{ messageId: 'm', runKey: KEY, receives: 15, visibleAt: T }] },
    );
    expect(names(v)).toEqual(['no-looping-message']);
  });
});
