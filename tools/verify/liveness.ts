/**
 * Liveness at quiescence (DESIGN §11): after a scenario stops injecting faults and lets time run
 * on, the final ledger must show progress, not merely the absence of doubles. Pure: the caller
 * hands in the final tables, the instant quiescence ended and what it knows about the config.
 *
 *  no-lost-slot          (checker.ts) every owed slot is terminal; a DEAD one says why (lastError);
 *  lane-not-blocked      no exclusive lane's active-run marker is held by a missing run, or by a
 *                        terminal one while a run of the lane waits behind it or a newer one met
 *                        it after the holder ended (ran, or was skipped) without taking it over;
 *  watermark-caught-up   every planner partition of the current config is planned up to `now`, and
 *                        only paused jobs are still behind it;
 *  no-expired-running    nothing stays RUNNING past its lease (plus the clock tolerance);
 *  no-looping-message    no message is still being redelivered at the end (each one left in the
 *                        queue is hidden until a later instant, or due only since `dueGraceMs`);
 *  open-run-swept        an open run left without any message (lost send, lost delete) is seen by
 *                        a sweep and re-sent within the grace period, unless its lane is held by
 *                        another open run that will dispatch it (forbid-queue, coalesce), or the
 *                        sweeper gave up on it after its re-dispatch budget (`stuck`: left for an
 *                        operator, counted RunsStuck);
 *  pause-kept            the planner's paused jobs are exactly those an operator paused and did
 *                        not resume (whatever happened to the partition count).
 */
import type { CheckViolation, FinalState } from './check-types.js';
import { isTerminal, RunStatus, type Run } from '../../shared/core/vocabulary.js';

const iso = (ms: number | undefined) => (ms !== undefined && Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));

import { Invariant as I, type Invariant as InvariantType } from './invariant-names.js';

/** A message still in the run queue when quiescence ended. */
export interface QueuedMessage {
  readonly messageId: string;
  readonly runKey?: string;
  readonly receives: number;
  /** Virtual instant it becomes visible again. */
  readonly visibleAt: number;
}

export interface LivenessExpectations {
  /** When quiescence ended (true virtual time). */
  readonly now: number;
  /** Tolerance for instants written with skewed actor clocks, ms. */
  readonly clockToleranceMs: number;
  /** Planner partition count of the final config, and the jobs each partition holds. */
  readonly partitions: number;
  readonly jobsByPartition: Readonly<Record<number, readonly string[]>>;
  /** Jobs paused at the end (they may stay behind). */
  readonly paused: readonly string[];
  /** Jobs in the final config. */
  readonly jobs: readonly string[];
  readonly queue?: readonly QueuedMessage[];
  /** Run keys with a message on its way (queued, hidden or in flight), when the caller knows them. */
  readonly withMessage?: readonly string[];
  /** How long an open run may go without a message before a sweep must have re-sent one. */
  readonly sweepGraceMs?: number;
  /** A message may be due this long at the end before it counts as left behind (workers busy). @default 0 */
  readonly dueGraceMs?: number;
  /** Open runs the sweeper stopped re-dispatching (their budget is spent): waiting for an operator. */
  readonly stuck?: readonly string[];
  /** Behind jobs whose catch-up cursor still moved in the last ticks (a long backlog, not a wedge). */
  readonly progressing?: readonly string[];
  /** Jobs the planner's state lists as paused, when the caller read them (pause-kept). */
  readonly pausedInLedger?: readonly string[];
  /**
   * Jobs with an exclusive lane (any overlap but parallel): a waiting run of theirs is owed a
   * re-send only from when its lane was last let go (another run of the lane finished), since
   * until then the holder, not the sweeper, hands the lane on.
   */
  readonly exclusive?: readonly string[];
}

