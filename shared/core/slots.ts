/**
 * Slot math (DESIGN §3, §4, §7): which instants a job fires at, with explicit DST policies.
 *
 * Pure: no I/O, no clock. Time is always passed in; results depend only on the arguments (and on
 * the tz database compiled into the runtime's Intl).
 *
 * How it works. cron-parser is used only to parse an expression into field sets. Matching is done
 * here, on LOCAL WALL-CLOCK time, so that the DST policies can be applied exactly:
 *
 * - A zone's timeline is cut into segments of constant UTC offset (the transitions are found once
 *   per zone and year with Intl and cached). Inside a segment, wall = instant + offset, so the
 *   slots are simply the matching wall times mapped back with that offset, in ascending order.
 * - A transition that moves the clock forward (offset grows by d) opens a GAP: the wall times in
 *   [T + before, T + after) do not exist. gap='skip' drops them; gap='shift' fires each matching
 *   one at `wall - before` (the offset in force just before the transition), which lies in
 *   [T, T + d) and is merged (deduplicated) with the regular slots of the following segment.
 * - A transition that moves the clock back opens an OVERLAP: the wall times in
 *   [T + after, T + before) happen twice. The first instances belong to the segment before T, the
 *   second ones to the segment after it; overlap='once' drops the second ones, 'twice' keeps them.
 *
 * Slots are whole seconds. A 5-field expression means second 0; a 6-field one has seconds first.
 * Day-of-month / day-of-week follow cron-parser's semantics (which are the classic cron OR rule):
 * when both fields are restricted (neither is exactly `*` or `?`), a day matches if EITHER does.
 * Supported specials are what cron-parser supports deterministically: `L` in day-of-month, `nL`
 * (last weekday n of the month) and `n#k` (k-th weekday n) in day-of-week, names (jan, mon), and
 * the @yearly/@monthly/@weekly/@daily/@hourly/... aliases. `H` (hashed) is rejected: without a seed
 * it is random, which would make slots non-deterministic.
 */
import { CronExpressionParser } from 'cron-parser';

import { DEFAULT_DST, type DstGapPolicy, type DstOverlapPolicy } from './dst.js';

export { DEFAULT_DST, type DstGapPolicy, type DstOverlapPolicy };

export interface SlotSpec {
  /** 5-field (minute-level) or 6-field (seconds first) cron. */
  readonly schedule: string;
  /** IANA zone, e.g. 'America/New_York'. */
  readonly timezone: string;
  readonly dst: { readonly gap: DstGapPolicy; readonly overlap: DstOverlapPolicy };
}


export type DstMark = 'gap-shifted' | 'overlap-first' | 'overlap-second';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** How far nextSlotAfter looks: "about 5 years". */
export const NEXT_SLOT_HORIZON_MS = 5 * 366 * DAY;
/** Without an explicit limit, slotsBetween refuses windows that hold more slots than this. */
export const UNLIMITED_GUARD = 1_000_000;
/** Instants beyond this are not enumerated (the Date range ends at 8.64e15). */
const MAX_INSTANT = 8.64e15 - 400 * 24 * 3600 * 1000;

// ---------------------------------------------------------------------------------------------
// Parsed expressions
// ---------------------------------------------------------------------------------------------

/** A cron expression compiled into lookup tables for wall-clock matching. */
interface CronPlan {
  /** nextX[v] = smallest allowed value >= v, or -1 (index max+1 is always -1). */
  readonly nextSecond: Int8Array;
  readonly nextMinute: Int8Array;
  readonly nextHour: Int8Array;
  readonly months: Uint8Array; // [1..12]
  readonly domValues: Uint8Array; // [1..31]
  readonly domLast: boolean; // `L`: last day of month
  readonly domRestricted: boolean;
  readonly dowValues: Uint8Array; // [0..6], Sunday = 0
  readonly dowLast: Uint8Array; // [0..6], `nL`: last weekday n of the month
  readonly dowNth: number; // `n#k`: k (1..5), 0 = none
  readonly dowRestricted: boolean;
  /** True when every day matches (fast path in the day loop). */
  readonly everyDay: boolean;
}

