/**
 * `ops status [--since 24h]`: per configured job, where the planner is (partition watermark, last
 * materialized slot), its runs by state since `--since`, its oldest due open run (from the
 * open-runs index), whether it is paused; and the DLQ depth.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { jobPlanning } from '../../shared/adapters/planner-store.js';
import type { Job } from '../../shared/core/job-schema.js';
import { partitionOf } from '../../shared/core/partition.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { jobsOf, noExtraPositionals, parseCommand, parseSince, stringOption } from './args.js';
import { clockOf, EXIT_OK, formatAge, iso, printJson, printTable, type OpsIo } from './io.js';
import { withTarget, type Target } from './target.js';

/** Open runs read from the index per status call; enough to find every job's oldest in practice. */
export const STATUS_OPEN_RUNS_LIMIT = 1_000;

export interface JobStatus {
  readonly job: string;
  readonly enabled: boolean;
  readonly partition?: number;
  readonly paused: boolean;
  /** Who paused it and why. */
  readonly pausedBy?: string;
  readonly pauseNote?: string;
  /** Catching up on misfired slots. */
  readonly behind: boolean;
  /** The job is planned up to here (the partition watermark, or its own place while behind/paused). */
  readonly plannedUntil?: string;
  /** The newest slot with a run in the ledger. */
  readonly lastSlot?: string;
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
}

export async function dlqDepth(target: Target): Promise<{ visible: number; inFlight: number }> {
  const { Attributes = {} } = await target.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: target.deadLetterQueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return { visible: Number(Attributes.ApproximateNumberOfMessages ?? 0), inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0) };
}

export async function collectStatus(target: Target, jobs: readonly Job[], now: number, since: number): Promise<StatusReport> {
  const planning = await jobPlanning(target.ledger.planning, jobs.map((j) => j.name), partitionOf);
  const open = await target.ledger.listOpenRuns(now, STATUS_OPEN_RUNS_LIMIT);
  const openByJob = new Map<string, typeof open>();
  for (const run of open) openByJob.set(run.job, [...(openByJob.get(run.job) ?? []), run]);

  const statuses = await Promise.all(
    jobs.map(async (job): Promise<JobStatus> => {
      const plan = planning.get(job.name)!;
      const [latest] = await target.ops.queryRuns(job.name, { limit: 1 });
      const runs = await target.ops.countRuns(job.name, { sinceSlot: since });
      // Open runs whose slot has come: those of the window, and older ones the sweeper watches.
      const recent = await target.ops.queryRuns(job.name, { sinceSlot: since, untilSlot: now + 1, statuses: OPEN_STATUSES, ascending: true });
      const byKey = new Map([...(openByJob.get(job.name) ?? []), ...recent].map((r) => [r.runKey, r]));
      const jobOpen = [...byKey.values()].sort((a, b) => a.slot - b.slot);
      const oldest = jobOpen[0];
      return {
        job: job.name,
        enabled: job.enabled,
        partition: plan.partition,
        paused: plan.pause !== undefined,
        pausedBy: plan.pause?.by,
        pauseNote: plan.pause?.note,
        behind: plan.behind,
        plannedUntil: iso(plan.plannedUntil),
        lastSlot: iso(latest?.slot),
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
  };
}

const OPEN_STATUSES: readonly RunStatus[] = [RunStatus.READY, RunStatus.RUNNING, RunStatus.RETRY, RunStatus.UNKNOWN];

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
    ['JOB', 'PAUSED', 'PLANNED UNTIL', 'LAST SLOT', 'RUNS', 'OPEN DUE', 'OLDEST OPEN'],
    report.jobs.map((j) => [
      j.enabled ? j.job : `${j.job} (disabled)`,
      j.paused ? `PAUSED by ${j.pausedBy ?? '?'}${j.pauseNote ? `: ${j.pauseNote}` : ''}` : j.behind ? 'no (catching up)' : 'no',
      j.plannedUntil,
      j.lastSlot,
      formatCounts(j.runs),
      j.openDue,
      j.oldestOpenAgeMs === undefined ? undefined : `${formatAge(j.oldestOpenAgeMs)} (${j.oldestOpenRunKey})`,
    ]),
  );
  if (report.openRunsTruncated) io.stdout(`note: more than ${STATUS_OPEN_RUNS_LIMIT} due open runs; open counts are partial`);
  const dlq = report.deadLetterQueue;
  io.stdout(
    `DLQ: ${dlq.visible} visible, ${dlq.inFlight} in flight${dlq.visible + dlq.inFlight > 0 ? ' · inspect and redrive: npm run ops -- redrive --dry-run' : ''}`,
  );
  return EXIT_OK;
}
