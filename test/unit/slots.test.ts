import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { CronExpressionParser } from 'cron-parser';
import {
  DEFAULT_DST,
  clearSlotCaches,
  dstMark,
  nextSlotAfter,
  scheduleError,
  slotsBetween,
  timezoneError,
  type DstGapPolicy,
  type DstOverlapPolicy,
  type SlotSpec,
} from '../../shared/schedule/slots.js';

const Z = (iso: string): number => Date.parse(iso);
const isoOf = (xs: readonly number[]): string[] => xs.map((x) => new Date(x).toISOString());
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

function spec(schedule: string, timezone: string, gap: DstGapPolicy = 'shift', overlap: DstOverlapPolicy = 'once'): SlotSpec {
  return { schedule, timezone, dst: { gap, overlap } };
}

/** UTC offset in minutes at an instant, straight from Intl (independent of the module). */
function offsetMinutes(zone: string, t: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(t);
  const get = (type: string): number => Number(parts.find((p) => p.type === type)?.value);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return (wall - Math.floor(t / 1000) * 1000) / MIN;
}

/** Naive enumeration with cron-parser in UTC: every slot in (after, until], at most `max`. */
function cronParserUtc(expr: string, after: number, until: number, max: number): number[] {
  const it = CronExpressionParser.parse(expr, { tz: 'UTC', currentDate: after, endDate: until });
  const out: number[] = [];
  while (out.length < max) {
    let next: number;
    try {
      next = it.next().getTime();
    } catch {
      break;
    }
    if (next > until) break;
    out.push(next);
  }
  return out;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('UTC windows are half-open (after, until]', () => {
  it('every minute: a slot equal to afterMs is excluded, one equal to untilMs is included', () => {
    const s = spec('* * * * *', 'UTC');
    const got = slotsBetween(s, Z('2026-01-01T00:00:00Z'), Z('2026-01-01T00:03:00Z'));
    expect(isoOf(got)).toEqual(['2026-01-01T00:01:00.000Z', '2026-01-01T00:02:00.000Z', '2026-01-01T00:03:00.000Z']);
  });

  it('every minute: sub-second bounds neither invent nor lose slots', () => {
    const s = spec('* * * * *', 'UTC');
    expect(isoOf(slotsBetween(s, Z('2026-01-01T00:00:59.999Z'), Z('2026-01-01T00:01:59.999Z')))).toEqual(['2026-01-01T00:01:00.000Z']);
    expect(slotsBetween(s, Z('2026-01-01T00:01:00.000Z'), Z('2026-01-01T00:01:59.999Z'))).toEqual([]);
  });

  it('every 10 seconds (6-field, seconds first): boundaries and count', () => {
    const s = spec('*/10 * * * * *', 'UTC');
    const got = slotsBetween(s, Z('2026-01-01T00:00:00Z'), Z('2026-01-01T00:01:00Z'));
    expect(isoOf(got)).toEqual([
      '2026-01-01T00:00:10.000Z',
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:30.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:00:50.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
    expect(slotsBetween(s, Z('2026-01-01T00:00:00Z'), Z('2026-01-01T01:00:00Z'))).toHaveLength(360);
  });

  it('a 5-field expression means second 0 (never fires mid-minute)', () => {
    const got = slotsBetween(spec('*/15 * * * *', 'UTC'), Z('2026-01-01T00:00:00Z'), Z('2026-01-01T01:00:00Z'));
    expect(got.every((t) => t % MIN === 0)).toBe(true);
    expect(got).toHaveLength(4);
  });

  it('an empty or inverted window yields nothing, and limit caps the result at the earliest slots', () => {
    const s = spec('* * * * *', 'UTC');
    const a = Z('2026-01-01T00:00:00Z');
    expect(slotsBetween(s, a, a)).toEqual([]);
    expect(slotsBetween(s, a, a - HOUR)).toEqual([]);
    expect(isoOf(slotsBetween(s, a, a + DAY, 2))).toEqual(['2026-01-01T00:01:00.000Z', '2026-01-01T00:02:00.000Z']);
    expect(slotsBetween(s, a, a + DAY, 0)).toEqual([]);
  });

  it('nextSlotAfter is strictly after, and undefined for nothing within the horizon', () => {
    const s = spec('0 12 * * *', 'UTC');
    expect(nextSlotAfter(s, Z('2026-01-01T12:00:00Z'))).toBe(Z('2026-01-02T12:00:00Z'));
    expect(nextSlotAfter(s, Z('2026-01-01T11:59:59.999Z'))).toBe(Z('2026-01-01T12:00:00Z'));
    // Feb 29 falling on a Monday (cron OR rule: day 29 OR Monday would be every Monday, so use a
    // month-only restriction plus day 29): next leap day after 2026 is 2028-02-29.
    expect(nextSlotAfter(spec('0 0 29 2 *', 'UTC'), Z('2026-03-01T00:00:00Z'))).toBe(Z('2028-02-29T00:00:00Z'));
  });

  it('invalid spec inputs throw instead of silently producing no slots', () => {
    expect(() => slotsBetween(spec('61 * * * *', 'UTC'), 0, MIN)).toThrow(/minute/);
    expect(() => slotsBetween(spec('* * * * *', 'Mars/Olympus'), 0, MIN)).toThrow(/Mars\/Olympus/);
    expect(() => nextSlotAfter(spec('* * * * *', 'UTC'), Number.NaN)).toThrow();
  });

  it('a huge window without a limit is refused rather than silently truncated', () => {
    expect(() => slotsBetween(spec('* * * * * *', 'UTC'), 0, 30 * DAY)).toThrow(/limit/);
    expect(slotsBetween(spec('* * * * * *', 'UTC'), 0, 30 * DAY, 5)).toHaveLength(5);
  });
});

describe('the DST fixtures below use real transitions (verified with Intl)', () => {
  it.each([
    ['America/New_York', '2026-03-08T07:00:00Z', -300, -240],
    ['America/New_York', '2026-11-01T06:00:00Z', -240, -300],
    ['Europe/London', '2026-03-29T01:00:00Z', 0, 60],
    ['Europe/London', '2026-10-25T01:00:00Z', 60, 0],
    ['Australia/Lord_Howe', '2026-04-04T15:00:00Z', 660, 630],
    ['Australia/Lord_Howe', '2026-10-03T15:30:00Z', 630, 660],
    ['America/Santiago', '2026-04-05T03:00:00Z', -180, -240],
    ['America/Santiago', '2026-09-06T04:00:00Z', -240, -180],
  ] as const)('%s changes offset at %s (%d -> %d min)', (zone, at, before, after) => {
    expect(offsetMinutes(zone, Z(at) - 1000)).toBe(before);
    expect(offsetMinutes(zone, Z(at))).toBe(after);
  });
});

describe('New York spring forward 2026-03-08 (02:00 EST -> 03:00 EDT): the gap', () => {
  const win = [Z('2026-03-07T12:00:00Z'), Z('2026-03-09T12:00:00Z')] as const;

  it('gap=shift fires a nonexistent 02:30 at the pre-transition offset: 07:30Z (03:30 EDT)', () => {
    expect(isoOf(slotsBetween(spec('30 2 * * *', 'America/New_York', 'shift'), ...win))).toEqual([
      '2026-03-08T07:30:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
  });

  it('gap=skip produces no slot at all that day', () => {
    expect(isoOf(slotsBetween(spec('30 2 * * *', 'America/New_York', 'skip'), ...win))).toEqual(['2026-03-09T06:30:00.000Z']);
  });

  it('*/30 with shift: 02:00/02:30 land on the 03:00/03:30 EDT instants and are deduped with them', () => {
    const got = slotsBetween(spec('*/30 * * * *', 'America/New_York', 'shift'), Z('2026-03-08T05:00:00Z'), Z('2026-03-08T09:00:00Z'));
    expect(isoOf(got)).toEqual([
      '2026-03-08T05:30:00.000Z', // 00:30 EST
      '2026-03-08T06:00:00.000Z', // 01:00 EST
      '2026-03-08T06:30:00.000Z', // 01:30 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT (= shifted 02:00)
      '2026-03-08T07:30:00.000Z', // 03:30 EDT (= shifted 02:30)
      '2026-03-08T08:00:00.000Z', // 04:00 EDT
      '2026-03-08T08:30:00.000Z',
      '2026-03-08T09:00:00.000Z',
    ]);
    expect(dstMark(spec('*/30 * * * *', 'America/New_York', 'shift'), Z('2026-03-08T07:00:00Z'))).toBe('gap-shifted');
    expect(dstMark(spec('*/30 * * * *', 'America/New_York', 'shift'), Z('2026-03-08T08:00:00Z'))).toBeUndefined();
  });

  it('*/10 seconds (6-field) never doubles a slot across the gap, with either policy', () => {
    for (const gap of ['shift', 'skip'] as const) {
      const got = slotsBetween(spec('*/10 * * * * *', 'America/New_York', gap), Z('2026-03-08T06:00:00Z'), Z('2026-03-08T09:00:00Z'));
      expect(got).toHaveLength(3 * 360);
      expect(new Set(got).size).toBe(got.length);
    }
  });

  it('a shifted slot that falls on no regular slot is kept (02:45 daily -> 07:45Z)', () => {
    const s = spec('45 2 * * *', 'America/New_York', 'shift');
    expect(nextSlotAfter(s, Z('2026-03-07T12:00:00Z'))).toBe(Z('2026-03-08T07:45:00Z'));
    expect(dstMark(s, Z('2026-03-08T07:45:00Z'))).toBe('gap-shifted');
    expect(dstMark(s, Z('2026-03-09T06:45:00Z'))).toBeUndefined();
  });
});

describe('New York fall back 2026-11-01 (02:00 EDT -> 01:00 EST): the overlap', () => {
  const win = [Z('2026-10-31T12:00:00Z'), Z('2026-11-02T12:00:00Z')] as const;

  it('overlap=once fires a repeated 01:30 only at its first instant (05:30Z, EDT)', () => {
    expect(isoOf(slotsBetween(spec('30 1 * * *', 'America/New_York', 'shift', 'once'), ...win))).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('overlap=twice fires it at both instants (05:30Z EDT and 06:30Z EST)', () => {
    const s = spec('30 1 * * *', 'America/New_York', 'shift', 'twice');
    expect(isoOf(slotsBetween(s, ...win))).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-01T06:30:00.000Z', '2026-11-02T06:30:00.000Z']);
    expect(dstMark(s, Z('2026-11-01T05:30:00Z'))).toBe('overlap-first');
    expect(dstMark(s, Z('2026-11-01T06:30:00Z'))).toBe('overlap-second');
    expect(dstMark(s, Z('2026-11-02T06:30:00Z'))).toBeUndefined();
  });

  it('*/30 with once drops the repeated 01:00 and 01:30; with twice keeps them', () => {
    const w = [Z('2026-11-01T04:00:00Z'), Z('2026-11-01T08:00:00Z')] as const;
    expect(isoOf(slotsBetween(spec('*/30 * * * *', 'America/New_York', 'shift', 'once'), ...w))).toEqual([
      '2026-11-01T04:30:00.000Z', // 00:30 EDT
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      // 06:00Z = 01:00 EST and 06:30Z = 01:30 EST are the repeats: dropped
      '2026-11-01T07:00:00.000Z', // 02:00 EST
      '2026-11-01T07:30:00.000Z',
      '2026-11-01T08:00:00.000Z',
    ]);
    const twice = slotsBetween(spec('*/30 * * * *', 'America/New_York', 'shift', 'twice'), ...w);
    expect(twice).toHaveLength(8);
    expect(isoOf(twice)).toContain('2026-11-01T06:00:00.000Z');
    expect(isoOf(twice)).toContain('2026-11-01T06:30:00.000Z');
  });

  it('*/10 seconds (6-field): once fires each wall second once, twice fires every 10 s of real time', () => {
    const w = [Z('2026-11-01T04:00:00Z'), Z('2026-11-01T08:00:00Z')] as const; // 00:00 EDT .. 03:00 EST
    expect(slotsBetween(spec('*/10 * * * * *', 'America/New_York', 'shift', 'once'), ...w)).toHaveLength(3 * 360);
    expect(slotsBetween(spec('*/10 * * * * *', 'America/New_York', 'shift', 'twice'), ...w)).toHaveLength(4 * 360);
  });
});

describe('Europe/London 01:30 daily', () => {
  it('spring forward 2026-03-29 (01:00 GMT -> 02:00 BST): shift fires at 01:30Z, skip drops it', () => {
    const w = [Z('2026-03-28T12:00:00Z'), Z('2026-03-30T12:00:00Z')] as const;
    expect(isoOf(slotsBetween(spec('30 1 * * *', 'Europe/London', 'shift'), ...w))).toEqual([
      '2026-03-29T01:30:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
    expect(isoOf(slotsBetween(spec('30 1 * * *', 'Europe/London', 'skip'), ...w))).toEqual(['2026-03-30T00:30:00.000Z']);
  });

  it('fall back 2026-10-25 (02:00 BST -> 01:00 GMT): once at 00:30Z, twice at 00:30Z and 01:30Z', () => {
    const w = [Z('2026-10-24T12:00:00Z'), Z('2026-10-25T12:00:00Z')] as const;
    expect(isoOf(slotsBetween(spec('30 1 * * *', 'Europe/London', 'shift', 'once'), ...w))).toEqual(['2026-10-25T00:30:00.000Z']);
    expect(isoOf(slotsBetween(spec('30 1 * * *', 'Europe/London', 'shift', 'twice'), ...w))).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:30:00.000Z',
    ]);
  });
});

describe('Australia/Lord_Howe: 30-minute DST shifts', () => {
  it('spring forward 2026-10-04 02:00 -> 02:30: 02:15 shift fires at 02:15 +10:30 (= 02:45 +11:00)', () => {
    const w = [Z('2026-10-03T00:00:00Z'), Z('2026-10-05T00:00:00Z')] as const;
    // 02:15 at +10:30 = 15:45Z on 10-03; 02:45 at +11:00 is the same instant.
    expect(isoOf(slotsBetween(spec('15 2 * * *', 'Australia/Lord_Howe', 'shift'), ...w))).toEqual([
      '2026-10-03T15:45:00.000Z',
      '2026-10-04T15:15:00.000Z',
    ]);
    expect(offsetMinutes('Australia/Lord_Howe', Z('2026-10-03T15:45:00Z'))).toBe(660);
    expect(isoOf(slotsBetween(spec('15 2 * * *', 'Australia/Lord_Howe', 'skip'), ...w))).toEqual(['2026-10-04T15:15:00.000Z']);
  });

  it('fall back 2026-04-05 02:00 -> 01:30: 01:45 occurs twice (14:45Z at +11, 15:15Z at +10:30)', () => {
    const w = [Z('2026-04-04T00:00:00Z'), Z('2026-04-05T00:00:00Z')] as const;
    expect(isoOf(slotsBetween(spec('45 1 * * *', 'Australia/Lord_Howe', 'shift', 'once'), ...w))).toEqual(['2026-04-04T14:45:00.000Z']);
    expect(isoOf(slotsBetween(spec('45 1 * * *', 'Australia/Lord_Howe', 'shift', 'twice'), ...w))).toEqual([
      '2026-04-04T14:45:00.000Z',
      '2026-04-04T15:15:00.000Z',
    ]);
    // 01:15 is before the repeated half hour: exactly once under either policy.
    expect(slotsBetween(spec('15 1 * * *', 'Australia/Lord_Howe', 'shift', 'twice'), ...w)).toHaveLength(1);
  });
});

describe('America/Santiago: transitions at local midnight', () => {
  it('spring forward 2026-09-06: a 0 0 * * * job whose 00:00 does not exist', () => {
    const w = [Z('2026-09-05T00:00:00Z'), Z('2026-09-08T00:00:00Z')] as const;
    // Sept 5 00:00 -04 = 04:00Z; Sept 6 00:00 missing -> shift: 04:00Z (= 01:00 -03); Sept 7 00:00 -03 = 03:00Z.
    expect(isoOf(slotsBetween(spec('0 0 * * *', 'America/Santiago', 'shift'), ...w))).toEqual([
      '2026-09-05T04:00:00.000Z',
      '2026-09-06T04:00:00.000Z',
      '2026-09-07T03:00:00.000Z',
    ]);
    expect(isoOf(slotsBetween(spec('0 0 * * *', 'America/Santiago', 'skip'), ...w))).toEqual([
      '2026-09-05T04:00:00.000Z',
      '2026-09-07T03:00:00.000Z',
    ]);
    expect(dstMark(spec('0 0 * * *', 'America/Santiago', 'shift'), Z('2026-09-06T04:00:00Z'))).toBe('gap-shifted');
  });

  it('a day-of-month job on the missing midnight still fires once with shift (0 0 6 9 *)', () => {
    const s = spec('0 0 6 9 *', 'America/Santiago', 'shift');
    expect(nextSlotAfter(s, Z('2026-01-01T00:00:00Z'))).toBe(Z('2026-09-06T04:00:00Z'));
    const skipped = nextSlotAfter(spec('0 0 6 9 *', 'America/Santiago', 'skip'), Z('2026-01-01T00:00:00Z'));
    expect(skipped).toBeDefined();
    expect(skipped).toBeGreaterThan(Z('2026-12-31T00:00:00Z'));
  });

  it('fall back 2026-04-05 (00:00 -03 -> 23:00 -04): 23:30 on Apr 4 repeats, 00:00 on Apr 5 does not', () => {
    const w = [Z('2026-04-04T12:00:00Z'), Z('2026-04-05T12:00:00Z')] as const;
    expect(isoOf(slotsBetween(spec('30 23 * * *', 'America/Santiago', 'shift', 'once'), ...w))).toEqual(['2026-04-05T02:30:00.000Z']);
    expect(isoOf(slotsBetween(spec('30 23 * * *', 'America/Santiago', 'shift', 'twice'), ...w))).toEqual([
      '2026-04-05T02:30:00.000Z',
      '2026-04-05T03:30:00.000Z',
    ]);
    expect(isoOf(slotsBetween(spec('0 0 * * *', 'America/Santiago', 'shift', 'twice'), ...w))).toEqual(['2026-04-05T04:00:00.000Z']);
  });
});

describe('day-of-month / day-of-week semantics (cron-parser where the dialects agree)', () => {
  it.each([
    '0 0 1 * 1', // both restricted: day 1 OR Monday
    '0 0 L * *', // last day of month
    '0 0 1,L * *',
    '0 0 * * 5L', // last Friday
    '0 0 * * 1#2', // second Monday
    '0 0 13 * 5', // the 13th or a Friday
    '0 0 * * 7', // 7 = Sunday
    '0 0 * 2 *',
    '0 12 * * mon-fri',
    '@weekly',
  ])('%s over 2 years in UTC', (expr) => {
    const a = Z('2026-01-01T00:00:00Z');
    const b = Z('2028-01-01T00:00:00Z');
    expect(slotsBetween(spec(expr, 'UTC'), a, b)).toEqual(cronParserUtc(expr, a, b, 10_000));
  });
});

describe("Vixie's rule: a day field starting with `*` ANDs the two day fields, otherwise they OR", () => {
  const a = Z('2026-06-01T00:00:00Z');
  const b = Z('2026-08-01T00:00:00Z');
  const days = (expr: string) => slotsBetween(spec(expr, 'UTC'), a, b).map((t) => new Date(t).toISOString().slice(0, 10));

  it('0 16 */2 * sat: odd days that are Saturdays (Vixie and cronie; croniter and robfig would OR)', () => {
    expect(days('0 16 */2 * sat')).toEqual(['2026-06-13', '2026-06-27', '2026-07-11', '2026-07-25']);
  });

  it('0 16 1,15 * sat: neither starts with `*`, so the 1st, the 15th and every Saturday', () => {
    expect(days('0 16 1,15 * sat')).toEqual([
      '2026-06-01',
      '2026-06-06',
      '2026-06-13',
      '2026-06-15',
      '2026-06-20',
      '2026-06-27',
      '2026-07-01',
      '2026-07-04',
      '2026-07-11',
      '2026-07-15',
      '2026-07-18',
      '2026-07-25',
    ]);
  });

  it('a step in day-of-week ANDs too (0 12 1-7 * */3: the first week, Sun/Wed/Sat only)', () => {
    expect(days('0 12 1-7 * */3')).toEqual(['2026-06-03', '2026-06-06', '2026-06-07', '2026-07-01', '2026-07-04', '2026-07-05']);
  });

  it('`?` is a star: 0 12 ? * 1 is every Monday, 0 12 1 ? * the 1st only', () => {
    expect(days('0 12 ? * 1')).toEqual(days('0 12 * * 1'));
    expect(days('0 12 ? * 1')).toHaveLength(9);
    expect(days('0 12 1 ? *')).toEqual(['2026-06-01', '2026-07-01']);
  });
});

describe('cron syntax other crons accept and cron-parser alone refuses', () => {
  const a = Z('2026-01-01T00:00:00Z');
  const b = Z('2026-03-01T00:00:00Z');
  it.each([
    ['0 9 * * 0,7', '0 9 * * 0'], // Sunday twice
    ['0 9 * * sun,7', '0 9 * * 0'],
    ['1 1 0-6,1,10 * * *', '1 1 0-6,10 * * *'], // overlapping list (6 fields)
    ['0 9 1-5,3 * *', '0 9 1-5 * *'],
    ['0 9 L,L * *', '0 9 L * *'],
    ['0 9 * * mon-sun', '0 9 * * *'],
    ['0 9 * * MON-SUN', '0 9 * * *'],
    ['0 9 * * sat-sun', '0 9 * * 0,6'],
    ['0 9 * * 5-0', '0 9 * * 0,5,6'],
    ['0 9 * * mon-sun/2', '0 9 * * 1,3,5,0'],
  ])('%s fires exactly like %s', (expr, same) => {
    expect(scheduleError(expr)).toBeUndefined();
    expect(slotsBetween(spec(expr, 'UTC'), a, b)).toEqual(slotsBetween(spec(same, 'UTC'), a, b));
  });

  it('a list field is the union of its elements (generated lists with repeats and overlaps)', () => {
    const element = fc.oneof(
      fc.integer({ min: 0, max: 59 }).map(String),
      fc.tuple(fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 59 })).map(([x, y]) => `${Math.min(x, y)}-${Math.max(x, y)}`),
      fc.integer({ min: 1, max: 30 }).map((n) => `*/${n}`),
    );
    fc.assert(
      fc.property(fc.array(element, { minLength: 1, maxLength: 4 }), fc.constantFrom(0, 1), (elements, position) => {
        // In the minute field (position 0) or the second field of a 6-field expression (position 1).
        const expr = (m: string) => (position === 0 ? `${m} 3 * * *` : `${m} 0 3 * * *`);
        const one = slotsBetween(spec(expr(elements.join(',')), 'UTC'), a, a + 3 * DAY);
        const union = [...new Set(elements.flatMap((e) => slotsBetween(spec(expr(e), 'UTC'), a, a + 3 * DAY)))].sort((x, y) => x - y);
        expect(one).toEqual(union);
      }),
      { numRuns: 150 },
    );
  });

  it('`#` stays alone in its field, and W is refused (named in the message)', () => {
    expect(scheduleError('0 0 * * 1#2,3')).toMatch(/day-of-week.*#/);
    expect(scheduleError('0 0 15W * *')).toMatch(/day-of-month/);
    expect(scheduleError('0 0 1,,2 * *')).toMatch(/empty list element/);
  });
});

describe('dstMark', () => {
  it('is undefined for instants that are not slots, and for ordinary slots', () => {
    const s = spec('30 1 * * *', 'America/New_York', 'shift', 'twice');
    expect(dstMark(s, Z('2026-11-01T05:31:00Z'))).toBeUndefined();
    expect(dstMark(s, Z('2026-06-01T05:30:00Z'))).toBeUndefined();
    expect(dstMark(spec('30 2 * * *', 'America/New_York', 'skip'), Z('2026-03-08T07:30:00Z'))).toBeUndefined();
  });

  it('marks the surviving first instance under overlap=once, and never a dropped second one', () => {
    const s = spec('30 1 * * *', 'America/New_York', 'shift', 'once');
    expect(dstMark(s, Z('2026-11-01T05:30:00Z'))).toBe('overlap-first');
    expect(dstMark(s, Z('2026-11-01T06:30:00Z'))).toBeUndefined();
  });
});

describe('determinism: slots never depend on the current time', () => {
  it('same inputs give the same outputs whatever the system clock says (caches cleared)', () => {
    const specs = [
      spec('*/30 * * * *', 'America/New_York', 'shift', 'once'),
      spec('15 2 * * *', 'Australia/Lord_Howe', 'shift', 'twice'),
      spec('0 0 * * *', 'America/Santiago', 'skip', 'twice'),
      spec('*/10 * * * * *', 'Europe/London', 'shift', 'twice'),
    ];
    const compute = (): unknown[] => {
      clearSlotCaches();
      return specs.map((s) => [
        slotsBetween(s, Z('2026-03-01T00:00:00Z'), Z('2026-03-01T06:00:00Z')),
        slotsBetween(s, Z('2026-10-24T00:00:00Z'), Z('2026-10-26T00:00:00Z'), 500),
        nextSlotAfter(s, Z('2026-11-01T05:00:00Z')),
        dstMark(s, Z('2026-11-01T05:30:00Z')),
      ]);
    };
    vi.useFakeTimers();
    vi.setSystemTime(new Date('2001-02-03T04:05:06Z'));
    const first = compute();
    vi.setSystemTime(new Date('2038-12-31T23:59:59Z'));
    const second = compute();
    vi.useRealTimers();
    const third = compute();
    expect(second).toEqual(first);
    expect(third).toEqual(first);
  });
});

describe('validation', () => {
  it.each([
    ['61 * * * *', /minute/],
    ['not a cron', /5 fields/],
    ['* * *', /got 3/],
    ['', /empty/],
    ['* * * * * * *', /got 7/],
    ['H * * * *', /H/],
    ['0 0 31 4 *', /never occurs/],
    ['0 0 * * L', /day-of-week/],
    ['@never', /alias/],
  ])('scheduleError(%j) explains what is wrong', (expr, pattern) => {
    const problem = scheduleError(expr);
    expect(problem).toBeDefined();
    expect(problem).toMatch(pattern);
  });

  it.each(['* * * * *', '*/10 * * * * *', '0 9 * * mon-fri', '0 0 L * *', '0 0 * * 5L', '0 0 * * 1#2', '@daily', '0 0 29 2 *'])(
    'scheduleError(%j) accepts a valid expression',
    (expr) => {
      expect(scheduleError(expr)).toBeUndefined();
    },
  );

  it('timezoneError accepts IANA zones and rejects unknown ones', () => {
    expect(timezoneError('UTC')).toBeUndefined();
    expect(timezoneError('America/New_York')).toBeUndefined();
    expect(timezoneError('Australia/Lord_Howe')).toBeUndefined();
    expect(timezoneError('Mars/Olympus')).toMatch(/Mars\/Olympus/);
    expect(timezoneError('')).toBeDefined();
  });

  it('DEFAULT_DST is shift + once', () => {
    expect(DEFAULT_DST).toEqual({ gap: 'shift', overlap: 'once' });
  });
});

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

const simpleField = (min: number, max: number): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constant('*'),
    fc.integer({ min: 1, max: Math.max(1, Math.floor((max - min + 1) / 2)) }).map((n) => `*/${n}`),
    fc.integer({ min, max }).map(String),
    fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    fc.uniqueArray(fc.integer({ min, max }), { minLength: 2, maxLength: 3 }).map((xs) => [...xs].sort((a, b) => a - b).join(',')),
    fc
      .tuple(fc.integer({ min, max }), fc.integer({ min, max }), fc.integer({ min: 1, max: 5 }))
      .map(([a, b, n]) => `${Math.min(a, b)}-${Math.max(a, b)}/${n}`),
  );

const utcExpr = fc
  .tuple(simpleField(0, 59), simpleField(0, 23), simpleField(1, 31), simpleField(1, 12), simpleField(0, 6))
  .map((fields) => fields.join(' '));

describe('properties', () => {
  /**
   * cron-parser ORs the day fields whenever both are restricted; Vixie ANDs them when one starts
   * with `*`. The oracle then enumerates the expression with day-of-week `*` and keeps the days
   * whose weekday is in day-of-week's set (cron-parser's own expansion of that field alone).
   */
  function vixieUtc(expr: string, after: number, until: number, max: number): number[] {
    const f = expr.split(' ');
    const dom = f[2]!;
    const dow = f[4]!;
    const starRule = dom.startsWith('*') || dow.startsWith('*');
    if (!starRule || dom === '*' || dow === '*') return cronParserUtc(expr, after, until, max);
    const weekdays = new Set(
      (CronExpressionParser.parse(`0 0 * * ${dow}`, { tz: 'UTC' }).fields.dayOfWeek.values as number[]).map((d) => d % 7),
    );
    const dayOnly = [f[0], f[1], dom, f[3], '*'].join(' ');
    return cronParserUtc(dayOnly, after, until, 100_000)
      .filter((t) => weekdays.has(new Date(t).getUTCDay()))
      .slice(0, max);
  }

  it("UTC: slotsBetween equals cron-parser's enumeration under Vixie's day rule", () => {
    fc.assert(
      fc.property(
        utcExpr,
        fc.integer({ min: Z('2020-01-01T00:00:00Z') / 1000, max: Z('2032-01-01T00:00:00Z') / 1000 }),
        fc.integer({ min: 1, max: 40 * 24 * 3600 }),
        (expr, aSec, lenSec) => {
          fc.pre(scheduleError(expr) === undefined);
          const a = aSec * 1000;
          const b = a + lenSec * 1000;
          const max = 300;
          expect(slotsBetween(spec(expr, 'UTC'), a, b, max)).toEqual(vixieUtc(expr, a, b, max));
        },
      ),
      { numRuns: 150 },
    );
  });

  const zones = [
    'UTC',
    'America/New_York',
    'Europe/London',
    'Australia/Lord_Howe',
    'America/Santiago',
    'Asia/Kolkata',
    'Asia/Kathmandu',
    'Pacific/Chatham',
    'America/St_Johns',
  ] as const;
  /** Instants near DST transitions (and one ordinary day), where the hazards are. */
  const anchors = [
    '2026-03-08T07:00:00Z',
    '2026-11-01T06:00:00Z',
    '2026-03-29T01:00:00Z',
    '2026-10-25T01:00:00Z',
    '2026-04-04T15:00:00Z',
    '2026-10-03T15:30:00Z',
    '2026-04-05T03:00:00Z',
    '2026-09-06T04:00:00Z',
    '2026-04-04T14:00:00Z',
    '2026-09-26T14:00:00Z',
    '2026-07-01T00:00:00Z',
  ].map(Z);
  const anyExpr = fc.constantFrom(
    '* * * * *',
    '*/30 * * * *',
    '*/7 * * * *',
    '0 * * * *',
    '30 1 * * *',
    '30 2 * * *',
    '15 2 * * *',
    '45 1 * * *',
    '0 0 * * *',
    '30 23 * * *',
    '0,15,30,45 0-3 * * *',
    '*/10 * * * * *',
    '17 */13 * * * *',
  );
  const window3 = fc
    .tuple(
      fc.constantFrom(...anchors),
      fc.integer({ min: -36 * 3600, max: 36 * 3600 }),
      fc.integer({ min: 0, max: 12 * 3600 }),
      fc.integer({ min: 0, max: 12 * 3600 }),
      fc.integer({ min: 0, max: 999 }),
    )
    .map(([anchor, startSec, l1, l2, ms]) => {
      const a = anchor + startSec * 1000 + ms;
      return [a, a + l1 * 1000, a + (l1 + l2) * 1000] as const;
    });

  it('any zone and policy: ascending, inside the window, and (a,c] == (a,b] ++ (b,c]', () => {
    fc.assert(
      fc.property(
        anyExpr,
        fc.constantFrom(...zones),
        fc.constantFrom<DstGapPolicy>('shift', 'skip'),
        fc.constantFrom<DstOverlapPolicy>('once', 'twice'),
        window3,
        (expr, zone, gap, overlap, [a, b, c]) => {
          const s = spec(expr, zone, gap, overlap);
          const all = slotsBetween(s, a, c);
          for (let i = 0; i < all.length; i++) {
            const t = all[i] ?? Number.NaN;
            expect(t).toBeGreaterThan(a);
            expect(t).toBeLessThanOrEqual(c);
            if (i > 0) expect(t).toBeGreaterThan(all[i - 1] ?? Number.NaN);
          }
          expect([...slotsBetween(s, a, b), ...slotsBetween(s, b, c)]).toEqual(all);
          const first = nextSlotAfter(s, a);
          if (all.length > 0) expect(first).toBe(all[0]);
          else if (first !== undefined) expect(first).toBeGreaterThan(c);
          expect(slotsBetween(s, a, c, 3)).toEqual(all.slice(0, 3));
        },
      ),
      { numRuns: 300 },
    );
  });

  /**
   * An independent oracle for the DST policies: enumerate matching wall times with cron-parser (in
   * UTC, i.e. on the wall clock), then resolve each wall time on its own with Intl: 0 instants = gap
   * (shift: wall - offset before the transition), 1, or 2 = overlap (once: the earlier one).
   */
  function oracle(expr: string, zone: string, gap: DstGapPolicy, overlap: DstOverlapPolicy, a: number, c: number): number[] {
    const margin = 30 * HOUR;
    const walls = cronParserUtc(expr, a - margin, c + margin, 100_000);
    const out = new Set<number>();
    for (const w of walls) {
      const before = offsetMinutes(zone, w - margin) * MIN;
      const after = offsetMinutes(zone, w + margin) * MIN;
      const instants = [...new Set([w - before, w - after])].filter((t) => offsetMinutes(zone, t) * MIN === w - t).sort((x, y) => x - y);
      let chosen: number[];
      if (instants.length === 0) chosen = gap === 'shift' ? [w - before] : [];
      else if (instants.length === 1 || overlap === 'twice') chosen = instants;
      else chosen = instants.slice(0, 1);
      for (const t of chosen) if (t > a && t <= c) out.add(t);
    }
    return [...out].sort((x, y) => x - y);
  }

  it('DST zones: slotsBetween equals a brute-force per-wall-time Intl oracle', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(
          '*/30 * * * *',
          '*/20 * * * *',
          '0 * * * *',
          '30 1 * * *',
          '30 2 * * *',
          '15 2 * * *',
          '45 1 * * *',
          '0 0 * * *',
          '30 23 * * *',
          '0,15,45 0-3 * * *',
          '5 */2 * * *',
        ),
        fc.constantFrom('America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'America/Santiago', 'Pacific/Chatham'),
        fc.constantFrom<DstGapPolicy>('shift', 'skip'),
        fc.constantFrom<DstOverlapPolicy>('once', 'twice'),
        window3,
        (expr, zone, gap, overlap, [a, , c]) => {
          expect(isoOf(slotsBetween(spec(expr, zone, gap, overlap), a, c))).toEqual(isoOf(oracle(expr, zone, gap, overlap, a, c)));
        },
      ),
      { numRuns: 120 },
    );
  });

  it('Pacific/Apia skipped 2011-12-30 entirely: shift folds that day onto Dec 31, skip drops it', () => {
    const a = Z('2011-12-29T00:00:00Z');
    const c = Z('2012-01-02T00:00:00Z');
    for (const gap of ['shift', 'skip'] as const) {
      for (const expr of ['0 12 * * *', '0 */6 * * *', '30 9 30 12 *']) {
        expect(isoOf(slotsBetween(spec(expr, 'Pacific/Apia', gap), a, c))).toEqual(isoOf(oracle(expr, 'Pacific/Apia', gap, 'once', a, c)));
      }
    }
    // 09:30 on the missing Dec 30 at -10:00 is 19:30Z, i.e. 09:30 on Dec 31 at +14:00.
    expect(isoOf(slotsBetween(spec('30 9 30 12 *', 'Pacific/Apia', 'shift'), a, c))).toEqual(['2011-12-30T19:30:00.000Z']);
    expect(slotsBetween(spec('30 9 30 12 *', 'Pacific/Apia', 'skip'), a, c)).toEqual([]);
  });
});
