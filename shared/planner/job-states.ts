/**
 * What a tick reads of its jobs' own state before it plans (the planner's exception lists and the
 * plan items they name): which are paused now, which are catching up and from where, and each
 * `maxRuns` job's count of scheduled slots.
 */
import { legacyRunCount, slotSpecOf } from '../core/plan.js';
import { pauseInForce } from '../core/pause.js';
import type { Job } from '../schedule/job-schema.js';
import type { JobPlan, PlannerStore, TickState } from '../store/planner-state.js';

export interface JobStates {
  readonly paused: ReadonlySet<string>;
  readonly behind: ReadonlyMap<string, number>;
  readonly edges: ReadonlyMap<string, number>;
  readonly runCounts: ReadonlyMap<string, number>;
  /** Listed as behind without a cursor: interrupted between the two writes, or caught up. */
  readonly staleListings: readonly string[];
}

export async function readJobStates(
  planning: Pick<PlannerStore, 'readJobPlans'>,
  jobs: readonly Job[],
  state: TickState,
  partitionPlannedUntil: number | undefined,
  now: number,
): Promise<JobStates> {
  const mine = new Set(jobs.map((j) => j.name));
  // The listed pauses' records say when each ends: read them (few jobs are paused).
  const listedPaused = [...state.paused].filter((name) => mine.has(name));
  const listedBehind = [...state.behind].filter((name) => mine.has(name) && !state.paused.has(name));
  // maxRuns jobs carry their bound on their plan item: read those too (few jobs set it).
  const bounded = jobs.filter((job) => job.maxRuns !== undefined).map((job) => job.name);
  const toRead = [...new Set([...listedPaused, ...listedBehind, ...bounded])];
  const plans = toRead.length > 0 ? await planning.readJobPlans(toRead) : new Map<string, JobPlan>();
  // A listed job without a record stays paused (its pause's details are lost, not its pause).
  const paused = new Set(listedPaused.filter((name) => pauseInForce(plans.get(name)?.pause ?? { at: 0, by: '?' }, now)));
  // A job whose pause expired is planned as one resumed: from its cursor, under its misfire policy.
  const listed = new Set([...listedBehind, ...listedPaused.filter((name) => !paused.has(name))]);
  const behind = new Map<string, number>();
  const edges = new Map<string, number>();
  for (const plan of plans.values()) {
    // Only a listed job is behind: a job read for its maxRuns count alone is not.
    if (plan.cursor === undefined || !listed.has(plan.job)) continue;
    behind.set(plan.job, plan.cursor);
    if (plan.edge !== undefined) edges.set(plan.job, plan.edge);
  }
  // maxRuns: each job's count of scheduled slots, or the one implied by a bound earlier code recorded.
  const runCounts = new Map<string, number>();
  for (const job of jobs) {
    if (job.maxRuns === undefined) continue;
    const plan = plans.get(job.name);
    const until = behind.get(job.name) ?? partitionPlannedUntil ?? now;
    const legacy =
      plan?.firstSlot !== undefined && plan.lastSlot !== undefined
        ? legacyRunCount(slotSpecOf(job), { firstSlot: plan.firstSlot, lastSlot: plan.lastSlot }, until, job.maxRuns)
        : 0;
    runCounts.set(job.name, plan?.planned ?? legacy);
  }
  // A job listed as behind whose plan has no cursor was interrupted between the two writes, or
  // caught up: drop it from the list.
  const staleListings = listedBehind.filter((name) => !behind.has(name));
  return { paused, behind, edges, runCounts, staleListings };
}
