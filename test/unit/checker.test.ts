/**
 * The invariant checker of DESIGN §9 (tools/verify/checker.ts): every kind of violation, fed as a
 * deliberately broken history or final state, is caught and names the run at fault; clean
 * histories (including takeovers, fenced-out stale writers and events merged out of order from
 * several processes) pass.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkHistory, Invariant, type BusinessState, type Expected, type FinalState } from '../../tools/verify/checker.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import { initialFence } from '../../shared/core/fence.js';
import { RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';

const T = Date.UTC(2026, 10, 29, 12, 0, 0);
const JOB = 'pay';
const SLOT = T;
const KEY = runKeyOf(JOB, SLOT, 0, 1);
const TOKEN = initialFence(SLOT);
const RESOURCE = 'ledger/BIZ#pay/ACCOUNT';
const LEASE = 30_000;

function run(overrides: Partial<Run> = {}): Run {
  return {
    job: JOB,
    slot: SLOT,
    shard: 0,
    shards: 1,
    runKey: KEY,
    status: RunStatus.SUCCEEDED,
    fencingToken: TOKEN + 2,
    attempt: 2,
    createdAt: T - 60_000,
    ...overrides,
  };
}

/** A clean takeover story: A claims, writes, pauses past its lease; B takes over, writes, succeeds; A's late write and completion are refused. */
function takeoverHistory(): HistoryEvent[] {
  return [
    { type: 'run-created', at: T - 60_000, runKey: KEY, job: JOB, slot: SLOT, shard: 0, status: RunStatus.READY },
    { type: 'message-sent', at: T - 60_000, runKey: KEY, reason: 'planned' },
    { type: 'claimed', at: T, runKey: KEY, owner: 'A', token: TOKEN + 1, attempt: 1, from: RunStatus.READY, leaseUntil: T + LEASE },
    { type: 'handler-started', at: T, runKey: KEY, owner: 'A', token: TOKEN + 1, slot: SLOT },
    { type: 'heartbeat', at: T + 10_000, runKey: KEY, owner: 'A', token: TOKEN + 1, ok: true, leaseUntil: T + 40_000 },
    { type: 'effect', at: T + 11_000, runKey: KEY, token: TOKEN + 1, resource: RESOURCE, result: 'accepted' },
    // A pauses; its lease runs out at T + 40 s; B claims after the 2 s allowance.
    {
      type: 'claimed',
      at: T + 42_001,
      runKey: KEY,
      owner: 'B',
      token: TOKEN + 2,
      attempt: 2,
      from: RunStatus.RUNNING,
      leaseUntil: T + 72_001,
    },
    { type: 'effect', at: T + 42_100, runKey: KEY, token: TOKEN + 2, resource: RESOURCE, result: 'accepted', businessKey: 'charge-1' },
    { type: 'effect', at: T + 42_200, runKey: KEY, token: TOKEN + 2, resource: RESOURCE, result: 'accepted' },
    { type: 'outcome', at: T + 42_300, runKey: KEY, owner: 'B', token: TOKEN + 2, status: RunStatus.SUCCEEDED, accepted: true },
    // A resumes: its write and its heartbeat and completion are refused.
    { type: 'effect', at: T + 50_000, runKey: KEY, token: TOKEN + 1, resource: RESOURCE, result: 'fenced-out', businessKey: 'charge-1' },
    { type: 'heartbeat', at: T + 50_001, runKey: KEY, owner: 'A', token: TOKEN + 1, ok: false, leaseUntil: T + 80_001 },
    { type: 'outcome', at: T + 50_002, runKey: KEY, owner: 'A', token: TOKEN + 1, status: RunStatus.SUCCEEDED, accepted: false },
    { type: 'duplicate', at: T + 60_000, runKey: KEY, messageId: 'm-2' },
  ];
}

const cleanBusiness: BusinessState[] = [
  {
    resource: RESOURCE,
    lastFence: TOKEN + 2,
    effects: [
      { token: TOKEN + 1, runKey: KEY, kind: 'step' },
      { token: TOKEN + 2, runKey: KEY, kind: 'charge', businessKey: 'charge-1' },
      { token: TOKEN + 2, runKey: KEY, kind: 'step' },
    ],
  },
];
const cleanFinal: FinalState = { runs: [run()], business: cleanBusiness };
const expectSlot: Expected = { slots: [{ job: JOB, slot: SLOT }], clockAllowanceMs: 0 };

