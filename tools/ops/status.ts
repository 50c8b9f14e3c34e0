/**
 * `ops status [--since 24h]`: per configured job, where the planner is (partition watermark), its
 * last run (the newest run whose slot has come, with its state), its runs by state since
 * `--since`, its oldest due open run (those of the window, plus the older ones in the sweeper's
 * watch index), whether it is paused (by whom, when and why); and the DLQ depth.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { jobPlanning } from '../../shared/store/job-planning.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { partitionOf } from '../../shared/core/partition.js';
import { RunStatus, type Run } from '../../shared/core/vocabulary.js';
import { jobsOf, noExtraPositionals, parseCommand, parseSince, stringOption } from './args.js';
import { cell, clockOf, EXIT_OK, formatAge, iso, NOTE_CELL_WIDTH, printJson, printTable, type OpsIo } from './io.js';
import { PROGRAM } from './help.js';
import { withTarget, type Target } from './target.js';

/** States of a run that has not ended. */
export const OPEN_STATUSES: readonly RunStatus[] = [RunStatus.READY, RunStatus.RUNNING, RunStatus.RETRY, RunStatus.UNKNOWN];

/** Open runs read from the index per status call; enough to find every job's oldest in practice. */
export const STATUS_OPEN_RUNS_LIMIT = 1_000;

export interface JobStatus {
  readonly job: string;
  readonly enabled: boolean;
  readonly partition?: number;
  readonly paused: boolean;
  /** Who paused it, when and why. */
  readonly pausedBy?: string;
  readonly pausedAt?: string;
  readonly pauseNote?: string;
  /** When the pause ends by itself (absent: at `ops resume`). */
  readonly pausedUntil?: string;
  /** Catching up on misfired slots. */
  readonly behind: boolean;
  /** The job is planned up to here (the partition watermark, or its own place while behind/paused). */
  readonly plannedUntil?: string;
  /** The newest run whose slot has come (not a run planned ahead of its slot). */
  readonly lastRun?: LastRun;
  /** Runs by state whose slot is at or after `since`. */
  readonly runs: Partial<Record<RunStatus, number>>;
  /** Open runs whose slot has come (due), and the oldest of them. */
  readonly openDue: number;
  readonly oldestOpenRunKey?: string;
  readonly oldestOpenAgeMs?: number;
}

export interface StatusReport {
  readonly target: string;
  readonly now: string;
  readonly since: string;
  readonly partitions?: number;
  readonly jobs: readonly JobStatus[];
  readonly deadLetterQueue: { readonly url: string; readonly visible: number; readonly inFlight: number };
  /** True when the open-runs read hit its limit (oldest ages are then lower bounds for unseen jobs). */
  readonly openRunsTruncated: boolean;
  /**
   * Open runs of jobs no longer in the config (the sweeper reports them, never dispatches them):
   * close each with `ops resolve`. Their count, and the oldest.
   */
  readonly orphans: { readonly count: number; readonly oldestRunKey?: string; readonly jobs: readonly string[] };
}

/** A job's newest run whose slot has come. */
export interface LastRun {
  readonly runKey: string;
  readonly slot: string;
  readonly status: RunStatus;
  readonly finishedAt?: string;
}

export function lastRunOf(run: Run | undefined): LastRun | undefined {
  return run === undefined ? undefined : { runKey: run.runKey, slot: iso(run.slot)!, status: run.status, finishedAt: iso(run.finishedAt) };
}

/** The newest run of the job whose slot is at or before `now` (runs the planner made ahead are not "last"). */
export async function latestDueRun(target: Target, job: string, now: number): Promise<Run | undefined> {
  const [latest] = await target.ops.queryRuns(job, { untilSlot: now + 1, limit: 1 });
  return latest;
}

/**
 * Open runs of one job whose slot has come, oldest first: the watched ones (from the open-runs
 * index, read once for every job) and those of the window since `since`.
 */
export async function dueOpenRuns(target: Target, job: string, watched: readonly Run[], since: number, now: number): Promise<Run[]> {
  const recent = await target.ops.queryRuns(job, { sinceSlot: since, untilSlot: now + 1, statuses: OPEN_STATUSES, ascending: true });
  const byKey = new Map([...watched.filter((r) => r.job === job), ...recent].map((r) => [r.runKey, r]));
  return [...byKey.values()].sort((a, b) => a.slot - b.slot);
}

