/**
 * Overlap policies (DESIGN §8 "Lanes", §11), enforced when a run's message is handled, at the
 * run's fire time, for the exclusive policies. The lane's marker (store/lanes.ts) holds
 * one run at a time; the decisions are pure (core/lanes.ts); this file does their I/O:
 * - forbid-skip: a run finding the lane held is SKIPPED;
 * - forbid-queue: runs start in slot order: a run finding the lane held, or an older open run of
 *   the lane, waits; a holder that ends hands the lane to the oldest open run above the floor;
 * - coalesce: only the newest due run executes: an older one finding a newer due run is
 *   SUPERSEDED; a holder that ends sends the newest due waiting run and supersedes the others;
 * - replace: a newer due run ends an older holder at once (a RUNNING one through the fence) and
 *   takes the lane; an older run gives way as under coalesce.
 * A waiting run writes nothing to say so: its run item is open, and every holder that ends looks
 * for the next run (one ordered query). Every way a run ends goes through `runEnded`, and every
 * release of the lane through run-ended.ts.
 */
import { newWriteId } from '../store/write-id.js';
import { initialFence } from '../core/fence.js';
import { OverlapPolicy, type Job } from '../schedule/job-schema-core.js';
import { inLane, SUPERSEDING, supersedingRun } from '../core/lanes.js';
import type { ClaimResult } from '../core/lease.js';
import { isTerminal, OPEN_STATUSES, RunStatus, WAITING_STATUSES, type Run, type RunId, type RunMessage } from '../core/vocabulary.js';
import type { RunLogger } from '../handler-api.js';
import { MetricName } from '../runtime/observability.js';
import { gaveWay, runEnded, takeGivenBack, type LaneDeps } from './run-ended.js';

export type { LaneDeps } from './run-ended.js';

/** What taking the lane came to: the claim's result, or the run waits, or a race to try again shortly. */
export type LaneClaim = ClaimResult | { readonly kind: 'waits' } | { readonly kind: 'contended'; readonly retryAt: number };

/** Rounds of taking the lane from an ended or replaced holder before the message is hidden briefly. */
const LANE_ROUNDS = 3;

/** How long a run that lost every round hides its message (never the queue's visibility timeout). */
export const CONTENDED_RETRY_MS = 2_000;

const iso = (ms: number) => new Date(ms).toISOString();

/** coalesce and replace, before any claim: a run that a newer due run made superfluous gives way. */
export async function beforeClaim(deps: LaneDeps, job: Job, id: RunId, logger: RunLogger): Promise<'ack' | undefined> {
  if (job.overlap !== OverlapPolicy.COALESCE && job.overlap !== OverlapPolicy.REPLACE) return undefined;
  const now = deps.clock();
  const newer = supersedingRun(id, await deps.ledger.laneRunsAfter(job.name, id.shard, id.slot, now, SUPERSEDING), now);
  if (!newer || !(await settle(deps, job, id, RunStatus.SUPERSEDED, `superseded by ${newer.runKey} (${job.overlap})`))) return undefined;
  logger.info('superseded by a newer due run', { by: newer.runKey, policy: job.overlap });
  return 'ack';
}

/**
 * Takes the lane, then claims the run. A lane held by a run that has ended (or vanished) is taken
 * over; under replace an older holder is ended and taken over; a forbid-queue run that finds an
 * older open run gives the lane back to it. A run that turns out ended gives the lane back.
 */