const PREDEFINED: Readonly<Record<string, string>> = {
  '@yearly': '0 0 0 1 1 *',
  '@annually': '0 0 0 1 1 *',
  '@monthly': '0 0 0 1 * *',
  '@weekly': '0 0 0 * * 0',
  '@daily': '0 0 0 * * *',
  '@midnight': '0 0 0 * * *',
  '@hourly': '0 0 * * * *',
  '@minutely': '0 * * * * *',
  '@secondly': '* * * * * *',
  '@weekdays': '0 0 0 * * 1-5',
  '@weekends': '0 0 0 * * 0,6',
};

const FIELD_NAMES_6 = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;

/** Normalizes to 6 fields (seconds first) or returns a message. */
function normalizeFields(schedule: unknown): string[] | string {
  if (typeof schedule !== 'string') return 'schedule must be a string';
  const trimmed = schedule.trim();
  if (trimmed === '') return 'schedule is empty';
  if (trimmed.startsWith('@')) {
    const expanded = PREDEFINED[trimmed.toLowerCase()];
    if (expanded === undefined) {
      return `unknown alias "${trimmed}" (known: ${Object.keys(PREDEFINED).join(', ')})`;
    }
    return expanded.split(' ');
  }
  const atoms = trimmed.split(/\s+/);
  if (atoms.length !== 5 && atoms.length !== 6) {
    return `expected 5 fields (minute hour day-of-month month day-of-week) or 6 (second first), got ${atoms.length}`;
  }
  return atoms.length === 5 ? ['0', ...atoms] : atoms;
}

function hasHash(field: string, index: number): boolean {
  // Month and day-of-week allow names (thu, mar...): remove them before looking for `H`.
  const stripped = index >= 4 ? field.replace(/[a-z]{3}/gi, '') : field;
  return stripped.includes('H');
}

function compile(schedule: string): CronPlan | string {
  const fields = normalizeFields(schedule);
  if (typeof fields === 'string') return fields;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i] ?? '';
    if (hasHash(f, i)) {
      return `${FIELD_NAMES_6[i]} field "${f}": hashed values (H) are not supported (they would make slots random)`;
    }
  }
  const six = fields.join(' ');
  let parsed;
  try {
    parsed = CronExpressionParser.parse(six, { strict: false, tz: 'UTC', currentDate: 0 });
  } catch (err) {
    return describeParseError(fields, err);
  }
  const f = parsed.fields;
  const nextTable = (values: readonly (number | string)[], max: number): Int8Array => {
    const allowed = new Uint8Array(max + 2);
    for (const v of values) if (typeof v === 'number' && v >= 0 && v <= max) allowed[v] = 1;
    const next = new Int8Array(max + 2).fill(-1);
    let nxt = -1;
    for (let v = max; v >= 0; v--) {
      if (allowed[v] === 1) nxt = v;
      next[v] = nxt;
    }
    return next;
  };
  const months = new Uint8Array(13);
  for (const v of f.month.values) if (typeof v === 'number') months[v] = 1;
  const domValues = new Uint8Array(32);
  let domLast = false;
  for (const v of f.dayOfMonth.values) {
    if (typeof v === 'number') domValues[v] = 1;
    else if (v === 'L') domLast = true;
    else return `day-of-month value "${String(v)}" is not supported`;
  }
  const dowValues = new Uint8Array(7);
  const dowLast = new Uint8Array(7);
  for (const v of f.dayOfWeek.values as readonly (number | string)[]) {
    if (typeof v === 'number') dowValues[v % 7] = 1;
    else if (/^[0-7]L$/.test(v)) dowLast[Number(v.charAt(0)) % 7] = 1;
    else return `day-of-week value "${v}" is not supported`;
  }
  const domRestricted = !f.dayOfMonth.isWildcard;
  const dowRestricted = !f.dayOfWeek.isWildcard;
  const dowNth = f.dayOfWeek.nthDay;
  const plan: CronPlan = {
    nextSecond: nextTable(f.second.values, 59),
    nextMinute: nextTable(f.minute.values, 59),
    nextHour: nextTable(f.hour.values, 23),
    months,
    domValues,
    domLast,
    domRestricted,
    dowValues,
    dowLast,
    dowNth,
    dowRestricted,
    everyDay:
      (!domRestricted && !dowRestricted) ||
      (domRestricted && !dowRestricted && !domLast && domValues.slice(1).every((x) => x === 1)) ||
      (!domRestricted && dowRestricted && dowNth === 0 && dowValues.every((x) => x === 1)),
  };
  // An expression that can never fire (e.g. "0 0 31 4,6,9,11 *") is an error, not a silent no-op.
  // 2000-01-01 .. 2029: every month length and weekday combination occurs in that span.
  if (nextWall(plan, Date.UTC(2000, 0, 1), Date.UTC(2029, 0, 1)) < 0) {
    return 'the expression never matches any date (check day-of-month against month)';
  }
  return plan;
}

