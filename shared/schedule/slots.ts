/**
 * Slot math (DESIGN §3, §4, §7): which instants a job fires at, with explicit DST policies.
 *
 * Pure: no I/O, no clock. Time is always passed in; results depend only on the arguments (and on
 * the tz database compiled into the runtime's Intl).
 *
 * Three kinds of schedule go through the same two functions (slotsBetween, nextSlotAfter), so
 * the planner, backfill and preview never ask which kind a job has:
 * - cron (cron.ts for the dialect): matched on LOCAL WALL-CLOCK time so the DST policies apply
 *   exactly. A zone's timeline is cut into segments of constant UTC offset (zone.ts); inside a
 *   segment, wall = instant + offset, so the slots are the matching wall times mapped back with
 *   that offset, in ascending order.
 *   - A transition that moves the clock forward (offset grows by d) opens a GAP: the wall times
 *     in [T + before, T + after) do not exist. gap='skip' drops them; gap='shift' fires each
 *     matching one at `wall - before` (the offset in force just before the transition), which
 *     lies in [T, T + d) and is merged (deduplicated) with the regular slots of the next segment.
 *   - A transition that moves the clock back opens an OVERLAP: the wall times in
 *     [T + after, T + before) happen twice. The first instances belong to the segment before T,
 *     the second ones to the segment after it; overlap='once' drops the second ones.
 * - interval (interval.ts): epoch + n × every + phase, in UTC.
 * - once (`at`): one instant (two with overlap='twice' on a repeated local time).
 * Then, for every kind, the active window [startAt, endAt) and the excluded local dates
 * (schedule-resolve.ts) remove slots: nothing outside them is ever returned, so misfire handling,
 * catch-up and backfill respect them without knowing they exist.
 *
 * Slots are whole seconds.
 */
import { clearCronCache, cronError, cronPlanOf, nextWall, wallMatches } from './cron.js';
import { DEFAULT_DST, type DstGapPolicy, type DstOverlapPolicy } from './dst.js';
import { intervalSlotAtOrBefore, intervalSlotsIn } from './interval.js';
import { parseDateTime } from './local-time.js';
import { admits, clearResolveCache, resolveSpec, specProblems, type ResolvedSpec } from './schedule-resolve.js';
import { isIntervalSchedule, isOnceSchedule, type SlotSpec } from './schedule-spec.js';
import { clearZoneCache, MAX_INSTANT, resolveWall, timezoneError, type Zone } from './zone.js';

export { DEFAULT_DST, type DstGapPolicy, type DstOverlapPolicy };
export { describeSchedule, isIntervalSchedule, isOnceSchedule, slotSpecOf } from './schedule-spec.js';
export type { IntervalSchedule, OnceSchedule, Schedule, SlotFields, SlotSpec, SpecProblem } from './schedule-spec.js';
export { specProblems, timezoneError };

export type DstMark = 'gap-shifted' | 'overlap-first' | 'overlap-second';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** How far nextSlotAfter looks: "about 5 years". */
export const NEXT_SLOT_HORIZON_MS = 5 * 366 * DAY;
/** Without an explicit limit, slotsBetween refuses windows that hold more slots than this. */
export const UNLIMITED_GUARD = 1_000_000;

/** Returns undefined when the cron expression is valid, else a short human message of what is wrong. */
export function scheduleError(schedule: string): string | undefined {
  return cronError(schedule);
}

/** Drops the parsed-expression, zone and resolved-spec caches (tests use it to prove determinism). */
export function clearSlotCaches(): void {
  clearCronCache();
  clearZoneCache();
  clearResolveCache();
}

// ---------------------------------------------------------------------------------------------
// Enumeration
// ---------------------------------------------------------------------------------------------