export async function dlqDepth(target: Target): Promise<{ visible: number; inFlight: number }> {
  const { Attributes = {} } = await target.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: target.deadLetterQueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

export async function collectStatus(target: Target, jobs: readonly Job[], now: number, since: number): Promise<StatusReport> {
  const planning = await jobPlanning(
    target.ledger.planning,
    jobs.map((j) => j.name),
    partitionOf,
    now,
  );
  const open = await target.ledger.listOpenRuns(now, STATUS_OPEN_RUNS_LIMIT);
  const configured = new Set(jobs.map((j) => j.name));
  const orphans = open.filter((run) => !configured.has(run.job));
  const openByJob = new Map<string, typeof open>();
  for (const run of open) openByJob.set(run.job, [...(openByJob.get(run.job) ?? []), run]);

  const statuses = await Promise.all(
    jobs.map(async (job): Promise<JobStatus> => {
      const plan = planning.get(job.name)!;
      const latest = await latestDueRun(target, job.name, now);
      const runs = await target.ops.countRuns(job.name, { sinceSlot: since });
      // Open runs whose slot has come: those of the window, and older ones the sweeper watches.
      const jobOpen = await dueOpenRuns(target, job.name, openByJob.get(job.name) ?? [], since, now);
      const oldest = jobOpen[0];
      return {
        job: job.name,
        enabled: job.enabled,
        partition: plan.partition,
        paused: plan.pause !== undefined,
        pausedBy: plan.pause?.by,
        pausedAt: plan.pause?.at ? iso(plan.pause.at) : undefined,
        pauseNote: plan.pause?.note,
        pausedUntil: iso(plan.pause?.until),
        behind: plan.behind,
        plannedUntil: iso(plan.plannedUntil),
        lastRun: lastRunOf(latest),
        runs,
        openDue: jobOpen.length,
        oldestOpenRunKey: oldest?.runKey,
        oldestOpenAgeMs: oldest === undefined ? undefined : now - oldest.slot,
      };
    }),
  );
  const depth = await dlqDepth(target);
  return {
    target: target.description,
    now: new Date(now).toISOString(),
    since: new Date(since).toISOString(),
    partitions: [...planning.values()][0]?.of,
    jobs: statuses,
    deadLetterQueue: { url: target.deadLetterQueueUrl, ...depth },
    openRunsTruncated: open.length >= STATUS_OPEN_RUNS_LIMIT,
    orphans: {
      count: orphans.length,
      oldestRunKey: orphans[0]?.runKey,
      jobs: [...new Set(orphans.map((r) => r.job))].sort(),
    },
  };
}

const STATE_ORDER: readonly RunStatus[] = [
  RunStatus.READY,
  RunStatus.RUNNING,
  RunStatus.RETRY,
  RunStatus.UNKNOWN,
  RunStatus.SUCCEEDED,
  RunStatus.DEAD,
  RunStatus.SKIPPED,
  RunStatus.SUPERSEDED,
  RunStatus.MANUAL,
];

export function formatCounts(counts: Partial<Record<RunStatus, number>>): string {
  const parts = STATE_ORDER.filter((s) => (counts[s] ?? 0) > 0).map((s) => `${s.toLowerCase()} ${counts[s]}`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

/**
 * `PAUSED by alice 2h03m ago until 2026-12-06T18:00:00Z (in 1h57m): vendor outage`, or `no` /
 * `no (catching up)`. The row says paused only while the pause is in force (its reader applied
 * core/pause.ts at the same now).
 */
export function pauseCell(
  j: {
    readonly paused: boolean;
    readonly pausedBy?: string;
    readonly pausedAt?: string;
    readonly pauseNote?: string;
    readonly pausedUntil?: string;
    readonly behind: boolean;
  },
  now: number,
): string {
  if (!j.paused) return j.behind ? 'no (catching up)' : 'no';
  const when = j.pausedAt === undefined ? '' : ` ${formatAge(now - Date.parse(j.pausedAt))} ago`;
  const until =
    j.pausedUntil === undefined ? '' : ` until ${j.pausedUntil.replace(/\.000Z$/, 'Z')} (in ${formatAge(Date.parse(j.pausedUntil) - now)})`;
  // The note is cut to its cell (the whole note is in --json): the columns after it stay in place.
  return `PAUSED by ${cell(j.pausedBy ?? '?', NOTE_CELL_WIDTH)}${when}${until}${j.pauseNote ? `: ${cell(j.pauseNote, NOTE_CELL_WIDTH)}` : ''}`;
}

export async function statusCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { since: { type: 'string' } });
  noExtraPositionals(positionals, 0);
  const now = clockOf(io)();
  const since = parseSince(stringOption(values, 'since') ?? '24h', now, 'since');
  const jobs = jobsOf(io);
  const report = await withTarget(values, io, (target) => collectStatus(target, jobs, now, since));
  if (values.json) {
    printJson(io, report);
    return EXIT_OK;
  }
  io.stdout(`${report.target} · now ${report.now} · runs with slots since ${report.since}`);
  printTable(
    io,
    ['JOB', 'PAUSED', 'PLANNED UNTIL', 'LAST RUN', 'RUNS', 'OPEN DUE', 'OLDEST OPEN'],
    report.jobs.map((j) => [
      j.enabled ? j.job : `${j.job} (disabled)`,
      pauseCell(j, now),
      j.plannedUntil,
      j.lastRun === undefined ? undefined : `${j.lastRun.slot} ${j.lastRun.status}`,
      formatCounts(j.runs),
      j.openDue,
      j.oldestOpenAgeMs === undefined ? undefined : `${formatAge(j.oldestOpenAgeMs)} (${j.oldestOpenRunKey})`,
    ]),
  );
  if (report.openRunsTruncated) io.stdout(`note: more than ${STATUS_OPEN_RUNS_LIMIT} due open runs; open counts are partial`);
  if (report.orphans.count > 0) {
    io.stdout(
      `orphaned: ${report.orphans.count} open run(s) of job(s) no longer configured (${report.orphans.jobs.join(', ')}), oldest ${report.orphans.oldestRunKey}: ` +
        `no worker can run them; close each with \`${PROGRAM} resolve <runKey> --as dead --reason "job removed"\``,
    );
  }
  const dlq = report.deadLetterQueue;
  io.stdout(
    `DLQ: ${dlq.visible} visible, ${dlq.inFlight} in flight${dlq.visible + dlq.inFlight > 0 ? ` · inspect and redrive: ${PROGRAM} redrive --dry-run` : ''}`,
  );
  return EXIT_OK;
}
