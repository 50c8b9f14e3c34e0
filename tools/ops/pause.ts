/**
 * `ops pause <job> [--note TEXT] [--until TIME|DURATION] [--by NAME]` / `ops resume <job>`: the
 * pause use case of shared/operations/pause.ts, printed. `--until` reads as parsePauseUntil does:
 * a duration, a date-time, or a time of day (`14:00`, its next occurrence on the job's clock).
 *
 * While paused the planner materializes nothing for the job, and the job's plan item remembers
 * where it stopped and who paused it, why, and until when (shown by `status` and `jobs`). On
 * resume, or when the pause's `--until` comes (nothing to run then: the planner reads it), the
 * planner plans from there: slots older than `misfire.after` are misfires and follow the job's
 * misfire policy (skip → SKIPPED runs, latest → the newest one only, all → every one, at most
 * maxPerTick per tick); the newer ones run as on-time slots, never one from before the job was
 * first planned. Runs already materialized before the pause (up to the lookahead) still execute.
 */
import { parsePauseUntil, pauseJob, PauseRequestError, resumeJob } from '../../shared/operations/pause.js';
import type { PauseRecord } from '../../shared/core/pause.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { configuredJob, noExtraPositionals, operatorOf, parseCommand, stringOption } from './args.js';
import { clockOf, EXIT_OK, iso, printJson, UsageError, type OpsIo } from './io.js';
import { localTime } from './preview.js';
import { PROGRAM } from './help.js';
import { withTarget } from './target.js';

export const pauseUsage = 'pause <job> [--note TEXT] [--until TIME|DURATION] [--by NAME]';
export const resumeUsage = 'resume <job>';

export function misfireSummary(job: Job): string {
  const { policy, after, maxPerTick } = job.misfire;
  const what =
    policy === 'skip'
      ? 'are recorded as SKIPPED runs'
      : policy === 'latest'
        ? 'collapse into one run of the newest'
        : `all run, at most ${maxPerTick} per tick`;
  return `slots missed more than ${Math.round(after / 1000)}s ago ${what} (misfire policy "${policy}")`;
}

/** A pause's end in UTC and on the job's own clock: `2026-12-24T17:00:00.000Z (2026-12-24 18:00 +01:00 Europe/Paris)`. */
export function untilText(until: number, timezone: string): string {
  return `${iso(until)} (${localTime(until, timezone)} ${timezone})`;
}

/** The JSON of a pause record: its times as ISO, as `ops jobs --json` shows them. */
function pauseJson(pause: PauseRecord | undefined) {
  return pause === undefined ? undefined : { by: pause.by, at: iso(pause.at), note: pause.note, until: iso(pause.until) };
}

function byWhom(pause: PauseRecord | undefined, timezone: string): string {
  if (pause === undefined) return '';
  return `by ${pause.by} at ${iso(pause.at)}${pause.note ? ` (${pause.note})` : ''}${pause.until !== undefined ? `, until ${untilText(pause.until, timezone)}` : ''}`;
}

export async function pauseCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { note: { type: 'string' }, until: { type: 'string' }, by: { type: 'string' } });
  noExtraPositionals(positionals, 1);
  const job = configuredJob(io, positionals[0]);
  const now = clockOf(io)();
  const by = operatorOf(values, io);
  const note = stringOption(values, 'note')?.trim() || undefined;
  const rawUntil = stringOption(values, 'until');
  let until: number | undefined;
  try {
    until = rawUntil === undefined ? undefined : parsePauseUntil(rawUntil, now, job.timezone);
  } catch (error) {
    if (error instanceof PauseRequestError) throw new UsageError(error.field, error.message);
    throw error;
  }
  const report = await withTarget(values, io, (target) => pauseJob(target.ledger.planning, { job, by, note, until, now }));
  if (report.neverPlanned) io.stderr('warning: the planner has never run against this ledger: the pause applies from its first tick');
  if (values.json) {
    printJson(io, {
      job: report.job,
      action: report.action,
      changed: report.changed,
      paused: report.pause !== undefined,
      pausedBy: report.pause?.by,
      pausedAt: iso(report.pause?.at),
      pauseNote: report.pause?.note,
      pausedUntil: iso(report.pause?.until),
      replacedExpired: pauseJson(report.replacedExpired),
      plannedUntil: iso(report.plannedUntil),
      misfire: job.misfire,
    });
    return EXIT_OK;
  }
  const planned = `planned up to ${iso(report.plannedUntil) ?? '-'}`;
  if (!report.changed) {
    io.stdout(`${job.name} was already paused ${byWhom(report.pause, job.timezone)}: that pause stays as it is; ${planned}`);
    return EXIT_OK;
  }
  const ends =
    report.pause?.until === undefined
      ? `nothing new is materialized until \`${PROGRAM} resume ${job.name}\``
      : `nothing new is materialized until ${untilText(report.pause.until, job.timezone)}, when it resumes by itself (or \`${PROGRAM} resume ${job.name}\` before): ${misfireSummary(job)}`;
  const replaced = report.replacedExpired
    ? ` (it replaces the pause ${byWhom(report.replacedExpired, job.timezone)}, which had ended)`
    : '';
  io.stdout(`paused ${job.name}${note ? ` (${note})` : ''}${replaced}: ${ends}; ${planned}`);
  return EXIT_OK;
}

export async function resumeCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {});
  noExtraPositionals(positionals, 1);
  const job = configuredJob(io, positionals[0]);
  const now = clockOf(io)();
  const report = await withTarget(values, io, (target) => resumeJob(target.ledger.planning, job, now));
  if (report.neverPlanned) io.stderr('warning: the planner has never run against this ledger: the resume applies from its first tick');
  if (values.json) {
    printJson(io, {
      job: report.job,
      action: report.action,
      changed: report.changed,
      paused: report.pause !== undefined,
      expired: pauseJson(report.expired),
      plannedUntil: iso(report.plannedUntil),
      misfire: job.misfire,
    });
    return EXIT_OK;
  }
  if (report.changed)
    io.stdout(`resumed ${job.name}: the next tick plans from ${iso(report.plannedUntil) ?? 'now'}; ${misfireSummary(job)}`);
  else if (report.expired?.until !== undefined)
    io.stdout(`${job.name} was not paused: its pause ${byWhom(report.expired, job.timezone)} had ended by itself; its record is cleared`);
  else io.stdout(`${job.name} was not paused`);
  return EXIT_OK;
}
