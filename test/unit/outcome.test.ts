/**
 * Attempt outcomes (DESIGN §5, §8): backoff with jitter and the state transition recorded after
 * each attempt.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import {
  backoffMs,
  deadlineOf,
  endsRun,
  previousResultUnknown,
  refuseToStart,
  transitionFor,
  YIELD_WITHOUT_PROGRESS,
  type AttemptEnd,
} from '../../shared/core/outcome.js';
import { RunStatus } from '../../shared/core/vocabulary.js';

function job(overrides: Record<string, unknown> = {}): Job {
  return parseJobs([{ name: 'j', schedule: '* * * * *', handler: 'h', ...overrides }], { handlers: ['h'] })[0]!;
}

const SLOT = Date.UTC(2024, 0, 15, 12, 0);
const NOW = SLOT + 5_000;
const half = () => 0.5;
const never = () => {
  throw new Error('random must not be consulted here');
};

describe('backoffMs: exponential backoff with full jitter spreads a herd of failing runs', () => {
  it('full jitter: 0 ≤ delay ≤ min(max, base·2^(attempt-1)) for any attempt, base, max and random draw', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 60_000 }),
        fc.integer({ min: 0, max: 3_600_000 }),
        fc.integer({ min: 1, max: 100 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (base, max, attempt, r) => {
          const j = job({ retry: { backoff: { base, max, jitter: 'full' } } });
          const delay = backoffMs(j, attempt, () => r);
          expect(Number.isFinite(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(Math.min(max, base * 2 ** (attempt - 1)));
          expect(Number.isInteger(delay)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('full jitter actually uses the random draw (not always the ceiling: no lockstep retries)', () => {
    const j = job({ retry: { backoff: { base: '1s', max: '5m', jitter: 'full' } } });
    expect(backoffMs(j, 3, () => 0)).toBe(0);
    expect(backoffMs(j, 3, () => 0.5)).toBe(2_000);
    expect(backoffMs(j, 3, () => 0.999999)).toBe(3_999);
  });

  it('no jitter: exactly min(max, base·2^(attempt-1)), and random is not consulted', () => {
    const j = job({ retry: { backoff: { base: '1s', max: '10s', jitter: 'none' } } });
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffMs(j, a, never))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
  });

  it('huge attempt numbers stay capped at max (no Infinity/NaN delay)', () => {
    const j = job({ retry: { backoff: { base: '1s', max: '1m', jitter: 'none' } } });
    expect(backoffMs(j, 5_000, never)).toBe(60_000);
  });

  it('attempt 0 (never claimed) is treated like attempt 1, not a half-base delay', () => {
    const j = job({ retry: { backoff: { base: '1s', max: '1m', jitter: 'none' } } });
    expect(backoffMs(j, 0, never)).toBe(1_000);
  });
});

describe('transitionFor: every way an attempt ends maps to exactly one recorded state', () => {
  const err = (kind: 'retryable' | 'permanent' | 'unknown'): AttemptEnd => ({ kind, code: 'E_X', message: 'boom' });

  it('success → SUCCEEDED carrying the evidence (proof of what ran)', () => {
    const evidence = { settled: ['p1', 'p2'] };
    expect(transitionFor(job(), { slot: SLOT, attempt: 1 }, { kind: 'succeeded', evidence }, NOW, never)).toEqual({
      status: RunStatus.SUCCEEDED,
      evidence,
    });
  });

  it('permanent error → DEAD at once, even with attempts left (no pointless retries)', () => {
    const t = transitionFor(job({ retry: { maxAttempts: 10 } }), { slot: SLOT, attempt: 1 }, err('permanent'), NOW, never);
    expect(t).toEqual({ status: RunStatus.DEAD, lastError: { code: 'E_X', message: 'boom' } });
  });

  it('retryable with attempts left → RETRY with nextAttemptAt = now + backoff', () => {
    const j = job({ retry: { maxAttempts: 3, backoff: { base: '1s', max: '1m', jitter: 'full' } } });
    const t = transitionFor(j, { slot: SLOT, attempt: 2 }, err('retryable'), NOW, half);
    expect(t).toEqual({ status: RunStatus.RETRY, nextAttemptAt: NOW + 1_000, lastError: { code: 'E_X', message: 'boom' } });
    expect('refundAttempt' in t && t.refundAttempt).toBeFalsy();
  });

  it('retryable at maxAttempts → DEAD (the budget is spent; no endless retry)', () => {
    const t = transitionFor(job({ retry: { maxAttempts: 3 } }), { slot: SLOT, attempt: 3 }, err('retryable'), NOW, half);
    expect(t.status).toBe(RunStatus.DEAD);
    expect(t).toMatchObject({ lastError: { code: 'E_X' } });
    expect((t as { lastError: { message: string } }).lastError.message).toMatch(/attempts exhausted: 3\/3/);
  });

  it('retryable beyond maxAttempts (e.g. after takeovers) → DEAD', () => {
    const t = transitionFor(job({ retry: { maxAttempts: 2 } }), { slot: SLOT, attempt: 5 }, err('retryable'), NOW, half);
    expect(t.status).toBe(RunStatus.DEAD);
  });

  it('maxAttempts 1: the first retryable failure is final', () => {
    const t = transitionFor(job({ retry: { maxAttempts: 1 } }), { slot: SLOT, attempt: 1 }, err('retryable'), NOW, half);
    expect(t.status).toBe(RunStatus.DEAD);
  });

  it('unknown result with attempts left → UNKNOWN (next attempt reconciles first), with nextAttemptAt', () => {
    const j = job({ retry: { maxAttempts: 3, backoff: { base: '2s', jitter: 'none' } } });
    const t = transitionFor(j, { slot: SLOT, attempt: 1 }, err('unknown'), NOW, never);
    expect(t).toEqual({ status: RunStatus.UNKNOWN, nextAttemptAt: NOW + 2_000, lastError: { code: 'E_X', message: 'boom' } });
  });

  it('unknown result at maxAttempts → DEAD (visible to ops, not silently retried)', () => {
    const t = transitionFor(job({ retry: { maxAttempts: 2 } }), { slot: SLOT, attempt: 2 }, err('unknown'), NOW, half);
    expect(t.status).toBe(RunStatus.DEAD);
  });

  it('a retry that would start after the deadline → DEAD now, not a doomed RETRY', () => {
    const j = job({ deadline: '10s', retry: { maxAttempts: 10, backoff: { base: '8s', jitter: 'none' } } });
    // now = slot + 5 s; next attempt at slot + 13 s > slot + 10 s.
    const t = transitionFor(j, { slot: SLOT, attempt: 1 }, err('retryable'), NOW, never);
    expect(t.status).toBe(RunStatus.DEAD);
    expect((t as { lastError: { message: string } }).lastError.message).toMatch(/deadline/);
  });

  it('a retry that lands exactly on the deadline is still allowed', () => {
    const j = job({ deadline: '10s', retry: { maxAttempts: 10, backoff: { base: '5s', jitter: 'none' } } });
    const t = transitionFor(j, { slot: SLOT, attempt: 1 }, err('retryable'), NOW, never);
    expect(t).toMatchObject({ status: RunStatus.RETRY, nextAttemptAt: SLOT + 10_000 });
  });

  it('without a deadline, only the attempt budget limits retries', () => {
    const j = job({ retry: { maxAttempts: 10, backoff: { base: '1h', max: '1d', jitter: 'none' } } });
    // attempt 9 of 10: backoff 1h·2^8 is capped at 1 d, far past any slot, and still allowed.
    const t = transitionFor(j, { slot: SLOT, attempt: 9 }, err('retryable'), NOW, never);
    expect(t).toMatchObject({ status: RunStatus.RETRY, nextAttemptAt: NOW + 86_400_000 });
  });

  it('yielded → RETRY immediately (nextAttemptAt = now) with refundAttempt: a long job is not killed by its own checkpoints', () => {
    const t = transitionFor(
      job({ retry: { maxAttempts: 1 } }),
      { slot: SLOT, attempt: 1 },
      { kind: 'yielded', progress: true },
      NOW,
      never,
    );
    expect(t).toMatchObject({ status: RunStatus.RETRY, nextAttemptAt: NOW, refundAttempt: true });
    expect((t as { lastError: { code: string } }).lastError.code).toBe('YIELDED');
  });

  it('property: the transition is always a valid state with a sane nextAttemptAt', () => {
    const endArb: fc.Arbitrary<AttemptEnd> = fc.oneof(
      fc.constant<AttemptEnd>({ kind: 'succeeded' }),
      fc.constant<AttemptEnd>({ kind: 'yielded', progress: true }),
      fc.constantFrom('retryable', 'permanent', 'unknown').map((kind) => ({ kind, code: 'C', message: 'm' }) as AttemptEnd),
    );
    fc.assert(
      fc.property(
        endArb,
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 12 }),
        fc.option(fc.integer({ min: 0, max: 600_000 }), { nil: undefined }),
        fc.integer({ min: 0, max: 600_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (end, maxAttempts, attempt, deadline, elapsed, r) => {
          const j = job({ retry: { maxAttempts }, ...(deadline === undefined ? {} : { deadline }) });
          const now = SLOT + elapsed;
          const t = transitionFor(j, { slot: SLOT, attempt }, end, now, () => r);
          if (t.status === RunStatus.RETRY || t.status === RunStatus.UNKNOWN) {
            expect(t.nextAttemptAt).toBeGreaterThanOrEqual(now);
            if (end.kind !== 'yielded') {
              expect(attempt).toBeLessThan(maxAttempts);
              if (deadline !== undefined) expect(t.nextAttemptAt).toBeLessThanOrEqual(SLOT + deadline);
            }
          }
          if (end.kind === 'succeeded') expect(t.status).toBe(RunStatus.SUCCEEDED);
          if (end.kind === 'permanent') expect(t.status).toBe(RunStatus.DEAD);
          if ((end.kind === 'retryable' || end.kind === 'unknown') && attempt >= maxAttempts) expect(t.status).toBe(RunStatus.DEAD);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('refuseToStart: a claimed run whose budget is already spent must not run its side effects', () => {
  it('allows a normal attempt within budget and before the deadline', () => {
    expect(refuseToStart(job({ deadline: '1m', retry: { maxAttempts: 3 } }), { slot: SLOT, attempt: 3 }, SLOT + 60_000)).toBeUndefined();
  });

  it('refuses past the deadline (DEADLINE_EXCEEDED)', () => {
    const r = refuseToStart(job({ deadline: '1m' }), { slot: SLOT, attempt: 1 }, SLOT + 60_001);
    expect(r?.lastError.code).toBe('DEADLINE_EXCEEDED');
  });

  it('refuses beyond maxAttempts (ATTEMPTS_EXHAUSTED), e.g. after repeated takeovers of crashed workers', () => {
    const r = refuseToStart(job({ retry: { maxAttempts: 3 } }), { slot: SLOT, attempt: 4 }, NOW);
    expect(r?.lastError.code).toBe('ATTEMPTS_EXHAUSTED');
  });

  it('without a deadline, time alone never refuses', () => {
    expect(refuseToStart(job(), { slot: SLOT, attempt: 1 }, SLOT + 365 * 86_400_000)).toBeUndefined();
  });

  it('deadlineOf is slot + deadline, or undefined', () => {
    expect(deadlineOf(job({ deadline: '90s' }), { slot: SLOT })).toBe(SLOT + 90_000);
    expect(deadlineOf(job(), { slot: SLOT })).toBeUndefined();
  });

  it("a revived run's deadline counts from its revival: an operator's retry of a long-past slot starts, and is held to the deadline from then on", () => {
    const revivedAt = SLOT + 3_600_000;
    const j = job({ deadline: '1m' });
    expect(deadlineOf(j, { slot: SLOT, revivedAt })).toBe(revivedAt + 60_000);
    expect(refuseToStart(j, { slot: SLOT, attempt: 1, revivedAt }, revivedAt + 1_000)).toBeUndefined();
    expect(refuseToStart(j, { slot: SLOT, attempt: 1, revivedAt }, revivedAt + 60_001)?.lastError.code).toBe('DEADLINE_EXCEEDED');
  });
});

describe('a DEAD run whose last attempt may have had its effect says so (a revival must reconcile first)', () => {
  it('the previous result is unknown exactly when the run was claimed out of UNKNOWN or from a vanished holder (RUNNING)', () => {
    for (const status of [...Object.values(RunStatus), undefined]) {
      expect(previousResultUnknown(status), String(status)).toBe(status === RunStatus.UNKNOWN || status === RunStatus.RUNNING);
    }
  });

  it('a start refused after a takeover or out of UNKNOWN is DEAD with resultUnknown; out of READY or RETRY it is not', () => {
    const spent = job({ retry: { maxAttempts: 1 } });
    for (const claimedFrom of [RunStatus.RUNNING, RunStatus.UNKNOWN]) {
      expect(refuseToStart(spent, { slot: SLOT, attempt: 2 }, NOW, claimedFrom), claimedFrom).toMatchObject({
        status: RunStatus.DEAD,
        resultUnknown: true,
      });
    }
    for (const claimedFrom of [RunStatus.READY, RunStatus.RETRY, undefined]) {
      expect(refuseToStart(spent, { slot: SLOT, attempt: 2 }, NOW, claimedFrom)?.resultUnknown, String(claimedFrom)).toBeUndefined();
    }
    const late = refuseToStart(job({ deadline: '1m' }), { slot: SLOT, attempt: 1 }, SLOT + 60_001, RunStatus.RUNNING);
    expect(late).toMatchObject({ status: RunStatus.DEAD, resultUnknown: true, lastError: { code: 'DEADLINE_EXCEEDED' } });
  });

  it('the refusals name what was spent: the deadline passed, or the attempt against maxAttempts', () => {
    expect(refuseToStart(job({ deadline: '1m' }), { slot: SLOT, attempt: 2 }, SLOT + 60_001)?.lastError.message).toBe(
      `deadline ${new Date(SLOT + 60_000).toISOString()} passed before attempt 2`,
    );
    expect(refuseToStart(job({ retry: { maxAttempts: 3 } }), { slot: SLOT, attempt: 4 }, NOW)?.lastError.message).toBe(
      'attempt 4 exceeds maxAttempts 3',
    );
  });

  it('an unknown result that spends the budget or would pass the deadline is DEAD with resultUnknown; a retryable one is not', () => {
    const unknown: AttemptEnd = { kind: 'unknown', code: 'E_X', message: 'boom' };
    const retryable: AttemptEnd = { kind: 'retryable', code: 'E_X', message: 'boom' };
    const atBudget = job({ retry: { maxAttempts: 2 } });
    expect(transitionFor(atBudget, { slot: SLOT, attempt: 2 }, unknown, NOW, half)).toMatchObject({
      status: RunStatus.DEAD,
      resultUnknown: true,
    });
    expect(transitionFor(atBudget, { slot: SLOT, attempt: 2 }, retryable, NOW, half)).not.toHaveProperty('resultUnknown', true);
    const nearDeadline = job({ deadline: '6s', retry: { maxAttempts: 5, backoff: { base: '10s', max: '10s', jitter: 'none' } } });
    expect(transitionFor(nearDeadline, { slot: SLOT, attempt: 1 }, unknown, NOW, half)).toMatchObject({
      status: RunStatus.DEAD,
      resultUnknown: true,
    });
    expect(transitionFor(nearDeadline, { slot: SLOT, attempt: 1 }, retryable, NOW, half)).not.toHaveProperty('resultUnknown', true);
  });
});

describe('the other ways an attempt ends', () => {
  it('a yield without a checkpoint spends the attempt with its result unknown: UNKNOWN with backoff and no refund, DEAD (result unknown) at the budget', () => {
    // The handler had not answered when the worker yielded: its effect may have landed, so the
    // next claim must reconcile (UNKNOWN) and a revival of the DEAD run too (model seed 7924).
    const j = job({ retry: { maxAttempts: 2, backoff: { base: '1s', max: '1s', jitter: 'none' } } });
    const t = transitionFor(j, { slot: SLOT, attempt: 1 }, { kind: 'yielded', progress: false }, NOW, never);
    expect(t).toEqual({ status: RunStatus.UNKNOWN, nextAttemptAt: NOW + 1_000, lastError: { ...YIELD_WITHOUT_PROGRESS } });
    expect(transitionFor(j, { slot: SLOT, attempt: 2 }, { kind: 'yielded', progress: false }, NOW, never)).toEqual({
      status: RunStatus.DEAD,
      resultUnknown: true,
      lastError: { code: YIELD_WITHOUT_PROGRESS.code, message: `${YIELD_WITHOUT_PROGRESS.message} (attempts exhausted: 2/2)` },
    });
  });

  it('a yield with a checkpoint says so in its lastError', () => {
    expect(transitionFor(job(), { slot: SLOT, attempt: 1 }, { kind: 'yielded', progress: true }, NOW, never)).toMatchObject({
      lastError: { code: 'YIELDED', message: 'yielded before the time limit' },
    });
  });

  it('superseded (a newer slot wrote first) → SUPERSEDED with the refusal as its error, its result unknown (what it wrote before the refusal stands)', () => {
    expect(
      transitionFor(job(), { slot: SLOT, attempt: 1 }, { kind: 'superseded', code: 'FENCED_OUT', message: 'newer' }, NOW, never),
    ).toEqual({
      status: RunStatus.SUPERSEDED,
      resultUnknown: true,
      lastError: { code: 'FENCED_OUT', message: 'newer' },
    });
  });

  it('SUCCEEDED, DEAD and SUPERSEDED end the run (and free an exclusive lane); RETRY and UNKNOWN do not', () => {
    expect([RunStatus.SUCCEEDED, RunStatus.DEAD, RunStatus.SUPERSEDED, RunStatus.RETRY, RunStatus.UNKNOWN].map((s) => endsRun(s))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});