export async function claimInLane(
  deps: LaneDeps,
  job: Job,
  id: RunMessage,
  logger: RunLogger,
  claim: () => Promise<ClaimResult>,
): Promise<LaneClaim> {
  const holder = { slot: id.slot, shard: id.shard };
  // This delivery's take of the lane: another copy of the run may take it too ('held').
  const take = newWriteId();
  let taken: { kind: 'acquired' | 'held'; floor?: number } | undefined;
  for (let round = 0; round < LANE_ROUNDS && !taken; round++) {
    const lane = await deps.ledger.lanes.acquire(job.name, holder, deps.clock(), take);
    if (lane.kind !== 'blocked') {
      taken = lane;
      break;
    }
    const current = await deps.ledger.getRun({ job: job.name, slot: lane.holderSlot, shard: id.shard });
    if (current && !isTerminal(current.status)) {
      if (job.overlap !== OverlapPolicy.REPLACE || current.slot > id.slot) return { kind: 'blocked', holderSlot: lane.holderSlot };
      // replace: end the older holder; if it moved meanwhile (its next attempt, its end), look again.
      if (!(await replaceHolder(deps, job, id, current, logger))) continue;
    }
    if (await deps.ledger.lanes.takeFromEnded(job.name, holder, { slot: lane.holderSlot, shard: id.shard }, deps.clock(), take)) {
      if (!current || isTerminal(current.status))
        logger.warn('took over the lane from a holder that had ended without releasing it', {
          holderSlot: iso(lane.holderSlot),
          holderStatus: current?.status ?? 'gone',
        });
      taken = { kind: 'acquired', ...(lane.floor !== undefined ? { floor: lane.floor } : {}) };
    }
  }
  if (!taken) {
    logger.info('the lane changed hands at every try: trying again shortly');
    return { kind: 'contended', retryAt: deps.clock() + CONTENDED_RETRY_MS };
  }
  const result = await claim();
  // Ended already (a duplicate delivery), or gone: the lane is not this run's to keep.
  if (result.kind === 'terminal') await runEnded(deps, job, result.run);
  if (result.kind === 'missing') await runEnded(deps, job, id);
  // Leased by another owner although this delivery took a free lane: that owner is giving the
  // lane way (below) and released it before this take. The take is given back, only if no other
  // copy of the run took the lane since (that copy may be the one running).
  if (result.kind === 'leased' && taken.kind === 'acquired') await takeGivenBack(deps, job, id, take, logger);
  if (result.kind !== 'claimed') return result;
  try {
    return await confirmClaim(deps, job, id, holder, take, result, logger);
  } catch (error) {
    // A read or write that fails after the claim committed (the confirm, the look): the claim is
    // handed back, so the message's next delivery claims the run again within seconds rather
    // than after this lease and a takeover, though nothing crashed.
    const back = await deps.ledger.giveBack(result.run).catch((giveBackError: unknown) => {
      logger.warn('could not hand back a claim after a failed lane step', { error: String(giveBackError) });
      return false;
    });
    if (!back) logger.warn('the claim was not handed back here (handed back already, or no longer ours)');
    throw error;
  }
}

/** The steps after the claim: confirm the lane under it; forbid-queue: give way to an older open run. */
async function confirmClaim(
  deps: LaneDeps,
  job: Job,
  id: RunMessage,
  holder: { readonly slot: number; readonly shard: number },
  take: string,
  result: Extract<ClaimResult, { kind: 'claimed' }>,
  logger: RunLogger,
): Promise<LaneClaim> {
  // The claim is not one write with the take: a delivery paused between the two (or a copy of the
  // run) may claim a run that was revived or handed back meanwhile, after the lane moved on to
  // another run. Taking the lane again now, under the claim, says whether it is still this run's,
  // and reads the floor as it is now (a run created below it since the first take has lowered it).
  // It records the claim's token: an earlier incarnation of this run (ended, then revived by an
  // operator before its release landed) can no longer free the lane under this one.
  const confirmed = await deps.ledger.lanes.acquire(job.name, holder, deps.clock(), take, result.run.fencingToken);
  if (confirmed.kind === 'blocked') {
    if (!(await deps.ledger.giveBack(result.run))) logger.warn('could not hand back the claim of a run whose lane moved on');
    logger.info('the lane moved on to another run before this claim: trying again shortly', { holderSlot: iso(confirmed.holderSlot) });
    return { kind: 'contended', retryAt: deps.clock() + CONTENDED_RETRY_MS };
  }
  if (job.overlap !== OverlapPolicy.FORBID_QUEUE) return result;
  // forbid-queue: the run goes only if no older run of its lane is open (one opened behind a
  // holder's back, or whose message has not come yet). The claim comes first: its lease lets one
  // copy of the run decide. Giving way: the lane is released before the claim is handed back, so
  // no copy of the run can claim it while the lane is free; and the look comes last, so that a
  // run that took the lane meanwhile and ended (its look saw this one still RUNNING) is not the
  // only one that could have handed the lane back to this run.
  const older = (
    await deps.ledger.laneRunsAfter(job.name, id.shard, (confirmed.floor ?? 0) - 1, id.slot - 1, OPEN_STATUSES, { firstPageWithAny: true })
  ).filter(inLane);
  if (older.length === 0) return result;
  deps.metrics.count(MetricName.OverlapWaits);
  await gaveWay(
    deps,
    job,
    { ...id, fencingToken: result.run.fencingToken },
    async () => {
      // Not handed back (our lease was lost meanwhile): its next holder takes it over as any lost claim.
      if (!(await deps.ledger.giveBack(result.run))) logger.warn('could not hand back the claim of a run that gives way');
    },
    logger,
  );
  logger.info('waiting: an earlier run of the job is still open (forbid-queue)', { earlierSlot: iso(older[0]!.slot) });
  return { kind: 'waits' };
}

