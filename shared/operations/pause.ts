/**
 * Pause and resume one job: the use case `ops pause|resume` and the console's pause dialog share.
 * It flips the job's own planning state (PlannerStore.pause / resume), which follows the job
 * whatever the planner's partition count, and reports what it found and what it left; it prints
 * nothing.
 *
 * A pause may end by itself: with `until`, the planner plans the job again from that instant, as
 * after `ops resume` (core/pause.ts), and nothing is written then. `parsePauseUntil` reads the
 * operator's `until`: a duration from now (`2h`, `90m`, `1d`), a date-time, read in the job's
 * own zone unless it carries `Z` or an offset, or a time of day (`14:00`), its next occurrence on
 * the job's clock.
 */
import type { PlannerStore } from '../store/planner-state.js';
import { jobPlanning } from '../store/job-planning.js';
import { partitionOf } from '../core/partition.js';
import { pauseInForce, type PauseRecord } from '../core/pause.js';
import type { Job } from '../schedule/job-schema.js';
import { durationMs } from '../schedule/duration.js';
import { parseDateTime } from '../schedule/local-time.js';
import { firstInstantAtWall, localDateOf, resolveWall, zoneOf, type Zone } from '../schedule/zone.js';

/** The request cannot be carried out as asked; `field` names the input at fault. */
export class PauseRequestError extends Error {
  override readonly name = 'PauseRequestError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const ISO = (ms: number) => new Date(ms).toISOString();

const DAY = 86_400_000;
/** A time of day without a date: `14:00`, `9:30`, `14:00:30`. */
const CLOCK_TIME = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/;

/** Milliseconds past local midnight a time of day names, or undefined when it is not one. */
function clockTimeOf(text: string): number | undefined {
  const m = CLOCK_TIME.exec(text);
  if (!m) return undefined;
  const [h, mi, s] = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  if (h > 23 || mi > 59 || s > 59) return undefined;
  return ((h * 60 + mi) * 60 + s) * 1_000;
}

/**
 * The first instant after `now` at which the zone's clock shows the time of day `clock`: on the
 * zone's date of `now` if that reading is still ahead, else on the next date (the day after, should
 * the clocks skip a whole date). A reading the clocks skip that day ends at the transition that
 * skips it; one they show twice counts at each showing, so between the two it is the second.
 */
function nextClockTime(zone: Zone, clock: number, now: number): number | undefined {
  const today = localDateOf(zone, now);
  for (let day = 0; day < 3; day++) {
    const reading = resolveWall(zone, today + day * DAY + clock);
    const at = reading.instants.find((t) => t > now) ?? (reading.gap !== undefined && reading.gap.at > now ? reading.gap.at : undefined);
    if (at !== undefined) return at;
  }
  return undefined;
}

/**
 * When a pause asked to end at `raw` ends (UTC ms): `now` plus a duration (`2h`), a date-time
 * (`2026-12-24T18:00`, `2026-12-24`) read in `timezone` when it has no offset (a reading the
 * clocks skip ends at the transition; one they show twice, at its first occurrence), or a time of
 * day (`14:00`): its next occurrence in `timezone`, today if still ahead, else tomorrow
 * (nextClockTime). Refuses an empty, unreadable, zero or past value, naming it as written.
 */
export function parsePauseUntil(raw: string, now: number, timezone: string): number {
  const text = raw.trim();
  const duration = /^\d/.test(text) && !/^\d{4}-/.test(text) ? durationMs(text) : undefined;
  if (duration !== undefined) {
    if (duration <= 0) throw new PauseRequestError('until', `must be in the future: "${raw}" is no time from now`);
    return now + duration;
  }
  const clock = clockTimeOf(text);
  if (clock !== undefined) {
    const at = nextClockTime(zoneOf(timezone), clock, now);
    if (at === undefined) throw new PauseRequestError('until', `"${raw}" does not come on the clocks of ${timezone} in the next days`);
    return at;
  }
  const value = parseDateTime(text.replace(' ', 'T'));
  if (value === undefined) {
    throw new PauseRequestError(
      'until',
      `must be a duration from now such as 2h, 90m, 1d, a date-time such as 2026-12-24T18:00 (read in the job's zone, ${timezone}) or 2026-12-24T18:00Z, or a time of day such as 14:00 (its next occurrence in ${timezone}); got "${raw}"`,
    );
  }
  const at = value.kind === 'instant' ? value.ms : firstInstantAtWall(zoneOf(timezone), value.wall);
  if (at <= now) {
    const read = value.kind === 'instant' ? '' : ` (read in ${timezone})`;
    throw new PauseRequestError('until', `must be in the future: "${raw}"${read} is ${ISO(at)}, not after now (${ISO(now)})`);
  }
  return at;
}

export interface PauseRequest {
  readonly job: Job;
  readonly by: string;
  readonly note?: string;
  /** When the pause ends by itself (UTC ms, after `now`); undefined: at `ops resume`. */
  readonly until?: number;
  readonly now: number;
}

export interface PauseState {
  readonly job: string;
  /** The pause in force after the call (undefined: the job is planned). */
  readonly pause?: PauseRecord;
  /** How far the job is planned (its own cursor while paused or behind). */
  readonly plannedUntil?: number;
  /** The planner has never run against this ledger: the state applies from its first tick. */
  readonly neverPlanned: boolean;
}

export interface PauseReport extends PauseState {
  readonly action: 'pause';
  /** This call paused the job; false: a pause was already in force and stays as it was. */
  readonly changed: boolean;
  /** A pause whose `until` had come was recorded before this one (this call replaced it). */
  readonly replacedExpired?: PauseRecord;
}

export interface ResumeReport extends PauseState {
  readonly action: 'resume';
  /** This call lifted a pause in force; false: the job was not paused. */
  readonly changed: boolean;
  /** The job's pause had ended by itself at its `until` (this call cleared its record). */
  readonly expired?: PauseRecord;
}

async function stateOf(planning: PlannerStore, job: string, now: number): Promise<PauseState & { recorded?: PauseRecord }> {
  const [view, plan] = await Promise.all([
    jobPlanning(planning, [job], partitionOf, now).then((m) => m.get(job)!),
    planning.readJobPlan(job),
  ]);
  return { job, pause: view.pause, plannedUntil: view.plannedUntil, neverPlanned: view.of === undefined, recorded: plan?.pause };
}

/** Pauses `request.job` where its planning stands (nothing new is materialized for it from the next tick). */
export async function pauseJob(planning: PlannerStore, request: PauseRequest): Promise<PauseReport> {
  const { job, by, note, until, now } = request;
  if (until !== undefined && until <= now)
    throw new PauseRequestError('until', `must be in the future: ${ISO(until)} is not after now (${ISO(now)})`);
  const before = await stateOf(planning, job.name, now);
  const record: PauseRecord = { at: now, by, ...(note ? { note } : {}), ...(until !== undefined ? { until } : {}) };
  const changed = await planning.pause(job.name, before.plannedUntil ?? now, record);
  const after = await stateOf(planning, job.name, now);
  const expired = before.recorded !== undefined && !pauseInForce(before.recorded, now) ? before.recorded : undefined;
  return {
    action: 'pause',
    job: job.name,
    changed,
    pause: after.pause,
    plannedUntil: after.plannedUntil,
    neverPlanned: after.neverPlanned,
    ...(changed && expired ? { replacedExpired: expired } : {}),
  };
}

/** Resumes `job`: the next tick plans it from its cursor under its misfire policy. */
export async function resumeJob(planning: PlannerStore, job: Job, now: number): Promise<ResumeReport> {
  const before = await stateOf(planning, job.name, now);
  const cleared = await planning.resume(job.name);
  const after = await stateOf(planning, job.name, now);
  const expired = cleared && before.pause === undefined && before.recorded !== undefined ? before.recorded : undefined;
  return {
    action: 'resume',
    job: job.name,
    changed: cleared && before.pause !== undefined,
    pause: after.pause,
    plannedUntil: after.plannedUntil,
    neverPlanned: after.neverPlanned,
    ...(expired ? { expired } : {}),
  };
}
