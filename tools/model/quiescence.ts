/**
 * The end of a scenario: quiescence (faults off, time runs on until the world settles down) and
 * the check of the final tables against what the model owes.
 */
import { checkScenario, type CheckResult } from '../verify/checker.js';
import { partitionOf } from '../../shared/core/partition.js';
import { isTerminal, isWaiting, RunOrigin, RunStatus, type Run } from '../../shared/core/vocabulary.js';
import { SWEEP_DEFAULTS } from '../../shared/planner/sweeper.js';
import { PLANNER_SCHEDULE } from '../../shared/core/resources.js';
import type { FinalTables } from './ledger-view.js';
import { computeOwed, owedStatuses, unexpectedRuns } from './owed.js';
import {
  checkCreatedRunsRun,
  checkMaxRuns,
  checkOneShardCountPerSlot,
  checkOnlyPoisonDeadLettered,
  checkReportsKept,
  checkYieldsNeverDeadLettered,
  withoutSpentMaxRuns,
  owedScheduledCounts,
  withSlotShards,
} from './report-checks.js';
import { CATCH_UP_STREAK, iso, QUIESCENCE_MAX_MS, SWEEP_GRACE_MS } from './world-setup.js';
import type { PlannerDriver } from './planner-driver.js';
import type { Fleet } from './fleet.js';
import type { Stage } from './stage.js';

export class Quiescence {
  private lastCursors = new Map<string, number>();
  private progressing: string[] = [];
  private readonly streaks = new Map<string, number>();
  quiescenceEnd: number | undefined;
  /** What kept quiescence going at its last check (for the story). */
  private unsettled: string[] = [];

  constructor(
    readonly stage: Stage,
    private readonly driver: PlannerDriver,
    private readonly fleet: Fleet,
  ) {}

  /**
   * Stops injecting faults, thaws every paused container, and lets time run on: planner ticks every
   * minute, every due message delivered at once (to a free container, or to a new one as Lambda
   * scales out), handlers well-behaved from now on. It ends as soon as the world has settled down
   * (no run of the fault phase open but those left for an operator, no job catching up, nothing
   * due or in progress, the watermark fresh from a tick), or at the bound.
   */
  async quiesce(): Promise<void> {
    this.stage.faultPhaseEnd = this.stage.time.now();
    this.stage.faults.enabled = false;
    this.stage.quiescent = true;
    this.stage.say('— faults stop; time runs on —');
    for (const container of this.stage.containers) {
      if (container.paused) {
        container.paused = false;
        this.fleet.thaw(container);
      }
    }
    await this.stage.settle();
    const start = this.stage.time.now();
    const maxEnd = start + QUIESCENCE_MAX_MS;
    let nextTick = start;
    for (let round = 0; round < 20_000; round++) {
      const now = this.stage.time.now();
      let ticked = false;
      if (now >= nextTick) {
        await this.driver.tick();
        nextTick = now + PLANNER_SCHEDULE.tickMs;
        ticked = true;
      }
      await this.stage.queue.pull();
      await this.fleet.deliverAllDue();
      await this.stage.settle();
      // What the actors sent while settling (an exclusive lane's hand-on, a sweep's re-send) is due now, not
      // at the next tick: seen only at the next round's pull, it made a forbid-queue backlog move
      // one run a minute, and quiescence end with it unfinished (model seed 20269131).
      await this.stage.queue.pull();
      const idle =
        !this.stage.queue.hasDue() && this.stage.containers.every((l) => !l.busy) && this.stage.extraContainers.every((l) => !l.busy);
      const nextTimer = this.stage.time.nextTimerAt();
      const quietUntilTick =
        idle && (nextTimer === undefined || nextTimer >= nextTick) && (this.stage.queue.nextVisibleAt() ?? Infinity) >= nextTick;
      // A tick or an operator action still in flight (a delayed response) may yet write: wait for it.
      if ((ticked || quietUntilTick) && this.stage.unkillableInFlight === 0 && (await this.settledDown(ticked))) break;
      if (this.stage.time.now() >= maxEnd) break;
      const candidates = [nextTick, this.stage.queue.nextVisibleAt(), nextTimer].filter((t): t is number => t !== undefined);
      const next = Math.max(this.stage.time.now() + 1, Math.min(...candidates));
      await this.stage.time.advanceTo(Math.min(next, maxEnd), () => this.stage.settle());
    }
    this.quiescenceEnd = this.stage.time.now();
    const took = Math.round((this.quiescenceEnd - start) / 1000);
    this.stage.say(
      this.quiescenceEnd >= maxEnd
        ? `— quiescence bound reached after ${took} s; still open: ${this.unsettled.join('; ')} —`
        : `— settled after ${took} s —`,
    );
  }