function describeParseError(fields: string[], err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // Name the offending field: parse each field alone, the others being wildcards.
  for (let i = 0; i < fields.length; i++) {
    const probe = ['0', '*', '*', '*', '*', '*'];
    probe[i] = fields[i] ?? '*';
    try {
      CronExpressionParser.parse(probe.join(' '), { strict: false, tz: 'UTC', currentDate: 0 });
    } catch (fieldErr) {
      const m = fieldErr instanceof Error ? fieldErr.message : String(fieldErr);
      return `${FIELD_NAMES_6[i]} field "${fields[i] ?? ''}": ${m}`;
    }
  }
  if (/day of month/i.test(message)) {
    return `day-of-month "${fields[3] ?? ''}" never occurs in month "${fields[4] ?? ''}" (${message})`;
  }
  return message;
}

const planCache = new Map<string, CronPlan | string>();

function planOf(schedule: string): CronPlan {
  let plan = planCache.get(schedule);
  if (plan === undefined) {
    plan = compile(schedule);
    planCache.set(schedule, plan);
  }
  if (typeof plan === 'string') throw new RangeError(`invalid schedule "${schedule}": ${plan}`);
  return plan;
}

/** Returns undefined when the expression is valid, else a short human message of what is wrong. */
export function scheduleError(schedule: string): string | undefined {
  if (typeof schedule !== 'string') return 'schedule must be a string';
  let plan = planCache.get(schedule);
  if (plan === undefined) {
    plan = compile(schedule);
    planCache.set(schedule, plan);
  }
  return typeof plan === 'string' ? plan : undefined;
}

// ---------------------------------------------------------------------------------------------
// Calendar helpers on "wall ms" (a local wall time encoded as if it were UTC)
// ---------------------------------------------------------------------------------------------

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(y: number, m: number): number {
  return m === 2 && isLeap(y) ? 29 : (DAYS_IN_MONTH[m] ?? 31);
}

function wallMs(y: number, mo: number, d: number, h: number, mi: number, s: number): number {
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  if (y >= 0 && y < 100) {
    const dt = new Date(ms);
    dt.setUTCFullYear(y);
    return dt.getTime();
  }
  return ms;
}

function dayMatches(p: CronPlan, d: number, dow: number, dim: number): boolean {
  if (p.everyDay) return true;
  const domMatch = p.domValues[d] === 1 || (p.domLast && d === dim);
  const dowMatch =
    (p.dowValues[dow] === 1 && (p.dowNth === 0 || Math.ceil(d / 7) === p.dowNth)) ||
    (p.dowLast[dow] === 1 && d + 7 > dim);
  if (p.domRestricted && p.dowRestricted) return domMatch || dowMatch;
  if (p.domRestricted) return domMatch;
  if (p.dowRestricted) return dowMatch;
  return true;
}

