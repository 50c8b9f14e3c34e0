/**
 * Time zones for the slot engine: a zone's timeline cut into segments of constant UTC offset, the
 * transitions found once per zone and UTC year with Intl and cached; and the mapping of a local
 * wall-clock reading back to instants (none in a DST gap, two in an overlap).
 *
 * Pure: results depend only on the arguments and on the tz database compiled into Intl.
 */
import { wallMs } from './local-time.js';

const SECOND = 1000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Instants beyond this are not enumerated (the Date range ends at 8.64e15). */
export const MAX_INSTANT = 8.64e15 - 400 * DAY;

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
export interface Segment {
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

export class Zone {
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

export function zoneOf(timezone: string): Zone {
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

/** Drops the zone cache (tests use it to prove determinism). */
export function clearZoneCache(): void {
  zoneCache.clear();
}

/** The UTC offset (ms, local = utc + offset) in force at instant t. */
export function offsetAt(zone: Zone, t: number): number {
  return zone.segmentAt(t, t).off;
}

/** Wall ms of the local midnight of the date instant t falls on in the zone. */
export function localDateOf(zone: Zone, t: number): number {
  const wall = t + offsetAt(zone, t);
  return wall - (((wall % DAY) + DAY) % DAY);
}

/** Where a wall-clock reading falls on the zone's timeline. */
export interface WallResolution {
  /** Instants showing that reading, ascending: one normally, two in an overlap, none in a gap. */
  readonly instants: readonly number[];
  /** For a reading in a gap: the transition instant and the offset in force just before it. */
  readonly gap?: { readonly at: number; readonly offBefore: number };
}

/** Offsets are within [-12 h, +14 h]: every instant showing `wall` lies in this span around it. */
const OFFSET_SPAN = 15 * HOUR;

/** Every instant whose local reading is `wall` (whole second), and the gap it falls in if none. */
export function resolveWall(zone: Zone, wall: number): WallResolution {
  const instants: number[] = [];
  let gap: WallResolution['gap'];
  const last = wall + OFFSET_SPAN;
  let seg = zone.segmentAt(wall - OFFSET_SPAN, last);
  for (;;) {
    const t = wall - seg.off;
    if (t >= seg.startAt && t < seg.endAt) instants.push(t);
    const delta = seg.off - seg.offBefore;
    if (delta > 0 && wall >= seg.startAt + seg.offBefore && wall < seg.startAt + seg.off) {
      gap = { at: seg.startAt, offBefore: seg.offBefore };
    }
    if (seg.endAt === Infinity || seg.endAt > last) break;
    seg = zone.segmentAt(seg.endAt, last);
  }
  return gap === undefined || instants.length > 0 ? { instants } : { instants, gap };
}

/**
 * The first instant after `after` at which the zone's clock shows `wall` or later: the first
 * occurrence of the reading, or, when it falls in a gap, the transition that skips it.
 */
export function firstInstantAtWall(zone: Zone, wall: number, after = -Infinity): number {
  const r = resolveWall(zone, wall);
  for (const t of r.instants) if (t > after) return t;
  if (r.gap !== undefined && r.gap.at > after) return r.gap.at;
  // Unreachable for a clock that only ever moves forward past `wall` again; never loop on it.
  return after + SECOND;
}
