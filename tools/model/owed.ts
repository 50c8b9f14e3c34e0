/**
 * Which slots a scenario owes, and which runs may not exist, from the model's own record of what
 * happened: the config timeline (jobs added, removed, their schedule changed, pauses and resumes as
 * an operator confirmed them, backfills) and every planner tick with the config it ran with, its
 * clock and the horizon it reported. Nothing here reads the planner's stored state: a planner that
 * forgets a pause or drops a watermark must not be able to lower what it owes.
 *
 * The planner contract this encodes (README "Misfires", "Pause, resume, backfill"; DESIGN §7): a
 * tick at planner instant `now` that planned (its report's horizon is past `now`) materializes, for
 * every unpaused job of its partition, every slot from where that job was planned through up to the
 * horizon; slots more than `misfire.after` old are misfires: `all` runs them and `skip` records
 * them SKIPPED, both at most `maxPerTick` per tick (the job is then "behind" with a cursor), `latest`
 * keeps only the newest. A paused job is not planned; on resume it is planned from where it
 * stopped. So, per job, the slots owed are the union over its planning ticks of
 *   on-time   (max(through, now − after), horizon]
 *   misfired  (through, now − after]      (policy all or skip; up to the job's final cursor while it
 *                                          is still behind)
 * where `through` is an upper bound of how far the job was planned before that tick: the horizon
 * of the last tick that planned it, or for its first tick the highest horizon any tick reported
 * (or `now` when that is earlier). Upper bounds only ever shrink what is owed. A tick that plans a
 * job for the first time, or with a definition other than its last planning's (a deploy changed
 * any field), owes it from the tick's own `now` at the latest: the slots between `now` and the
 * watermark were planned without it (the planner re-plans them from the previous tick's now). A tick that may
 * have seen the job either paused or not (a pause racing the tick) owes nothing for it.
 *
 * The planner keeps no schedule with a catch-up, only a cursor (an instant): the on-time window is
 * planned whole by the tick that saw it, with that tick's config, but the misfired window is paged
 * (`maxPerTick`) over that tick and later ones, each page with the schedule in force at its own
 * tick. After a schedule change in the middle of a catch-up the rest of the window follows the new
 * schedule (README "Misfires"), and which page went under which schedule is the planner's state.
 * So a misfired slot is owed only if it is a slot of every definition the job had in a tick that
 * may have paged its window (any tick still running when the window was seen, or started later).
 *
 * Backfilled ranges owe the slots of the definition the backfill was given, not of whatever the
 * config says when it returns (a schedule change may race a backfill).
 *
 * Runs that may not exist (no-unexpected-run): a planned run (not in a range an operator asked to
 * backfill) attributed to ticks (by its createdAt,
 * the tick's clock) none of which could have created it: the job was not in the tick's config
 * (removed, or not added yet), or it was paused throughout the tick, or the slot is at or before
 * the watermark every partition had reached when the job was added (a slot from before the job
 * existed that the planner had already passed).
 */
import { SETTLED_STATUSES, type ExpectedSlot, type UnexpectedRun } from '../verify/checker.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { slotSpecOf } from '../../shared/core/plan.js';
import { jobsOfPartition } from '../../shared/core/planner-state.js';
import { slotsBetween } from '../../shared/schedule/slots.js';
import { isTerminal, RunOrigin, runKeyOf, type Run } from '../../shared/core/vocabulary.js';

/** Sequence numbers order the model's events; an operator's action spans [from, to] (its call to its confirmation). */
export type TimelineEvent =
  | { readonly kind: 'add'; readonly seq: number; readonly job: Job }
  | { readonly kind: 'remove'; readonly seq: number; readonly job: string }
  /** A deploy changed the job's definition (any field). */
  | { readonly kind: 'change'; readonly seq: number; readonly job: Job }
  | { readonly kind: 'pause'; readonly seq: number; readonly from: number; readonly job: string }
  | { readonly kind: 'resume'; readonly seq: number; readonly from: number; readonly job: string }
  /** A backfill returned: every slot of `definition` (the job as the backfill was given it) in its range has a run. */
  | {
      readonly kind: 'backfill';
      readonly seq: number;
      readonly job: string;
      readonly definition: Job;
      readonly slotFrom: number;
      readonly slotTo: number;
    }
  /** A backfill was asked for (it may create runs in its range whether or not it returns). */
  | { readonly kind: 'backfill-started'; readonly seq: number; readonly job: string; readonly slotFrom: number; readonly slotTo: number };

