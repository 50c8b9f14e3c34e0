/**
 * What the Jobs page reads, bounded by the page: the jobs are the deployed config's, in name
 * order, filtered by name and overlap policy without a read; the state filter reads only what
 * decides a job's state (the planner's paused list and the paused jobs' records, and for a bounded
 * job its last slot's runs); and each shown row reads at most ROW_RUNS_READ of its newest due runs
 * (one query of their summaries, LedgerOps.runSummaries: last run, failure streak, open runs and
 * DEAD runs among them) besides the planner's state of the page's jobs. Nothing is read for a job
 * the page does not show, but the few a state filter passes over on the way. A page's reads go out
 * at once (two BatchGetItem and one query per shown job): its time is about one round trip and the
 * ledger's work on 50 small queries, not 50 round trips in turn.
 */
import { jobPlanning, type JobPlanning } from '../../shared/store/job-planning.js';
import { partitionOf } from '../../shared/core/partition.js';
import { pauseInForce } from '../../shared/core/pause.js';
import { isTerminal, RunStatus, type Run } from '../../shared/core/vocabulary.js';
import type { RunSummary } from '../../shared/store/repairs.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { lastSlotOf, slotSpecOf } from '../../shared/schedule/slots.js';
import { streakRole } from '../../shared/worker/pause.js';
import { isFinished, JOBS_NEXT_FIRES, maxRunsFires, newestSlotRuns, runCountOf } from '../ops/jobs.js';
import { nextFires } from '../ops/preview.js';
import type { Target } from '../ops/target.js';

