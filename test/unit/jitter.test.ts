/**
 * Jitter (jitter.ts): fire times spread over [slot, slot + jitter), fixed per (job, slot) so every
 * planner agrees and re-planning never moves one, never reaching the next slot; and a jittered
 * job's slots (run keys, misfires) are those of the same job without jitter.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { fireTimeOf, jitterOffsetMs } from '../../shared/schedule/jitter.js';
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import { planTick } from '../../shared/core/plan.js';
import { nextSlotAfter, slotSpecOf, slotsBetween } from '../../shared/schedule/slots.js';

const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;

function job(overrides: Record<string, unknown>): Job {
  return parseJobs([{ name: 'j', schedule: '0 * * * *', handler: 'h', ...overrides }], { handlers: ['h'] })[0]!;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the offset is a pure function of (job name, slot)', () => {
  it('the same inputs give the same fire time, and Math.random is never asked', () => {
    const random = vi.spyOn(Math, 'random');
    const j = { name: 'billing-export', jitter: 30 * SEC };
    const slot = Date.UTC(2026, 0, 1, 12);
    const first = fireTimeOf(j, slot, slot + HOUR);
    for (let i = 0; i < 5; i++) expect(fireTimeOf(j, slot, slot + HOUR)).toBe(first);
    expect(random).not.toHaveBeenCalled();
    // Pinned: a change of the hash would move every jittered job's fire times on deploy.
    expect(first - slot).toBe(24_968);
    expect(jitterOffsetMs('a', 0, 1000)).toBe(115);
  });

  it('a thundering herd of `0 * * * *` jobs spreads over the jitter instead of one instant', () => {
    const slot = Date.UTC(2026, 0, 1, 12);
    const offsets = Array.from({ length: 1000 }, (_, i) => fireTimeOf({ name: `job-${i}`, jitter: 60 * SEC }, slot, slot + HOUR) - slot);
    // Ten 6-second buckets each get a fair share (uniform would be 100 ± ~30).
    const buckets = new Array<number>(10).fill(0);
    for (const o of offsets) buckets[Math.floor(o / (6 * SEC))]! += 1;
    for (const count of buckets) expect(count).toBeGreaterThan(50);
    expect(new Set(offsets).size).toBeGreaterThan(950);
  });

  it('no jitter (undefined or 0): the fire time is the slot', () => {
    expect(fireTimeOf({ name: 'a' }, 5 * SEC, 6 * SEC)).toBe(5 * SEC);
    expect(fireTimeOf({ name: 'a', jitter: 0 }, 5 * SEC)).toBe(5 * SEC);
  });
});

describe('property: the fire time is in [slot, slot + min(jitter, next − slot)), in slot order', () => {
  it('for generated jobs, schedules and jitters (capped by the next slot, as the planner computes it)', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}[a-z0-9]$/),
        fc.constantFrom<unknown>('* * * * *', '*/10 * * * * *', '0 * * * *', { every: '90s' }, { every: '7s', phase: '3s' }),
        fc.integer({ min: 1, max: 600_000 }),
        fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2030, 0, 1) }),
        (name, schedule, jitter, from) => {
          const j = parseJobs([{ name, schedule, handler: 'h', jitter }], { handlers: ['h'] })[0]!;
          const spec = slotSpecOf(j);
          const slots = slotsBetween(spec, from, from + 10 * MIN, 50);
          const fires = slots.map((slot) => fireTimeOf(j, slot, nextSlotAfter(spec, slot)));
          fires.forEach((fire, i) => {
            const slot = slots[i]!;
            const next = nextSlotAfter(spec, slot)!;
            expect(fire).toBeGreaterThanOrEqual(slot);
            expect(fire).toBeLessThan(slot + Math.min(jitter, next - slot));
            if (i > 0) expect(fire).toBeGreaterThan(fires[i - 1]!);
          });
          // Uncapped (what a worker recomputes without slot math) equals capped whenever jitter fits.
          for (const slot of slots) {
            const next = nextSlotAfter(spec, slot)!;
            if (jitter <= next - slot) expect(fireTimeOf(j, slot)).toBe(fireTimeOf(j, slot, next));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('jitter moves fire times, never slots: planning and misfires are unchanged', () => {
  it('planTick plans the same runs (slot, shard, status, catch-up) for a job with and without jitter', () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 30);
    const plain = job({ schedule: '*/10 * * * * *', misfire: { after: '1m', policy: 'skip', maxPerTick: 1000 } });
    const jittered = job({ schedule: '*/10 * * * * *', misfire: { after: '1m', policy: 'skip', maxPerTick: 1000 }, jitter: '9s' });
    // The planner was down for 10 minutes: slots older than misfire.after are misfires either way.
    const input = {
      plannedUntil: now - 10 * MIN,
      paused: new Set<string>(),
      behind: new Map<string, number>(),
      now,
      lookaheadMs: 60 * SEC,
    };
    const a = planTick({ ...input, jobs: [plain] });
    const b = planTick({ ...input, jobs: [jittered] });
    const view = (p: typeof a) => p.runs.map((r) => [r.slot, r.shard, r.status, r.catchUp]);
    expect(view(b)).toEqual(view(a));
    expect(b.misfired).toEqual(a.misfired);
    expect(b.runs.some((r) => r.catchUp && r.status === 'SKIPPED')).toBe(true);
  });

  it('a slot is a misfire by its slot, not its fire time: a fire time still ahead does not rescue it', () => {
    // jitter 10m > misfire.after 1m: a slot 2 minutes old may fire 8 minutes from now, yet it misfired.
    const j = job({ schedule: '* * * * *', misfire: { after: '1m', policy: 'skip' }, jitter: '10m' });
    const now = Date.UTC(2026, 0, 1, 12, 0, 30);
    const p = planTick({ jobs: [j], plannedUntil: now - 5 * MIN, paused: new Set(), behind: new Map(), now, lookaheadMs: 60 * SEC });
    const late = p.runs.filter((r) => r.catchUp);
    expect(late.length).toBeGreaterThan(0);
    for (const run of late) {
      expect(run.slot).toBeLessThan(now - MIN);
      expect(run.status).toBe('SKIPPED');
    }
    // ...and its fire time is still a pure function of the slot, capped below the next one.
    const slot = late[0]!.slot;
    const fire = fireTimeOf(j, slot, nextSlotAfter(slotSpecOf(j), slot));
    expect(fire).toBeGreaterThanOrEqual(slot);
    expect(fire).toBeLessThan(slot + MIN);
  });
});