/** One partition's planner invocation, as the model saw it. */
export interface TickRecord {
  readonly id: number;
  /** The planner invocation set (one command, one copy) this partition's tick belonged to. */
  readonly command: number;
  readonly partition: number;
  readonly of: number;
  /** Sequence numbers at its start and when it settled. */
  readonly seqStart: number;
  readonly seqEnd: number;
  /** The planner's clock when the tick started (its `now`). */
  readonly now: number;
  /** The config the tick ran with. */
  readonly jobs: readonly Job[];
  /** Resolved (every put and send of its plan succeeded): it returned, or it failed in or after its watermark write. */
  readonly ok: boolean;
  /** The horizon it reported (undefined when it failed). */
  readonly horizon?: number;
  /** Its watermark write is known to have landed (false also when its outcome is unknown). */
  readonly advanced?: boolean;
}

export interface OwedInput {
  readonly timeline: readonly TimelineEvent[];
  readonly ticks: readonly TickRecord[];
  /** Slots after this are not owed (the end of the fault phase, true time). */
  readonly until: number;
  /** The planner's clock skew: tick instants are the planner's clock, `until` is true time. */
  readonly plannerSkewMs: number;
  /** Jobs in the final config. */
  readonly configured: ReadonlySet<string>;
  /** Final catch-up cursors of jobs still behind (from the final tables): misfires past them are not planned yet. */
  readonly behindCursors: ReadonlyMap<string, number>;
  /** At most this many owed slots per job (bounded checker work). @default 500 */
  readonly maxPerJob?: number;
}

export interface Owed {
  readonly slots: ExpectedSlot[];
  /**
   * The slots per job the planner owes (a backfill's are not: `maxRuns` does not count them), each
   * with the `maxRuns` of the definition it was owed under (undefined: unbounded). A raised bound
   * owes slots from its raise on, so a slot is judged by the bound in force when the planner passed it.
   */
  readonly planned: ReadonlyMap<string, ReadonlyMap<number, number | undefined>>;
  /** `job|slot` of every slot a backfill owes (a run whatever the job's `maxRuns`). */
  readonly backfilled: ReadonlySet<string>;
}

type PauseView = 'unpaused' | 'paused' | 'ambiguous';

/** Whether `job` was paused throughout the interval [a, b] of sequence numbers. */
export function pauseView(timeline: readonly TimelineEvent[], job: string, a: number, b: number): PauseView {
  let paused = false;
  for (const e of timeline) {
    if ((e.kind !== 'pause' && e.kind !== 'resume') || e.job !== job) continue;
    if (e.seq < a) paused = e.kind === 'pause';
    else if (e.from <= b) return 'ambiguous';
  }
  return paused ? 'paused' : 'unpaused';
}

