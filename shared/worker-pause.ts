/**
 * `pauseOnFailure: N` (DESIGN §4): after a run ends DEAD, the job is paused if its N most recent
 * ended runs, this one included, all ended DEAD by failure. The check reads only on a DEAD
 * outcome (a bounded query of the runs just before), so jobs that succeed pay nothing for it.
 * A run an operator closed (`ops resolve`, lastError RESOLVED, or MANUAL) neither counts nor
 * breaks the streak; SKIPPED and SUPERSEDED runs did not run and are passed over too. Manual runs
 * count like scheduled ones. `ops resume` clears the pause as any other.
 */
import type { Ledger } from './adapters/ledger.js';
import { jobPlanning } from './adapters/planner-store.js';
import { partitionOf } from './core/partition.js';
import type { Job } from './core/job-schema-core.js';
import { RunStatus, type Run } from './core/vocabulary.js';
import type { RunLogger } from './handler-api.js';
import { MetricName, type MetricsSink } from './observability.js';

/** The `by` of a pause that pauseOnFailure made (the gauge of jobs paused by failure counts these). */
export const PAUSED_BY_FAILURE = 'pauseOnFailure';

/** What an ended run says about a failure streak. */
export function streakRole(run: Pick<Run, 'status' | 'lastError'>): 'failure' | 'success' | 'ignored' {
  if (run.status === RunStatus.DEAD) return run.lastError?.code === 'RESOLVED' ? 'ignored' : 'failure';
  if (run.status === RunStatus.SUCCEEDED) return 'success';
  return 'ignored';
}

/** The length of the failure streak ending with `latest`, given the runs before it (newest first); capped at `enough`. */
export function failureStreak(latest: Pick<Run, 'status' | 'lastError'>, before: readonly Pick<Run, 'status' | 'lastError'>[], enough: number): number {
  if (streakRole(latest) !== 'failure') return 0;
  let streak = 1;
  for (const run of before) {
    if (streak >= enough) break;
    const role = streakRole(run);
    if (role === 'success') break;
    if (role === 'failure') streak++;
    // Open runs are not in `before`'s statuses that matter: they neither count nor break it.
  }
  return streak;
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
  // Enough neighbours to see N ended runs past the ones that did not run; bounded work.
  const before = n > 1 ? await deps.ledger.nearestRuns(job.name, run.slot, 'before', Math.min(1_000, n * 4)) : [];
  const streak = failureStreak({ status: RunStatus.DEAD, lastError }, before, n);
  if (streak < n) return;
  const note = `paused after ${n} consecutive DEAD run(s); last ${run.runKey}: ${lastError.code}`;
  // Paused where the job's planning stands (as `ops pause` does), never at this run's slot: the
  // run may be an old one (backfilled, retried), and a cursor moved back to it would have resume
  // "catch up" slots from before the job was first planned.
  const planning = (await jobPlanning(deps.ledger.planning, [job.name], partitionOf)).get(job.name);
  const plannedUntil = planning?.plannedUntil ?? deps.clock();
  const paused = await deps.ledger.planning.pause(job.name, plannedUntil, { by: PAUSED_BY_FAILURE, note, at: deps.clock() });
  if (!paused) return;
  deps.metrics.count(MetricName.JobsPausedOnFailure);
  logger.error('job paused after repeated failures: ops resume clears it', { pauseOnFailure: n, lastRunKey: run.runKey, code: lastError.code });
}
