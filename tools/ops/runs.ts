/**
 * `ops runs --job J [--state S[,S…]] [--since ISO|duration] [--until ISO] [--limit N]`: a
 * configured job's runs, newest first (consistent reads, paginated). The runs of a job no longer
 * configured are reached by run key (`show`, `resolve`); `status` lists them as orphaned.
 */
import { RunOrigin, RunStatus, type Run } from '../../shared/core/vocabulary.js';
import { configuredJob, noExtraPositionals, parseCommand, parsePositive, parseSince, parseInstant, parseStatuses, requireOption, stringOption } from './args.js';
import { clockOf, EXIT_OK, formatAge, iso, printJson, printTable, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const runsUsage = 'runs --job NAME [--state S[,S]] [--since ISO|24h] [--until ISO] [--limit 50]';

/** Where the run came from; a manual run adds who triggered it and the note. */
function originOf(run: Run): string {
  const origin = run.origin ?? RunOrigin.PLANNED;
  if (origin !== RunOrigin.MANUAL) return origin;
  const by = run.triggeredBy ? ` by ${run.triggeredBy}` : '';
  return `${origin}${by}${run.note ? `: ${run.note.slice(0, 40)}` : ''}`;
}

export function runRow(run: Run, now: number): (string | number | undefined)[] {
  const lease =
    run.leaseUntil === undefined ? undefined : run.leaseUntil >= now ? `${formatAge(run.leaseUntil - now)} left` : `expired ${formatAge(now - run.leaseUntil)} ago`;
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
    run.lastError && run.status !== RunStatus.SUCCEEDED && run.status !== RunStatus.MANUAL ? `${run.lastError.code}: ${run.lastError.message}`.slice(0, 80) : undefined,
  ];
}

export const RUN_HEADERS = ['RUN KEY', 'STATUS', 'ORIGIN', 'ATTEMPT', 'TOKEN', 'OWNER', 'LEASE', 'NEXT ATTEMPT', 'FINISHED', 'LAST ERROR'];

export async function runsCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {
    job: { type: 'string' },
    state: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    limit: { type: 'string' },
  });
  noExtraPositionals(positionals, 0);
  const job = configuredJob(io, requireOption(values, 'job')).name;
  const now = clockOf(io)();
  const statuses = parseStatuses(stringOption(values, 'state'));
  const sinceRaw = stringOption(values, 'since');
  const untilRaw = stringOption(values, 'until');
  const sinceSlot = sinceRaw === undefined ? undefined : parseSince(sinceRaw, now, 'since');
  const untilSlot = untilRaw === undefined ? undefined : parseInstant(untilRaw, 'until');
  const limit = parsePositive(stringOption(values, 'limit'), 'limit', 50, { integer: true });
  const runs = await withTarget(values, io, (target) => target.ops.queryRuns(job, { sinceSlot, untilSlot, statuses, limit }));
  if (values.json) {
    printJson(io, runs);
    return EXIT_OK;
  }
  if (runs.length === 0) {
    io.stdout(`no runs of ${job}${statuses ? ` in state ${statuses.join(',')}` : ''}${sinceSlot !== undefined ? ` since ${iso(sinceSlot)}` : ''}`);
    return EXIT_OK;
  }
  printTable(io, RUN_HEADERS, runs.map((run) => runRow(run, now)));
  if (runs.length === limit) io.stdout(`(first ${limit}; --limit N for more)`);
  return EXIT_OK;
}
