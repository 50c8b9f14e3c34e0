/**
 * The sweeper's verdict on one open run (DESIGN §7, §11) and which waiting run of an idle lane it
 * dispatches. The sweeper is the backstop for lost messages; the hazard is the other way round: a
 * run in hand (leased, waiting for its backoff, or with a message still due) re-dispatched.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { dueAt, laneHead, sendBehindLiveHolder, sweepVerdict } from '../../shared/core/sweep.js';
import { initialFence } from '../../shared/core/fence.js';
import { RunStatus, TERMINAL_STATUSES, runKeyOf, type Run } from '../../shared/core/vocabulary.js';

const SLOT = Date.UTC(2026, 0, 15, 12, 0);
const NOW = SLOT + 600_000;
const GRACE = 60_000;

/** A time at, next to, or anywhere around `at`: the boundaries the verdict draws. */
const around = (at: number) => fc.oneof(fc.constantFrom(at - 1, at, at + 1), fc.integer({ min: at - 1_200_000, max: at + 1_200_000 }));
const optional = (arb: fc.Arbitrary<number>) => fc.option(arb, { nil: undefined });

const runArb: fc.Arbitrary<Run> = fc
  .record({
    status: fc.constantFrom(...Object.values(RunStatus)),
    leaseUntil: optional(around(NOW - GRACE)),
    nextAttemptAt: optional(around(NOW - GRACE)),
    fireAt: optional(around(NOW - GRACE)),
    createdAt: around(NOW - GRACE),
    dispatchedAt: optional(around(NOW - GRACE)),
    slot: around(NOW - GRACE),
  })
  .map(({ slot, ...rest }) => ({
    job: 'j',
    slot,
    shard: 0,
    shards: 1,
    runKey: runKeyOf('j', slot, 0, 1),
    fencingToken: initialFence(slot),
    attempt: 0,
    ...rest,
  }));

describe('sweepVerdict: the sweeper never disturbs a run in hand', () => {
  it('a terminal run is ended, an open run of a job no longer configured is an orphan (never dispatched), whatever its times', () => {
    fc.assert(
      fc.property(runArb, fc.boolean(), (run, configured) => {
        const verdict = sweepVerdict(run, configured, NOW, GRACE);
        if ((TERMINAL_STATUSES as readonly string[]).includes(run.status)) expect(verdict).toBe('ended');
        else if (!configured) expect(verdict).toBe('orphan');
        else expect(['lost', 'in-hand']).toContain(verdict);
      }),
    );
  });

  it('a RUNNING run is lost only once its lease ended more than the grace period ago (no lease counts as ended)', () => {
    fc.assert(
      fc.property(runArb, (any) => {
        const run = { ...any, status: RunStatus.RUNNING };
        const lost = (run.leaseUntil ?? 0) < NOW - GRACE;
        expect(sweepVerdict(run, true, NOW, GRACE)).toBe(lost ? 'lost' : 'in-hand');
      }),
    );
  });

  it('a waiting run is lost only once its message was due more than the grace period ago: the latest of its backoff, fire time (or slot), creation and last dispatch', () => {
    fc.assert(
      fc.property(runArb, fc.constantFrom(RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN), (any, status) => {
        const run = { ...any, status };
        const due = Math.max(run.nextAttemptAt ?? 0, run.fireAt ?? run.slot, run.createdAt, run.dispatchedAt ?? 0);
        expect(dueAt(run)).toBe(due);
        expect(sweepVerdict(run, true, NOW, GRACE)).toBe(due < NOW - GRACE ? 'lost' : 'in-hand');
      }),
    );
  });

  it('a run re-dispatched just now, or backing off, is in hand even though its slot is long past', () => {
    const old = {
      job: 'j',
      slot: SLOT,
      shard: 0,
      shards: 1,
      runKey: runKeyOf('j', SLOT, 0, 1),
      fencingToken: initialFence(SLOT),
      attempt: 1,
      createdAt: SLOT,
    };
    expect(sweepVerdict({ ...old, status: RunStatus.READY }, true, NOW, GRACE)).toBe('lost');
    expect(sweepVerdict({ ...old, status: RunStatus.READY, dispatchedAt: NOW - 1_000 }, true, NOW, GRACE)).toBe('in-hand');
    expect(sweepVerdict({ ...old, status: RunStatus.RETRY, nextAttemptAt: NOW + 5_000 }, true, NOW, GRACE)).toBe('in-hand');
    expect(sweepVerdict({ ...old, status: RunStatus.READY, fireAt: NOW }, true, NOW, GRACE)).toBe('in-hand');
  });
});

describe("laneHead: the waiting run an idle lane's holder would have dispatched", () => {
  it('forbid-queue and forbid-skip: the oldest; coalesce and replace: the newest; nothing for no runs', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 1_000 }), { minLength: 1, maxLength: 8 }), (slots) => {
        const runs = slots.map((slot) => ({ slot }));
        expect(laneHead(runs, 'forbid-queue')?.slot).toBe(Math.min(...slots));
        expect(laneHead(runs, 'forbid-skip')?.slot).toBe(Math.min(...slots));
        expect(laneHead(runs, 'coalesce')?.slot).toBe(Math.max(...slots));
        expect(laneHead(runs, 'replace')?.slot).toBe(Math.max(...slots));
        // The caller's list is left as it was.
        expect(runs.map((r) => r.slot)).toEqual(slots);
      }),
    );
    expect(laneHead([], 'coalesce')).toBeUndefined();
  });
});

describe('sendBehindLiveHolder: the lost runs worth sending while the lane is held', () => {
  it("forbid-skip: all; replace: the older ones and the newest newer one; coalesce: the older ones; forbid-queue: none (the holder's look reads the lane from its floor, which the sweeper lowers to every lost run)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 100 }), { minLength: 0, maxLength: 8 }),
        fc.integer({ min: 0, max: 100 }),
        (slots, holderSlot) => {
          const runs = slots.filter((slot) => slot !== holderSlot).map((slot) => ({ slot }));
          const holder = { slot: holderSlot };
          const sorted = runs.map((r) => r.slot).sort((a, b) => a - b);
          const older = sorted.filter((slot) => slot < holderSlot);
          const newer = sorted.filter((slot) => slot > holderSlot);
          const sent = (overlap: Parameters<typeof sendBehindLiveHolder>[1]) =>
            sendBehindLiveHolder(runs, overlap, holder).map((r) => r.slot);
          expect(sent('forbid-skip')).toEqual(sorted);
          expect(sent('coalesce')).toEqual(older);
          expect(sent('replace')).toEqual(newer.length > 0 ? [...older, newer.at(-1)!] : older);
          expect(sent('forbid-queue')).toEqual([]);
        },
      ),
    );
  });
});
