/**
 * The schema of the scheduling fields of a job (DESIGN §4): `schedule` in its three kinds,
 * `jitter`, `startAt` / `endAt` and `exclude`. Format checks only (zod/mini, no slot engine): what
 * needs the zone (a one-time slot inside the window, the window's order) is checked by the slot
 * engine's specProblems through ScheduleChecks, so the worker can share this schema.
 *
 * Each issue carries the path of the part at fault (`schedule.every`, `exclude.2.calendar`), and
 * messages quote other fields as written (`must be shorter than every "6h"`), never in ms.
 */
import * as z from 'zod/mini';
import { durationMs, type Duration } from './duration.js';
import { dateTimeError, parseDateTime, parseLocalDate } from './local-time.js';
import type { Schedule } from './schedule-spec.js';

const SECOND = 1000;

/** What a job may write as its schedule. */
export type ScheduleInput = string | { readonly every: Duration; readonly phase?: Duration } | { readonly at: string };

/** A date to exclude, or a named calendar of them (ParseJobsOptions.calendars). */
export type ExcludeEntry = string | { readonly calendar: string };

type Issues = { issues: { push(issue: { code: 'custom'; input: unknown; message: string; path?: PropertyKey[] }): void } };

function issue(ctx: Issues, input: unknown, message: string, path: PropertyKey[] = []): void {
  ctx.issues.push({ code: 'custom', input, message, path });
}

const SHAPE_MESSAGE =
  'schedule must be a cron expression ("*/5 * * * *"), an interval ({ every: "90s", phase?: "15s" }) or one instant ({ at: "2026-12-24T18:00:00" })';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unknownKeys(ctx: Issues, value: Record<string, unknown>, known: readonly string[]): boolean {
  let found = false;
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      issue(ctx, value[key], 'unknown field', [key]);
      found = true;
    }
  }
  return found;
}

/** A whole number of seconds of at least `min` ms, or undefined after recording why not. */
function seconds(ctx: Issues, value: unknown, field: 'every' | 'phase', min: number): number | undefined {
  const ms = durationMs(value);
  if (ms === undefined) {
    issue(ctx, value, `schedule.${field} must be milliseconds or a duration such as "90s", "7m", "6h"`, [field]);
    return undefined;
  }
  if (ms < min) {
    issue(ctx, value, `schedule.${field} must be at least 1s`, [field]);
    return undefined;
  }
  if (ms % SECOND !== 0) {
    issue(ctx, value, `schedule.${field} must be a whole number of seconds (slots are whole seconds)`, [field]);
    return undefined;
  }
  return ms;
}

function parseSchedule(value: ScheduleInput, ctx: Issues, cronError: (schedule: string) => string | undefined): Schedule {
  if (typeof value === 'string') {
    const problem = cronError(value);
    if (problem) issue(ctx, value, problem);
    return value;
  }
  if (!isRecord(value) || 'every' in value === 'at' in value) {
    issue(ctx, value, SHAPE_MESSAGE);
    return z.NEVER;
  }
  if ('at' in value) {
    if (unknownKeys(ctx, value, ['at'])) return z.NEVER;
    const problem = dateTimeError(value.at, 'schedule.at');
    if (problem) {
      issue(ctx, value.at, problem, ['at']);
      return z.NEVER;
    }
    const at = parseDateTime(value.at);
    if ((at?.kind === 'instant' ? at.ms : (at?.wall ?? 0)) % SECOND !== 0) {
      issue(ctx, value.at, 'schedule.at must be a whole second (slots are whole seconds)', ['at']);
      return z.NEVER;
    }
    return { at: value.at };
  }
  const bad = unknownKeys(ctx, value, ['every', 'phase']);
  const every = seconds(ctx, value.every, 'every', SECOND);
  const phase = value.phase === undefined ? 0 : seconds(ctx, value.phase, 'phase', 0);
  if (bad || every === undefined || phase === undefined) return z.NEVER;
  if (phase >= every) {
    issue(ctx, value.phase, `schedule.phase must be shorter than every ${JSON.stringify(value.every)}`, ['phase']);
    return z.NEVER;
  }
  return { every, phase };
}

/** `schedule`: a cron string checked with `cronError`, `{ every, phase? }` or `{ at }`. */
export function scheduleField(cronError: (schedule: string) => string | undefined) {
  return z.pipe(
    z.custom<ScheduleInput>((value) => value !== undefined, { message: 'schedule is required' }),
    z.transform((value: ScheduleInput, ctx) => parseSchedule(value, ctx, cronError)),
  );
}

/** `startAt` / `endAt`: a local date-time in the job's zone, a date, or an instant with an offset. */
export function dateTimeField(field: string) {
  return z.string().check(
    z.superRefine((value, ctx) => {
      const problem = dateTimeError(value, field);
      if (problem) ctx.issues.push({ code: 'custom', input: value, message: problem });
    }),
  );
}

/** `exclude`: local dates `YYYY-MM-DD` and `{ calendar: name }` references, checked for shape here and for names by parseJobs. */
export const excludeField = z.pipe(
  z.custom<readonly ExcludeEntry[]>(),
  z.transform((value: readonly ExcludeEntry[], ctx): readonly ExcludeEntry[] => {
    if (!Array.isArray(value)) {
      issue(ctx, value, 'exclude must be a list of dates ("2026-12-25") and calendars ({ calendar: "us-holidays" })');
      return z.NEVER;
    }
    let ok = true;
    value.forEach((entry: unknown, i) => {
      if (typeof entry === 'string') {
        if (parseLocalDate(entry) === undefined) {
          issue(ctx, entry, "an excluded date must be a real date YYYY-MM-DD (read in the job's timezone)", [i]);
          ok = false;
        }
      } else if (isRecord(entry) && typeof entry.calendar === 'string' && Object.keys(entry).length === 1) {
        // The name is checked against ParseJobsOptions.calendars by parseJobs.
      } else {
        issue(ctx, entry, 'expected a date "YYYY-MM-DD" or { calendar: "name" }', [i]);
        ok = false;
      }
    });
    return ok ? value : z.NEVER;
  }),
);

/** Why a calendar's dates are unusable, one message per bad date (index → message). */
export function calendarDateErrors(dates: unknown): { readonly index: number | undefined; readonly message: string }[] {
  if (!Array.isArray(dates)) return [{ index: undefined, message: 'a calendar must be a list of dates "YYYY-MM-DD"' }];
  const out: { index: number; message: string }[] = [];
  dates.forEach((date: unknown, index) => {
    if (parseLocalDate(date) === undefined) out.push({ index, message: 'not a real date YYYY-MM-DD' });
  });
  return out;
}

/** Longest jitter: SQS delays a message at most 15 minutes and the planner sends about a minute ahead. */
export const MAX_JITTER_MS = 600_000;