function only(result: ReturnType<typeof checkHistory>, invariant: Invariant, runKey = KEY) {
  expect(result.ok).toBe(false);
  expect(result.violations.map((v) => v.invariant)).toContain(invariant);
  const hit = result.violations.find((v) => v.invariant === invariant)!;
  expect(hit.runKey).toBe(runKey);
  expect(hit.detail.length).toBeGreaterThan(10);
  return hit;
}

describe('clean histories pass', () => {
  it('a takeover with a fenced-out stale writer and a refused stale completion is not a violation', () => {
    const result = checkHistory(takeoverHistory(), cleanFinal, expectSlot);
    expect(result.violations).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.stats).toMatchObject({
      runsCreated: 1,
      claims: 2,
      takeovers: 1,
      acceptedEffects: 3,
      fencedOut: 1,
      irreversibleEffects: 1,
      expectedSlots: 1,
    });
  });

  it('events merged out of order from several processes are ordered by time before checking', () => {
    const shuffled = [...takeoverHistory()].reverse();
    expect(checkHistory(shuffled, cleanFinal, expectSlot).violations).toEqual([]);
  });

  it('a RETRY outcome and a claim in the same millisecond: the outcome is taken first', () => {
    const history: HistoryEvent[] = [
      { type: 'claimed', at: T, runKey: KEY, owner: 'A', token: TOKEN + 1, attempt: 1, from: RunStatus.READY, leaseUntil: T + LEASE },
      {
        type: 'claimed',
        at: T + 5,
        runKey: KEY,
        owner: 'B',
        token: TOKEN + 2,
        attempt: 2,
        from: RunStatus.RETRY,
        leaseUntil: T + 5 + LEASE,
      },
      { type: 'outcome', at: T + 5, runKey: KEY, owner: 'A', token: TOKEN + 1, status: RunStatus.RETRY, accepted: true },
    ];
    expect(checkHistory(history, { runs: [] }).violations).toEqual([]);
  });

  it('a claim reported late (its worker paused between the claim landing and reporting it) is not a violation', () => {
    const history: HistoryEvent[] = [
      {
        type: 'claimed',
        at: T + 42_001,
        runKey: KEY,
        owner: 'B',
        token: TOKEN + 2,
        attempt: 2,
        from: RunStatus.RUNNING,
        leaseUntil: T + 72_001,
      },
      { type: 'outcome', at: T + 42_300, runKey: KEY, owner: 'B', token: TOKEN + 2, status: RunStatus.SUCCEEDED, accepted: true },
      // A's claim landed at T (token + 1) but A was paused before it could report it.
      {
        type: 'claimed',
        at: T + 50_000,
        runKey: KEY,
        owner: 'A',
        token: TOKEN + 1,
        attempt: 1,
        from: RunStatus.READY,
        leaseUntil: T + LEASE,
      },
      { type: 'outcome', at: T + 50_002, runKey: KEY, owner: 'A', token: TOKEN + 1, status: RunStatus.SUCCEEDED, accepted: false },
    ];
    expect(checkHistory(history, { runs: [run()] }, expectSlot).violations).toEqual([]);
  });

  it('a claim within the clock allowance of the previous lease end is tolerated', () => {
    const history: HistoryEvent[] = [
      { type: 'claimed', at: T, runKey: KEY, owner: 'A', token: TOKEN + 1, attempt: 1, from: RunStatus.READY, leaseUntil: T + LEASE },
      {
        type: 'claimed',
        at: T + LEASE - 500,
        runKey: KEY,
        owner: 'B',
        token: TOKEN + 2,
        attempt: 2,
        from: RunStatus.RUNNING,
        leaseUntil: T + 2 * LEASE,
      },
    ];
    expect(checkHistory(history, { runs: [] }, { clockAllowanceMs: 1_000 }).ok).toBe(true);
    expect(checkHistory(history, { runs: [] }, { clockAllowanceMs: 0 }).ok).toBe(false);
  });

  it('the same holder writing one resource twice with the same token is fine; every kept status is accepted', () => {
    for (const status of [RunStatus.SUCCEEDED, RunStatus.SKIPPED, RunStatus.SUPERSEDED, RunStatus.DEAD, RunStatus.MANUAL]) {
      expect(checkHistory([], { runs: [run({ status })] }, expectSlot).ok).toBe(true);
    }
  });
});

