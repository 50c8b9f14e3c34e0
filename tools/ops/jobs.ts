/**
 * `ops jobs [--job NAME]`: one row per configured job, like `kubectl get cronjob`: its schedule
 * and zone, whether it is paused (by whom, when, why), disabled or finished, its next three fire
 * times, its last run (the newest run whose slot has come: slot, state, finish time), its due open
 * runs and its DEAD runs whose slot is in the last 24 h. The table shows the next fire times in UTC
 * and in the job's zone (with the offset in force at each); `--json` prints an array of JobRow,
 * its times in UTC.
 *
 * Next fire times come from the planner's own slot code (nextSlotAfter / slotsBetween) mapped
 * through fireTimeOf: for a job with jitter they are when its runs fire (slot + its offset), the
 * slots themselves are alongside in `nextSlots`. They are the schedule's: a paused or disabled job
 * fires none of them until it is resumed or enabled.
 *
 * A bounded job (a one-time `schedule: { at }`, an `endAt`, or `maxRuns`) is finished once its last
 * slot has passed and every run of that slot has ended; one whose window holds no slot at all is
 * finished from the start. A `maxRuns` job's last slot is its newest run once the planner's count
 * of its scheduled slots (on its plan item) reached N; before that, its next fire times stop
 * after the runs it has left.
 */
import { jobPlanning, type JobPlanning } from '../../shared/store/job-planning.js';
import { legacyRunCount } from '../../shared/core/plan.js';
import { mapBounded } from '../../shared/core/concurrency.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { partitionOf } from '../../shared/core/partition.js';
import { describeSchedule, lastSlotOf, slotSpecOf } from '../../shared/schedule/slots.js';
import { isTerminal, RunStatus, type Run } from '../../shared/core/vocabulary.js';
import { configuredJob, jobsOf, noExtraPositionals, parseCommand, stringOption } from './args.js';
import { clockOf, EXIT_OK, formatAge, iso, printJson, printTable, type OpsIo } from './io.js';
import { localTime, nextFires } from './preview.js';
import { dueOpenRuns, latestDueRun, lastRunOf, pauseCell, STATUS_OPEN_RUNS_LIMIT, type LastRun } from './status.js';
import { withTarget, type Target } from './target.js';

export const jobsUsage = 'jobs [--job NAME]';

/** Fire times listed per job. */
export const JOBS_NEXT_FIRES = 3;
/** The window of the DEAD count. */
const DEAD_WINDOW_MS = 24 * 3_600_000;
/** Jobs read at once (each is a few queries). */
const JOBS_IN_FLIGHT = 8;

export interface JobRow {
  readonly job: string;
  readonly enabled: boolean;
  /** describeSchedule: the cron expression, `every 6h`, `at 2026-12-24T18:00:00`, window and exclusions. */
  readonly schedule: string;
  readonly timezone: string;
  /** The job's jitter (ms): when set, `nextFireTimes` are slot + offset. */
  readonly jitterMs?: number;
  readonly paused: boolean;
  readonly pausedBy?: string;
  readonly pausedAt?: string;
  readonly pauseNote?: string;
  /** When the pause ends by itself (absent: at `ops resume`); the row stops saying paused from then on. */
  readonly pausedUntil?: string;
  /** Catching up on misfired slots. */
  readonly behind: boolean;
  readonly plannedUntil?: string;
  /** A bounded job whose last slot has passed and whose runs of it have all ended. */
  readonly finished: boolean;
  /** When the next runs fire (ISO, UTC): the slots, plus the jitter offset if the job has jitter. */
  readonly nextFireTimes: readonly string[];
  readonly nextSlots: readonly string[];
  readonly lastRun?: LastRun;
  /** Open runs whose slot has come. */
  readonly openRuns: number;
  /** DEAD runs whose slot is in the last 24 h. */
  readonly deadLast24h: number;
}

/** A `maxRuns` job's count of scheduled slots (undefined for a job without maxRuns). */
export function runCountOf(job: Job, plan: JobPlanning): number | undefined {
  if (job.maxRuns === undefined) return undefined;
  if (plan.planned !== undefined) return plan.planned;
  return plan.legacyBound
    ? legacyRunCount(slotSpecOf(job), plan.legacyBound, plan.plannedUntil ?? Number.POSITIVE_INFINITY, job.maxRuns)
    : 0;
}

/** The runs of a job's newest slot (one query; a slot's shards sit together). */
export async function newestSlotRuns(target: Target, job: string): Promise<Run[]> {
  const newest = await target.ops.queryRuns(job, { limit: MAX_SHARDS_READ });
  const slot = newest[0]?.slot;
  return newest.filter((run) => run.slot === slot);
}

/** Runs read to find every shard of a job's newest slot. */
const MAX_SHARDS_READ = 100;

/**
 * Whether a bounded job is done: its last slot passed and every run of it ended (or it has no slot
 * at all). The last slot is the schedule's own or, for a `maxRuns` job whose count is reached, its
 * newest run's, whichever comes first.
 */
export async function isFinished(target: Target, job: Job, now: number, countReached: boolean): Promise<boolean> {
  const own = lastSlotOf(slotSpecOf(job));
  if (own === -Infinity) return true;
  const ended = (runs: readonly Run[]) => runs.length > 0 && runs.length >= runs[0]!.shards && runs.every((run) => isTerminal(run.status));
  if (countReached) {
    const newest = await newestSlotRuns(target, job.name);
    if (newest.length === 0) return true;
    if (newest[0]!.slot <= now && ended(newest)) return true;
  }
  if (own === undefined || now <= own) return false;
  // Each run carries its own shard count: the job's may have changed since.
  return ended(await target.ops.queryRuns(job.name, { sinceSlot: own, untilSlot: own + 1 }));
}

