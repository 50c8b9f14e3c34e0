/**
 * The pure parts of `ops show`'s attempt history and `ops jobs`' next fire times, on generated
 * inputs: every claim number in the kept window gets exactly one row, in order; a claim that
 * recorded nothing reads as taken over when a later claim exists (never as the current error);
 * and the next fire times are exactly the first fire times at or after now, as the planner's
 * slot code and fireTimeOf give them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimsOf, initialFence } from '../../shared/core/fence.js';
import { fireTimeOf } from '../../shared/schedule/jitter.js';
import { ATTEMPT_HISTORY_LIMIT } from '../../shared/core/limits.js';
import { nextSlotAfter, slotsBetween, slotSpecOf } from '../../shared/schedule/slots.js';
import { RunStatus, type AttemptRecord } from '../../shared/core/vocabulary.js';
import { AttemptEnd, attemptHistory, endText, type HistorySource } from '../../tools/ops/attempts.js';
import { nextFires } from '../../tools/ops/preview.js';
import { testJobs } from '../support/helpers.js';

const SLOT = Date.UTC(2026, 5, 1, 12, 0);
const SEC = 1_000;

/** A run after `claims` claims; `recorded[i]` says whether claim i + 1 recorded an outcome. */
function runAfter(recorded: readonly boolean[], status: RunStatus): HistorySource {
  const attempts: AttemptRecord[] = [];
  recorded.forEach((ok, i) => {
    const claim = i + 1;
    // The ledger keeps the last ATTEMPT_HISTORY_LIMIT recorded claims: each drops the one LIMIT before it.
    if (ok)
      attempts.push({
        claim,
        token: initialFence(SLOT) + claim,
        owner: `w${claim}`,
        claimedAt: SLOT + claim * SEC,
        endedAt: SLOT + claim * SEC + 250,
        outcome: RunStatus.RETRY,
        code: 'E',
        message: `attempt ${claim}`,
      });
  });
  const newest = Math.max(0, ...attempts.map((a) => a.claim));
  const kept = attempts.filter((a) => a.claim > newest - ATTEMPT_HISTORY_LIMIT);
  return {
    slot: SLOT,
    status,
    fencingToken: initialFence(SLOT) + recorded.length,
    owner: 'current',
    startedAt: SLOT + recorded.length * SEC,
    attempts: kept,
  };
}

describe('attempt history', () => {
  it('a claim with no outcome followed by a later claim reads "no outcome recorded (taken over)"', () => {
    const { rows } = attemptHistory(runAfter([true, false, true], RunStatus.SUCCEEDED));
    expect(rows.map((r) => r.claim)).toEqual([1, 2, 3]);
    expect(rows.map(endText)).toEqual(['RETRY', 'no outcome recorded (taken over)', 'RETRY']);
    expect(rows[1]).toMatchObject({ end: AttemptEnd.TAKEN_OVER, token: initialFence(SLOT) + 2 });
    expect(rows[1]!.code).toBeUndefined();
    expect(rows[0]).toMatchObject({ owner: 'w1', code: 'E', message: 'attempt 1', durationMs: 250 });
  });

  it('the current claim of a RUNNING run is running, not taken over', () => {
    const { rows } = attemptHistory(runAfter([false, false], RunStatus.RUNNING));
    expect(rows.map((r) => r.end)).toEqual([AttemptEnd.TAKEN_OVER, AttemptEnd.RUNNING]);
    expect(rows[1]).toMatchObject({ owner: 'current', claimedAt: SLOT + 2 * SEC });
  });

  it("an operator's takeover (resolve of a RUNNING run) is its own row, not a dead worker's", () => {
    const run = { ...runAfter([true, false, false], RunStatus.DEAD), resolution: { from: RunStatus.RUNNING, at: SLOT + 10 * SEC } };
    expect(attemptHistory(run).rows.map((r) => r.end)).toEqual([AttemptEnd.RECORDED, AttemptEnd.TAKEN_OVER, AttemptEnd.OPS_TAKEOVER]);
  });

  it('never claimed: no rows', () => {
    expect(attemptHistory({ slot: SLOT, status: RunStatus.READY, fencingToken: initialFence(SLOT) })).toEqual({ rows: [], earlier: 0 });
  });

  it('generated histories: one row per claim of the kept window, in order, recorded ones as recorded, gaps taken over unless current', () => {
    const statusArb = fc.constantFrom(RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.DEAD, RunStatus.RETRY);
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }), statusArb, (recorded, status) => {
        const run = runAfter(recorded, status);
        const { rows, earlier } = attemptHistory(run);
        const claims = claimsOf(run.fencingToken, run.slot);
        expect(earlier + rows.length).toBe(claims);
        expect(rows.map((r) => r.claim)).toEqual(Array.from({ length: rows.length }, (_, i) => earlier + 1 + i));
        // Every kept record is listed as recorded; nothing older than the kept window is.
        for (const a of run.attempts ?? [])
          expect(rows.find((r) => r.claim === a.claim)).toMatchObject({ end: AttemptEnd.RECORDED, outcome: a.outcome, code: a.code });
        for (const row of rows) {
          const isRecord = run.attempts!.some((a) => a.claim === row.claim);
          if (isRecord) continue;
          // The kept window only holds claims after the ones dropped: a gap inside it is a real gap.
          expect(recorded[row.claim - 1]).toBe(false);
          if (row.claim < claims) expect(row.end).toBe(AttemptEnd.TAKEN_OVER);
          else expect(row.end).toBe(status === RunStatus.RUNNING ? AttemptEnd.RUNNING : AttemptEnd.NO_OUTCOME);
          expect(row.code).toBeUndefined();
        }
      }),
    );
  });
});

describe('next fire times', () => {
  const jobArb = fc.record({
    schedule: fc.constantFrom('* * * * *', '*/5 * * * *', '*/10 * * * * *', '0 * * * *', '30 2 * * *'),
    jitterSeconds: fc.integer({ min: 0, max: 600 }),
  });

  it('are the first fire times at or after now, in order: slots mapped through fireTimeOf, the slot just before now included when it fires after it', () => {
    fc.assert(
      fc.property(jobArb, fc.integer({ min: 0, max: 86_400_000 }), ({ schedule, jitterSeconds }, offset) => {
        const [job] = testJobs([
          { name: 'herd', schedule, handler: 'noop', ...(jitterSeconds > 0 ? { jitter: `${jitterSeconds}s` } : {}) },
        ]);
        const spec = slotSpecOf(job!);
        const now = SLOT + offset;
        const got = nextFires({ spec, jitter: job! }, now, 3);
        // Brute force: every slot from well before now, each with its planner-capped fire time.
        const slots = slotsBetween(spec, now - 11 * 60_000, now + 3 * 86_400_000, 200_000);
        const expected = slots
          .map((slot) => ({ slot, fireAt: fireTimeOf(job!, slot, nextSlotAfter(spec, slot)) }))
          .filter((e) => e.fireAt >= now)
          .slice(0, 3);
        expect(got).toEqual(expected);
        if (jitterSeconds === 0) expect(got.every((e) => e.fireAt === e.slot)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });
});