export function checkLiveness(final: FinalState, expected: LivenessExpectations): CheckViolation[] {
  const violations: CheckViolation[] = [];
  const flag = (invariant: InvariantType, runKey: string, detail: string) => violations.push({ invariant, runKey, detail });
  const { now, clockToleranceMs } = expected;
  const configured = new Set(expected.jobs);
  const runs = new Map<string, Run>();
  for (const run of final.runs) runs.set(`${run.job}|${run.slot}|${run.shard}`, run);
  const byKey = new Map(final.runs.map((r) => [r.runKey, r]));

  for (const run of final.runs) {
    if (run.status === RunStatus.DEAD && !run.lastError) flag(I.NO_LOST_SLOT, run.runKey, 'ended DEAD without a reason (lastError)');
    if (run.status === RunStatus.RUNNING && configured.has(run.job) && (run.leaseUntil ?? 0) < now - clockToleranceMs) {
      flag(
        I.NO_EXPIRED_RUNNING,
        run.runKey,
        `still RUNNING (owner ${run.owner ?? '?'}, token ${run.fencingToken}) with a lease that ended ${iso(run.leaseUntil)}, ${Math.round((now - (run.leaseUntil ?? 0)) / 1000)} s before quiescence ended`,
      );
    }
  }

  // A job made parallel never looks at its lane again: a marker its exclusive past left (a run
  // claimed in the lane and taken over, or ended, after the change) blocks nothing, and should the
  // job become exclusive again its next claimer takes the lane over from the ended holder.
  const parallelNow = (job: string) => expected.exclusive !== undefined && !expected.exclusive.includes(job);
  for (const marker of final.markers ?? []) {
    if (!configured.has(marker.job) || parallelNow(marker.job)) continue;
    const holder = runs.get(`${marker.job}|${marker.holderSlot}|${marker.shard}`);
    if (!holder || isTerminal(holder.status)) {
      const lane = final.runs.filter((r) => r.job === marker.job && r.shard === marker.shard && r.slot !== marker.holderSlot);
      // Waiting: open and due by now. A run planned ahead of its slot has not met the marker yet
      // (when it comes due, it takes the lane over from the ended holder).
      const waiting = lane.filter((r) => !isTerminal(r.status) && (r.fireAt ?? r.slot) <= now).length;
      // A marker left by a failed release (the holder's release refused or lost: by design, the
      // worker does not retry it) blocks nothing by itself: the next claimer takes the lane over
      // from the ended holder. It is a liveness failure once a run waits behind it, or once a newer
      // run of the lane met it after the holder had ended and did not take it over: one that ran
      // (it would have moved the marker) or was skipped as overlapping.
      // Met after the holder had ended and the marker was last taken (a duplicate delivery of the
      // ended holder can take a freed lane again, and lose its release again).
      const endedAt = Math.max(holder?.finishedAt ?? Number.NEGATIVE_INFINITY, marker.since ?? Number.NEGATIVE_INFINITY) + clockToleranceMs;
      const metIt = lane.some(
        (r) =>
          r.slot > marker.holderSlot &&
          ((r.startedAt ?? Number.NEGATIVE_INFINITY) > endedAt ||
            (r.status === RunStatus.SKIPPED &&
              r.lastError?.code === RunStatus.SKIPPED &&
              (r.finishedAt ?? Number.NEGATIVE_INFINITY) > endedAt)),
      );
      if (holder && waiting === 0 && !metIt) continue;
      flag(
        I.LANE_NOT_BLOCKED,
        holder?.runKey ?? `${marker.job}#${marker.shard}`,
        `the lane's active-run marker is still held by ${holder ? `a ${holder.status} run` : 'a run that does not exist'} (slot ${iso(marker.holderSlot)}); ${waiting} run(s) of the lane wait behind it`,
      );
    }
  }

  for (let partition = 0; partition < expected.partitions; partition++) {
    const jobs = expected.jobsByPartition[partition] ?? [];
    if (jobs.length === 0) continue;
    const state = (final.planner ?? []).find((p) => p.partition === partition && p.of === expected.partitions);
    const label = `planner ${partition}/${expected.partitions}`;
    if (!state || state.plannedUntil === undefined) {
      flag(I.WATERMARK_CAUGHT_UP, label, `never planned (jobs ${jobs.slice(0, 5).join(', ')}${jobs.length > 5 ? ', …' : ''})`);
      continue;
    }
    if (state.plannedUntil < now)
      flag(
        I.WATERMARK_CAUGHT_UP,
        label,
        `planned only up to ${iso(state.plannedUntil)}, ${Math.round((now - state.plannedUntil) / 1000)} s behind the end of quiescence`,
      );
    const lagging = state.behind.filter(
      (job) => configured.has(job) && !expected.paused.includes(job) && !(expected.progressing ?? []).includes(job),
    );
    if (lagging.length > 0)
      flag(I.WATERMARK_CAUGHT_UP, label, `${lagging.length} job(s) still behind the watermark: ${lagging.slice(0, 5).join(', ')}`);
  }

  if (expected.pausedInLedger) {
    const inLedger = new Set(expected.pausedInLedger);
    for (const job of expected.jobs) {
      const want = expected.paused.includes(job);
      if (want !== inLedger.has(job)) {
        flag(
          I.PAUSE_KEPT,
          job,
          want
            ? 'an operator paused the job and never resumed it, yet the planner does not list it as paused'
            : 'the planner lists the job as paused, yet it was never paused or was resumed',
        );
      }
    }
  }

  if (expected.withMessage && expected.sweepGraceMs !== undefined) {
    const messaged = new Set([...expected.withMessage, ...(expected.stuck ?? [])]);
    const heldBy = new Map((final.markers ?? []).map((m) => [`${m.job}|${m.shard}`, m.holderSlot]));
    const exclusive = new Set(expected.exclusive ?? []);
    // When each exclusive lane was last let go: the latest end of any of its runs.
    const laneEnds = new Map<string, number>();
    for (const r of final.runs) {
      if (r.finishedAt === undefined || !exclusive.has(r.job)) continue;
      const lane = `${r.job}|${r.shard}`;
      laneEnds.set(lane, Math.max(laneEnds.get(lane) ?? 0, r.finishedAt));
    }
    for (const run of final.runs) {
      if (isTerminal(run.status) || !configured.has(run.job) || expected.paused.includes(run.job) || messaged.has(run.runKey)) continue;
      const holder = heldBy.get(`${run.job}|${run.shard}`);
      const holderRun = holder === undefined ? undefined : runs.get(`${run.job}|${holder}|${run.shard}`);
      if (holderRun && holderRun.runKey !== run.runKey && !isTerminal(holderRun.status)) continue;
      const ownDue =
        run.status === RunStatus.RUNNING
          ? (run.leaseUntil ?? 0)
          : Math.max(run.nextAttemptAt ?? run.slot, run.createdAt, run.dispatchedAt ?? 0);
      const laneFreedAt = exclusive.has(run.job) && run.status !== RunStatus.RUNNING ? (laneEnds.get(`${run.job}|${run.shard}`) ?? 0) : 0;
      const due = Math.max(ownDue, laneFreedAt);
      if (due < now - expected.sweepGraceMs) {
        flag(
          I.OPEN_RUN_SWEPT,
          run.runKey,
          `${run.status} since ${iso(due)} with no message in the queue, and no sweep re-sent one (${Math.round((now - due) / 1000)} s)`,
        );
      }
    }
  }

  // A message due this long without being received is not being consumed: it waits for nothing.
  const stale = now - (expected.dueGraceMs ?? 0);
  for (const message of expected.queue ?? []) {
    const run = message.runKey ? byKey.get(message.runKey) : undefined;
    if (message.visibleAt <= stale && run && configured.has(run.job)) {
      flag(
        I.NO_LOOPING_MESSAGE,
        message.runKey ?? message.messageId,
        `message ${message.messageId} still due after ${message.receives} receive(s) (run ${run.status})`,
      );
    }
  }
  return violations;
}
