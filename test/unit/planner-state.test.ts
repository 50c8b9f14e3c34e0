/**
 * The planner's layout and key spread (shared/core/planner-state.ts), pure. Hazards: changing
 * plannerPartitions starts a partition past where the slowest old one stood (the slots between are
 * never planned), a stale layout's tick moves a watermark, a watch-index bucket swept by no
 * partition (its watched runs are never swept) or by two, a job planned by no partition or by two,
 * every exceptional job or every watched run crowded into one hot item.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { partitionOf } from '../../shared/core/partition.js';
import {
  configFingerprint,
  exceptionBucketOf,
  jobsOfPartition,
  openBucketOf,
  ownedOpenBuckets,
  relayout,
  replanFromOf,
  type PartitionCursor,
  type PlannerLayout,
} from '../../shared/core/planner-state.js';
import { KEY_SPREAD } from '../../shared/core/resources.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0);

const instant = fc.integer({ min: T0 - 86_400_000, max: T0 + 86_400_000 });
const cursor: fc.Arbitrary<PartitionCursor> = fc.record(
  { plannedUntil: instant, sweptUntil: instant, watchAfter: fc.string({ minLength: 1, maxLength: 8 }) },
  { requiredKeys: [] },
);
const layout: fc.Arbitrary<PlannerLayout> = fc
  .record({ gen: fc.integer({ min: 1, max: 1_000 }), cursors: fc.array(cursor, { minLength: 1, maxLength: 8 }) })
  .map(({ gen, cursors }) => ({ of: cursors.length, gen, partitions: new Map(cursors.map((c, p) => [p, c])) }));

const known = (values: readonly (number | undefined)[]) => values.filter((v): v is number => v !== undefined);

describe('relayout: a change of plannerPartitions', () => {
  it('starts every new partition where the slowest old one stood: no slot of any old partition is skipped', () => {
    fc.assert(
      fc.property(layout, fc.integer({ min: 1, max: 12 }), instant, (previous, partitions, now) => {
        const next = relayout(previous, partitions, now);
        const old = [...previous.partitions.values()];
        const planned = known(old.map((c) => c.plannedUntil));
        const swept = known(old.map((c) => c.sweptUntil));
        expect(next.of).toBe(partitions);
        expect([...next.partitions.keys()]).toEqual(Array.from({ length: partitions }, (_, p) => p));
        for (const start of next.partitions.values()) {
          // Never past any old partition's watermark (its jobs' slots beyond it were never planned),
          // and no earlier than needed (a start before all of them re-walks slots every one planned).
          // With none planned, at now (written before any put: see the first-layout test).
          expect(start.plannedUntil).toBe(planned.length === 0 ? now : Math.min(...planned));
          // The sweep likewise resumes where the slowest old one stopped; with none, at now.
          expect(start.sweptUntil).toBe(swept.length === 0 ? now : Math.min(...swept));
          // Watch-index positions name buckets of the old layout: the new one sweeps them afresh.
          expect(start.watchAfter).toBeUndefined();
        }
      }),
    );
  });

  it('bumps the generation every time, so a tick still working under the old layout can no longer move a watermark', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 6 }), instant, (counts, now) => {
        let current: PlannerLayout | undefined;
        const gens: number[] = [];
        for (const of of counts) {
          current = relayout(current, of, now);
          gens.push(current.gen);
        }
        expect(gens).toEqual(counts.map((_, i) => i + 1));
      }),
    );
  });

  it('a first layout plans nothing in the past and starts every partition at now, so a first tick that fails half-way leaves the next one planning from there, not from its own later now (model seed 20269141)', () => {
    const first = relayout(undefined, 3, T0);
    expect(first.gen).toBe(1);
    expect([...first.partitions.entries()]).toEqual([0, 1, 2].map((p) => [p, { plannedUntil: T0, sweptUntil: T0 }]));
  });

  it('an old layout whose partitions never planned starts the new one at now, not at +∞ (never planning) or NaN', () => {
    const previous: PlannerLayout = {
      of: 2,
      gen: 4,
      partitions: new Map([
        [0, {}],
        [1, { sweptUntil: T0 - 5 }],
      ]),
    };
    const next = relayout(previous, 4, T0);
    expect(next.gen).toBe(5);
    for (const start of next.partitions.values()) expect(start).toEqual({ plannedUntil: T0, sweptUntil: T0 - 5 });
  });
});

describe('partitions and buckets', () => {
  const names = Array.from({ length: 16_000 }, (_, i) => `job-${i}`);

  it('every job is planned by exactly one partition, the one partitionOf names, in config order', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 9 }),
        (jobNames, of) => {
          const jobs = jobNames.map((name) => ({ name }));
          const parts = Array.from({ length: of }, (_, p) => jobsOfPartition(jobs, p, of));
          expect(
            parts
              .flat()
              .map((j) => j.name)
              .sort(),
          ).toEqual([...jobNames].sort());
          parts.forEach((part, p) => {
            expect(part.every((j) => partitionOf(j.name, of) === p)).toBe(true);
            expect(part).toEqual(jobs.filter((j) => part.includes(j)));
          });
        },
      ),
    );
  });

  it('together the partitions sweep every watch-index bucket exactly once, whatever their number', () => {
    for (let of = 1; of <= 20; of++) {
      const owned = Array.from({ length: of }, (_, p) => ownedOpenBuckets(p, of));
      expect(
        owned.flat().sort((a, b) => a - b),
        `of ${of}`,
      ).toEqual(Array.from({ length: KEY_SPREAD.openBuckets }, (_, b) => b));
    }
  });

  it('a watched run is in one bucket, the same every time it is looked up (watched and unwatched in the same place)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), instant, fc.nat(99), (job, slot, shard) => {
        const bucket = openBucketOf(job, slot, shard);
        expect(Number.isInteger(bucket) && bucket >= 0 && bucket < KEY_SPREAD.openBuckets).toBe(true);
        expect(openBucketOf(job, slot, shard)).toBe(bucket);
      }),
    );
  });

  it('the runs of one job spread over every watch-index bucket, by slot and by shard (no hot key per job)', () => {
    const bySlot = new Set(Array.from({ length: 400 }, (_, i) => openBucketOf('one-job', T0 + i * 60_000, 0)));
    const byShard = new Set(Array.from({ length: 400 }, (_, shard) => openBucketOf('one-job', T0, shard)));
    expect(bySlot.size).toBe(KEY_SPREAD.openBuckets);
    expect(byShard.size).toBe(KEY_SPREAD.openBuckets);
  });

  it('an exceptional job is listed in one bucket, the same on every lookup', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (job) => {
        const bucket = exceptionBucketOf(job);
        expect(Number.isInteger(bucket) && bucket >= 0 && bucket < KEY_SPREAD.exceptionBuckets).toBe(true);
        expect(exceptionBucketOf(job)).toBe(bucket);
      }),
    );
  });

  it('exceptional jobs spread over every exception bucket (no one list item holding them all)', () => {
    const counts = new Map<number, number>();
    for (const name of names) counts.set(exceptionBucketOf(name), (counts.get(exceptionBucketOf(name)) ?? 0) + 1);
    expect(counts.size).toBe(KEY_SPREAD.exceptionBuckets);
    // Even enough that no bucket holds twice its share.
    expect(Math.max(...counts.values())).toBeLessThan((2 * names.length) / KEY_SPREAD.exceptionBuckets);
  });
});

describe('config changes: where a tick re-plans from', () => {
  const L = 63_500;
  const T = Date.UTC(2026, 5, 1, 12, 0);
  const a = [{ name: 'a', schedule: '* * * * *' }];
  const ab = [...a, { name: 'b', schedule: '1 12 * * *' }];

  it('the fingerprint changes with any job added, removed or changed, not with their order', () => {
    expect(configFingerprint(ab)).toBe(configFingerprint([...ab].reverse()));
    expect(configFingerprint(ab)).not.toBe(configFingerprint(a));
    const changed: readonly { name: string; schedule: string }[] = [{ name: 'a', schedule: '*/2 * * * *' }];
    expect(configFingerprint(changed)).not.toBe(configFingerprint(a));
    expect(configFingerprint(a)).toMatch(/^[0-9a-f]{16}$/);
  });

  it("a job added since the watermark was planned: the previous tick's now; the same jobs: none", () => {
    const planned: PartitionCursor = { plannedUntil: T + L, plannedAt: T, configHash: configFingerprint(a) };
    expect(replanFromOf(planned, configFingerprint(a), L)).toBeUndefined();
    expect(replanFromOf(planned, configFingerprint(ab), L)).toBe(T);
    // Nothing planned yet: the first tick starts at now anyway.
    expect(replanFromOf({}, configFingerprint(ab), L)).toBeUndefined();
  });

  it('a watermark moved without a fingerprint (earlier code during a deploy, a relayout) is re-planned from the last recorded now, or one lookahead back', () => {
    // Earlier code moved plannedUntil 20 s on, planning without the jobs it did not know.
    expect(replanFromOf({ plannedUntil: T + 20_000 + L, plannedAt: T, configHash: configFingerprint(a) }, configFingerprint(a), L)).toBe(T);
    expect(replanFromOf({ plannedUntil: T + L }, configFingerprint(a), L)).toBe(T);
  });

  it('a first layout records its jobs: its first tick re-plans nothing before now', () => {
    const layout = relayout(undefined, 2, T, (p) => `fp-${p}`);
    expect(layout.partitions.get(1)).toEqual({ plannedUntil: T, sweptUntil: T, configHash: 'fp-1', plannedAt: T });
    expect(replanFromOf(layout.partitions.get(1)!, 'fp-1', L) ?? T).toBe(T);
    // A relayout records no jobs: its first ticks re-plan (creating only what a new job was owed),
    // from the slowest old partition's last now.
    expect(relayout(layout, 3, T + 60_000, (p) => `fp-${p}`).partitions.get(0)).toEqual({ plannedUntil: T, sweptUntil: T, plannedAt: T });
  });

  it("a job added while plannerPartitions changes gets no slot from before the previous tick's now, though its startLead lengthens the lookahead (model seed 668288444, path 6:0:0:0:0)", () => {
    // Three partitions ticked at T with a lookahead of 63.5 s; then partitions 3 -> 1 and a job
    // with a 5 s startLead are deployed, and the lookahead becomes 67 s.
    const ticked: PartitionCursor = { plannedUntil: T + L, sweptUntil: T, plannedAt: T, configHash: 'fp-3' };
    const previous: PlannerLayout = { of: 3, gen: 2, partitions: new Map([0, 1, 2].map((p) => [p, ticked])) };
    const next = relayout(previous, 1, T + 22_000).partitions.get(0)!;
    const longer = L + 3_500;
    // Re-planned from the ticks' now T: a slot at T - 1 s passed before the job existed.
    expect(replanFromOf(next, configFingerprint(ab), longer)).toBe(T);
    // A slowest partition that last ticked a minute earlier sets the start.
    const behind: PlannerLayout = {
      ...previous,
      partitions: new Map([...previous.partitions, [2, { ...ticked, plannedAt: T - 60_000, plannedUntil: T - 60_000 + L }]]),
    };
    expect(replanFromOf(relayout(behind, 1, T + 22_000).partitions.get(0)!, configFingerprint(ab), longer)).toBe(T - 60_000);
    // An old partition that never recorded its now leaves the estimate (one lookahead back).
    const legacy: PlannerLayout = { ...previous, partitions: new Map([...previous.partitions, [1, { plannedUntil: T + L }]]) };
    expect(replanFromOf(relayout(legacy, 1, T + 22_000).partitions.get(0)!, configFingerprint(ab), L)).toBe(T);
  });
});