export function computeOwed(input: OwedInput): Owed {
  const until = input.until + input.plannerSkewMs;
  const cap = input.maxPerJob ?? 500;
  const planning = input.ticks
    .filter((t) => t.ok && t.horizon !== undefined && t.horizon > t.now)
    .sort((a, b) => a.seqStart - b.seqStart || a.id - b.id);
  const owed = new Map<string, Map<number, Job>>();
  const through = new Map<string, number>();
  /** The definition each job was last planned with (by a tick that planned it). */
  const plannedAs = new Map<string, Job>();
  const owe = (job: Job, after: number, upTo: number, limitTo?: number, keep: (slot: number) => boolean = () => true) => {
    const to = Math.min(upTo, until, limitTo ?? Number.POSITIVE_INFINITY);
    if (to <= after) return [];
    const slots = owed.get(job.name) ?? new Map<number, Job>();
    owed.set(job.name, slots);
    const added: number[] = [];
    for (const slot of slotsBetween(slotSpecOf(job), after, to, cap)) {
      if (slots.size >= cap || !keep(slot)) continue;
      slots.set(slot, job);
      added.push(slot);
    }
    return added;
  };
  // Every tick that had each job in its partition, failed ones too (a tick can page a catch-up and
  // record its cursor before it fails).
  const tickedWith = new Map<string, { readonly seqEnd: number; readonly job: Job }[]>();
  for (const tick of input.ticks) {
    for (const job of jobsOfPartition(tick.jobs, tick.partition, tick.of)) {
      const seen = tickedWith.get(job.name) ?? [];
      tickedWith.set(job.name, seen);
      seen.push({ seqEnd: tick.seqEnd, job });
    }
  }
  /** Slots of every definition `job` had in a tick that was still running at `seq` or started later. */
  const ofEveryLaterDefinition = (job: Job, seq: number) => {
    const others = new Set((tickedWith.get(job.name) ?? []).filter((t) => t.seqEnd > seq && t.job !== job).map((t) => t.job));
    const specs = [...others].map((other) => slotSpecOf(other));
    return (slot: number) => specs.every((spec) => slotsBetween(spec, slot - 1, slot, 1)[0] === slot);
  };

  for (const tick of planning) {
    // Upper bound of any partition's watermark when this tick read it: every horizon reported by
    // a tick that settled before this one did.
    const highest = Math.max(tick.now, ...planning.filter((t) => t.seqEnd < tick.seqEnd && t !== tick).map((t) => t.horizon!));
    for (const job of jobsOfPartition(tick.jobs, tick.partition, tick.of)) {
      if (!input.configured.has(job.name) || !job.enabled) continue;
      const view = pauseView(input.timeline, job.name, tick.seqStart, tick.seqEnd);
      if (view === 'paused') continue;
      // A job new to the planner, or whose definition changed since it was last planned, owns
      // slots before the watermark that no tick planned for it: every one still ahead when a
      // tick first plans it (after that tick's now) is owed (the planner re-plans from the
      // previous tick's now; issue 30 point 4).
      const known = through.get(job.name) ?? highest;
      const changed = plannedAs.get(job.name) !== job;
      plannedAs.set(job.name, job);
      const from = changed ? Math.min(known, tick.now) : known;
      through.set(job.name, Math.max(known, tick.horizon!));
      if (view === 'ambiguous') continue;
      const lateEdge = tick.now - job.misfire.after - 1;
      // A forbid-queue job that runs its misfires has its slots created in slot order: while its
      // catch-up is unfinished its on-time slots wait for it (shared/core/plan.ts, inSlotOrder).
      const inSlotOrder = job.overlap === 'forbid-queue' && job.misfire.policy === 'all';
      owe(job, Math.max(from, lateEdge), tick.horizon!, inSlotOrder ? input.behindCursors.get(job.name) : undefined);
      if (job.misfire.policy !== 'latest')
        owe(job, from, lateEdge, input.behindCursors.get(job.name), ofEveryLaterDefinition(job, tick.seqStart));
    }
  }
  // What the planner owes, before the backfills add theirs: `maxRuns` counts scheduled slots only.
  const planned = new Map([...owed].map(([name, bySlot]) => [name, new Map([...bySlot].map(([slot, job]) => [slot, job.maxRuns]))]));
  // Backfilled ranges: every slot in them has a run once the backfill returned.
  const backfilled = new Set<string>();
  for (const e of input.timeline) {
    if (e.kind !== 'backfill' || !input.configured.has(e.job)) continue;
    for (const slot of owe(e.definition, e.slotFrom - 1, e.slotTo - 1)) backfilled.add(`${e.job}|${slot}`);
  }

  const slots: ExpectedSlot[] = [];
  for (const [name, bySlot] of owed) {
    for (const [slot, job] of [...bySlot].sort((a, b) => a[0] - b[0])) {
      for (let shard = 0; shard < job.shards; shard++) slots.push({ job: name, slot, shard, shards: job.shards });
    }
  }
  return { slots, planned, backfilled };
}

/**
 * The statuses each owed run may end quiescence in. Settled, as a rule; two exceptions keep the
 * status it has: a run the sweeper stopped re-dispatching (`stuck`: waiting for an operator,
 * README), and a run of a job whose catch-up was still moving when quiescence ended
 * (`progressing`) that the catch-up holds back: a catch-up run itself, or, under forbid-queue
 * (`slotOrdered`: one run at a time, in slot order), an open run with an older open catch-up run
 * on its lane. A backlog longer than quiescence (an outage of hours paged by `maxPerTick`) is
 * still being created at its end, and an exclusive lane works it off one run at a time, so the
 * runs of its last pages, and the on-time runs queued behind them, cannot all have ended yet;
 * whether they still move is for the other liveness invariants (every open run has a message or a
 * sweep, no lane is blocked by a finished run, nothing RUNNING past its lease).
 */