describe('each violation kind is caught and names the run', () => {
  it('1. a run item created twice for one (job, slot, shard)', () => {
    const history = takeoverHistory();
    history.push({ ...(history[0] as Extract<HistoryEvent, { type: 'run-created' }>), at: T - 59_000 });
    only(checkHistory(history, cleanFinal, expectSlot), Invariant.ONE_RUN_PER_SLOT);
  });

  it('1. two run items for one slot in the final ledger', () => {
    const other = run({ runKey: `${KEY}-copy` });
    only(checkHistory([], { runs: [run(), other] }, expectSlot), Invariant.ONE_RUN_PER_SLOT, `${KEY}-copy`);
  });

  it('2. a claim while another owner held an unexpired lease', () => {
    const history = takeoverHistory().map((e) => (e.type === 'claimed' && e.owner === 'B' ? { ...e, at: T + 20_000 } : e));
    const hit = only(checkHistory(history, cleanFinal, expectSlot), Invariant.ONE_LIVE_LEASE);
    expect(hit.detail).toContain('held a lease until');
  });

  it('2. a claim that ignores a heartbeat-extended lease', () => {
    // A's heartbeat moved the lease to T + 40 s; B claims at T + 35 s: past the claim's lease, not the heartbeat's.
    const history = takeoverHistory().map((e) => (e.type === 'claimed' && e.owner === 'B' ? { ...e, at: T + 35_000 } : e));
    only(checkHistory(history, cleanFinal, expectSlot), Invariant.ONE_LIVE_LEASE);
  });

  it('2. a heartbeat of a superseded token accepted', () => {
    const history = takeoverHistory().map((e) => (e.type === 'heartbeat' && e.at === T + 50_001 ? { ...e, ok: true } : e));
    const hit = only(checkHistory(history, cleanFinal, expectSlot), Invariant.ONE_LIVE_LEASE);
    expect(hit.detail).toContain('heartbeat');
  });

  it('2. a completion of a superseded token accepted (two holders completed the run)', () => {
    const history = takeoverHistory().map((e) => (e.type === 'outcome' && e.owner === 'A' ? { ...e, accepted: true } : e));
    const hit = only(checkHistory(history, cleanFinal, expectSlot), Invariant.ONE_LIVE_LEASE);
    expect(hit.detail).toContain('outcome SUCCEEDED');
  });

  it('2. a claim after the run SUCCEEDED', () => {
    const history = [
      ...takeoverHistory(),
      {
        type: 'claimed',
        at: T + 90_000,
        runKey: KEY,
        owner: 'C',
        token: TOKEN + 3,
        attempt: 3,
        from: RunStatus.RUNNING,
        leaseUntil: T + 120_000,
      } as const,
    ];
    only(checkHistory(history, cleanFinal, expectSlot), Invariant.ONE_LIVE_LEASE);
  });

  it('3. an accepted write with a lower token after a higher one (history order, no item log)', () => {
    const history = takeoverHistory().map((e) =>
      e.type === 'effect' && e.result === 'fenced-out' ? { ...e, result: 'accepted' as const, businessKey: undefined } : e,
    );
    const hit = only(checkHistory(history, { runs: [run()] }, expectSlot), Invariant.FENCE_MONOTONIC);
    expect(hit.detail).toContain(`token ${TOKEN + 1} accepted after token ${TOKEN + 2}`);
  });

  it('3. the item log shows a lower token applied after a higher one', () => {
    const business: BusinessState[] = [
      {
        resource: RESOURCE,
        lastFence: TOKEN + 1,
        effects: [...cleanBusiness[0]!.effects!, { token: TOKEN + 1, runKey: KEY, kind: 'step' }],
      },
    ];
    only(checkHistory(takeoverHistory(), { runs: [run()], business }, expectSlot), Invariant.FENCE_MONOTONIC);
  });

  it('3. the final lastFence is not the highest accepted token', () => {
    const business: BusinessState[] = [{ resource: RESOURCE, lastFence: TOKEN + 1 }];
    const hit = only(checkHistory(takeoverHistory(), { runs: [run()], business }, expectSlot), Invariant.FENCE_MONOTONIC);
    expect(hit.detail).toContain('lastFence');
  });

  it('3. a write reported accepted that the item never recorded (lost or overwritten)', () => {
    const business: BusinessState[] = [{ resource: RESOURCE, lastFence: TOKEN + 2, effects: cleanBusiness[0]!.effects!.slice(1) }];
    const hit = only(checkHistory(takeoverHistory(), { runs: [run()], business }, expectSlot), Invariant.FENCE_MONOTONIC);
    expect(hit.detail).toContain('never recorded');
  });

  it('3. two claims handed out the same token', () => {
    const history = takeoverHistory().map((e) => (e.type === 'claimed' && e.owner === 'B' ? { ...e, token: TOKEN + 1 } : e));
    only(checkHistory(history, { runs: [run()] }, {}), Invariant.FENCE_MONOTONIC);
  });

  it('4. a business key that got a second irreversible effect (history)', () => {
    const history = takeoverHistory().map((e) => (e.type === 'effect' && e.at === T + 11_000 ? { ...e, businessKey: 'charge-1' } : e));
    const hit = only(checkHistory(history, cleanFinal, expectSlot), Invariant.ONE_IRREVERSIBLE_EFFECT);
    expect(hit.detail).toContain('charge-1');
  });

  it('4. a business item holding the same key twice (final state)', () => {
    const business: BusinessState[] = [
      {
        resource: RESOURCE,
        lastFence: TOKEN + 2,
        effects: [...cleanBusiness[0]!.effects!, { token: TOKEN + 2, runKey: KEY, kind: 'charge', businessKey: 'charge-1' }],
      },
    ];
    only(checkHistory(takeoverHistory(), { runs: [run()], business }, expectSlot), Invariant.ONE_IRREVERSIBLE_EFFECT);
  });

  it('5. a kept slot with no run item at all', () => {
    const lostSlot = SLOT + 60_000;
    const hit = only(
      checkHistory(
        [],
        { runs: [run()] },
        {
          slots: [
            { job: JOB, slot: SLOT },
            { job: JOB, slot: lostSlot },
          ],
        },
      ),
      Invariant.NO_LOST_SLOT,
      runKeyOf(JOB, lostSlot, 0, 1),
    );
    expect(hit.detail).toContain('no run item');
  });

  it('5. a kept slot left open (RUNNING, READY, RETRY, UNKNOWN)', () => {
    for (const status of [RunStatus.RUNNING, RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN]) {
      const hit = only(checkHistory([], { runs: [run({ status })] }, expectSlot), Invariant.NO_LOST_SLOT);
      expect(hit.detail).toContain(`still ${status}`);
    }
  });

  it('5. a slot that ended in a status its policy does not allow (e.g. SKIPPED where it must run)', () => {
    const hit = only(
      checkHistory(
        [],
        { runs: [run({ status: RunStatus.SKIPPED })] },
        { slots: [{ job: JOB, slot: SLOT, statuses: [RunStatus.SUCCEEDED] }] },
      ),
      Invariant.NO_LOST_SLOT,
    );
    expect(hit.detail).toContain('ended SKIPPED');
  });

  it('sharded runs are named with their shard', () => {
    const key = runKeyOf(JOB, SLOT, 2, 3);
    const hit = only(
      checkHistory([], { runs: [] }, { slots: [{ job: JOB, slot: SLOT, shard: 2, shards: 3 }] }),
      Invariant.NO_LOST_SLOT,
      key,
    );
    expect(hit.runKey).toBe(`${JOB}@${new Date(SLOT).toISOString()}#2`);
  });
});

