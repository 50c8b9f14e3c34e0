/**
 * Overlap policies (DESIGN §4, §8, §11), enforced at claim time for the exclusive policies. The
 * per-(job, shard) active-run marker (adapters/lane-store.ts) guarantees one run at a time in a
 * lane; these rules decide what a run does when it cannot be the one, and who runs next:
 * - forbid-skip: SKIPPED while another run holds the lane;
 * - forbid-queue: runs in slot order: a run with an older open run acks its message and waits;
 *   the holder dispatches the next waiting run when it ends: the oldest run older than itself if
 *   one found the lane held and flagged the marker (it opened behind the holder's back), else the
 *   next due one after it;
 * - coalesce: only the newest due run executes: an older one that finds a newer due run is
 *   SUPERSEDED, and the holder dispatches the newest due waiting run when it ends (superseding
 *   the ones in between);
 * - replace: a newer due run takes over at once: a holder that is still RUNNING is ended
 *   SUPERSEDED through the fence (its token advances: its heartbeat is refused, its signal aborts,
 *   its outcome is refused, and the newer run's larger token fences out its writes), a waiting
 *   holder is superseded; an older run gives way as under coalesce.
 * A run that waits is put in the sweeper's watch index, so that if its lane's holder dies before
 * dispatching it, the sweeper does. It also flags the lane's marker (`runsWaiting`): a holder looks
 * for the next waiting run only when its release returns that flag (or cannot tell), so a run that
 * nobody queued behind ends without the look-ahead read. A hand-on passes the flag on (more may
 * wait: forbid-queue hands on to one run at a time), and the chain ends at a holder that finds
 * nobody. A marker whose holder has ended never blocks a lane: the next claimer takes it over
 * (atomically with a check that the holder ended).
 */
import type { Ledger } from './adapters/ledger.js';
import type { RunQueue } from './adapters/run-queue.js';
import { initialFence } from './core/fence.js';
import { OverlapPolicy, type Job } from './core/job-schema-core.js';
import type { ClaimResult } from './core/lease.js';
import type { ReleaseResult } from './adapters/lane-store.js';
import { messageFor } from './core/run-message.js';
import { isTerminal, runKeyOf, RunStatus, WAITING_STATUSES, type Run, type RunId } from './core/vocabulary.js';
import type { RunLogger } from './handler-api.js';
import { MetricName, type MetricsSink } from './observability.js';

export interface LaneDeps {
  readonly ledger: Ledger;
  readonly queue: Pick<RunQueue, 'send'>;
  readonly clock: () => number;
  readonly metrics: MetricsSink;
}

type Outcome = 'ack' | 'retry';

/** Runs whose existence makes an older coalesce run superfluous: all but those a policy skipped. */
const SUPERSEDING = Object.values(RunStatus).filter((s) => s !== RunStatus.SKIPPED);

/** How many older neighbours forbid-queue looks at (the nearest ones decide the order). */
const ORDER_NEIGHBOURS = 5;