/**
 * The smallest matching wall time >= w (w a whole second), or -1 if there is none up to maxW.
 * Walks months, then days, then hours/minutes/seconds through the "next allowed" tables.
 */
function nextWall(p: CronPlan, w: number, maxW: number): number {
  if (w > maxW) return -1;
  const dt = new Date(w);
  let y = dt.getUTCFullYear();
  let mo = dt.getUTCMonth() + 1;
  let d = dt.getUTCDate();
  let h = dt.getUTCHours();
  let mi = dt.getUTCMinutes();
  let s = dt.getUTCSeconds();
  let dow = dt.getUTCDay();
  const maxY = new Date(maxW).getUTCFullYear();
  let dim = daysIn(y, mo);

  for (;;) {
    if (p.months[mo] !== 1) {
      // Jump to the first day of the next month.
      dow = (dow + (dim - d + 1)) % 7;
      mo++;
      if (mo > 12) {
        mo = 1;
        y++;
        if (y > maxY) return -1;
      }
      dim = daysIn(y, mo);
      d = 1;
      h = 0;
      mi = 0;
      s = 0;
      continue;
    }
    let nextDay = !dayMatches(p, d, dow, dim);
    if (!nextDay) {
      const hh = p.nextHour[h] ?? -1;
      if (hh < 0) {
        nextDay = true;
      } else {
        if (hh !== h) {
          h = hh;
          mi = 0;
          s = 0;
        }
        const mm = p.nextMinute[mi] ?? -1;
        if (mm < 0) {
          // Next allowed hour on this day.
          h++;
          mi = 0;
          s = 0;
          if (h > 23) nextDay = true;
          else continue;
        } else {
          if (mm !== mi) {
            mi = mm;
            s = 0;
          }
          const ss = p.nextSecond[s] ?? -1;
          if (ss >= 0) {
            const r = wallMs(y, mo, d, h, mi, ss);
            return r <= maxW ? r : -1;
          }
          mi++;
          s = 0;
          if (mi > 59) {
            mi = 0;
            h++;
            if (h > 23) nextDay = true;
            else continue;
          } else continue;
        }
      }
    }
    // nextDay
    d++;
    dow = (dow + 1) % 7;
    h = 0;
    mi = 0;
    s = 0;
    if (d > dim) {
      d = 1;
      mo++;
      if (mo > 12) {
        mo = 1;
        y++;
        if (y > maxY) return -1;
      }
      dim = daysIn(y, mo);
    }
  }
}

/** Whether a wall time (whole second) matches the plan. */
function wallMatches(p: CronPlan, w: number): boolean {
  return w % SECOND === 0 && nextWall(p, w, w) === w;
}

// ---------------------------------------------------------------------------------------------
// Zones: offsets and transitions, from Intl, cached per zone and UTC year
// ---------------------------------------------------------------------------------------------

interface ZoneYear {
  /** Offset in force at the first instant of the UTC year. */
  readonly startOffset: number;
  /** Transitions with `at` inside the UTC year, ascending. */
  readonly transitions: readonly Transition[];
}

interface Transition {
  /** First instant (ms, whole second) at which `after` is in force. */
  readonly at: number;
  /** Offsets in ms (local = utc + offset). */
  readonly before: number;
  readonly after: number;
}

/** A stretch of constant offset, and the transitions that bound it. */
interface Segment {
  /** Start of the segment (a transition instant) or -Infinity. */
  readonly startAt: number;
  /** Offset in force before startAt (equals `off` when startAt is -Infinity). */
  readonly offBefore: number;
  readonly off: number;
  /** First instant after the segment (the next transition) or +Infinity. */
  readonly endAt: number;
  /** Offset in force from endAt (equals `off` when endAt is +Infinity). */
  readonly offAfter: number;
}

const FIXED_UTC_NAMES = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT', 'Etc/Universal', 'Etc/Zulu', 'Universal', 'Zulu']);

