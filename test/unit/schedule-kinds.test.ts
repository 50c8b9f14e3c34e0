/**
 * Schedules beyond cron (DESIGN §4): intervals, one-time runs, the active window and excluded
 * dates, all through the same slotsBetween / nextSlotAfter the planner, backfill and preview use,
 * and lastSlotOf for "is this job finished".
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import {
  clearSlotCaches,
  dstMark,
  lastSlotOf,
  nextSlotAfter,
  slotsBetween,
  type DstGapPolicy,
  type DstOverlapPolicy,
  type Schedule,
  type SlotSpec,
} from '../../shared/schedule/slots.js';

const Z = (iso: string): number => Date.parse(iso);
const isoOf = (xs: readonly number[]): string[] => xs.map((x) => new Date(x).toISOString());
const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

function spec(
  schedule: Schedule,
  extra: Partial<SlotSpec> = {},
  gap: DstGapPolicy = 'shift',
  overlap: DstOverlapPolicy = 'once',
): SlotSpec {
  return { schedule, timezone: 'UTC', dst: { gap, overlap }, ...extra };
}

/** The local calendar date of an instant in a zone, straight from Intl (independent of the module). */
function localDate(zone: string, t: number): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(t);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')}`;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('interval schedules: epoch + n × every + phase, UTC, no DST question', () => {
  it("every 6h, phase 1h fires at 01:00, 07:00, 13:00, 19:00 UTC whatever the job's zone", () => {
    for (const timezone of ['UTC', 'America/New_York', 'Australia/Lord_Howe']) {
      const s = { ...spec({ every: 6 * HOUR, phase: HOUR }), timezone };
      expect(isoOf(slotsBetween(s, Z('2026-03-08T00:00:00Z'), Z('2026-03-09T00:00:00Z')))).toEqual([
        '2026-03-08T01:00:00.000Z',
        '2026-03-08T07:00:00.000Z',
        '2026-03-08T13:00:00.000Z',
        '2026-03-08T19:00:00.000Z',
      ]);
    }
  });

  it('90 s keeps its rhythm across the hour (cron cannot say this): 00:58:30, 01:00:00, 01:01:30', () => {
    const s = spec({ every: 90 * SEC, phase: 0 });
    expect(isoOf(slotsBetween(s, Z('2026-01-01T00:58:00Z'), Z('2026-01-01T01:02:00Z')))).toEqual([
      '2026-01-01T00:58:30.000Z',
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T01:01:30.000Z',
    ]);
  });

  it('7 minutes across hours and a DST change: always 7 minutes of real time apart', () => {
    const s = { ...spec({ every: 7 * MIN, phase: 0 }), timezone: 'America/New_York' };
    const got = slotsBetween(s, Z('2026-03-08T06:00:00Z'), Z('2026-03-08T09:00:00Z'));
    for (let i = 1; i < got.length; i++) expect(got[i]! - got[i - 1]!).toBe(7 * MIN);
  });

  it('property: in any window the slots are exactly the n × every + phase inside it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 * 86_400 }),
        fc.nat(),
        fc.integer({ min: Z('1990-01-01T00:00:00Z'), max: Z('2060-01-01T00:00:00Z') }),
        fc.integer({ min: 0, max: DAY }),
        (everySec, phaseSeed, a, len) => {
          const every = everySec * SEC;
          const phase = (phaseSeed % everySec) * SEC;
          const b = a + len;
          const got = slotsBetween(spec({ every, phase }), a, b, 5_000);
          const onGrid = got.every((t) => (((t - phase) % every) + every) % every === 0 && t > a && t <= b);
          const evenlySpaced = got.every((t, i) => i === 0 || t - got[i - 1]! === every);
          expect({ onGrid, evenlySpaced }).toEqual({ onGrid: true, evenlySpaced: true });
          // Nothing missing at either end.
          const first = got[0] ?? nextSlotAfter(spec({ every, phase }), a)!;
          expect(first - every).toBeLessThanOrEqual(a);
          if (got.length > 0 && got.length < 5_000) expect(got[got.length - 1]! + every).toBeGreaterThan(b);
          if (got.length === 0) expect(first).toBeGreaterThan(b);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('one-time schedules: one slot, then nothing', () => {
  it('a local date-time in the zone; nextSlotAfter is undefined after it and lastSlotOf names it', () => {
    const s = { ...spec({ at: '2026-12-24T18:00:00' }), timezone: 'America/New_York' };
    expect(isoOf(slotsBetween(s, Z('2026-01-01T00:00:00Z'), Z('2027-01-01T00:00:00Z')))).toEqual(['2026-12-24T23:00:00.000Z']);
    expect(nextSlotAfter(s, Z('2026-12-24T22:59:59Z'))).toBe(Z('2026-12-24T23:00:00Z'));
    expect(nextSlotAfter(s, Z('2026-12-24T23:00:00Z'))).toBeUndefined();
    expect(lastSlotOf(s)).toBe(Z('2026-12-24T23:00:00Z'));
  });

  it('an instant with an offset or Z ignores the zone', () => {
    for (const timezone of ['UTC', 'Asia/Kolkata']) {
      expect(slotsBetween({ ...spec({ at: '2026-12-24T18:00:00+01:00' }), timezone }, 0, Z('2030-01-01T00:00:00Z'))).toEqual([
        Z('2026-12-24T17:00:00Z'),
      ]);
    }
    expect(lastSlotOf(spec({ at: '2026-12-24T18:00:00Z' }))).toBe(Z('2026-12-24T18:00:00Z'));
  });

  it('DST gap: 02:30 on 2026-03-08 in New York fires at 07:30Z with shift (marked), never with skip', () => {
    const at = { at: '2026-03-08T02:30:00' };
    const shift = { ...spec(at, {}, 'shift'), timezone: 'America/New_York' };
    expect(isoOf(slotsBetween(shift, 0, Z('2030-01-01T00:00:00Z')))).toEqual(['2026-03-08T07:30:00.000Z']);
    expect(dstMark(shift, Z('2026-03-08T07:30:00Z'))).toBe('gap-shifted');
    const skip = { ...spec(at, {}, 'skip'), timezone: 'America/New_York' };
    expect(slotsBetween(skip, 0, Z('2030-01-01T00:00:00Z'))).toEqual([]);
    expect(lastSlotOf(skip)).toBe(-Infinity);
  });

  it('DST overlap: 01:30 on 2026-11-01 in New York fires once at 05:30Z, or twice (05:30Z, 06:30Z)', () => {
    const at = { at: '2026-11-01T01:30:00' };
    const once = { ...spec(at, {}, 'shift', 'once'), timezone: 'America/New_York' };
    const twice = { ...spec(at, {}, 'shift', 'twice'), timezone: 'America/New_York' };
    expect(isoOf(slotsBetween(once, 0, Z('2030-01-01T00:00:00Z')))).toEqual(['2026-11-01T05:30:00.000Z']);
    expect(isoOf(slotsBetween(twice, 0, Z('2030-01-01T00:00:00Z')))).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-01T06:30:00.000Z']);
    expect(dstMark(twice, Z('2026-11-01T06:30:00Z'))).toBe('overlap-second');
    expect(lastSlotOf(twice)).toBe(Z('2026-11-01T06:30:00Z'));
  });
});

describe('active window [startAt, endAt)', () => {
  it('no slot before startAt or at/after endAt; a slot exactly at startAt is in, one at endAt is out', () => {
    const s = spec('0 * * * *', { startAt: '2026-01-01T03:00:00Z', endAt: '2026-01-01T06:00:00Z' });
    expect(isoOf(slotsBetween(s, Z('2026-01-01T00:00:00Z'), Z('2026-01-02T00:00:00Z')))).toEqual([
      '2026-01-01T03:00:00.000Z',
      '2026-01-01T04:00:00.000Z',
      '2026-01-01T05:00:00.000Z',
    ]);
    expect(nextSlotAfter(s, Z('2026-01-01T00:00:00Z'))).toBe(Z('2026-01-01T03:00:00Z'));
    expect(nextSlotAfter(s, Z('2026-01-01T05:00:00Z'))).toBeUndefined();
    expect(lastSlotOf(s)).toBe(Z('2026-01-01T05:00:00Z'));
    expect(lastSlotOf(spec('0 * * * *', { startAt: '2026-01-01T03:00:00Z' }))).toBeUndefined();
  });

  it('local bounds are read in the zone; a bound in a DST gap is the transition instant', () => {
    const s = { ...spec('*/30 * * * *', { startAt: '2026-03-08T02:15:00', endAt: '2026-03-08T04:00:00' }), timezone: 'America/New_York' };
    // 02:15 does not exist: the window opens at 07:00Z (03:00 EDT); 02:30 shifted to 07:30Z coincides with 03:30.
    expect(isoOf(slotsBetween(s, Z('2026-03-08T00:00:00Z'), Z('2026-03-09T00:00:00Z')))).toEqual([
      '2026-03-08T07:00:00.000Z',
      '2026-03-08T07:30:00.000Z',
    ]);
  });

  it('nextSlotAfter past endAt answers without walking the zone (no Intl work at all)', () => {
    const s = { ...spec('* * * * * *', { endAt: '2026-01-01T00:00:00Z' }), timezone: 'America/New_York' };
    clearSlotCaches();
    const formatToParts = vi.spyOn(Intl.DateTimeFormat.prototype, 'formatToParts');
    expect(nextSlotAfter(s, Z('2027-06-01T00:00:00Z'))).toBeUndefined();
    expect(slotsBetween(s, Z('2027-06-01T00:00:00Z'), Z('2031-06-01T00:00:00Z'))).toEqual([]);
    expect(formatToParts).not.toHaveBeenCalled();
  });

  it('lastSlotOf of a dense job finds the last second before endAt, and -Infinity when the window holds none', () => {
    expect(lastSlotOf(spec('* * * * * *', { endAt: '2026-01-01T00:00:00.500Z' }))).toBe(Z('2026-01-01T00:00:00Z'));
    expect(lastSlotOf(spec('0 0 1 1 *', { startAt: '2026-01-02T00:00:00Z', endAt: '2026-12-31T00:00:00Z' }))).toBe(-Infinity);
    expect(lastSlotOf(spec({ every: 90 * SEC, phase: 0 }, { endAt: '2026-01-01T00:00:00Z' }))).toBe(Z('2025-12-31T23:58:30Z'));
  });
});

describe('excluded dates', () => {
  it('a daily job skips the excluded local dates (read in the job zone, not UTC)', () => {
    const s = { ...spec('30 23 * * *', { exclude: ['2026-12-24', '2026-12-25'] }), timezone: 'America/New_York' };
    // 23:30 New York is 04:30Z the next day: by UTC dates the wrong slots would go.
    expect(isoOf(slotsBetween(s, Z('2026-12-23T00:00:00Z'), Z('2026-12-28T00:00:00Z')))).toEqual([
      '2026-12-23T04:30:00.000Z', // Dec 22 local
      '2026-12-24T04:30:00.000Z', // Dec 23 local
      '2026-12-27T04:30:00.000Z', // Dec 26 local
    ]);
  });

  it('an interval job skips whole local days; the next slot jumps over a run of excluded days', () => {
    const s = spec({ every: 90 * SEC, phase: 0 }, { exclude: ['2026-01-02', '2026-01-03'] });
    expect(nextSlotAfter(s, Z('2026-01-01T23:59:00Z'))).toBe(Z('2026-01-04T00:00:00Z'));
    const got = slotsBetween(s, Z('2026-01-01T00:00:00Z'), Z('2026-01-05T00:00:00Z'));
    expect(got).toHaveLength(2 * 960);
  });

  it('a one-time job on an excluded date never fires (lastSlotOf -Infinity)', () => {
    const s = spec({ at: '2026-12-25T09:00:00' }, { exclude: ['2026-12-25'] });
    expect(slotsBetween(s, 0, Z('2030-01-01T00:00:00Z'))).toEqual([]);
    expect(lastSlotOf(s)).toBe(-Infinity);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties over every kind, window and exclusions
// ---------------------------------------------------------------------------------------------

const zones = ['UTC', 'America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'America/Santiago', 'Asia/Kolkata'] as const;
const base = Z('2026-03-01T00:00:00Z');
const dayIso = (k: number) => new Date(base + k * DAY).toISOString().slice(0, 10);

const scheduleArb: fc.Arbitrary<Schedule> = fc.oneof(
  fc.constantFrom('*/30 * * * *', '0 * * * *', '30 2 * * *', '*/7 * * * *', '45 */10 * * * *', '0 16 */2 * sat', '15 1 * * 0,7'),
  // At least 30 s apart, so a window holds a few thousand slots at most (the oracle asks Intl about each).
  fc.tuple(fc.integer({ min: 30, max: 7200 }), fc.nat()).map(([e, p]) => ({ every: e * SEC, phase: (p % e) * SEC })),
  fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([d, h, m]) => ({
    at: `${dayIso(d)}T${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:00`,
  })),
);

const specArb: fc.Arbitrary<SlotSpec> = fc
  .record({
    schedule: scheduleArb,
    timezone: fc.constantFrom(...zones),
    gap: fc.constantFrom<DstGapPolicy>('shift', 'skip'),
    overlap: fc.constantFrom<DstOverlapPolicy>('once', 'twice'),
    startAt: fc.option(
      fc.integer({ min: 0, max: 300 * 24 }).map((h) => new Date(base + h * HOUR).toISOString().replace('.000', '')),
      { nil: undefined },
    ),
    span: fc.option(fc.integer({ min: 1, max: 300 * 24 }), { nil: undefined }),
    exclude: fc.option(
      fc.uniqueArray(fc.integer({ min: 0, max: 300 }), { maxLength: 40 }).map((ks) => ks.map(dayIso)),
      { nil: undefined },
    ),
  })
  .map(({ schedule, timezone, gap, overlap, startAt, span, exclude }) => ({
    schedule,
    timezone,
    dst: { gap, overlap },
    ...(startAt === undefined ? {} : { startAt }),
    ...(span === undefined ? {} : { endAt: new Date((startAt === undefined ? base : Date.parse(startAt)) + span * HOUR).toISOString() }),
    ...(exclude === undefined ? {} : { exclude }),
  }));

const windowArb = fc
  .tuple(
    fc.integer({ min: -5 * 24, max: 300 * 24 }),
    fc.integer({ min: 0, max: 30 * 3600 }),
    fc.integer({ min: 0, max: 30 * 3600 }),
    fc.integer({ min: 0, max: 999 }),
  )
  .map(([h, l1, l2, ms]) => {
    const a = base + h * HOUR + ms;
    return [a, a + l1 * SEC, a + (l1 + l2) * SEC] as const;
  });

/** The spec without window and exclusions, then filtered by them independently (Intl dates). */
function oracle(s: SlotSpec, a: number, c: number): number[] {
  const { startAt, endAt, exclude, ...bare } = s;
  const from = startAt === undefined ? -Infinity : Date.parse(startAt);
  const until = endAt === undefined ? Infinity : Date.parse(endAt);
  const excluded = new Set(exclude ?? []);
  return slotsBetween(bare, a, c).filter((t) => t >= from && t < until && !excluded.has(localDate(s.timezone, t)));
}

describe('properties: every kind, with window and exclusions', () => {
  it('slotsBetween = the bare schedule filtered by [startAt, endAt) and the excluded local dates', () => {
    fc.assert(
      fc.property(specArb, windowArb, (s, [a, , c]) => {
        expect(isoOf(slotsBetween(s, a, c))).toEqual(isoOf(oracle(s, a, c)));
      }),
      { numRuns: 250 },
    );
  });

  it('(a,c] == (a,b] ++ (b,c]; nextSlotAfter is the first slot; a limit keeps the earliest', () => {
    fc.assert(
      fc.property(specArb, windowArb, (s, [a, b, c]) => {
        const all = slotsBetween(s, a, c);
        expect([...slotsBetween(s, a, b), ...slotsBetween(s, b, c)]).toEqual(all);
        const next = nextSlotAfter(s, a);
        if (all.length > 0) expect(next).toBe(all[0]);
        else if (next !== undefined) expect(next).toBeGreaterThan(c);
        expect(slotsBetween(s, a, c, 3)).toEqual(all.slice(0, 3));
        for (const t of all) expect(excludedOrOutside(s, t)).toBe(false);
      }),
      { numRuns: 250 },
    );
  });

  it('lastSlotOf: undefined exactly when unbounded; otherwise no slot after it and (if finite) it is a slot', () => {
    fc.assert(
      fc.property(specArb, (s) => {
        const last = lastSlotOf(s);
        const bounded = typeof s.schedule === 'object' && 'at' in s.schedule ? true : s.endAt !== undefined;
        if (!bounded) {
          expect(last).toBeUndefined();
          return;
        }
        expect(last).toBeDefined();
        const end = s.endAt === undefined ? Z('2028-01-01T00:00:00Z') : Date.parse(s.endAt);
        if (last === -Infinity) {
          const from = s.startAt === undefined ? base - 30 * DAY : Date.parse(s.startAt) - 1;
          expect(slotsBetween(s, from, end, 1)).toEqual([]);
          return;
        }
        expect(nextSlotAfter(s, last!)).toBeUndefined();
        expect(slotsBetween(s, last! - 1, last!)).toEqual([last]);
      }),
      { numRuns: 200 },
    );
  });
});

function excludedOrOutside(s: SlotSpec, t: number): boolean {
  if (s.startAt !== undefined && t < Date.parse(s.startAt)) return true;
  if (s.endAt !== undefined && t >= Date.parse(s.endAt)) return true;
  return (s.exclude ?? []).includes(localDate(s.timezone, t));
}
