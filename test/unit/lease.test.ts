/**
 * Lease rules (DESIGN §6, §8) and fencing tokens comparable across runs of the same job.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_CLOCK_SKEW_MS, explainClaimRefusal, takeoverVisibilitySeconds, VISIBILITY_STEP_MS } from '../../shared/core/lease.js';
import { CLAIMS_PER_SLOT, claimsOf, fenceRefusal, initialFence, MAX_CLAIMS_PER_SLOT, slotOfFence } from '../../shared/core/fence.js';
import { RunStatus, TERMINAL_STATUSES, type Run } from '../../shared/core/vocabulary.js';
import { runAt } from '../support/runs.js';

const SLOT = Date.UTC(2024, 0, 15, 12, 0);
const NOW = SLOT + 30_000;
const SKEW = DEFAULT_CLOCK_SKEW_MS;

function run(overrides: Partial<Run> = {}): Run {
  return runAt(SLOT, overrides);
}

describe('explainClaimRefusal: why a conditional claim failed, from the item returned with the failure', () => {
  it('no item → missing (a message for a run that does not exist: poison)', () => {
    expect(explainClaimRefusal(undefined, NOW, SKEW)).toEqual({ kind: 'missing' });
  });

  it.each(TERMINAL_STATUSES)('terminal status %s → terminal (duplicate delivery: ack, never re-run)', (status) => {
    const r = run({ status, fencingToken: initialFence(SLOT) + 1, attempt: 1 });
    expect(explainClaimRefusal(r, NOW, SKEW)).toEqual({ kind: 'terminal', run: r });
  });

  it('RUNNING with a live lease → leased, retry once the lease could expire (leaseUntil + skew)', () => {
    const r = run({ status: RunStatus.RUNNING, owner: 'w1', leaseUntil: NOW + 20_000, fencingToken: initialFence(SLOT) + 1, attempt: 1 });
    expect(explainClaimRefusal(r, NOW, SKEW)).toEqual({ kind: 'leased', run: r, retryAt: NOW + 20_000 + SKEW });
  });

  it('leased retryAt honours the skew allowance it is given (a fast clock cannot steal a live lease early)', () => {
    const r = run({ status: RunStatus.RUNNING, owner: 'w1', leaseUntil: NOW + 1_000, fencingToken: initialFence(SLOT) + 1 });
    const refusal = explainClaimRefusal(r, NOW, 5_000);
    expect(refusal).toMatchObject({ kind: 'leased', retryAt: NOW + 6_000 });
  });

  it.each([RunStatus.RETRY, RunStatus.UNKNOWN])(
    '%s with a future nextAttemptAt → not-due, retry at nextAttemptAt (backoff is respected)',
    (status) => {
      const r = run({ status, nextAttemptAt: NOW + 8_000, fencingToken: initialFence(SLOT) + 1, attempt: 1 });
      expect(explainClaimRefusal(r, NOW, SKEW)).toEqual({ kind: 'not-due', run: r, retryAt: NOW + 8_000 });
    },
  );

  it('a claimable item with nothing blocking (the item changed under us: a lost race) → retry soon, never a failure', () => {
    const refusal = explainClaimRefusal(run({ status: RunStatus.RETRY, nextAttemptAt: NOW - 1 }), NOW, SKEW);
    expect(refusal.kind).toBe('leased');
    expect(refusal.kind === 'leased' && refusal.retryAt).toBeGreaterThan(NOW);
  });

  it('a run whose fencing range is used up → exhausted (a further claim would collide with the next slot)', () => {
    const r = run({ status: RunStatus.RETRY, fencingToken: initialFence(SLOT) + MAX_CLAIMS_PER_SLOT, attempt: MAX_CLAIMS_PER_SLOT });
    expect(explainClaimRefusal(r, NOW, SKEW)).toEqual({ kind: 'exhausted', run: r });
  });

  it('the last claim of the range held by a live worker → leased (it finishes the run itself); once its lease and the allowance are over → exhausted (ended by the next claimer)', () => {
    const r = run({
      status: RunStatus.RUNNING,
      owner: 'w1',
      leaseUntil: NOW + 5_000,
      fencingToken: initialFence(SLOT) + MAX_CLAIMS_PER_SLOT,
      attempt: 1,
    });
    expect(explainClaimRefusal(r, NOW, SKEW)).toEqual({ kind: 'leased', run: r, retryAt: NOW + 5_000 + SKEW });
    expect(explainClaimRefusal(r, NOW + 5_000 + SKEW - 1, SKEW).kind).toBe('leased');
    expect(explainClaimRefusal(r, NOW + 5_000 + SKEW, SKEW)).toEqual({ kind: 'exhausted', run: r });
  });

  it('terminal outranks exhausted (a finished run is acked as a duplicate)', () => {
    const r = run({ status: RunStatus.SUCCEEDED, fencingToken: initialFence(SLOT) + MAX_CLAIMS_PER_SLOT });
    expect(explainClaimRefusal(r, NOW, SKEW).kind).toBe('terminal');
  });

  it('property: the refusal is always one of the known kinds and any retryAt is finite', () => {
    const statusArb = fc.constantFrom(...Object.values(RunStatus));
    fc.assert(
      fc.property(
        statusArb,
        fc.option(fc.integer({ min: NOW - 120_000, max: NOW + 120_000 }), { nil: undefined }),
        fc.option(fc.integer({ min: NOW - 120_000, max: NOW + 120_000 }), { nil: undefined }),
        fc.integer({ min: 0, max: MAX_CLAIMS_PER_SLOT }),
        (status, leaseUntil, nextAttemptAt, claims) => {
          const refusal = explainClaimRefusal(
            run({ status, leaseUntil, nextAttemptAt, fencingToken: initialFence(SLOT) + claims }),
            NOW,
            SKEW,
          );
          expect(['terminal', 'leased', 'not-due', 'exhausted']).toContain(refusal.kind);
          if ('retryAt' in refusal) expect(Number.isFinite(refusal.retryAt)).toBe(true);
          if (refusal.kind === 'leased' && status === RunStatus.RUNNING && leaseUntil !== undefined) {
            expect(refusal.retryAt).toBe(leaseUntil + SKEW);
          }
        },
      ),
    );
  });
});

describe("takeoverVisibilitySeconds: when a dead holder's message comes back", () => {
  const arbitraries = [
    fc.integer({ min: 0, max: 600_000 }),
    fc.integer({ min: 0, max: 5_000 }),
    fc.integer({ min: 0, max: 2_000_000_000_000 }),
  ] as const;

  it('never before the lease ends: a live holder that missed one heartbeat is not disturbed', () => {
    fc.assert(
      fc.property(...arbitraries, (remaining, skew, now) => {
        expect(now + takeoverVisibilitySeconds(now + remaining, skew, now) * 1_000).toBeGreaterThanOrEqual(now + remaining);
      }),
    );
  });

  it('within one step before a successor may claim, or at the lease end when that is later: the successor never hides it again', () => {
    fc.assert(
      fc.property(...arbitraries, (remaining, skew, now) => {
        const back = now + takeoverVisibilitySeconds(now + remaining, skew, now) * 1_000;
        const claimableAt = now + remaining + skew;
        // What the successor then waits out in process (claimRun waits up to one step).
        expect(claimableAt - back).toBeLessThanOrEqual(VISIBILITY_STEP_MS);
        // And no later than needed: at the claim, or at the first whole second after the lease end.
        const firstStepAfterLease = now + Math.ceil(remaining / VISIBILITY_STEP_MS) * VISIBILITY_STEP_MS;
        expect(back).toBeLessThanOrEqual(Math.max(claimableAt, firstStepAfterLease));
      }),
    );
  });

  it('the hazard it prevents: lease 3 s + allowance 0.5 s rounded up would come back 4 s later, half a second after the claim was possible', () => {
    expect(takeoverVisibilitySeconds(NOW + 3_000, 500, NOW)).toBe(3);
    expect(Math.ceil((3_000 + 500) / 1_000)).toBe(4);
    expect(takeoverVisibilitySeconds(NOW + 29_990, 2_000, NOW)).toBe(31);
  });
});

describe('fencing tokens (DESIGN §6): a stale worker of an earlier slot is rejected after a later slot wrote', () => {
  const YEAR_2200 = Date.UTC(2200, 0, 1);
  /** The token of the c-th claim (1-based) of a slot. */
  const token = (slot: number, claims: number) => initialFence(slot) + claims;

  it("a refusal by a later slot's token supersedes this run (newer-slot); one by a later claim of the same slot means this worker lost its lease (newer-claim)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: MAX_CLAIMS_PER_SLOT }),
        fc.integer({ min: 1, max: MAX_CLAIMS_PER_SLOT }),
        (i, gap, c1, c2) => {
          const mine = SLOT + i * 1_000;
          expect(slotOfFence(token(mine, c1))).toBe(mine);
          expect(fenceRefusal(token(mine, c1), token(mine + gap, c2))).toBe('newer-slot');
          if (c1 < c2) expect(fenceRefusal(token(mine, c1), token(mine, c2))).toBe('newer-claim');
        },
      ),
    );
    // At the edge: the last claim of a slot against the first claim of the next millisecond's slot.
    expect(fenceRefusal(token(SLOT, MAX_CLAIMS_PER_SLOT), token(SLOT + 1, 1))).toBe('newer-slot');
  });

  it('the first claim of a slot is initialFence + 1 and claimsOf counts claims', () => {
    expect(claimsOf(token(SLOT, 1), SLOT)).toBe(1);
    expect(claimsOf(initialFence(SLOT), SLOT)).toBe(0);
    expect(MAX_CLAIMS_PER_SLOT).toBe(CLAIMS_PER_SLOT - 1);
  });

  it('property: every token of a later slot is larger than any token of an earlier slot (up to MAX_CLAIMS_PER_SLOT claims)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: YEAR_2200 }),
        fc.integer({ min: 1, max: 366 * 86_400_000 }),
        fc.integer({ min: 0, max: MAX_CLAIMS_PER_SLOT }),
        fc.integer({ min: 0, max: MAX_CLAIMS_PER_SLOT }),
        (earlier, gap, earlierClaims, laterClaims) => {
          const later = Math.min(earlier + gap, YEAR_2200);
          fc.pre(later > earlier);
          expect(token(later, laterClaims)).toBeGreaterThan(token(earlier, earlierClaims));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('adjacent slots 1 ms apart: the most-claimed earlier token is still below the first token of the next', () => {
    for (const slot of [0, SLOT, YEAR_2200 - 1]) {
      expect(token(slot + 1, 0)).toBeGreaterThan(token(slot, MAX_CLAIMS_PER_SLOT));
      expect(token(slot + 1, 0) - token(slot, MAX_CLAIMS_PER_SLOT)).toBe(1);
    }
  });

  it('property: within one slot each claim (retry or takeover) gets a strictly larger token', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: YEAR_2200 }), fc.integer({ min: 0, max: MAX_CLAIMS_PER_SLOT - 1 }), (slot, c) => {
        expect(token(slot, c + 1)).toBeGreaterThan(token(slot, c));
        expect(claimsOf(token(slot, c), slot)).toBe(c);
      }),
    );
  });

  it('tokens stay exact safe integers through the year 2200 (DynamoDB N and JS number agree)', () => {
    for (const slot of [YEAR_2200, Date.UTC(2200, 11, 31, 23, 59, 59)]) {
      const top = token(slot, MAX_CLAIMS_PER_SLOT);
      expect(Number.isSafeInteger(top)).toBe(true);
      // Exactness: composition and decomposition round-trip.
      expect(claimsOf(top, slot)).toBe(MAX_CLAIMS_PER_SLOT);
      expect(BigInt(top)).toBe(BigInt(slot) * BigInt(CLAIMS_PER_SLOT) + BigInt(MAX_CLAIMS_PER_SLOT));
    }
  });

  it('property: token arithmetic is exact (matches BigInt) for every slot up to 2200', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Date.UTC(2200, 11, 31) }), fc.integer({ min: 0, max: MAX_CLAIMS_PER_SLOT }), (slot, c) => {
        const t = token(slot, c);
        expect(Number.isSafeInteger(t)).toBe(true);
        expect(BigInt(t)).toBe(BigInt(slot) * BigInt(CLAIMS_PER_SLOT) + BigInt(c));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('explainClaimRefusal: a waiting run the claim should have taken was changed by a race', () => {
  it('a run whose backoff ends exactly now was claimable: the refusal is a lost race (back in a second), not a backoff still running', () => {
    for (const status of [RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN]) {
      expect(explainClaimRefusal(run({ status, nextAttemptAt: NOW }), NOW, SKEW), status).toMatchObject({
        kind: 'leased',
        retryAt: NOW + 1_000,
      });
      expect(explainClaimRefusal(run({ status, nextAttemptAt: NOW + 1 }), NOW, SKEW), status).toMatchObject({
        kind: 'not-due',
        retryAt: NOW + 1,
      });
    }
  });
});