// ------------------------------------------------------------------------------------------------
// Property: histories produced by a model of correct holders pass; one injected fault is caught.
// ------------------------------------------------------------------------------------------------

interface Step {
  readonly gapMs: number;
  readonly heartbeats: number;
  readonly writes: number;
  readonly ends: 'complete' | 'vanish';
}

/** Holders of one run one after another; each either completes (RETRY/SUCCEEDED) or vanishes and is taken over after expiry. */
function modelHistory(steps: readonly Step[]): { history: HistoryEvent[]; lastToken: number; final: FinalState } {
  const history: HistoryEvent[] = [
    { type: 'run-created', at: T - 1, runKey: KEY, job: JOB, slot: SLOT, shard: 0, status: RunStatus.READY },
  ];
  let now = T;
  let token = TOKEN;
  let previousEnd: 'complete' | 'vanish' | undefined;
  const effects: { token: number; runKey: string }[] = [];
  steps.forEach((step, i) => {
    token++;
    const owner = `w${i}`;
    now += step.gapMs;
    history.push({
      type: 'claimed',
      at: now,
      runKey: KEY,
      owner,
      token,
      attempt: i + 1,
      from: previousEnd === 'vanish' ? RunStatus.RUNNING : RunStatus.READY,
      leaseUntil: now + LEASE,
    });
    let leaseUntil = now + LEASE;
    for (let h = 0; h < step.heartbeats; h++) {
      now += LEASE / 3;
      leaseUntil = now + LEASE;
      history.push({ type: 'heartbeat', at: now, runKey: KEY, owner, token, ok: true, leaseUntil });
    }
    for (let w = 0; w < step.writes; w++) {
      now += 10;
      history.push({ type: 'effect', at: now, runKey: KEY, token, resource: RESOURCE, result: 'accepted' });
      effects.push({ token, runKey: KEY });
    }
    const last = i === steps.length - 1;
    if (step.ends === 'complete' || last) {
      now += 10;
      history.push({
        type: 'outcome',
        at: now,
        runKey: KEY,
        owner,
        token,
        status: last ? RunStatus.SUCCEEDED : RunStatus.RETRY,
        accepted: true,
      });
      previousEnd = 'complete';
    } else {
      now = leaseUntil + 1; // the next claim waits for expiry
      previousEnd = 'vanish';
    }
  });
  const lastFence = effects.length ? effects[effects.length - 1]!.token : undefined;
  return {
    history,
    lastToken: token,
    final: { runs: [run({ fencingToken: token })], business: lastFence === undefined ? [] : [{ resource: RESOURCE, lastFence, effects }] },
  };
}

