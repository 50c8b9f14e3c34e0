/**
 * What the Jobs page reads, bounded by the page: the jobs are the deployed config's, in name
 * order, filtered by name and overlap policy without a read; the state filter reads only what
 * decides a job's state (the planner's paused list and the paused jobs' records, and for a bounded
 * job its last slot's runs); and each shown row reads at most ROW_RUNS_READ of its newest due runs
 * (one query: last run, failure streak, open runs and DEAD runs among them) besides the planner's
 * state of the page's jobs. Nothing is read for a job the page does not show, but the few a state
 * filter passes over on the way.
 */
import { jobPlanning, type JobPlanning } from '../../shared/store/job-planning.js';
import { partitionOf } from '../../shared/core/partition.js';
import { pauseInForce } from '../../shared/core/pause.js';
import { mapBounded } from '../../shared/core/concurrency.js';
import { isTerminal, RunStatus, type Run } from '../../shared/core/vocabulary.js';
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
/** Jobs read at once. */
const ROWS_IN_FLIGHT = 10;
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
  readonly lastRun?: Run;
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

/** One page of the Jobs page's rows. */
export async function readJobsPage(target: Target, jobs: readonly Job[], query: JobsQuery, now: number): Promise<JobsPage> {
  const candidates = jobs
    .filter((j) => (query.name ? j.name.includes(query.name) : true) && (query.policy ? j.overlap === query.policy : true))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const after = query.after;
  const rest = after === undefined ? candidates : candidates.filter((j) => j.name > after);
  const page: Job[] = [];
  let next: string | undefined;
  if (query.state === undefined) {
    page.push(...rest.slice(0, JOBS_PER_PAGE));
    if (rest.length > JOBS_PER_PAGE) next = page.at(-1)!.name;
  } else {
    const paused = await pausedNow(target, rest, now);
    for (const job of rest) {
      if (page.length === JOBS_PER_PAGE) {
        next = page.at(-1)!.name;
        break;
      }
      if ((await cheapState(target, job, paused, now)) === query.state) page.push(job);
    }
  }
  const planning = await jobPlanning(
    target.ledger.planning,
    page.map((j) => j.name),
    partitionOf,
    now,
  );
  const rows = await mapBounded(page, ROWS_IN_FLIGHT, (job) => readRow(target, job, planning.get(job.name)!, now));
  return { rows, matching: candidates.length, next };
}

/** The names among `jobs` paused at `now`: the planner's list, then the listed ones' records. */
async function pausedNow(target: Target, jobs: readonly Job[], now: number): Promise<Set<string>> {
  const state = await target.ledger.planning.readTickState();
  const listed = jobs.filter((j) => state.paused.has(j.name)).map((j) => j.name);
  const plans = listed.length > 0 ? await target.ledger.planning.readJobPlans(listed) : new Map();
  return new Set(listed.filter((name) => pauseInForce(plans.get(name)?.pause ?? { at: 0, by: '?' }, now)));
}

/** A job's state for the filter; reads only for a bounded job that is not paused (is it finished?). */
async function cheapState(target: Target, job: Job, paused: ReadonlySet<string>, now: number): Promise<JobState> {
  if (paused.has(job.name)) return 'paused';
  if (bounded(job)) {
    const plan = (await jobPlanning(target.ledger.planning, [job.name], partitionOf, now)).get(job.name)!;
    if (await finishedOf(target, job, plan, now)) return 'finished';
  }
  return job.enabled ? 'active' : 'disabled';
}

async function finishedOf(target: Target, job: Job, plan: JobPlanning, now: number): Promise<boolean> {
  if (!bounded(job)) return false;
  const count = runCountOf(job, plan);
  return isFinished(target, job, now, job.maxRuns !== undefined && count !== undefined && count >= job.maxRuns);
}

async function readRow(target: Target, job: Job, plan: JobPlanning, now: number): Promise<JobsRow> {
  const [recent, finished] = await Promise.all([
    target.ops.queryRuns(job.name, { untilSlot: now + 1, limit: ROW_RUNS_READ }),
    finishedOf(target, job, plan, now),
  ]);
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