export function owedStatuses(
  slots: readonly ExpectedSlot[],
  runsByKey: ReadonlyMap<string, Run>,
  stuck: ReadonlySet<string>,
  progressing: ReadonlySet<string>,
  slotOrdered: ReadonlySet<string>,
): ExpectedSlot[] {
  // The oldest open catch-up slot of each lane (job and shard) of a job still catching up.
  const oldestCatchUp = new Map<string, number>();
  for (const run of runsByKey.values()) {
    if (!progressing.has(run.job) || run.origin !== RunOrigin.CATCH_UP || isTerminal(run.status)) continue;
    const lane = `${run.job}#${run.shard}`;
    oldestCatchUp.set(lane, Math.min(oldestCatchUp.get(lane) ?? Infinity, run.slot));
  }
  return slots.map((slot) => {
    const run = runsByKey.get(runKeyOf(slot.job, slot.slot, slot.shard ?? 0, slot.shards ?? 1));
    if (!run) return slot;
    const open = progressing.has(run.job) && !isTerminal(run.status);
    const stillPaging = open && run.origin === RunOrigin.CATCH_UP;
    const queuedBehindCatchUp = open && slotOrdered.has(run.job) && (oldestCatchUp.get(`${run.job}#${run.shard}`) ?? Infinity) < run.slot;
    return stuck.has(run.runKey) || stillPaging || queuedBehindCatchUp ? { ...slot, statuses: [...SETTLED_STATUSES, run.status] } : slot;
  });
}

/**
 * Planned runs no tick could have created. A run's createdAt is the clock of the tick that put it,
 * so the ticks with that `now` are its only possible creators; backfilled runs are left out.
 */
export function unexpectedRuns(runs: readonly Run[], timeline: readonly TimelineEvent[], ticks: readonly TickRecord[]): UnexpectedRun[] {
  const out: UnexpectedRun[] = [];
  const byNow = new Map<number, TickRecord[]>();
  for (const tick of ticks) byNow.set(tick.now, [...(byNow.get(tick.now) ?? []), tick]);
  const added = new Map<string, number>();
  for (const e of timeline) if (e.kind === 'add' && !added.has(e.job.name)) added.set(e.job.name, e.seq);
  const backfilled = (run: Run) =>
    timeline.some((e) => e.kind === 'backfill-started' && e.job === run.job && run.slot >= e.slotFrom && run.slot < e.slotTo);
  for (const run of runs) {
    if (run.origin === RunOrigin.BACKFILL || run.origin === RunOrigin.MANUAL || backfilled(run)) continue;
    const addedAt = added.get(run.job);
    // A job added to a running partition gets its slots after the `now` of the tick before (the
    // planner re-plans from there when the config changes): only a slot at or before that is one
    // no tick could have owed it.
    const passed = addedAt === undefined ? undefined : watermarkFloor(ticks, addedAt, 'now');
    if (passed !== undefined && run.slot <= passed) {
      out.push({
        runKey: run.runKey,
        why: `its slot is from before the job was added, and every partition had already planned past it (its ticks' now ${new Date(passed).toISOString()})`,
      });
      continue;
    }
    const candidates = byNow.get(run.createdAt) ?? [];
    if (candidates.length === 0) {
      out.push({ runKey: run.runKey, why: `no planner tick ran at its createdAt ${new Date(run.createdAt).toISOString()}` });
      continue;
    }
    const reasons = candidates.map((tick) => {
      if (!jobsOfPartition(tick.jobs, tick.partition, tick.of).some((j) => j.name === run.job))
        return `the job was not in the config of the tick at ${new Date(tick.now).toISOString()} (${tick.partition}/${tick.of})`;
      if (pauseView(timeline, run.job, tick.seqStart, tick.seqEnd) === 'paused')
        return `the job was paused throughout the tick at ${new Date(tick.now).toISOString()}`;
      return undefined;
    });
    if (reasons.every((r) => r !== undefined)) out.push({ runKey: run.runKey, why: reasons[0]! });
  }
  return out;
}

/**
 * A lower bound of every partition's watermark at sequence number `seq`: the lowest horizon of the
 * last tick command before `seq` whose every partition planned and advanced its watermark.
 */
function watermarkFloor(ticks: readonly TickRecord[], seq: number, mark: 'horizon' | 'now' = 'horizon'): number | undefined {
  const commands = new Map<number, TickRecord[]>();
  for (const t of ticks) commands.set(t.command, [...(commands.get(t.command) ?? []), t]);
  let floor: number | undefined;
  for (const parts of commands.values()) {
    const of = parts[0]!.of;
    const full =
      parts.length >= of && parts.every((t) => t.seqEnd < seq && t.ok && t.advanced && t.horizon !== undefined && t.horizon > t.now);
    if (!full) continue;
    const low = Math.min(...parts.map((t) => (mark === 'now' ? t.now : t.horizon!)));
    floor = floor === undefined ? low : Math.max(floor, low);
  }
  return floor;
}
