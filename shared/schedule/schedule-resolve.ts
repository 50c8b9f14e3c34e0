/**
 * A SlotSpec resolved against its zone, once per spec: the active window as instants, the
 * excluded dates as a set, and a one-time schedule's instant(s). slots.ts enumerates with it.
 *
 * Local date-times in the job's zone (DESIGN §4's DST policies apply):
 * - `schedule.at` follows the job's `dst` like a cron slot: a reading that does not exist
 *   (spring forward) fires at the offset in force before the transition with gap='shift' and never
 *   with 'skip' (the config refuses that job); one that happens twice fires at its first instant
 *   with overlap='once', at both with 'twice'.
 * - A window bound (`startAt`, `endAt`) is the first instant at which the zone's clock shows that
 *   reading or later: the first occurrence in an overlap, the transition instant in a gap.
 * - An excluded date is the local calendar date of the slot's instant in the zone.
 */
import { parseDateTime, parseLocalDate } from './local-time.js';
import { isIntervalSchedule, isOnceSchedule, type SlotSpec, type SpecProblem } from './schedule-spec.js';
import { firstInstantAtWall, localDateOf, resolveWall, zoneOf, type Zone } from './zone.js';

const SECOND = 1000;

export interface ResolvedSpec {
  readonly spec: SlotSpec;
  readonly zone: Zone;
  /** First whole second a slot may be at (startAt rounded up), or -Infinity. */
  readonly from: number;
  /** Last whole second a slot may be at (the one before endAt), or +Infinity. */
  readonly until: number;
  /** Wall ms of the excluded local midnights; undefined when none. */
  readonly excluded: ReadonlySet<number> | undefined;
  /** For `at`: its instant(s), ascending (two with overlap='twice', none in a skipped gap). */
  readonly once: readonly number[] | undefined;
}

/** An instant for a bound as written: the first instant the zone's clock reads it (or later). */
function boundInstant(text: string, zone: Zone, field: string): number {
  const value = parseDateTime(text);
  if (value === undefined) throw new RangeError(`${field} "${text}" is not a date-time`);
  return value.kind === 'instant' ? value.ms : firstInstantAtWall(zone, value.wall);
}

/** The instant(s) of `schedule.at` under the spec's DST policy. */
function onceInstants(spec: SlotSpec, at: string, zone: Zone): number[] {
  const value = parseDateTime(at);
  if (value === undefined) throw new RangeError(`schedule.at "${at}" is not a date-time`);
  if (value.kind === 'instant') return [value.ms];
  const r = resolveWall(zone, value.wall);
  if (r.instants.length === 0) return r.gap !== undefined && spec.dst.gap === 'shift' ? [value.wall - r.gap.offBefore] : [];
  return spec.dst.overlap === 'twice' ? [...r.instants] : r.instants.slice(0, 1);
}

function resolveUncached(spec: SlotSpec): ResolvedSpec {
  const zone = zoneOf(spec.timezone);
  const start = spec.startAt === undefined ? -Infinity : boundInstant(spec.startAt, zone, 'startAt');
  const end = spec.endAt === undefined ? Infinity : boundInstant(spec.endAt, zone, 'endAt');
  let excluded: Set<number> | undefined;
  for (const date of spec.exclude ?? []) {
    const wall = parseLocalDate(date);
    if (wall === undefined) throw new RangeError(`excluded date "${date}" is not a date YYYY-MM-DD`);
    (excluded ??= new Set()).add(wall);
  }
  const { schedule } = spec;
  if (isIntervalSchedule(schedule)) {
    if (
      !(schedule.every >= SECOND) ||
      schedule.every % SECOND !== 0 ||
      schedule.phase % SECOND !== 0 ||
      !(schedule.phase >= 0 && schedule.phase < schedule.every)
    ) {
      throw new RangeError(
        `invalid interval: every ${schedule.every} ms, phase ${schedule.phase} ms (whole seconds, every >= 1 s, 0 <= phase < every)`,
      );
    }
  }
  return {
    spec,
    zone,
    from: Number.isFinite(start) ? Math.ceil(start / SECOND) * SECOND : start,
    until: Number.isFinite(end) ? Math.ceil(end / SECOND) * SECOND - SECOND : end,
    excluded,
    once: isOnceSchedule(schedule) ? onceInstants(spec, schedule.at, zone) : undefined,
  };
}

const byObject = new WeakMap<SlotSpec, ResolvedSpec>();
const byKey = new Map<string, ResolvedSpec>();
/** Ad-hoc specs (preview, tests) are cached by value up to this many; then the cache starts over. */
const MAX_KEYED = 10_000;

function keyOf(spec: SlotSpec): string {
  const s = spec.schedule;
  const schedule = typeof s === 'string' ? `c:${s}` : isIntervalSchedule(s) ? `i:${s.every}:${s.phase}` : `a:${s.at}`;
  return [
    schedule,
    spec.timezone,
    spec.dst.gap,
    spec.dst.overlap,
    spec.startAt ?? '',
    spec.endAt ?? '',
    (spec.exclude ?? []).join(','),
  ].join('|');
}

/** The spec resolved against its zone; throws a RangeError naming what is invalid. Cached. */
export function resolveSpec(spec: SlotSpec): ResolvedSpec {
  const hit = byObject.get(spec);
  if (hit !== undefined) return hit;
  const key = keyOf(spec);
  let resolved = byKey.get(key);
  if (resolved === undefined) {
    resolved = resolveUncached(spec);
    if (byKey.size >= MAX_KEYED) byKey.clear();
    byKey.set(key, resolved);
  }
  byObject.set(spec, resolved);
  return resolved;
}

export function clearResolveCache(): void {
  byKey.clear();
}

/** Whether a slot at instant t survives the window and the exclusions. */
export function admits(r: ResolvedSpec, t: number): boolean {
  return t >= r.from && t <= r.until && !(r.excluded?.has(localDateOf(r.zone, t)) ?? false);
}

/**
 * What the config refuses beyond each field's own format, because the fields together would
 * never fire or contradict each other. Assumes the zone is valid (checked on its own).
 */
export function specProblems(spec: SlotSpec): SpecProblem[] {
  const problems: SpecProblem[] = [];
  let r: ResolvedSpec;
  try {
    r = resolveSpec(spec);
  } catch {
    // A field that does not parse was reported by its own check.
    return problems;
  }
  if (spec.startAt !== undefined && spec.endAt !== undefined && r.until < r.from) {
    problems.push({ field: 'endAt', message: `must be after startAt ${JSON.stringify(spec.startAt)}` });
  }
  const { schedule } = spec;
  if (r.once !== undefined && isOnceSchedule(schedule)) {
    if (r.once.length === 0) {
      problems.push({
        field: 'schedule.at',
        message: `does not exist in ${spec.timezone} (the clock skips it for DST) and dst.gap is 'skip': the job would never run`,
      });
    } else if (!r.once.some((t) => admits(r, t))) {
      const first = r.once[0] ?? 0;
      const why =
        first < r.from
          ? `is before startAt ${JSON.stringify(spec.startAt)}`
          : first > r.until
            ? `is not before endAt ${JSON.stringify(spec.endAt)}`
            : 'falls on an excluded date';
      problems.push({ field: 'schedule.at', message: `${why}: the job would never run` });
    }
  }
  return problems;
}
