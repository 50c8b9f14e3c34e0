/**
 * `ops runs [--job J] [--state S[,S…]] [--since ISO|duration] [--until ISO] [--limit N]`: runs,
 * newest first (consistent reads, every page of each query). Without `--job`, the runs of every
 * configured job: each job's newest `limit` (+1, to know whether more exist), merged by slot.
 * The runs of a job no longer configured are reached by run key (`show`, `resolve`); `status`
 * lists them as orphaned.
 */
import { mapBounded } from '../../shared/core/concurrency.js';
import type { RunQuery } from '../../shared/store/repairs.js';
import { RunOrigin, RunStatus, type Run } from '../../shared/core/vocabulary.js';
import {
  configuredJob,
  jobsOf,
  noExtraPositionals,
  parseCommand,
  parsePositive,
  parseSince,
  parseInstant,
  parseStatuses,
  stringOption,
  RUN_FILTER_OPTIONS,
} from './args.js';
import { cell, clockOf, ERROR_CELL_WIDTH, EXIT_OK, formatAge, iso, NOTE_CELL_WIDTH, printJson, printTable, type OpsIo } from './io.js';
import { withTarget, type Target } from './target.js';

export const runsUsage = 'runs [--job NAME] [--state S[,S]] [--since ISO|24h] [--until ISO] [--limit 50]';

/** Jobs queried at once when listing every job's runs. */
const JOBS_IN_FLIGHT = 8;

/** Where the run came from; a manual run adds who triggered it and the note. */
function originOf(run: Run): string {
  const origin = run.origin ?? RunOrigin.PLANNED;
  if (origin !== RunOrigin.MANUAL) return origin;
  const by = run.triggeredBy ? ` by ${run.triggeredBy}` : '';
  return `${origin}${by}${run.note ? `: ${cell(run.note, NOTE_CELL_WIDTH)}` : ''}`;
}

export function runRow(run: Run, now: number): (string | number | undefined)[] {
  const lease =
    run.leaseUntil === undefined
      ? undefined
      : run.leaseUntil >= now
        ? `${formatAge(run.leaseUntil - now)} left`
        : `expired ${formatAge(now - run.leaseUntil)} ago`;
  return [
    run.runKey,
    run.status,
    originOf(run),
    run.attempt,
    run.fencingToken,
    run.owner,
    run.status === 'RUNNING' ? lease : undefined,
    iso(run.nextAttemptAt),
    iso(run.finishedAt),
    // A run that ended well carries no current error (an older item may still hold an attempt's).
    run.lastError && run.status !== RunStatus.SUCCEEDED && run.status !== RunStatus.MANUAL
      ? cell(`${run.lastError.code}: ${run.lastError.message}`, ERROR_CELL_WIDTH)
      : undefined,
  ];
}

export const RUN_HEADERS = ['RUN KEY', 'STATUS', 'ORIGIN', 'ATTEMPT', 'TOKEN', 'OWNER', 'LEASE', 'NEXT ATTEMPT', 'FINISHED', 'LAST ERROR'];

/** Newest first; runs of one slot by job, then shard. */
function newestFirst(a: Run, b: Run): number {
  return b.slot - a.slot || a.job.localeCompare(b.job) || a.shard - b.shard;
}

/**
 * The newest `limit` runs of the jobs matching the query, and whether more exist: each job's
 * query reads every page it needs (a filter on status may leave a first page empty).
 */
export async function runsOfJobs(
  target: Target,
  jobs: readonly string[],
  query: RunQuery & { readonly limit: number },
): Promise<{ runs: Run[]; more: boolean }> {
  const perJob = await mapBounded(jobs, JOBS_IN_FLIGHT, (job) => target.ops.queryRuns(job, { ...query, limit: query.limit + 1 }));
  const all = perJob.flat().sort(newestFirst);
  return { runs: all.slice(0, query.limit), more: all.length > query.limit };
}

export async function runsCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, RUN_FILTER_OPTIONS);
  noExtraPositionals(positionals, 0);
  const only = stringOption(values, 'job');
  const jobs = only === undefined ? jobsOf(io).map((j) => j.name) : [configuredJob(io, only).name];
  const now = clockOf(io)();
  const statuses = parseStatuses(stringOption(values, 'state'));
  const sinceRaw = stringOption(values, 'since');
  const untilRaw = stringOption(values, 'until');
  const sinceSlot = sinceRaw === undefined ? undefined : parseSince(sinceRaw, now, 'since');
  const untilSlot = untilRaw === undefined ? undefined : parseInstant(untilRaw, 'until');
  const limit = parsePositive(stringOption(values, 'limit'), 'limit', 50, { integer: true });
  const { runs, more } = await withTarget(values, io, (target) => runsOfJobs(target, jobs, { sinceSlot, untilSlot, statuses, limit }));
  if (values.json) {
    printJson(io, runs);
    return EXIT_OK;
  }
  if (runs.length === 0) {
    io.stdout(
      `no runs of ${only ?? `any of the ${jobs.length} configured job(s)`}${statuses ? ` in state ${statuses.join(',')}` : ''}${sinceSlot !== undefined ? ` since ${iso(sinceSlot)}` : ''}`,
    );
    return EXIT_OK;
  }
  printTable(
    io,
    RUN_HEADERS,
    runs.map((run) => runRow(run, now)),
  );
  if (more) io.stdout(`(the newest ${limit}; more exist: --limit N, or narrow with --since/--until)`);
  return EXIT_OK;
}