export async function collectJobs(target: Target, jobs: readonly Job[], now: number): Promise<JobRow[]> {
  const planning = await jobPlanning(
    target.ledger.planning,
    jobs.map((j) => j.name),
    partitionOf,
    now,
  );
  const watched = await target.ledger.listOpenRuns(now, STATUS_OPEN_RUNS_LIMIT);
  const since = now - DEAD_WINDOW_MS;
  return mapBounded(jobs, JOBS_IN_FLIGHT, async (job): Promise<JobRow> => {
    const plan = planning.get(job.name)!;
    const count = runCountOf(job, plan);
    const countReached = job.maxRuns !== undefined && count !== undefined && count >= job.maxRuns;
    const [finished, latest, open, counts, newest] = await Promise.all([
      isFinished(target, job, now, countReached),
      latestDueRun(target, job.name, now),
      dueOpenRuns(target, job.name, watched, since, now),
      target.ops.countRuns(job.name, { sinceSlot: since, untilSlot: now + 1 }),
      countReached ? newestSlotRuns(target, job.name) : Promise.resolve([]),
    ]);
    const fires = finished
      ? []
      : maxRunsFires(
          job,
          nextFires({ spec: slotSpecOf(job), jitter: job }, now, JOBS_NEXT_FIRES),
          count,
          plan.plannedUntil,
          newest[0]?.slot,
        );
    return {
      job: job.name,
      enabled: job.enabled,
      schedule: describeSchedule(job),
      timezone: job.timezone,
      ...(job.jitter ? { jitterMs: job.jitter } : {}),
      paused: plan.pause !== undefined,
      pausedBy: plan.pause?.by,
      pausedAt: plan.pause?.at ? iso(plan.pause.at) : undefined,
      pauseNote: plan.pause?.note,
      pausedUntil: iso(plan.pause?.until),
      behind: plan.behind,
      plannedUntil: iso(plan.plannedUntil),
      finished,
      nextFireTimes: fires.map((f) => iso(f.fireAt)!),
      nextSlots: fires.map((f) => iso(f.slot)!),
      lastRun: lastRunOf(latest),
      openRuns: open.length,
      deadLast24h: counts[RunStatus.DEAD] ?? 0,
    };
  });
}

/**
 * A `maxRuns` job's next fire times: with its count reached, only the runs already created (up to
 * its newest slot); below it, the slots already planned and then as many as it has runs left.
 */
export function maxRunsFires<F extends { readonly slot: number }>(
  job: Job,
  fires: readonly F[],
  count: number | undefined,
  plannedUntil: number | undefined,
  newestSlot: number | undefined,
): F[] {
  if (job.maxRuns === undefined || count === undefined) return [...fires];
  if (count >= job.maxRuns) return fires.filter((f) => newestSlot !== undefined && f.slot <= newestSlot);
  const planned = fires.filter((f) => plannedUntil !== undefined && f.slot <= plannedUntil);
  return [...planned, ...fires.filter((f) => plannedUntil === undefined || f.slot > plannedUntil).slice(0, job.maxRuns - count)];
}

/** ISO without the milliseconds when they are zero: `2026-06-15T12:01:00Z`. */
function short(instant: string): string {
  return instant.replace(/\.000Z$/, 'Z');
}

function stateCell(row: JobRow, now: number): string {
  if (row.paused) return pauseCell(row, now);
  if (row.finished) return 'finished';
  if (!row.enabled) return 'disabled';
  return row.behind ? 'catching up' : 'active';
}

export async function jobsCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { job: { type: 'string' } });
  noExtraPositionals(positionals, 0);
  const only = stringOption(values, 'job');
  const jobs = only === undefined ? jobsOf(io) : [configuredJob(io, only)];
  const now = clockOf(io)();
  const rows = await withTarget(values, io, (target) => collectJobs(target, jobs, now));
  if (values.json) {
    printJson(io, rows);
    return EXIT_OK;
  }
  if (rows.length === 0) {
    io.stdout('no configured jobs');
    return EXIT_OK;
  }
  printTable(
    io,
    [
      'JOB',
      'SCHEDULE',
      'TIMEZONE',
      'JITTER',
      'STATE',
      'NEXT FIRES (UTC)',
      'NEXT FIRES (JOB ZONE)',
      'LAST RUN',
      'FINISHED',
      'OPEN',
      'DEAD 24H',
    ],
    rows.map((row) => [
      row.job,
      row.schedule,
      row.timezone,
      row.jitterMs === undefined ? undefined : formatAge(row.jitterMs),
      stateCell(row, now),
      row.nextFireTimes.map(short).join(', ') || (row.finished ? 'none (finished)' : 'none'),
      // The same instants on the job's own clock, with the offset in force at each (a DST change shows).
      row.nextFireTimes.map((t) => localTime(Date.parse(t), row.timezone)).join(', ') || undefined,
      row.lastRun === undefined ? undefined : `${short(row.lastRun.slot)} ${row.lastRun.status}`,
      row.lastRun?.finishedAt === undefined ? undefined : short(row.lastRun.finishedAt),
      row.openRuns,
      row.deadLast24h,
    ]),
  );
  if (rows.some((row) => row.jitterMs !== undefined))
    io.stdout("NEXT FIRES: slot + the job's jitter offset where JITTER is set (the slots: --json nextSlots)");
  return EXIT_OK;
}
