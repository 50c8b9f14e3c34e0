/**
 * What one planner tick should materialize, computed from the config, the partition watermark,
 * the exceptional jobs' own state and an injected `now` alone (DESIGN §7). Pure: the planner's
 * I/O loop (shared/planner/planner.ts) executes the plan. A job with no slot in the window costs nothing
 * but one `nextSlotAfter` call.
 */
import type { Job } from '../schedule/job-schema.js';
import { nextSlotAfter, slotSpecOf, slotsBetween, type SlotSpec } from '../schedule/slots.js';
import { RunStatus } from './vocabulary.js';
import { fireTimeOf } from '../schedule/jitter.js';

export interface PlannedRun {
  readonly job: Job;
  readonly slot: number;
  /** When the run fires: the slot, or later by the job's jitter (never at or past its next slot). */
  readonly fireAt: number;
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
  /** Catch-up runs left for later ticks because this tick's catch-up budget was spent. */
  readonly deferred: number;
}

/** Catch-up runs one tick creates at most, across all its jobs (on-time runs are never limited). */
export const DEFAULT_CATCH_UP_BUDGET = 2_000;

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
  /** How far ahead of now runs are materialized. */
  readonly lookaheadMs: number;
  /**
   * Most catch-up runs (shards counted) this tick may create, so a partition with thousands of
   * jobs behind keeps each tick inside the Lambda timeout; the most-behind jobs go first.
   * @default DEFAULT_CATCH_UP_BUDGET
   */
  readonly catchUpBudget?: number;
  /**
   * For `maxRuns` jobs: how many scheduled slots the planner created for each so far (its plan
   * item's count; missing: none). A job whose count reached its `maxRuns` plans nothing. Below
   * it, the job is planned as any other: the puts count each slot they create and refuse the
   * one past `maxRuns` (an atomic count on the plan item), so the count stays exact whatever the
   * schedule or `maxRuns` became since, and a retried or duplicate tick counts nothing twice.
   */
  readonly runCounts?: ReadonlyMap<string, number>;
  /**
   * The partition's jobs differ from those its watermark was planned under (a job added, its
   * schedule or another field changed): slots after `replanFrom` (the previous tick's now) may
   * never have been planned for a new or changed job, though they lie before the watermark. Every
   * job that is not catching up plans on time from here instead; slots already put are put again
   * and create nothing. Undefined on a tick whose config is the one planned before.
   */
  readonly replanFrom?: number;
}

export { slotSpecOf } from '../schedule/slots.js';

/**
 * The count of scheduled slots a `maxRuns` job had when earlier code recorded a bound instead
 * (its first planned slot and its N-th slot, +∞ when the schedule had fewer): the slots of its
 * schedule from the first up to the bound or `plannedUntil`, whichever is earlier, at most
 * `maxRuns`. Exact unless the schedule changed while that code ran, which is the defect the count
 * replaces; it is written once, with the job's next counted slot.
 */
export function legacyRunCount(
  spec: SlotSpec,
  bound: { readonly firstSlot: number; readonly lastSlot: number },
  plannedUntil: number,
  maxRuns: number,
): number {
  const until = Math.min(bound.lastSlot, plannedUntil);
  if (until < bound.firstSlot) return 0;
  return slotsBetween(spec, bound.firstSlot - 1, until, maxRuns).length;
}

/**
 * How many shards a slot has: the count its shard 0 was created with, when it exists (a slot
 * belongs to the shard count in force when it was first put), else the job's current one. So a
 * change of `shards` applies from the next slot that has no runs yet, and a slot put again (a
 * retried tick, a re-plan after a config change) is completed under its own count, never mixed.
 */
export function shardsOfSlot(configured: number, shardZero: { readonly shards: number } | undefined): number {
  return shardZero?.shards ?? configured;
}

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

function runsOf(job: Job, spec: SlotSpec, slot: number, status: PlannedRun['status'], catchUp: boolean, reason?: string): PlannedRun[] {
  // Jitter needs the next slot to stay below it; only a jittered job pays for the lookup.
  const fireAt = job.jitter ? fireTimeOf(job, slot, nextSlotAfter(spec, slot)) : slot;
  return Array.from({ length: job.shards }, (_, shard) => ({ job, slot, fireAt, shard, status, catchUp, reason }));
}

/** A job with misfired slots to plan, waiting for its share of the catch-up budget. */
interface CatchUpCandidate {
  readonly job: Job;
  readonly spec: SlotSpec;
  /** Slots in (from, edge] are misfires not planned yet. */
  readonly from: number;
  readonly edge: number;
  /** The job was already behind (else it falls behind this tick). */
  readonly wasBehind: boolean;
  /** `edge` is the one recorded for the job (else it is new this tick and must be recorded). */
  readonly keepsEdge: boolean;
  /** The job's on-time runs this tick, planned once its catch-up is (see inSlotOrder). */
  readonly onTime: readonly PlannedRun[];
}

/**
 * forbid-queue runs start in slot order, so a job of that policy whose catch-up creates runs
 * (misfire `all`) has its slots created in slot order too: while its catch-up is unfinished none
 * of its on-time slots is created (they join the catch-up, as READY runs, on later ticks), or a
 * newer slot would start before an older one that does not exist yet. Its runs could not start
 * before the catch-up's anyway.
 */
