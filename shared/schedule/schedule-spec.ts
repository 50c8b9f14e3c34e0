/**
 * What a job's slots depend on (DESIGN §3, §4), as one value the slot engine takes: the schedule
 * in one of its three kinds, the zone and DST policy, the active window and the excluded dates.
 *
 * No runtime dependency on the slot engine: the worker and the config schema import these types
 * and helpers without bringing the cron parser or the zone tables along.
 */
import type { DstGapPolicy, DstOverlapPolicy } from './dst.js';
import { formatDuration } from './duration.js';

/** Fires at epoch + n × every + phase (UTC, whole seconds), for every integer n. */
export interface IntervalSchedule {
  readonly every: number;
  readonly phase: number;
}

/** Fires once: a local date-time read in the job's zone, or an instant with an offset, as written. */
export interface OnceSchedule {
  readonly at: string;
}

/** A cron expression (5 or 6 fields, see cron.ts), an interval, or one instant. */
export type Schedule = string | IntervalSchedule | OnceSchedule;

export interface SlotSpec {
  readonly schedule: Schedule;
  /** IANA zone, e.g. 'America/New_York': where cron fields, `at`, window bounds and excluded dates are read. */
  readonly timezone: string;
  readonly dst: { readonly gap: DstGapPolicy; readonly overlap: DstOverlapPolicy };
  /** No slot before this instant (inclusive), as written: local date-time, date or instant with offset. @default unbounded */
  readonly startAt?: string;
  /** No slot at or after this instant (exclusive), as written. @default unbounded */
  readonly endAt?: string;
  /** Local dates (`2026-12-25`) in the zone on which no slot fires. @default none */
  readonly exclude?: readonly string[];
}

/** A problem with one field of a spec (a dotted path such as `schedule.at`), for the config's error list. */
export interface SpecProblem {
  readonly field: string;
  readonly message: string;
}

export function isIntervalSchedule(schedule: Schedule): schedule is IntervalSchedule {
  return typeof schedule === 'object' && 'every' in schedule;
}

export function isOnceSchedule(schedule: Schedule): schedule is OnceSchedule {
  return typeof schedule === 'object' && 'at' in schedule;
}

/** The fields of a job the slots depend on. */
export interface SlotFields {
  readonly schedule: Schedule;
  readonly timezone: string;
  readonly dst: SlotSpec['dst'];
  readonly startAt?: string;
  readonly endAt?: string;
  readonly exclude?: readonly string[];
}

const specs = new WeakMap<SlotFields, SlotSpec>();

/**
 * A job's SlotSpec. The same job object always gets the same spec object, so the slot engine's
 * per-spec cache (resolved window, dates) is hit on every tick.
 */
export function slotSpecOf(job: SlotFields): SlotSpec {
  let spec = specs.get(job);
  if (spec === undefined) {
    spec = {
      schedule: job.schedule,
      timezone: job.timezone,
      dst: job.dst,
      ...(job.startAt === undefined ? {} : { startAt: job.startAt }),
      ...(job.endAt === undefined ? {} : { endAt: job.endAt }),
      ...(job.exclude === undefined || job.exclude.length === 0 ? {} : { exclude: job.exclude }),
    };
    specs.set(job, spec);
  }
  return spec;
}

/** One line for tables and logs: `*\/5 * * * *`, `every 6h phase 1h`, `at 2026-12-24T18:00:00`, then window and exclusions. */
export function describeSchedule(spec: Pick<SlotSpec, 'schedule' | 'startAt' | 'endAt' | 'exclude'>): string {
  const { schedule } = spec;
  let text: string;
  if (typeof schedule === 'string') text = schedule;
  else if (isIntervalSchedule(schedule)) {
    text = `every ${formatDuration(schedule.every)}${schedule.phase === 0 ? '' : ` phase ${formatDuration(schedule.phase)}`}`;
  } else text = `at ${schedule.at}`;
  if (spec.startAt !== undefined) text += ` from ${spec.startAt}`;
  if (spec.endAt !== undefined) text += ` until ${spec.endAt}`;
  const excluded = spec.exclude?.length ?? 0;
  if (excluded > 0) text += ` except ${excluded} date${excluded === 1 ? '' : 's'}`;
  return text;
}