class Zone {
  private readonly fmt: Intl.DateTimeFormat | undefined;
  private readonly years = new Map<number, ZoneYear>();
  private readonly fixedSegment: Segment | undefined;

  constructor(readonly name: string) {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    if (FIXED_UTC_NAMES.has(resolved) || FIXED_UTC_NAMES.has(name)) {
      this.fmt = undefined;
      this.fixedSegment = { startAt: -Infinity, offBefore: 0, off: 0, endAt: Infinity, offAfter: 0 };
    } else {
      this.fmt = new Intl.DateTimeFormat('en-US', {
        timeZone: name,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
        era: 'short',
      });
      this.fixedSegment = undefined;
    }
  }

  /** Offset (ms) at instant t (t a whole second), straight from Intl. Slow: use for building tables. */
  private rawOffset(t: number): number {
    const fmt = this.fmt;
    if (fmt === undefined) return 0;
    let y = 0;
    let mo = 0;
    let d = 0;
    let h = 0;
    let mi = 0;
    let s = 0;
    let bc = false;
    for (const part of fmt.formatToParts(t)) {
      switch (part.type) {
        case 'year':
          y = Number(part.value);
          break;
        case 'month':
          mo = Number(part.value);
          break;
        case 'day':
          d = Number(part.value);
          break;
        case 'hour':
          h = Number(part.value);
          break;
        case 'minute':
          mi = Number(part.value);
          break;
        case 'second':
          s = Number(part.value);
          break;
        case 'era':
          bc = part.value.startsWith('B');
          break;
        default:
          break;
      }
    }
    if (bc) y = 1 - y;
    return wallMs(y, mo, d, h % 24, mi, s) - t;
  }

  private static yearOf(t: number): number {
    return new Date(t).getUTCFullYear();
  }

  /** Transitions with `at` in UTC year y, ascending. Found by sampling daily, then bisecting. */
  private yearInfo(y: number): ZoneYear {
    const cached = this.years.get(y);
    if (cached !== undefined) return cached;
    const out: Transition[] = [];
    let startOffset = 0;
    if (this.fmt !== undefined) {
      const start = wallMs(y, 1, 1, 0, 0, 0) - SECOND;
      const end = wallMs(y + 1, 1, 1, 0, 0, 0) - SECOND;
      let lo = start;
      let loOff = this.rawOffset(lo);
      startOffset = this.rawOffset(start + SECOND);
      while (lo < end) {
        const hi = Math.min(lo + DAY, end);
        const hiOff = this.rawOffset(hi);
        let a = lo;
        let aOff = loOff;
        // Possibly several changes in one sample interval: find each in turn.
        while (aOff !== hiOff) {
          let l = a;
          let r = hi; // offset(l) === aOff, offset(r) !== aOff
          while (r - l > SECOND) {
            const mid = l + Math.floor((r - l) / (2 * SECOND)) * SECOND;
            if (this.rawOffset(mid) === aOff) l = mid;
            else r = mid;
          }
          const rOff = this.rawOffset(r);
          out.push({ at: r, before: aOff, after: rOff });
          a = r;
          aOff = rOff;
        }
        lo = hi;
        loOff = hiOff;
      }
    }
    const info: ZoneYear = { startOffset, transitions: out };
    this.years.set(y, info);
    return info;
  }