function inSlotOrder(job: Job): boolean {
  return job.overlap === 'forbid-queue' && job.misfire.policy === 'all';
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
  const candidates: CatchUpCandidate[] = [];

  for (const job of input.jobs) {
    // A paused job keeps its cursor; resuming plans from there under its misfire policy.
    if (!job.enabled || input.paused.has(job.name)) continue;
    const spec = slotSpecOf(job);
    // Slots due more than `misfire.after` ago when first seen are misfires.
    const lateEdge = now - job.misfire.after - 1;
    const cursor = input.behind.get(job.name);
    const knownEdge = input.catchUpEdges?.get(job.name);
    // Everything up to `from` is planned for this job already.
    const from = cursor ?? base;
    // Where catch-up ends and on-time planning starts. A job catching up keeps its edge unless the
    // planner was down again (the new misfires then join the catch-up). A job without an edge (just
    // resumed) never had its recent slots planned: on-time starts at the late edge, but never
    // before its cursor, so a resume cannot plan slots from before the job was first planned.
    const keepsEdge = cursor !== undefined && knownEdge !== undefined && base >= lateEdge;
    const edge = keepsEdge ? knownEdge : Math.max(from, lateEdge);
    // A job catching up keeps its on-time start: its edge, not the re-plan, separates its two kinds of slots.
    const onTimeStart = cursor === undefined && input.replanFrom !== undefined ? Math.min(base, input.replanFrom) : base;
    const onTimeFrom = cursor !== undefined && knownEdge === undefined ? edge : Math.max(onTimeStart, lateEdge);
    // maxRuns: a job whose count is reached plans nothing more (until maxRuns is raised).
    if (job.maxRuns !== undefined && (input.runCounts?.get(job.name) ?? 0) >= job.maxRuns) {
      if (cursor !== undefined) behindClear.push(job.name);
      continue;
    }

    const next = nextSlotAfter(spec, Math.min(from, onTimeFrom));
    if (next === undefined || next > horizon) {
      if (cursor !== undefined) behindClear.push(job.name);
      continue;
    }
    const jobOnTime = slotsBetween(spec, onTimeFrom, horizon).flatMap((slot) => runsOf(job, spec, slot, RunStatus.READY, false));
    if (from < edge) candidates.push({ job, spec, from, edge, wasBehind: cursor !== undefined, keepsEdge, onTime: jobOnTime });
    else if (cursor !== undefined) behindClear.push(job.name);
    if (from >= edge) onTime.push(...jobOnTime);
  }

  // The most-behind jobs first, so that a budget smaller than the backlog still moves every
  // job forward over a bounded number of ticks.
  candidates.sort((a, b) => a.from - b.from || (a.job.name < b.job.name ? -1 : 1));
  let budget = Math.max(0, input.catchUpBudget ?? DEFAULT_CATCH_UP_BUDGET);
  let deferred = 0;
  for (const candidate of candidates) {
    const { job, spec, from, wasBehind, keepsEdge } = candidate;
    // A job whose slots are created in order and whose catch-up is not done this tick defers its
    // on-time slots: its edge moves to the last of them, so later ticks create them as catch-up.
    const deferOnTime = inSlotOrder(job) && candidate.onTime.length > 0;
    const edge = deferOnTime ? Math.max(candidate.edge, candidate.onTime.at(-1)!.slot) : candidate.edge;
    const stayBehind = (at: number) => {
      behindSet.set(job.name, at);
      edgeSet.set(job.name, edge);
    };
    const room = Math.floor(budget / job.shards);
    if (room < 1) {
      deferred += job.shards;
      // Not planned this tick. A job that keeps its recorded edge keeps its cursor as it is. One
      // that falls behind now, was just resumed, or found the planner down again records where its
      // catch-up starts and its new edge: on-time planning starts past that edge this tick, so the
      // old edge would leave the slots between the two unplanned for good.
      if (!keepsEdge || deferOnTime) stayBehind(from);
      if (!deferOnTime) onTime.push(...candidate.onTime);
      continue;
    }
    if (job.misfire.policy === 'latest') {
      const newest = newestSlotIn(spec, from, edge);
      if (newest !== undefined) {
        catchUp.push(...runsOf(job, spec, newest, RunStatus.READY, true));
        budget -= job.shards;
        misfired.set(job.name, slotsBetween(spec, from, edge, 10_000).length);
      }
      if (wasBehind) behindClear.push(job.name);
      onTime.push(...candidate.onTime);
      continue;
    }
    // A job whose slots go in order plans, besides its misfires, as many slots as its on-time ones
    // it defers: they are no misfires, and counted against maxPerTick a job with as many slots a
    // tick as its maxPerTick would never catch up (its backlog would only move, never shrink).
    const deferredSlots = deferOnTime ? candidate.onTime.length / job.shards : 0;
    const limit = Math.min(job.misfire.maxPerTick + deferredSlots, room);
    // One slot past the page tells whether more remain, so a job whose backlog fits the page is
    // caught up now rather than one tick (and one state write) later.
    const page = slotsBetween(spec, from, candidate.edge, limit + 1);
    const late = page.slice(0, limit);
    const status = job.misfire.policy === 'skip' ? RunStatus.SKIPPED : RunStatus.READY;
    const reason = job.misfire.policy === 'skip' ? 'misfired: skipped by policy' : undefined;
    for (const slot of late) catchUp.push(...runsOf(job, spec, slot, status, true, reason));
    budget -= late.length * job.shards;
    if (late.length > 0) misfired.set(job.name, late.length);
    if (page.length > limit) {
      stayBehind(late[late.length - 1]!);
      if (!deferOnTime) onTime.push(...candidate.onTime);
    } else {
      // Caught up this tick: every slot up to the horizon exists once it is done.
      if (wasBehind) behindClear.push(job.name);
      onTime.push(...candidate.onTime);
    }
  }

  // On-time runs go out in firing order (jitter can reorder the slots of different jobs).
  onTime.sort((a, b) => a.fireAt - b.fireAt || a.slot - b.slot || a.shard - b.shard);
  return { runs: [...onTime, ...catchUp], plannedUntil: horizon, behindSet, edgeSet, behindClear, misfired, deferred };
}
