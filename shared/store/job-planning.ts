/** How the planner sees each job, for the operator's commands and pages: one read of the planner's state. */
import { pauseAt } from '../core/pause.js';
import type { JobPlan, PlannerStore } from './planner-state.js';

/** How the planner sees one job: for ops (status, jobs, pause). */
export interface JobPlanning {
  readonly job: string;
  /** Under the current layout (undefined: the planner never ran). */
  readonly partition?: number;
  readonly of?: number;
  readonly pause?: JobPlan['pause'];
  /** Catching up (its own cursor is behind its partition's watermark). */
  readonly behind: boolean;
  /** The job is planned up to here. */
  readonly plannedUntil?: number;
  /** A `maxRuns` job's count of scheduled slots created so far (undefined: none counted). */
  readonly planned?: number;
  /** The bound earlier code recorded instead of a count (legacyRunCount turns it into one). */
  readonly legacyBound?: { readonly firstSlot: number; readonly lastSlot: number };
}

/**
 * Per job: paused at `now` (who, why, until), behind, and how far it is planned, from one read of
 * the planner's state. A pause whose `until` has come is not reported: the job is planned again
 * (behind, from its cursor, until it catches up).
 */
export async function jobPlanning(
  store: PlannerStore,
  jobs: readonly string[],
  partitionOf: (job: string, of: number) => number,
  now: number,
): Promise<Map<string, JobPlanning>> {
  const state = await store.readTickState();
  const exceptional = jobs;
  const plans = exceptional.length > 0 ? await store.readJobPlans(exceptional) : new Map<string, JobPlan>();
  const out = new Map<string, JobPlanning>();
  for (const job of jobs) {
    const plan = plans.get(job);
    const layout = state.layout;
    const partition = layout ? partitionOf(job, layout.of) : undefined;
    const partitionUntil = layout && partition !== undefined ? layout.partitions.get(partition)?.plannedUntil : undefined;
    // Listed as paused without a record: a pause in force whose details are lost.
    const pause = state.paused.has(job) ? pauseAt(plan?.pause ?? { at: 0, by: '?' }, now) : undefined;
    out.set(job, {
      job,
      partition,
      of: layout?.of,
      pause,
      behind: plan?.cursor !== undefined && pause === undefined,
      plannedUntil: plan?.cursor ?? partitionUntil,
      planned: plan?.planned,
      ...(plan?.firstSlot !== undefined && plan.lastSlot !== undefined
        ? { legacyBound: { firstSlot: plan.firstSlot, lastSlot: plan.lastSlot } }
        : {}),
    });
  }
  return out;
}