export function isExclusive(job: Pick<Job, 'overlap'>): boolean {
  return job.overlap !== OverlapPolicy.PARALLEL;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The latest instant a run counts as due (it may start within its startLead). */
function dueBy(deps: LaneDeps, job: Job): number {
  return deps.clock() + job.startLead;
}

/** What the policy decides before any claim: wait (forbid-queue) or give way (coalesce). */
export async function beforeClaim(deps: LaneDeps, job: Job, id: RunId, logger: RunLogger): Promise<Outcome | undefined> {
  if (job.overlap === OverlapPolicy.FORBID_QUEUE) {
    const older = await earlierOpenRuns(deps, job, id);
    if (older) {
      // Flag the lane before waiting, then look again: the earlier run may have ended, and let go
      // of the lane without a hand-on, before the flag landed. If it is still open, it ends after
      // our look, so its release (which follows its end) finds the flag and hands on.
      // - A holder older than this run looks ahead past itself when it ends: flag it, while it holds.
      // - A holder newer than this run looks only past itself: it is told to look back, from the
      //   oldest earlier run (which goes first).
      // - A free lane: flag it (a vacant marker), with the oldest earlier run as the slot to look
      //   back from, for whichever run takes the flag, however much newer.
      // If the holder let go meanwhile, try the lane again.
      const holder = older.holderSlot !== undefined ? { slot: older.holderSlot, shard: id.shard } : undefined;
      const oldest = older.runs.at(-1)!.slot;
      const flagged = !holder
        ? await deps.ledger.lanes.markWaiting(job.name, id.shard, undefined, oldest)
        : holder.slot > id.slot
          ? await deps.ledger.lanes.markOlderWaiting(job.name, holder, oldest)
          : await deps.ledger.lanes.markWaiting(job.name, id.shard, holder);
      if (!flagged) {
        logger.info('the lane changed hands while this run flagged it: trying again', { holderSlot: iso(holder!.slot) });
        return 'retry';
      }
      const still = (await earlierOpenRuns(deps, job, id))?.runs[0];
      if (still) {
        deps.metrics.count(MetricName.OverlapWaits);
        await deps.ledger.watch(id);
        logger.info('waiting: an earlier run of the job is still open (forbid-queue)', { earlierSlot: iso(still.slot) });
        return 'ack';
      }
    }
  }
  if (job.overlap === OverlapPolicy.COALESCE || job.overlap === OverlapPolicy.REPLACE) {
    // Only a run that is due can supersede: one whose slot is still ahead (the planner creates
    // runs a tick early) would leave the lane without a run to execute now. A newer due run that
    // already ran (or runs) supersedes too: executed slots only move forward.
    const newer = (await deps.ledger.laneRunsAfter(job.name, id.shard, id.slot, dueBy(deps, job), SUPERSEDING)).filter(inLane);
    const newest = newer.at(-1);
    if (newest && (await supersede(deps, job, id, `superseded by ${newest.runKey} (${job.overlap})`))) {
      logger.info('superseded by a newer due run', { by: newest.runKey, policy: job.overlap });
      return 'ack';
    }
  }
  return undefined;
}

/**
 * Ends a waiting run SUPERSEDED (or SKIPPED) and, if it held its lane (a RETRY or UNKNOWN run
 * keeps the lane between attempts), frees the lane and dispatches the next run.
 */
async function settle(
  deps: LaneDeps,
  job: Job,
  id: RunId,
  status: typeof RunStatus.SUPERSEDED | typeof RunStatus.SKIPPED,
  reason: string,
): Promise<boolean> {
  const run = await deps.ledger.getRun(id);
  if (!run || (run.status !== RunStatus.READY && run.status !== RunStatus.RETRY && run.status !== RunStatus.UNKNOWN)) return false;
  if (!(await deps.ledger.settleWaiting(run, status, reason, deps.clock()))) return false;
  deps.metrics.count(status === RunStatus.SUPERSEDED ? MetricName.RunsSuperseded : MetricName.RunsSkippedByOverlap);
  // A run claimed before (its token moved) may hold the lane; one never claimed does not.
  if (run.fencingToken > initialFence(run.slot)) await afterRunEnded(deps, job, run);
  return true;
}

function supersede(deps: LaneDeps, job: Job, id: RunId, reason: string): Promise<boolean> {
  return settle(deps, job, id, RunStatus.SUPERSEDED, reason);
}

/**
 * Takes the lane, then claims the run. A lane held by a run that has ended (or vanished) is taken
 * over; one held by an open run blocks. If the claim then finds the run ended or missing, a lane
 * taken for it is given back at once.
 */
export async function claimInLane(deps: LaneDeps, job: Job, id: RunId, logger: RunLogger, claim: () => Promise<ClaimResult>): Promise<ClaimResult> {
  const holder = { slot: id.slot, shard: id.shard };
  let lane = await deps.ledger.lanes.acquire(job.name, holder, deps.clock());
  if (lane.kind === 'blocked') {
    const current = await deps.ledger.getRun({ job: job.name, slot: lane.holderSlot, shard: id.shard });
    if (current && !isTerminal(current.status) && !(await replaced(deps, job, id, current, logger))) return { kind: 'blocked', holderSlot: lane.holderSlot };
    const stale = { slot: lane.holderSlot, shard: id.shard };
    if (!(await deps.ledger.lanes.takeFromEnded(job.name, holder, stale, deps.clock()))) return { kind: 'blocked', holderSlot: lane.holderSlot };
    logger.warn('took over the lane from a holder that had ended without releasing it', { holderSlot: iso(lane.holderSlot), holderStatus: current?.status ?? 'gone' });
    lane = { kind: 'acquired' };
  }
  const result = await claim();
  if (lane.kind === 'acquired' && (result.kind === 'terminal' || result.kind === 'missing')) {
    // An older run that found the lane taken for this one in that instant waits for a hand-on.
    const released = await deps.ledger.lanes.release(job.name, holder);
    if (released.freed && (released.olderWaiting || released.runsWaiting)) await dispatchNextWaiting(deps, job, id, handOnAfter(released), logger);
  }
  return result;
}

/**
 * Overlap `replace`: ends the lane's older holder so that `id` can take the lane. A RUNNING holder
 * is superseded through the fence (ledger.replaceRunning), a waiting one settled. False when the
 * policy is another, the holder is not older, or it moved meanwhile.
 */
async function replaced(deps: LaneDeps, job: Job, id: RunId, holder: Run, logger: RunLogger): Promise<boolean> {
  if (job.overlap !== OverlapPolicy.REPLACE || holder.slot >= id.slot) return false;
  const by = runKeyOf(id.job, id.slot, id.shard, job.shards);
  const done =
    holder.status === RunStatus.RUNNING
      ? await deps.ledger.replaceRunning(holder, by, deps.clock())
      : await deps.ledger.settleWaiting(holder, RunStatus.SUPERSEDED, `replaced by ${by}`, deps.clock());
  if (done) {
    deps.metrics.count(MetricName.RunsSuperseded);
    deps.metrics.count(MetricName.RunsReplaced);
    logger.warn('replaced the lane\'s older run', { replaced: holder.runKey, wasStatus: holder.status, replacedToken: holder.fencingToken });
  }
  return done;
}

/** The lane is held by another run. */
export async function onBlocked(deps: LaneDeps, job: Job, id: RunId, holderSlot: number, logger: RunLogger): Promise<Outcome> {
  if (job.overlap === OverlapPolicy.FORBID_SKIP) {
    if (await settle(deps, job, id, RunStatus.SKIPPED, `skipped: run of ${iso(holderSlot)} still open (forbid-skip)`)) {
      logger.info('skipped: an earlier run of the job is still open (forbid-skip)', { holderSlot: iso(holderSlot) });
    }
    return 'ack';
  }
  if (job.overlap === OverlapPolicy.REPLACE) {
    // An older holder that could not be replaced moved meanwhile (it claimed its next attempt, or
    // ended, between our read and our write): try again rather than give way to an older run,
    // which would end the newest slot SUPERSEDED, possibly with nobody left to run it.
    if (holderSlot < id.slot) {
      logger.info('the lane\'s older holder moved while this run replaced it: trying again', { holderSlot: iso(holderSlot) });
      return 'retry';
    }
    // The holder is newer: this run gives way.
    if (await supersede(deps, job, id, `superseded by the run of ${iso(holderSlot)} (replace)`)) logger.info('superseded: a newer run holds the lane (replace)');
    return 'ack';
  }
  // forbid-queue and coalesce: the holder dispatches the next waiting run when it ends; the
  // sweeper watches this one in case the holder dies first.
  deps.metrics.count(MetricName.OverlapWaits);
  await deps.ledger.watch(id);
  // The run says on the marker that it waits, so that the holder looks for it when it ends. A
  // forbid-queue run older than the holder (it opened behind the holder's back) says so apart:
  // only then does the holder look back for older runs before handing the lane on. If the holder
  // let go meanwhile, its hand-on was decided without this run: try the lane again instead of
  // waiting for it.
  const holder = { slot: holderSlot, shard: id.shard };
  const olderThanHolder = job.overlap === OverlapPolicy.FORBID_QUEUE && id.slot < holderSlot;
  const flagged = olderThanHolder ? await deps.ledger.lanes.markOlderWaiting(job.name, holder, id.slot) : await deps.ledger.lanes.markWaiting(job.name, id.shard, holder);
  if (!flagged) {
    logger.info('the lane changed hands while this run found it held: trying again', { holderSlot: iso(holderSlot) });
    return 'retry';
  }
  logger.info('waiting: another run of the job holds the lane', { holderSlot: iso(holderSlot) });
  return 'ack';
}

/** After an exclusive run ended (SUCCEEDED, DEAD, SUPERSEDED, SKIPPED, MANUAL): free the lane, dispatch what comes next. */
export async function afterRunEnded(deps: LaneDeps, job: Job, run: Pick<Run, 'job' | 'slot' | 'shard'>, logger?: RunLogger): Promise<void> {
  const released = await deps.ledger.lanes.release(job.name, { slot: run.slot, shard: run.shard });
  const handOn = handOnAfter(released);
  // The release consumed the flag (or could not tell): put it back on the free lane
  // before looking, so that a hand-on lost from here on (throttle, crash) or a recorded slot lost
  // with the release's response is still seen by whoever takes the lane next.
  // Best effort, as the flag of a hand-on: a flag not written costs a sweep of the watch index.
  if (isExclusive(job) && job.overlap !== OverlapPolicy.FORBID_SKIP && (handOn.later || handOn.older !== 'none')) {
    await deps.ledger.lanes.markWaiting(job.name, run.shard, undefined, released.freed && released.oldestWaitingSlot !== undefined ? released.oldestWaitingSlot : run.slot).catch((error: unknown) => logger?.warn('could not keep the lane flagged', { error: String(error) }));
  }
  await dispatchNextWaiting(deps, job, run, handOn, logger);
}

/**
 * Who may wait for the lane, as the holder's release tells. `older`: a run older than the holder,
 * from a recorded slot on; somewhere (a flag without a slot, or a refused release: then we cannot
 * tell, e.g. our own delete whose response was lost: look back); or none. `later`: whether a run
 * may wait after the holder (a flag on the marker, or a refused release: look ahead).
 */
type OlderWaiting = { readonly from: number } | 'look-back' | 'none';
interface HandOn {
  readonly older: OlderWaiting;
  readonly later: boolean;
}

function handOnAfter(released: ReleaseResult): HandOn {
  if (!released.freed) return { older: 'look-back', later: true };
  const older = released.oldestWaitingSlot !== undefined ? { from: released.oldestWaitingSlot } : released.olderWaiting ? 'look-back' : 'none';
  return { older, later: released.runsWaiting };
}

/**
 * The earlier open runs a forbid-queue run must wait for (nearest first), with the lane's holder
 * as read then; undefined when there are none, or the run holds the lane itself.
 */
async function earlierOpenRuns(deps: LaneDeps, job: Job, id: RunId): Promise<{ runs: Run[]; holderSlot?: number } | undefined> {
  const older = await olderOpenRuns(deps, job, id);
  if (older.length === 0) return undefined;
  // The lane's holder never waits: an older run that opened while it held the lane (a backfill,
  // a retry, a catch-up slot planned late) waits for the lane instead, and is handed it next.
  // Waiting here too would deadlock the two, and every later run of the job behind them.
  const holderSlot = (await deps.ledger.lanes.read(job.name, id.shard))?.holderSlot;
  if (holderSlot === id.slot) return undefined;
  return { runs: older, ...(holderSlot !== undefined ? { holderSlot } : {}) };
}

/**
 * The open runs a forbid-queue run comes after: its lane's, among the nearest ORDER_NEIGHBOURS
 * slots before it, nearest first. A manual run with `--overlap parallel` takes no lane and hands
 * nothing on: it is nobody's predecessor.
 */
async function olderOpenRuns(deps: LaneDeps, job: Job, id: Pick<RunId, 'slot' | 'shard'>): Promise<Run[]> {
  const near = await deps.ledger.nearestRuns(job.name, id.slot, 'before', ORDER_NEIGHBOURS, { shard: id.shard, shards: job.shards });
  return near.filter((r) => !isTerminal(r.status) && inLane(r));
}

/** Whether a run takes its job's lane: all but a manual run with `--overlap parallel`. */
function inLane(run: Pick<Run, 'overlap'>): boolean {
  return run.overlap !== OverlapPolicy.PARALLEL;
}

/** Dispatches the lane's next due waiting run, per policy (forbid-skip has no queue: nothing). */
async function dispatchNextWaiting(deps: LaneDeps, job: Job, run: Pick<Run, 'job' | 'slot' | 'shard'>, { older, later }: HandOn, logger?: RunLogger): Promise<void> {
  if (job.overlap === OverlapPolicy.FORBID_SKIP || job.overlap === OverlapPolicy.PARALLEL) return;
  if (job.overlap === OverlapPolicy.FORBID_QUEUE && older !== 'none') {
    // Slot order resumes with the oldest run that opened behind the holder's back (it waited for
    // the lane). Its recorded slot bounds the read, however far back it lies; if it has ended
    // meanwhile (an operator resolved it), the next still-waiting run after it goes instead.
    const oldest =
      older === 'look-back'
        ? (await olderOpenRuns(deps, job, run)).filter((r) => WAITING_STATUSES.includes(r.status)).at(-1)
        : (await deps.ledger.laneRunsAfter(job.name, run.shard, older.from - 1, run.slot - 1, WAITING_STATUSES, { firstPageWithAny: true })).find(inLane);
    if (oldest) return dispatch(deps, job, oldest, logger);
  }
  // Nobody said they wait after the holder: the unqueued run's end costs no look-ahead. (Replace
  // keeps its look: its hand-on also ends runs a newer one made superfluous.)
  if (!later && job.overlap !== OverlapPolicy.REPLACE) return;
  // Forbid-queue hands on to the first due run only: the read stops at the first page holding one
  // (after a revived old run, the range up to now can span a long history of ended runs).
  const forbidQueue = job.overlap === OverlapPolicy.FORBID_QUEUE;
  const due = (await deps.ledger.laneRunsAfter(job.name, run.shard, run.slot, dueBy(deps, job), WAITING_STATUSES, { firstPageWithAny: forbidQueue })).filter(inLane);
  if (due.length === 0) return;
  const coalesce = job.overlap === OverlapPolicy.COALESCE || job.overlap === OverlapPolicy.REPLACE;
  const next = coalesce ? due[due.length - 1]! : due[0]!;
  if (coalesce) {
    // The skipped-over ones acked their messages while they waited: settle them now.
    for (const older of due.slice(0, -1)) {
      if (await deps.ledger.settleWaiting(older, RunStatus.SUPERSEDED, `superseded by ${next.runKey} (coalesce)`, deps.clock())) deps.metrics.count(MetricName.RunsSuperseded);
    }
  }
  await dispatch(deps, job, next, logger);
}

/**
 * Sends a waiting run's message, delayed to its start (fire time or retry time, less the start
 * lead). First it passes the waiting flag on: the release that returned it consumed it, and more
 * runs may wait behind the one handed the lane (forbid-queue hands on one at a time, and reads
 * only the first page of due runs), so that one looks ahead too when it ends; and with it the
 * run's slot, so that a newer run that takes the lane first looks back to it.
 */
async function dispatch(deps: LaneDeps, job: Job, next: Run, logger?: RunLogger): Promise<void> {
  await deps.ledger.lanes.markWaiting(job.name, next.shard, undefined, next.slot).catch((error: unknown) => logger?.warn('could not flag the lane for the hand-on', { error: String(error) }));
  const startAt = Math.max(next.fireAt ?? next.slot, next.nextAttemptAt ?? 0) - job.startLead;
  await deps.queue.send([{ message: messageFor(next), delaySeconds: Math.max(0, Math.floor((startAt - deps.clock()) / 1000)) }]);
  logger?.info('dispatched the next waiting run', { next: next.runKey });
}
