/**
 * The actions that act on many runs at once, each with a dry run shown before it is confirmed:
 * - backfill: a past range of a job's slots, typed in the job's zone (`ops backfill`);
 * - redrive: the dead-letter queue's messages back to the run queue (`ops redrive`);
 * - retry-all: every DEAD run of a job, or of every deployed job (`ops retry --job`, per job).
 * Like every action they run the ops CLI's own commands (actions.ts), so the dry run and the
 * real one are exactly `--dry-run` and the plain command.
 */
import { BACKFILL_MAX_SLOTS } from '../../shared/operations/backfill.js';
import { firstInstantAtWall, zoneOf } from '../../shared/schedule/zone.js';
import { parseDateTime } from '../../shared/schedule/local-time.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import type { ActionSpec, OpsCommand } from './actions.js';
import { HttpError, type ConsoleContext } from './context.js';

type Json = Record<string, unknown>;
const list = (json: unknown): Json[] => (Array.isArray(json) ? (json as Json[]) : []);
const obj = (json: unknown): Json => (json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Json) : {});

/** The subject of retry-all that names every deployed job. */
export const ALL_JOBS = '*';

/** The deployed job of that name (404 naming where the console read the jobs). */
function jobNamed(ctx: ConsoleContext, name: string): Job {
  const found = ctx.jobs.find((j) => j.name === name);
  if (!found) throw new HttpError(404, `no job "${name}" in ${ctx.jobSource}`);
  return found;
}

/** The job's zone, for the range fields' labels and their reading. */
export function zoneOfJob(ctx: ConsoleContext, job: string): string {
  return jobNamed(ctx, job).timezone;
}

/** A date-time typed in `timezone` (`2026-12-01T07:00`), as the UTC instant the zone's clock shows it first. */
export function instantInZone(text: string, timezone: string, field: string): string {
  const parsed = parseDateTime(text.length === 16 ? `${text}:00` : text);
  if (parsed === undefined)
    throw new HttpError(400, `field "${field}": a date and time such as 2026-12-01T07:00 (in ${timezone}), got "${text}"`);
  const ms = parsed.kind === 'instant' ? parsed.ms : firstInstantAtWall(zoneOf(timezone), parsed.wall);
  return new Date(ms).toISOString();
}

function backfillCommand(job: string, f: Readonly<Record<string, string>>, ctx: ConsoleContext, dryRun: boolean): OpsCommand[] {
  const zone = zoneOfJob(ctx, job);
  const from = instantInZone(f.from!, zone, 'from');
  const to = instantInZone(f.to!, zone, 'to');
  return [{ name: 'backfill', args: [job, '--from', from, '--to', to, ...(dryRun ? ['--dry-run'] : [])], about: job }];
}

function retryCommands(scope: string, by: string, ctx: ConsoleContext, dryRun: boolean): OpsCommand[] {
  const jobs = scope === ALL_JOBS ? ctx.jobs.map((j) => j.name) : [jobNamed(ctx, scope).name];
  return jobs.map((job) => ({
    name: 'retry',
    args: ['--job', job, '--state', 'DEAD', '--by', by, ...(dryRun ? ['--dry-run'] : [])],
    about: job,
  }));
}

function retryAllLines(json: unknown, about: string): string[] {
  const entries = list(json);
  if (entries.length === 0) return [`${about}: no DEAD run to retry.`];
  return entries.map((e) => {
    const what =
      e.action === 'would-revive'
        ? `would be revived, ${String(e.from)} → ${String(e.to)}`
        : e.action === 'revived'
          ? `revived, ${String(e.from)} → ${String(e.to)}`
          : `${String(e.action)} (was ${String(e.from)})`;
    return `${String(e.runKey)}: ${what}${e.detail ? `: ${String(e.detail)}` : ''}.`;
  });
}

export const BULK_ACTIONS: Readonly<Record<string, ActionSpec>> = {
  backfill: {
    title: 'Backfill',
    subject: 'job',
    fields: [
      { name: 'from', label: 'From (inclusive)', required: true, localTime: true },
      { name: 'to', label: 'To (exclusive, not in the future)', required: true, localTime: true },
    ],
    describe: (job) =>
      `Create the runs of ${job}'s slots in the range that do not exist yet, and dispatch them (10 a second). Slots that already have a run are left alone.`,
    commands: (job, f, _by, ctx) => backfillCommand(job, f, ctx, false),
    preview: (job, f, _by, ctx) => backfillCommand(job, f, ctx, true),
    summarize: (json, job) => {
      const r = obj(json);
      const range = `[${String(r.from)}, ${String(r.to)})`;
      if (r.dryRun !== true)
        return [
          `Created ${String(r.created)} run(s) of ${job} in ${range}; ${String(r.existing)} already existed; ${String(r.sent)} dispatched.`,
        ];
      const runs = Number(r.runs);
      const existing = Number(r.alreadyInLedger ?? 0);
      return [
        `${job} has ${String(r.slots)} slot(s) (${runs} run(s)) in ${range}${Number(r.slots) > 0 ? `, the first ${String(r.firstSlot)}, the last ${String(r.lastSlot)}` : ''}.`,
        `${existing} already in the ledger: ${Math.max(0, runs - existing)} would be created.`,
        ...(Number(r.slots) > BACKFILL_MAX_SLOTS
          ? [
              `The range holds more than ${BACKFILL_MAX_SLOTS} slots: the backfill itself will be refused (the CLI's --force is not offered here).`,
            ]
          : []),
      ];
    },
  },
  redrive: {
    title: 'Redrive the dead-letter queue',
    subject: 'dlq',
    fields: [],
    describe: () =>
      "Give the DEAD runs of the dead-letter queue's messages a fresh attempt budget, then move every message back to the run queue (10 a second). A SUCCEEDED run is never executed again.",
    commands: (_s, _f, by) => [{ name: 'redrive', args: ['--by', by], about: 'the DLQ' }],
    preview: (_s, _f, by) => [{ name: 'redrive', args: ['--by', by, '--dry-run'], about: 'the DLQ' }],
    summarize: (json) => {
      const r = obj(json);
      const entries = list(r.entries).map(
        (e) =>
          `message ${String(e.messageId)}${e.runKey ? ` (run ${String(e.runKey)}, ${String(e.status)})` : ''}: ${String(e.action)}${e.detail ? `: ${String(e.detail)}` : ''}.`,
      );
      const counts = `${String(r.messages)} message(s): ${String(r.revived)} revived, ${String(r.skippedSucceeded)} skipped (succeeded), ${String(r.skippedTerminal)} skipped (other terminal), ${String(r.open)} still open, ${String(r.changed)} changed meanwhile, ${String(r.unknown)} unknown.`;
      if (Number(r.messages) === 0) return ['The dead-letter queue is empty: nothing to redrive.'];
      return [
        ...entries,
        r.dryRun === true ? `Dry run: ${counts}` : `${counts}${r.taskHandle ? ` Move task started: ${String(r.taskHandle)}.` : ''}`,
      ];
    },
  },
  'retry-all': {
    title: 'Retry all DEAD runs',
    subject: 'jobs',
    fields: [],
    describe: (scope) =>
      `Give every DEAD run of ${scope === ALL_JOBS ? 'every deployed job' : scope} (the newest 100 per job) a fresh attempt budget and send it again, one by one; a run another person or worker changed meanwhile is left alone.`,
    commands: (scope, _f, by, ctx) => retryCommands(scope, by, ctx, false),
    preview: (scope, _f, by, ctx) => retryCommands(scope, by, ctx, true),
    summarize: retryAllLines,
  },
};