  /**
   * Whether quiescence may end: no open run of a configured job with a slot of the fault phase
   * (except runs the sweeper stopped re-dispatching: left for an operator), and no unpaused job
   * still catching up. Also remembers the catch-up cursors, to tell a long backlog from a wedge.
   */
  private async settledDown(ticked: boolean): Promise<boolean> {
    const started = Date.now();
    const final = await this.stage.readTables();
    this.stage.settleCheckMs += Date.now() - started;
    const configured = new Set(this.stage.jobs.map((j) => j.name));
    const stuck = new Set(this.stuckRuns(final).map((r) => r.runKey));
    const open = final.runs.filter(
      (r) =>
        configured.has(r.job) &&
        !isTerminal(r.status) &&
        !stuck.has(r.runKey) &&
        ofTheFaultPhase(r, this.stage.faultPhaseEnd ?? 0, this.stage.setup.plannerSkewMs),
    );
    const behind = [...final.cursors].filter(([job]) => configured.has(job) && !this.stage.pausedJobs.has(job));
    // A run claimed at the very end of the fault phase by a worker killed there (any slot, even one
    // after the fault phase) is taken over only once its message or the sweeper comes back to it
    // (lease + the sweep's grace at most): quiescence waits for that, or the check would blame
    // the scheduler for a takeover that was simply not due yet.
    const lapsed = final.runs.filter(
      (r) => configured.has(r.job) && r.status === RunStatus.RUNNING && (r.leaseUntil ?? 0) < this.stage.time.now(),
    );
    this.unsettled = [
      ...lapsed.slice(0, 3).map((r) => `${r.runKey} RUNNING past its lease`),
      ...open.slice(0, 3).map((r) => `${r.runKey} ${r.status}`),
      ...behind.map(([job, cursor]) => `${job} behind at ${iso(cursor)}`),
    ];
    if (ticked) {
      // Progress is measured tick to tick: a check between two ticks sees nothing move.
      const moved = behind
        .filter(([job, cursor]) => this.lastCursors.get(job) !== undefined && this.lastCursors.get(job) !== cursor)
        .map(([job]) => job);
      this.progressing = moved;
      for (const [job] of behind) this.streaks.set(job, moved.includes(job) ? (this.streaks.get(job) ?? 0) + 1 : 0);
      this.lastCursors = new Map(behind);
    }
    // A long backlog paged by maxPerTick: once it has moved for a few ticks in a row, the planner
    // is shown to catch up (a wedged one does not move) and waiting for the rest proves nothing more.
    return open.length === 0 && lapsed.length === 0 && behind.every(([job]) => (this.streaks.get(job) ?? 0) >= CATCH_UP_STREAK);
  }

  /** Open runs the sweeper gave up re-dispatching (budget spent, nobody claimed them): waiting for an operator. */
  private stuckRuns(final: FinalTables): Run[] {
    const messaged = this.stage.queue.runKeysWithMessage();
    return final.runs.filter(
      (r) => isWaiting(r.status) && (r.redispatches ?? 0) >= SWEEP_DEFAULTS.maxRedispatches && !messaged.has(r.runKey),
    );
  }

  private clockTolerance(): number {
    const skews = [...this.stage.setup.containers.map((l) => l.skewMs), this.stage.setup.plannerSkewMs, this.stage.setup.opsSkewMs];
    return Math.max(...skews) - Math.min(...skews) + this.stage.setup.clockAllowanceMs + 1_000;
  }