  /** The constant-offset segment containing instant t; transitions are searched up to `horizon`. */
  segmentAt(t: number, horizon: number): Segment {
    if (this.fixedSegment !== undefined) return this.fixedSegment;
    // Last transition <= t (look back at most into the previous year: enough for DST handling,
    // since a gap or overlap never lasts more than a day).
    let prev: Transition | undefined;
    const y = Zone.yearOf(t);
    for (let yy = y; yy >= y - 1 && prev === undefined; yy--) {
      const list = this.yearInfo(yy).transitions;
      for (let i = list.length - 1; i >= 0; i--) {
        const tr = list[i];
        if (tr !== undefined && tr.at <= t) {
          prev = tr;
          break;
        }
      }
    }
    let next: Transition | undefined;
    const maxY = Zone.yearOf(Math.max(t, Math.min(horizon, MAX_INSTANT)));
    for (let yy = y; yy <= maxY && next === undefined; yy++) {
      for (const tr of this.yearInfo(yy).transitions) {
        if (tr.at > t) {
          next = tr;
          break;
        }
      }
    }
    // With no transition between the start of year y and t, the offset is the year's first one.
    const off = prev !== undefined ? prev.after : next !== undefined ? next.before : this.yearInfo(y).startOffset;
    return {
      startAt: prev !== undefined ? prev.at : -Infinity,
      offBefore: prev !== undefined ? prev.before : off,
      off,
      endAt: next !== undefined ? next.at : Infinity,
      offAfter: next !== undefined ? next.after : off,
    };
  }
}

const zoneCache = new Map<string, Zone | string>();

function zoneError(timezone: unknown): string | undefined {
  if (typeof timezone !== 'string' || timezone.trim() === '') return 'timezone must be a non-empty IANA name such as "America/New_York"';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return undefined;
  } catch {
    return `unknown time zone "${timezone}" (expected an IANA name such as "America/New_York" or "UTC")`;
  }
}

function zoneOf(timezone: string): Zone {
  let zone = zoneCache.get(timezone);
  if (zone === undefined) {
    const problem = zoneError(timezone);
    zone = problem ?? new Zone(timezone);
    zoneCache.set(timezone, zone);
  }
  if (typeof zone === 'string') throw new RangeError(zone);
  return zone;
}

/** Returns undefined when the IANA zone is valid, else a message. Uses Intl. */
export function timezoneError(timezone: string): string | undefined {
  const cached = typeof timezone === 'string' ? zoneCache.get(timezone) : undefined;
  if (cached !== undefined) return typeof cached === 'string' ? cached : undefined;
  return zoneError(timezone);
}

/** Drops the parsed-expression and zone caches (tests use it to prove determinism). */
export function clearSlotCaches(): void {
  planCache.clear();
  zoneCache.clear();
}

// ---------------------------------------------------------------------------------------------
// Enumeration
// ---------------------------------------------------------------------------------------------

/** Appends to `out` the slots in the inclusive instant range [lo, hi] (whole seconds), ascending. */
function enumerate(spec: SlotSpec, lo: number, hi: number, limit: number, out: number[]): void {
  const plan = planOf(spec.schedule);
  const zone = zoneOf(spec.timezone);
  const shift = spec.dst.gap === 'shift';
  const once = spec.dst.overlap === 'once';
  let t = lo;
  while (t <= hi && out.length < limit) {
    const seg = zone.segmentAt(t, hi);
    const segHi = Math.min(hi, seg.endAt - SECOND);
    const delta = seg.off - seg.offBefore; // > 0: gap at startAt, < 0: overlap at startAt

    // Gap, shift policy: the matching non-existent walls, fired at the pre-transition offset.
    let extras: number[] | undefined;
    if (delta > 0 && shift && t < seg.startAt + delta) {
      extras = [];
      const gapWallLo = Math.max(t, seg.startAt) + seg.offBefore;
      const gapWallHi = Math.min(segHi, seg.startAt + delta - SECOND) + seg.offBefore;
      for (let w = nextWall(plan, gapWallLo, gapWallHi); w >= 0; w = nextWall(plan, w + SECOND, gapWallHi)) {
        extras.push(w - seg.offBefore);
      }
    }

    // Regular slots; with overlap=once the repeated walls (second instances) are left out.
    let from = t;
    if (delta < 0 && once) from = Math.max(from, seg.startAt - delta);
    const off = seg.off;
    const wallHi = segHi + off;
    let i = 0;
    if (from <= segHi) {
      for (let w = nextWall(plan, from + off, wallHi); w >= 0; w = nextWall(plan, w + SECOND, wallHi)) {
        const r = w - off;
        if (extras !== undefined) {
          while (i < extras.length && (extras[i] ?? Infinity) < r && out.length < limit) out.push(extras[i++] ?? 0);
          if (extras[i] === r) i++;
        }
        if (out.length >= limit) return;
        out.push(r);
        if (out.length >= limit) return;
      }
    }
    if (extras !== undefined) {
      while (i < extras.length && out.length < limit) out.push(extras[i++] ?? 0);
    }
    if (seg.endAt === Infinity) break;
    t = seg.endAt;
  }
}

