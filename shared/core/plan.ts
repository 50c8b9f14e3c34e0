/**
 * What one planner tick should materialize, computed from the config, the partition watermark and
 * an injected `now` alone (DESIGN §7). Pure: the planner's I/O loop (shared/planner.ts) executes
 * the plan. A job with no slot in the window costs nothing but one `nextSlotAfter` call.
 */
import type { Job } from './job-schema.js';
import { nextSlotAfter, slotSpecOf, slotsBetween, type SlotSpec } from './slots.js';
import { RunStatus } from './vocabulary.js';

export interface PlannedRun {
  readonly job: Job;
  readonly slot: number;
  readonly shard: number;
  readonly status: typeof RunStatus.READY | typeof RunStatus.SKIPPED;
  /** Catch-up of a misfired slot: created after every on-time run of the tick. */
  readonly catchUp: boolean;
  readonly reason?: string;
}

export interface TickPlan {
  /** On-time runs first (by slot), then catch-up runs: catch-up never delays on-time work. */
  readonly runs: readonly PlannedRun[];
  readonly plannedUntil: number;
  /** Jobs whose catch-up is unfinished, with the last slot planned for them. */
  readonly behindSet: ReadonlyMap<string, number>;
  /** The end of each unfinished catch-up: slots after it were planned on time. */
  readonly edgeSet: ReadonlyMap<string, number>;
  /** Jobs that were behind and have caught up. */
  readonly behindClear: readonly string[];
  /** Misfired slots seen this tick, by job (recorded as SKIPPED, run as catch-up, or dropped by `latest`). */
  readonly misfired: ReadonlyMap<string, number>;
}

export interface PlanInput {
  readonly jobs: readonly Job[];
  readonly plannedUntil: number | undefined;
  readonly paused: ReadonlySet<string>;
  /** Catch-up cursors: the last slot planned for a job that is behind. */
  readonly behind: ReadonlyMap<string, number>;
  /**
   * Where each catch-up ends. Without it the late window would slide forward with every tick
   * and re-walk slots already planned on time, so a fast job might never catch up. Missing for a
   * job just resumed from a pause: its edge is fixed by the first tick that plans it.
   */
  readonly catchUpEdges?: ReadonlyMap<string, number>;
  readonly now: number;
  /** How far ahead of now runs are materialized. @default 60 s */
  readonly lookaheadMs: number;
}

export { slotSpecOf } from './slots.js';

/** How far back `latest` looks for the newest misfired slot before giving up (bounded work). */
const LATEST_SEARCH_WINDOWS_MS = [3_600_000, 86_400_000, 31 * 86_400_000, 366 * 86_400_000];

function newestSlotIn(spec: SlotSpec, after: number, until: number): number | undefined {
  for (const window of LATEST_SEARCH_WINDOWS_MS) {
    const from = Math.max(after, until - window);
    const slots = slotsBetween(spec, from, until);
    if (slots.length > 0) return slots[slots.length - 1];
    if (from === after) return undefined;
  }
  return undefined;
}

function runsOf(job: Job, slot: number, status: PlannedRun['status'], catchUp: boolean, reason?: string): PlannedRun[] {
  return Array.from({ length: job.shards }, (_, shard) => ({ job, slot, shard, status, catchUp, reason }));
}

export function planTick(input: PlanInput): TickPlan {
  const { now } = input;
  const horizon = now + input.lookaheadMs;
  // A partition seen for the first time starts now: a new deployment never replays history.
  const base = input.plannedUntil ?? now;
  const onTime: PlannedRun[] = [];
  const catchUp: PlannedRun[] = [];
  const behindSet = new Map<string, number>();
  const edgeSet = new Map<string, number>();
  const behindClear: string[] = [];
  const misfired = new Map<string, number>();

  for (const job of input.jobs) {
    // A paused job keeps its place in `behind`; resuming plans from there under its misfire policy.
    if (!job.enabled || input.paused.has(job.name)) continue;
    const spec = slotSpecOf(job);
    // Slots due more than `misfire.after` ago when first seen are misfires.
    const lateEdge = now - job.misfire.after - 1;
    const cursor = input.behind.get(job.name);
    const knownEdge = input.catchUpEdges?.get(job.name);
    // Where unplanned history ends and on-time planning starts. A job catching up keeps its edge
    // unless the planner was down again (then the new misfires join the catch-up); a job without
    // an edge (just resumed) never had its recent slots planned, so on-time starts at the late edge.
    const edge = cursor === undefined ? Math.max(base, lateEdge) : knownEdge === undefined ? lateEdge : base < lateEdge ? lateEdge : knownEdge;
    const onTimeFrom = cursor !== undefined && knownEdge === undefined ? lateEdge : Math.max(base, lateEdge);
    const catchUpFrom = cursor ?? base;

    const next = nextSlotAfter(spec, Math.min(catchUpFrom, onTimeFrom));
    if (next === undefined || next > horizon) {
      if (cursor !== undefined) behindClear.push(job.name);
      continue;
    }
    for (const slot of slotsBetween(spec, onTimeFrom, horizon)) onTime.push(...runsOf(job, slot, RunStatus.READY, false));

    let caughtUpTo: number | undefined;
    if (catchUpFrom < edge) {
      const limit = job.misfire.maxPerTick;
      if (job.misfire.policy === 'latest') {
        const newest = newestSlotIn(spec, catchUpFrom, edge);
        if (newest !== undefined) {
          catchUp.push(...runsOf(job, newest, RunStatus.READY, true));
          misfired.set(job.name, slotsBetween(spec, catchUpFrom, edge, 10_000).length);
        }
      } else {
        const late = slotsBetween(spec, catchUpFrom, edge, limit);
        const status = job.misfire.policy === 'skip' ? RunStatus.SKIPPED : RunStatus.READY;
        const reason = job.misfire.policy === 'skip' ? 'misfired: skipped by policy' : undefined;
        for (const slot of late) catchUp.push(...runsOf(job, slot, status, true, reason));
        if (late.length > 0) misfired.set(job.name, late.length);
        // A full page may mean more remain: stay behind at the last slot planned, up to this edge.
        if (late.length === limit && late[late.length - 1]! < edge) caughtUpTo = late[late.length - 1];
      }
    }
    if (caughtUpTo !== undefined) {
      behindSet.set(job.name, caughtUpTo);
      edgeSet.set(job.name, edge);
    } else if (cursor !== undefined) behindClear.push(job.name);
  }

  onTime.sort((a, b) => a.slot - b.slot || a.shard - b.shard);
  return { runs: [...onTime, ...catchUp], plannedUntil: horizon, behindSet, edgeSet, behindClear, misfired };
}
