/**
 * Where every run of an exclusive lane that ends, or gives its lane back, lets go of the lane
 * (DESIGN §8 "Lanes"): the worker's outcome, a policy's settle, a spent fencing range, a duplicate
 * delivery of an ended run, `ops resolve`, a take or a claim given back. Recording the end is the
 * caller's; releasing the lane's marker and handing the lane on to the next run happen here only.
 * The hand-on is a look: one ordered query for the run that gets the lane per policy, whose
 * message is then sent (forbid-skip has no queue).
 */
import type { Ledger } from '../store/ledger.js';
import type { ReleaseResult } from '../store/lanes.js';
import type { RunQueue } from '../messaging/run-queue.js';
import { OverlapPolicy, type Job } from '../schedule/job-schema-core.js';
import { forbidQueueHandOn, inLane, isExclusive, LANE_CLOCK_ALLOWANCE_MS, newestHandOn, raisedFloor, type HandOn } from '../core/lanes.js';
import { messageFor } from '../core/run-message.js';
import { isTerminal, RunStatus, WAITING_STATUSES, type Run } from '../core/vocabulary.js';
import type { RunLogger } from '../handler-api.js';
import { MetricName, type MetricsSink } from '../runtime/observability.js';

export interface LaneDeps {
  readonly ledger: Ledger;
  readonly queue: Pick<RunQueue, 'send'>;
  readonly clock: () => number;
  readonly metrics: MetricsSink;
}

/** The run of a lane, as far as its release needs it: its fencing token when known. */
export type EndedRun = Pick<Run, 'job' | 'slot' | 'shard'> & { readonly fencingToken?: number };

/**
 * Every way a run ends comes here once its end is recorded; a run of a parallel job has no lane.
 * Frees the lane and hands it on. A refused release whose marker has no holder (our own release
 * committed and its response was lost, or a later holder released too) looks as well; a lane held
 * by another run is handed on by that run when it ends. The run's fencing token, when known, ties
 * the release to this incarnation of the run: a later claim of a revived run holds the lane under
 * a newer token. Without one (the run is gone) any holder naming the run is a stale one.
 */
export async function runEnded(deps: LaneDeps, job: Job, run: EndedRun, logger?: RunLogger): Promise<void> {
  if (!isExclusive(job)) return;
  const released = await deps.ledger.lanes.release(
    job.name,
    { slot: run.slot, shard: run.shard },
    run.fencingToken !== undefined ? { token: run.fencingToken } : {},
  );
  if (mustLook(released)) await handOn(deps, job, run, released, logger);
}

/**
 * A delivery gives back the lane it took (`take`) for a run another owner holds: only if no other
 * copy of the run took the lane since (that copy may be the one running). A lane it freed is
 * handed on.
 */
export async function takeGivenBack(deps: LaneDeps, job: Job, run: EndedRun, take: string, logger: RunLogger): Promise<void> {
  const released = await deps.ledger.lanes.release(job.name, { slot: run.slot, shard: run.shard }, { onlyTake: take });
  if (released.freed) await handOn(deps, job, run, released, logger);
}

/**
 * A claimed forbid-queue run gives way to an older open run: the lane is released before the claim
 * is handed back (`handBack`), so no copy of the run can claim it while the lane is free; and the
 * look comes last, whatever the release said: a release whose response was lost may have freed the
 * lane for a run that has since taken it, run, ended and looked while this one was still RUNNING
 * (found by the Spin model aligned with this code).
 */
export async function gaveWay(
  deps: LaneDeps,
  job: Job,
  run: EndedRun & { readonly fencingToken: number },
  handBack: () => Promise<void>,
  logger: RunLogger,
): Promise<void> {
  const released = await deps.ledger.lanes.release(job.name, { slot: run.slot, shard: run.shard }, { token: run.fencingToken });
  await handBack();
  await handOn(deps, job, run, released, logger);
}

/** Freed by us, or found free: look. Held by another run: that run looks when it ends. */
function mustLook(released: ReleaseResult): boolean {
  return released.freed || released.holderSlot === undefined;
}

/** The look: who gets the lane after `ended`, per policy (forbid-skip has no queue). */
async function handOn(
  deps: LaneDeps,
  job: Job,
  ended: Pick<Run, 'slot' | 'shard'>,
  released: ReleaseResult,
  logger?: RunLogger,
): Promise<void> {
  const now = deps.clock();
  let next: HandOn<Run>;
  if (job.overlap === OverlapPolicy.FORBID_QUEUE) {
    const read = await deps.ledger.laneFromFloor(job.name, ended.shard, released.floor, (r) => !isTerminal(r.status) && inLane(r));
    next = forbidQueueHandOn(read.first ? [read.first] : [], now);
    const floor = raisedFloor({ firstOpenSlot: read.first?.slot, passed: read.passed, lastSlot: read.lastSlot }, released.floor, now);
    if (floor !== undefined && released.freed) await deps.ledger.lanes.advanceFloor(job.name, ended.shard, released.writeId, floor);
  } else if (job.overlap === OverlapPolicy.COALESCE || job.overlap === OverlapPolicy.REPLACE) {
    next = newestHandOn(
      await deps.ledger.laneRunsAfter(job.name, ended.shard, ended.slot, now + LANE_CLOCK_ALLOWANCE_MS, WAITING_STATUSES),
      now,
    );
  } else return;
  for (const older of next.supersede) {
    if (await deps.ledger.settleWaiting(older, RunStatus.SUPERSEDED, `superseded by ${next.dispatch!.runKey} (${job.overlap})`, now))
      deps.metrics.count(MetricName.RunsSuperseded);
  }
  if (next.dispatch) await dispatch(deps, job, next.dispatch, logger);
}

/** Sends a waiting run's message, delayed to its start (fire time or retry time, less the start lead). */
async function dispatch(deps: LaneDeps, job: Job, next: Run, logger?: RunLogger): Promise<void> {
  const startAt = Math.max(next.fireAt ?? next.slot, next.nextAttemptAt ?? 0) - job.startLead;
  await deps.queue.send([{ message: messageFor(next), delaySeconds: Math.max(0, Math.floor((startAt - deps.clock()) / 1000)) }]);
  logger?.info('dispatched the next waiting run', { next: next.runKey });
}