  async check(): Promise<{ result: CheckResult; final: FinalTables }> {
    const final = await this.stage.readTables();
    const tolerance = this.clockTolerance();
    const configured = new Set(this.stage.jobs.map((j) => j.name));
    const behindCursors = new Map([...final.cursors].filter(([job]) => final.planner.some((p) => p.behind.includes(job))));
    const owed = computeOwed({
      timeline: this.stage.timeline,
      ticks: this.stage.ticks,
      until: this.stage.faultPhaseEnd ?? this.stage.time.now(),
      plannerSkewMs: this.stage.setup.plannerSkewMs,
      configured,
      behindCursors,
    });
    const stuck = this.stuckRuns(final);
    const stuckKeys = new Set(stuck.map((r) => r.runKey));
    const runsByKey = new Map(final.runs.map((r) => [r.runKey, r]));
    // Runs the sweeper left for an operator, and the last pages of a catch-up still moving (with,
    // under forbid-queue, the runs queued behind them in slot order), may stay open.
    const slotOrdered = new Set([...this.stage.specs.values()].filter((s) => s.overlap === 'forbid-queue').map((s) => s.name));
    const bounded = new Map(this.stage.jobs.filter((j) => j.maxRuns !== undefined).map((j) => [j.name, j.maxRuns!]));
    const owedSlots = withoutSpentMaxRuns(withSlotShards(owed.slots, final.runs), owed, final.runs);
    const slots = owedStatuses(owedSlots, runsByKey, stuckKeys, new Set(this.progressing), slotOrdered);
    const skews = [...this.stage.setup.containers.map((l) => l.skewMs), this.stage.setup.opsSkewMs];
    const pairwise = Math.max(...skews) - Math.min(...skews);
    const jobsByPartition: Record<number, string[]> = {};
    for (const job of this.stage.jobs) (jobsByPartition[partitionOf(job.name, this.stage.partitions)] ??= []).push(job.name);
    const all = [...this.stage.specs.values()];
    const result = checkScenario(
      this.stage.events,
      final,
      {
        slots,
        clockAllowanceMs: Math.max(0, pairwise - this.stage.setup.clockAllowanceMs),
        model: {
          reconciling: all.filter((s) => s.reconcile).map((s) => s.name),
          itemGroups: Object.fromEntries(all.map((s) => [s.name, s.group])),
          overlap: Object.fromEntries(all.map((s) => [s.name, s.overlap])),
          startLeadMs: Object.fromEntries(all.map((s) => [s.name, s.startLeadMs])),
          clockToleranceMs: tolerance,
          unexpected: unexpectedRuns(final.runs, this.stage.timeline, this.stage.ticks),
        },
      },
      {
        now: this.stage.time.now(),
        clockToleranceMs: tolerance,
        partitions: this.stage.partitions,
        jobsByPartition,
        paused: [...this.stage.pausedJobs],
        jobs: this.stage.jobs.map((j) => j.name),
        queue: this.stage.queue.remaining(),
        withMessage: [...this.stage.queue.runKeysWithMessage()],
        sweepGraceMs: SWEEP_GRACE_MS + PLANNER_SCHEDULE.tickMs + tolerance,
        // Quiescence delivers every due message at once: one due for a minute was left behind.
        dueGraceMs: PLANNER_SCHEDULE.tickMs,
        stuck: [...stuckKeys],
        progressing: this.progressing,
        pausedInLedger: final.paused,
        exclusive: all.filter((spec) => spec.overlap !== 'parallel').map((spec) => spec.name),
      },
    );
    const reported = [
      ...checkMaxRuns(bounded, owedScheduledCounts(owedSlots, owed.planned), final.runs),
      ...checkYieldsNeverDeadLettered(this.stage.events, this.stage.queue.deadLettered),
      ...checkCreatedRunsRun(this.stage.events, final.runs, this.shortestDeadlines(), tolerance),
      ...checkOneShardCountPerSlot(final.runs),
      ...checkOnlyPoisonDeadLettered(this.stage.events, this.stage.queue.deadLettered, final.runs, configured),
      ...checkReportsKept(this.stage.reports, this.stage.events, final.runs, stuckKeys, configured),
    ];
    const violations = [...result.violations, ...reported];
    return { result: { ...result, ok: violations.length === 0, violations }, final };
  }

  /** Each job's shortest deadline over the scenario's definitions (the most a worker may have applied). */
  private shortestDeadlines(): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.stage.timeline) {
      if ((e.kind !== 'add' && e.kind !== 'change') || e.job.deadline === undefined) continue;
      out.set(e.job.name, Math.min(out.get(e.job.name) ?? Infinity, e.job.deadline));
    }
    return out;
  }
}

/**
 * Whether quiescence waits for an open run: one the planner put for a slot of the fault phase, or
 * one an operator created then (`ops trigger`, `ops backfill`: only they act in the fault phase).
 * A trigger's slot is its own clock's `now`, which a skewed ops clock (or the millisecond it
 * adds) puts past the fault phase's end: judged by its slot alone, quiescence ended before the
 * run had its turn, and report-kept blamed the trigger (model seed 1982399355).
 */
export function ofTheFaultPhase(run: Pick<Run, 'slot' | 'origin'>, faultPhaseEnd: number, plannerSkewMs: number): boolean {
  return run.origin === RunOrigin.MANUAL || run.origin === RunOrigin.BACKFILL || run.slot <= faultPhaseEnd + plannerSkewMs;
}