/** replace: ends the lane's older holder, a RUNNING one through the fence. False when it moved meanwhile. */
async function replaceHolder(deps: LaneDeps, job: Job, id: RunMessage, holder: Run, logger: RunLogger): Promise<boolean> {
  // The message's run key: the run's own, whatever the job's shard count is now.
  const by = id.runKey;
  const done =
    holder.status === RunStatus.RUNNING
      ? await deps.ledger.replaceRunning(holder, by, deps.clock())
      : await deps.ledger.settleWaiting(holder, RunStatus.SUPERSEDED, `replaced by ${by}`, deps.clock());
  if (done) {
    deps.metrics.count(MetricName.RunsSuperseded);
    deps.metrics.count(MetricName.RunsReplaced);
    logger.warn("replaced the lane's older run", { replaced: holder.runKey, wasStatus: holder.status, replacedToken: holder.fencingToken });
  }
  return done;
}

/** The lane is held by another open run. */
export async function onBlocked(deps: LaneDeps, job: Job, id: RunId, holderSlot: number, logger: RunLogger): Promise<'ack'> {
  if (job.overlap === OverlapPolicy.FORBID_SKIP) {
    if (await settle(deps, job, id, RunStatus.SKIPPED, `skipped: run of ${iso(holderSlot)} still open (forbid-skip)`)) {
      logger.info('skipped: an earlier run of the job is still open (forbid-skip)', { holderSlot: iso(holderSlot) });
    }
    return 'ack';
  }
  if (job.overlap === OverlapPolicy.REPLACE) {
    // Only a newer holder blocks under replace: this run gives way.
    if (await settle(deps, job, id, RunStatus.SUPERSEDED, `superseded by the run of ${iso(holderSlot)} (replace)`))
      logger.info('superseded: a newer run holds the lane (replace)');
    return 'ack';
  }
  // forbid-queue and coalesce: the holder looks for this run when it ends; the sweeper watches it
  // in case the holder dies first.
  deps.metrics.count(MetricName.OverlapWaits);
  await deps.ledger.watch(id);
  logger.info('waiting: another run of the job holds the lane', { holderSlot: iso(holderSlot) });
  return 'ack';
}

/**
 * Ends a waiting run SUPERSEDED or SKIPPED; one that was claimed before (a RETRY or UNKNOWN run
 * keeps its lane between attempts) may hold the lane, which it then hands on.
 */
async function settle(
  deps: LaneDeps,
  job: Job,
  id: RunId,
  status: typeof RunStatus.SUPERSEDED | typeof RunStatus.SKIPPED,
  reason: string,
): Promise<boolean> {
  const run = await deps.ledger.getRun(id);
  if (!run || !WAITING_STATUSES.includes(run.status)) return false;
  if (!(await deps.ledger.settleWaiting(run, status, reason, deps.clock()))) return false;
  deps.metrics.count(status === RunStatus.SUPERSEDED ? MetricName.RunsSuperseded : MetricName.RunsSkippedByOverlap);
  if (run.fencingToken > initialFence(run.slot)) await runEnded(deps, job, run);
  return true;
}