const stepArb = fc.record({
  gapMs: fc.integer({ min: 1, max: 5_000 }),
  heartbeats: fc.integer({ min: 0, max: 3 }),
  writes: fc.integer({ min: 0, max: 3 }),
  ends: fc.constantFrom('complete' as const, 'vanish' as const),
});

describe('property: modelled correct histories pass, injected faults are caught', () => {
  it('any sequence of correct holders (completions, vanishings and takeovers) passes, in any arrival order', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 6 }), fc.boolean(), (steps, reverse) => {
        const { history, final } = modelHistory(steps);
        const result = checkHistory(reverse ? [...history].reverse() : history, final, expectSlot);
        expect(result.violations).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('a stale holder that writes after its successor is caught, whatever the story before it', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 2, maxLength: 6 }), (steps) => {
        const { history, final, lastToken } = modelHistory(steps);
        const at = Math.max(...history.map((e) => e.at)) + 1;
        // The first holder comes back from a pause and its write is accepted: the fence failed.
        history.push({ type: 'effect', at, runKey: KEY, token: TOKEN + 1, resource: RESOURCE, result: 'accepted' });
        const business = [{ resource: RESOURCE, lastFence: TOKEN + 1 }];
        const result = checkHistory(history, { ...final, business }, expectSlot);
        if (lastToken > TOKEN + 1 && history.some((e) => e.type === 'effect' && e.token > TOKEN + 1)) {
          expect(result.violations.some((v) => v.invariant === Invariant.FENCE_MONOTONIC && v.runKey === KEY)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