/** First whole second strictly after `ms`. */
function firstSecondAfter(ms: number): number {
  return Math.floor(ms / SECOND) * SECOND + SECOND;
}

/** Slot instants (UTC epoch ms) in the half-open window (afterMs, untilMs], ascending, no duplicates. */
export function slotsBetween(spec: SlotSpec, afterMs: number, untilMs: number, limit?: number): number[] {
  if (!Number.isFinite(afterMs) || !Number.isFinite(untilMs)) {
    throw new RangeError(`slotsBetween: window bounds must be finite numbers (got ${afterMs}, ${untilMs})`);
  }
  const out: number[] = [];
  const max = limit === undefined ? UNLIMITED_GUARD + 1 : Math.floor(limit);
  if (!(max > 0)) return out;
  const lo = firstSecondAfter(afterMs);
  const hi = Math.floor(Math.min(untilMs, MAX_INSTANT) / SECOND) * SECOND;
  if (lo > hi) return out;
  enumerate(spec, lo, hi, max, out);
  if (limit === undefined && out.length > UNLIMITED_GUARD) {
    throw new RangeError(
      `slotsBetween: more than ${UNLIMITED_GUARD} slots in the window for "${spec.schedule}"; pass a limit`,
    );
  }
  return out;
}

/** The first slot strictly after afterMs, or undefined if none within ~5 years. */
export function nextSlotAfter(spec: SlotSpec, afterMs: number): number | undefined {
  if (!Number.isFinite(afterMs)) throw new RangeError(`nextSlotAfter: afterMs must be finite (got ${afterMs})`);
  const out: number[] = [];
  const lo = firstSecondAfter(afterMs);
  const hi = Math.min(lo + NEXT_SLOT_HORIZON_MS, MAX_INSTANT);
  if (lo <= hi) enumerate(spec, lo, hi, 1, out);
  return out[0];
}

/**
 * How DST affected a slot, for the preview table:
 * - 'gap-shifted': the slot fires (also) for a wall time that does not exist that day, moved by
 *   gap=shift (it may coincide with a regular slot, e.g. 02:00 → 03:00 on a spring-forward day);
 * - 'overlap-first' / 'overlap-second': its wall time happens twice that day and this is the
 *   first / second instance;
 * - undefined: not affected, or not a slot of this spec at all.
 */
export function dstMark(spec: SlotSpec, slot: number): DstMark | undefined {
  if (!Number.isFinite(slot) || slot % SECOND !== 0) return undefined;
  const plan = planOf(spec.schedule);
  const zone = zoneOf(spec.timezone);
  const seg = zone.segmentAt(slot, slot + 2 * DAY);
  const delta = seg.off - seg.offBefore;
  if (delta > 0 && spec.dst.gap === 'shift' && slot < seg.startAt + delta && wallMatches(plan, slot + seg.offBefore)) {
    return 'gap-shifted';
  }
  const wall = slot + seg.off;
  if (!wallMatches(plan, wall)) return undefined;
  if (delta < 0 && slot < seg.startAt - delta) {
    return spec.dst.overlap === 'twice' ? 'overlap-second' : undefined;
  }
  const nextDelta = seg.offAfter - seg.off;
  if (nextDelta < 0 && wall - seg.offAfter >= seg.endAt) return 'overlap-first';
  return undefined;
}
