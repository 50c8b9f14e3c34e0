/**
 * The exclusive lanes' decisions (DESIGN §8 "Lanes"), pure: which run supersedes which, what a
 * holder that ended hands the lane to, and how far its floor may rise. The worker
 * (worker/lanes.ts), the operator commands and the sweeper ask these, so one rule has one home.
 */
import { OverlapPolicy, type Job } from '../schedule/job-schema-core.js';
import { isTerminal, RunStatus, WAITING_STATUSES, type Run } from './vocabulary.js';

/** Whether the job's runs share an exclusive lane: every overlap policy but parallel. */
export function isExclusive(job: Pick<Job, 'overlap'>): boolean {
  return job.overlap !== OverlapPolicy.PARALLEL;
}

/** How far another process's clock may be ahead of ours when it says a run was due. */
export const LANE_CLOCK_ALLOWANCE_MS = 2_000;

/**
 * A look never raises a lane's floor past `now − FLOOR_LAG_MS`, so a run created at a slot after
 * `now − FLOOR_LAG_MS + clock allowance` never lies below the floor: the planner's on-time runs
 * (created a tick ahead) and a trigger's run (at now) need no write to the marker.
 */
export const FLOOR_LAG_MS = 10_000;

/** A run created or revived at a slot before `now − FLOOR_LOWER_BEFORE_MS` lowers its lane's floor. */
export const FLOOR_LOWER_BEFORE_MS = FLOOR_LAG_MS - 5_000;

/** After a look that passed over this many ended runs, the floor is raised past them. */
export const FLOOR_ADVANCE_AFTER = 8;

export type ExclusivePolicy = Exclude<Job['overlap'], 'parallel'>;

/** Whether a run takes its job's lane: all but a manual run with `--overlap parallel`. */
export function inLane(run: Pick<Run, 'overlap'>): boolean {
  return run.overlap !== OverlapPolicy.PARALLEL;
}

/** Whether a run of a job with this policy needs its lane's floor kept below it (forbid-queue). */
export function keepsFloor(overlap: string | undefined): boolean {
  return overlap === OverlapPolicy.FORBID_QUEUE;
}

/** Whether a run created or revived at `slot` must lower its forbid-queue lane's floor. */
export function lowersFloor(overlap: string | undefined, slot: number, now: number): boolean {
  return keepsFloor(overlap) && slot < now - FLOOR_LOWER_BEFORE_MS;
}

const fireTime = (run: Pick<Run, 'slot' | 'fireAt'>) => run.fireAt ?? run.slot;

/** Due for a lane decision: at its fire time, give or take another clock's allowance. */
export function isDue(run: Pick<Run, 'slot' | 'fireAt'>, now: number): boolean {
  return fireTime(run) <= now + LANE_CLOCK_ALLOWANCE_MS;
}

/** Runs whose existence makes an older coalesce run superfluous: all but those a policy skipped (the lane read asks for these). */
export const SUPERSEDING: readonly RunStatus[] = Object.values(RunStatus).filter((s) => s !== RunStatus.SKIPPED);

/**
 * coalesce and replace: the newer run of the lane that makes `run` superfluous, if any: the newest
 * one at its fire time, in any status but SKIPPED (a newer slot that ran or runs supersedes too:
 * executed slots only move forward). A newer run still ahead of its fire time supersedes nothing:
 * it could leave the lane without a run to execute now.
 */
export function supersedingRun<R extends Pick<Run, 'slot' | 'fireAt' | 'status' | 'overlap'>>(
  run: Pick<Run, 'slot'>,
  lane: readonly R[],
  now: number,
): R | undefined {
  return lane
    .filter((r) => r.slot > run.slot && inLane(r) && r.status !== RunStatus.SKIPPED && fireTime(r) <= now)
    .sort((a, b) => a.slot - b.slot)
    .at(-1);
}

/** What a holder that ended does next, from the runs its look read. */
export interface HandOn<R> {
  /** The run to send a message for (it takes the lane when it arrives). */
  readonly dispatch?: R;
  /** Waiting runs that a newer due run made superfluous (coalesce, replace). */
  readonly supersede: readonly R[];
}

/**
 * forbid-queue: the lane goes to the oldest open run at or above the floor (`runs`: the look's
 * read, oldest first). It is sent if it waits and is due; if it is not due yet its own message
 * comes, and if it is RUNNING (no run can be without the lane) nothing is sent.
 */
export function forbidQueueHandOn<R extends Pick<Run, 'slot' | 'fireAt' | 'status' | 'overlap'>>(
  runs: readonly R[],
  now: number,
): HandOn<R> {
  const first = runs.find((r) => !isTerminal(r.status) && inLane(r));
  return { dispatch: first && WAITING_STATUSES.includes(first.status) && isDue(first, now) ? first : undefined, supersede: [] };
}

/**
 * coalesce and replace: of the waiting runs after the holder (`runs`, oldest first), the newest
 * due one is sent and the due ones before it are superseded; runs not due yet come by their own
 * messages.
 */
export function newestHandOn<R extends Pick<Run, 'slot' | 'fireAt' | 'status' | 'overlap'>>(runs: readonly R[], now: number): HandOn<R> {
  const due = runs.filter((r) => WAITING_STATUSES.includes(r.status) && inLane(r) && isDue(r, now));
  const newest = due.at(-1);
  return { dispatch: newest, supersede: due.slice(0, -1) };
}

/**
 * How far a forbid-queue look may raise the floor: to the first open run it found (every run
 * below is ended), never past `now − FLOOR_LAG_MS` (see FLOOR_LAG_MS); undefined when the look
 * passed over too few ended runs for a write to be worth it, or the floor would not rise.
 */
export function raisedFloor(
  read: { readonly firstOpenSlot?: number; readonly passed: number; readonly lastSlot?: number },
  floor: number | undefined,
  now: number,
): number | undefined {
  if (read.passed < FLOOR_ADVANCE_AFTER) return undefined;
  const upTo = read.firstOpenSlot ?? (read.lastSlot !== undefined ? read.lastSlot + 1 : undefined);
  if (upTo === undefined) return undefined;
  const next = Math.min(upTo, now - FLOOR_LAG_MS);
  return floor === undefined || next > floor ? next : undefined;
}