/** Appends to `out` the cron slots in the inclusive instant range [lo, hi] (whole seconds), ascending. */
function cronSlotsIn(spec: SlotSpec, schedule: string, zone: Zone, lo: number, hi: number, limit: number, out: number[]): void {
  const plan = cronPlanOf(schedule);
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

/** The slots of the spec's kind alone (no window, no exclusions) in [lo, hi], appended to `out`. */
function kindSlotsIn(r: ResolvedSpec, lo: number, hi: number, limit: number, out: number[]): void {
  const { schedule } = r.spec;
  if (typeof schedule === 'string') cronSlotsIn(r.spec, schedule, r.zone, lo, hi, limit, out);
  else if (isIntervalSchedule(schedule)) intervalSlotsIn(schedule, lo, hi, limit, out);
  else for (const t of r.once ?? []) if (t >= lo && t <= hi && out.length < limit) out.push(t);
}

/**
 * The spec's slots in [lo, hi] (whole seconds), window and exclusions applied. With exclusions
 * the range is walked in chunks that never cross a local midnight or an offset change, so every
 * slot of a chunk has the chunk's local date: an excluded day costs one lookup, not one per slot.
 */
function collect(r: ResolvedSpec, lo: number, hi: number, limit: number, out: number[]): void {
  let t = Math.max(lo, r.from);
  const end = Math.min(hi, r.until);
  if (t > end) return;
  const excluded = r.excluded;
  if (excluded === undefined) {
    kindSlotsIn(r, t, end, limit, out);
    return;
  }
  const probe: number[] = [];
  while (t <= end && out.length < limit) {
    probe.length = 0;
    kindSlotsIn(r, t, end, 1, probe);
    const s = probe[0];
    if (s === undefined) return;
    const seg = r.zone.segmentAt(s, end);
    const wall = s + seg.off;
    const date = wall - (((wall % DAY) + DAY) % DAY);
    const chunkEnd = Math.min(date + DAY - seg.off, seg.endAt);
    if (!excluded.has(date)) kindSlotsIn(r, s, Math.min(end, chunkEnd - SECOND), limit, out);
    t = chunkEnd;
  }
}

/** First whole second strictly after `ms`. */
function firstSecondAfter(ms: number): number {
  return Math.floor(ms / SECOND) * SECOND + SECOND;
}

function label(spec: SlotSpec): string {
  return typeof spec.schedule === 'string' ? spec.schedule : JSON.stringify(spec.schedule);
}

/** Slot instants (UTC epoch ms) in the half-open window (afterMs, untilMs], ascending, no duplicates. */
export function slotsBetween(spec: SlotSpec, afterMs: number, untilMs: number, limit?: number): number[] {
  if (!Number.isFinite(afterMs) || !Number.isFinite(untilMs)) {
    throw new RangeError(`slotsBetween: window bounds must be finite numbers (got ${afterMs}, ${untilMs})`);
  }
  const out: number[] = [];
  const max = limit === undefined ? UNLIMITED_GUARD + 1 : Math.floor(limit);
  const r = resolveSpec(spec);
  if (!(max > 0)) return out;
  const lo = firstSecondAfter(afterMs);
  const hi = Math.floor(Math.min(untilMs, MAX_INSTANT) / SECOND) * SECOND;
  if (lo > hi) return out;
  collect(r, lo, hi, max, out);
  if (limit === undefined && out.length > UNLIMITED_GUARD) {
    throw new RangeError(`slotsBetween: more than ${UNLIMITED_GUARD} slots in the window for "${label(spec)}"; pass a limit`);
  }
  return out;
}

/**
 * The first slot strictly after afterMs, or undefined if there is none within ~5 years of it (or
 * of startAt, if later). Past endAt, or past a one-time slot, it answers at once.
 */
export function nextSlotAfter(spec: SlotSpec, afterMs: number): number | undefined {
  if (!Number.isFinite(afterMs)) throw new RangeError(`nextSlotAfter: afterMs must be finite (got ${afterMs})`);
  const r = resolveSpec(spec);
  const lo = Math.max(firstSecondAfter(afterMs), r.from);
  if (lo > r.until) return undefined;
  const out: number[] = [];
  const hi = Math.min(lo + NEXT_SLOT_HORIZON_MS, MAX_INSTANT);
  if (lo <= hi) collect(r, lo, hi, 1, out);
  return out[0];
}

/** How far back lastSlotOf looks for the last slot before endAt, widening step by step. */
const LAST_SLOT_SEARCH_MS = [MINUTE, HOUR, DAY, 31 * DAY, 366 * DAY, NEXT_SLOT_HORIZON_MS, 30 * 366 * DAY];
const lastSlots = new WeakMap<ResolvedSpec, number | undefined>();

/**
 * The spec's last slot: undefined when it has none (slots go on forever: no endAt and not a
 * one-time schedule), -Infinity when it is bounded but has no slot at all (nothing ever fires),
 * else the instant. A job is finished once `now` is past it and the run at that slot is terminal.
 */
export function lastSlotOf(spec: SlotSpec): number | undefined {
  const r = resolveSpec(spec);
  if (lastSlots.has(r)) return lastSlots.get(r);
  let last: number | undefined;
  if (r.once !== undefined) {
    last = -Infinity;
    for (const t of r.once) if (admits(r, t)) last = t;
  } else if (r.until === Infinity) last = undefined;
  else last = lastBefore(r);
  lastSlots.set(r, last);
  return last;
}

/** The last slot at or before r.until, found in widening windows, then paged forward in the first window that has one. */
function lastBefore(r: ResolvedSpec): number {
  const until = Math.min(r.until, Math.floor(MAX_INSTANT / SECOND) * SECOND);
  const { schedule } = r.spec;
  if (r.excluded === undefined && isIntervalSchedule(schedule)) {
    const t = intervalSlotAtOrBefore(schedule, until);
    return t >= r.from ? t : -Infinity;
  }
  const PAGE = 10_000;
  for (const back of LAST_SLOT_SEARCH_MS) {
    let lo = Math.max(until - back, r.from - SECOND);
    let last: number | undefined;
    for (;;) {
      const page: number[] = [];
      collect(r, lo + SECOND, until, PAGE, page);
      if (page.length > 0) last = page[page.length - 1];
      if (page.length < PAGE) break;
      lo = last ?? lo;
    }
    if (last !== undefined) return last;
    if (until - back <= r.from) return -Infinity;
  }
  return -Infinity;
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
  const r = resolveSpec(spec);
  if (!admits(r, slot)) return undefined;
  const { schedule } = spec;
  if (isOnceSchedule(schedule)) return onceMark(r, slot);
  if (typeof schedule !== 'string') return undefined;
  const plan = cronPlanOf(schedule);
  const zone = r.zone;
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

function onceMark(r: ResolvedSpec, slot: number): DstMark | undefined {
  const once = r.once ?? [];
  const { schedule } = r.spec;
  if (!once.includes(slot) || !isOnceSchedule(schedule)) return undefined;
  const value = parseDateTime(schedule.at);
  if (value?.kind !== 'local') return undefined;
  const instants = resolveWall(r.zone, value.wall).instants;
  if (instants.length === 0) return 'gap-shifted';
  if (instants.length < 2) return undefined;
  return slot === instants[0] ? 'overlap-first' : 'overlap-second';
}
