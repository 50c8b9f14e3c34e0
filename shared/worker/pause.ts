/**
 * `pauseOnFailure: N` (DESIGN §4): after a run ends DEAD, the job is paused if its N most recent
 * ended runs, this one included, all ended DEAD by failure. Recent means by slot: a run with a
 * newer slot that succeeded ends the streak, even when it finished before this one (a backfilled
 * or caught-up old slot that fails after the live job's newest run succeeded says nothing about the
 * job's health now). The check reads only on a DEAD outcome (two bounded queries of the runs just
 * before and after), so jobs that succeed pay nothing for it. A run an operator closed
 * (`ops resolve`, lastError RESOLVED, or MANUAL) neither counts nor breaks the streak; SKIPPED and
 * SUPERSEDED runs, and runs refused for their deadline before they ever started
 * (DEADLINE_BEFORE_START), did not run and are passed over too. Manual runs count like scheduled
 * ones. `ops resume` clears the pause as any other.
 */
import type { Ledger } from '../store/ledger.js';
import { jobPlanning } from '../store/job-planning.js';
import { partitionOf } from '../core/partition.js';
import type { Job } from '../schedule/job-schema-core.js';
import { DEADLINE_BEFORE_START } from '../core/outcome.js';
import { RunStatus, type Run } from '../core/vocabulary.js';
import { PAUSED_BY_FAILURE } from '../core/pause.js';
import type { RunLogger } from '../handler-api.js';
import { MetricName, type MetricsSink } from '../runtime/observability.js';

/** What an ended run says about a failure streak. */
export function streakRole(run: Pick<Run, 'status' | 'lastError'>): 'failure' | 'success' | 'ignored' {
  if (run.status === RunStatus.DEAD)
    return run.lastError?.code === 'RESOLVED' || run.lastError?.code === DEADLINE_BEFORE_START ? 'ignored' : 'failure';
  if (run.status === RunStatus.SUCCEEDED) return 'success';
  return 'ignored';
}

/**
 * The length of the failure streak ending with `latest`, given the runs before it (newest first)
 * and after it (oldest first); capped at `enough`. A success after it ends the streak (0): the
 * job's newest ended run decides whether it is failing now.
 */
export function failureStreak(
  latest: Pick<Run, 'status' | 'lastError'>,
  before: readonly Pick<Run, 'status' | 'lastError'>[],
  enough: number,
  after: readonly Pick<Run, 'status' | 'lastError'>[] = [],
): number {
  if (streakRole(latest) !== 'failure') return 0;
  if (after.some((run) => streakRole(run) === 'success')) return 0;
  // Open runs neither count nor break it: only ended runs have a role.
  let streak = 1 + after.filter((run) => streakRole(run) === 'failure').length;
  for (const run of before) {
    if (streak >= enough) break;
    const role = streakRole(run);
    if (role === 'success') break;
    if (role === 'failure') streak++;
  }
  return Math.min(streak, enough);
}

export async function pauseOnRepeatedFailure(
  deps: { readonly ledger: Ledger; readonly clock: () => number; readonly metrics: MetricsSink },
  job: Job,
  run: Run,
  lastError: { code: string; message: string },
  logger: RunLogger,
): Promise<void> {
  const n = job.pauseOnFailure;
  if (n === undefined) return;
  if (streakRole({ status: RunStatus.DEAD, lastError }) !== 'failure') return;
  // Enough neighbours to see N ended runs past the ones that did not run; bounded work. The runs
  // after it: a success there (the live job's newest run, say) ends the streak.
  const neighbours = Math.min(1_000, n * 4);
  const after = await deps.ledger.nearestRuns(job.name, run.slot, 'after', neighbours);
  const before = n > 1 ? await deps.ledger.nearestRuns(job.name, run.slot, 'before', neighbours) : [];
  const streak = failureStreak({ status: RunStatus.DEAD, lastError }, before, n, after);
  if (streak < n) return;
  const note = `paused after ${n} consecutive DEAD run(s); last ${run.runKey}: ${lastError.code}`;
  // Paused where the job's planning stands (as `ops pause` does), never at this run's slot: the
  // run may be an old one (backfilled, retried), and a cursor moved back to it would have resume
  // "catch up" slots from before the job was first planned.
  const planning = (await jobPlanning(deps.ledger.planning, [job.name], partitionOf, deps.clock())).get(job.name);
  const plannedUntil = planning?.plannedUntil ?? deps.clock();
  const paused = await deps.ledger.planning.pause(job.name, plannedUntil, { by: PAUSED_BY_FAILURE, note, at: deps.clock() });
  if (!paused) return;
  deps.metrics.count(MetricName.JobsPausedOnFailure);
  logger.error('job paused after repeated failures: ops resume clears it', {
    pauseOnFailure: n,
    lastRunKey: run.runKey,
    code: lastError.code,
  });
}