export const JOB_STATES = ['active', 'paused', 'disabled', 'finished'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** Jobs shown per page. */
export const JOBS_PER_PAGE = 50;
/** A row's newest due runs read at most: its streak, open and DEAD counts are of these. */
export const ROW_RUNS_READ = 25;
const DAY_MS = 86_400_000;

export interface JobsQuery {
  readonly name?: string;
  readonly state?: JobState;
  readonly policy?: string;
  /** The last job name of the previous page: this page starts after it. */
  readonly after?: string;
}

export interface FailureStreak {
  /** Consecutive failing runs, newest first (DEAD by failure, or failed and waiting to retry). */
  readonly count: number;
  /** The read ran out while the streak went on: it is at least `count`. */
  readonly atLeast: boolean;
}

/**
 * The failure streak of a job's runs read newest first: failing runs (DEAD by failure as
 * pauseOnFailure counts them, and RETRY: its last attempt failed) until the first success; runs
 * that did not run or that an operator closed neither count nor end it. `complete`: the runs are
 * all there are, else a streak that reaches the last run read is "at least".
 */
export function failureStreak(newestFirst: readonly Pick<Run, 'status' | 'lastError'>[], complete: boolean): FailureStreak {
  let count = 0;
  for (const run of newestFirst) {
    const role = run.status === RunStatus.RETRY ? 'failure' : streakRole(run);
    if (role === 'success') return { count, atLeast: false };
    if (role === 'failure') count++;
  }
  return { count, atLeast: !complete && count > 0 };
}

export interface JobsRow {
  readonly job: Job;
  readonly state: JobState;
  readonly plan: JobPlanning;
  readonly behind: boolean;
  readonly nextFires: readonly { readonly slot: number; readonly fireAt: number }[];
  readonly lastRun?: RunSummary;
  readonly streak: FailureStreak;
  /** Open runs among the runs read, and DEAD runs of the last 24 h among them. */
  readonly open: number;
  readonly dead24h: number;
  /** The runs read stop short of 24 h ago: the counts are at least these. */
  readonly countsPartial: boolean;
}

export interface JobsPage {
  readonly rows: readonly JobsRow[];
  /** The jobs the name and policy filters keep (before the state filter). */
  readonly matching: number;
  /** The `after` of the next page, if any job may follow. */
  readonly next?: string;
}

const bounded = (job: Job) => job.maxRuns !== undefined || lastSlotOf(slotSpecOf(job)) !== undefined;

/**
 * One page of the Jobs page's rows. The page's reads go out together: the planner's state of its
 * jobs (two BatchGetItem) beside one summary query per shown job (all at once, not in turns), so
 * the page waits for about one round trip, not one per job.
 */
export async function readJobsPage(target: Target, jobs: readonly Job[], query: JobsQuery, now: number): Promise<JobsPage> {
  const candidates = jobs
    .filter((j) => (query.name ? j.name.includes(query.name) : true) && (query.policy ? j.overlap === query.policy : true))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const after = query.after;
  const rest = after === undefined ? candidates : candidates.filter((j) => j.name > after);
  const page: Job[] = [];
  let next: string | undefined;
  /** Whether a bounded job is finished, as the state filter found it (not read again for its row). */
  const finished = new Map<string, boolean>();
  if (query.state === undefined) {
    page.push(...rest.slice(0, JOBS_PER_PAGE));
    if (rest.length > JOBS_PER_PAGE) next = page.at(-1)!.name;
  } else {
    const paused = await pausedNow(target, rest, now);
    let read = 0;
    // As many jobs at a time as the page has room for: each could be shown, so none is read in vain.
    while (read < rest.length && page.length < JOBS_PER_PAGE) {
      const chunk = rest.slice(read, read + JOBS_PER_PAGE - page.length);
      read += chunk.length;
      const states = await cheapStates(target, chunk, paused, now, finished);
      chunk.forEach((job, i) => {
        if (states[i] === query.state) page.push(job);
      });
    }
    if (page.length === JOBS_PER_PAGE && read < rest.length) next = page.at(-1)!.name;
  }
  const [planning, recents] = await Promise.all([
    jobPlanning(
      target.ledger.planning,
      page.map((j) => j.name),
      partitionOf,
      now,
    ),
    Promise.all(page.map((job) => target.ops.runSummaries(job.name, { untilSlot: now + 1, limit: ROW_RUNS_READ }))),
  ]);
  const rows = await Promise.all(
    page.map((job, i) => rowOf(target, job, planning.get(job.name)!, recents[i]!, finished.get(job.name), now)),
  );
  return { rows, matching: candidates.length, next };
}

/** The names among `jobs` paused at `now`: the planner's list, then the listed ones' records. */
async function pausedNow(target: Target, jobs: readonly Job[], now: number): Promise<Set<string>> {
  const state = await target.ledger.planning.readTickState();
  const listed = jobs.filter((j) => state.paused.has(j.name)).map((j) => j.name);
  const plans = listed.length > 0 ? await target.ledger.planning.readJobPlans(listed) : new Map();
  return new Set(listed.filter((name) => pauseInForce(plans.get(name)?.pause ?? { at: 0, by: '?' }, now)));
}

/**
 * The states of `jobs` for the filter. Reads only for the bounded jobs that are not paused (are
 * they finished?): their planning in one batch, then their last slots' runs at once; each answer
 * is noted in `finished`.
 */
async function cheapStates(
  target: Target,
  jobs: readonly Job[],
  paused: ReadonlySet<string>,
  now: number,
  finished: Map<string, boolean>,
): Promise<JobState[]> {
  const open = jobs.filter((job) => !paused.has(job.name) && bounded(job));
  if (open.length > 0) {
    const planning = await jobPlanning(
      target.ledger.planning,
      open.map((j) => j.name),
      partitionOf,
      now,
    );
    const done = await Promise.all(open.map((job) => finishedOf(target, job, planning.get(job.name)!, now)));
    open.forEach((job, i) => finished.set(job.name, done[i]!));
  }
  return jobs.map((job) =>
    paused.has(job.name) ? 'paused' : finished.get(job.name) === true ? 'finished' : job.enabled ? 'active' : 'disabled',
  );
}

async function finishedOf(target: Target, job: Job, plan: JobPlanning, now: number): Promise<boolean> {
  if (!bounded(job)) return false;
  const count = runCountOf(job, plan);
  return isFinished(target, job, now, job.maxRuns !== undefined && count !== undefined && count >= job.maxRuns);
}

/** A row from the job's planning and its newest due runs; a bounded job reads whether it is finished (unless known). */
async function rowOf(
  target: Target,
  job: Job,
  plan: JobPlanning,
  recent: readonly RunSummary[],
  known: boolean | undefined,
  now: number,
): Promise<JobsRow> {
  const finished = known ?? (await finishedOf(target, job, plan, now));
  const complete = recent.length < ROW_RUNS_READ;
  const count = runCountOf(job, plan);
  // A maxRuns job whose count is reached fires only the runs it has, up to its newest (maybe ahead of now).
  const newest =
    !finished && job.maxRuns !== undefined && count !== undefined && count >= job.maxRuns
      ? (await newestSlotRuns(target, job.name))[0]?.slot
      : undefined;
  const fires = finished
    ? []
    : maxRunsFires(job, nextFires({ spec: slotSpecOf(job), jitter: job }, now, JOBS_NEXT_FIRES), count, plan.plannedUntil, newest);
  const state: JobState = plan.pause !== undefined ? 'paused' : finished ? 'finished' : job.enabled ? 'active' : 'disabled';
  return {
    job,
    state,
    plan,
    behind: plan.behind,
    nextFires: fires,
    lastRun: recent[0],
    streak: failureStreak(recent, complete),
    open: recent.filter((run) => !isTerminal(run.status)).length,
    dead24h: recent.filter((run) => run.status === RunStatus.DEAD && run.slot >= now - DAY_MS).length,
    countsPartial: !complete && recent.at(-1)!.slot >= now - DAY_MS,
  };
}
