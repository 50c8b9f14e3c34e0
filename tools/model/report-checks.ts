/**
 * The model's checks of what the scheduler promises about config changes, long runs and the runs
 * an operator asks for (issue 30, point 7), beside the checker's (tools/verify/checker.ts). Pure:
 * each reads the history, the final runs and what the model recorded, and returns violations.
 *
 *   max-runs-exact      a job with `maxRuns: N` has exactly N scheduled runs once N slots were
 *                       owed, never more, whatever config changes came between
 *   yield-never-dlq     a run whose last recorded outcome was a yield with checkpoint progress
 *                       never has its message dead-lettered (only a real poison message may be)
 *   created-runs-run    a run an operator created (`ops backfill`, `ops trigger`) is not refused
 *                       for its deadline before that deadline, counted from its creation, passed
 *   one-run-per-slot    the runs of one slot all have one shard count (a change of `shards` with
 *                       runs in flight never mixes two counts, which would double the slot)
 *   run-message-accepted  a message of an existing run of a configured job is not dead-lettered
 *                       before any claim of the run: only real poison reaches the DLQ (a run
 *                       created under an earlier shard count is the run its message names)
 *   report-kept         a command's report is an assertion: `ops retry` that reported a run
 *                       revived runs it (a claim follows, or it ends skipped or superseded by
 *                       its overlap policy, or an operator acts on it again, or the sweeper left
 *                       it for one); every run `ops trigger` reported created runs or ends; and
 *                       no manual run exists that no trigger reported (a non-zero exit created
 *                       nothing: a repeat with the same idempotency key finds the run instead)
 *
 * And the owed slots' shard counts: a slot belongs to the count its runs were created with
 * (the first put of the slot decides), so what is owed of it follows its runs, not the config.
 */
import { Invariant, type CheckViolation, type ExpectedSlot } from '../verify/checker.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import { isTerminal, RunOrigin, RunStatus, type Run } from '../../shared/core/vocabulary.js';

/** The code of a run refused for its deadline before it ever started (shared/core/outcome.ts). */
const DEADLINE_BEFORE_START = 'DEADLINE_BEFORE_START';
/** The code of a yield with checkpoint progress (shared/core/outcome.ts). */
const YIELDED = 'YIELDED';

const SCHEDULED_ORIGINS: ReadonlySet<string> = new Set([RunOrigin.PLANNED, RunOrigin.CATCH_UP, RunOrigin.PLANNED_LATE]);

const iso = (ms: number) => new Date(ms).toISOString();
const slotOf = (job: string, slot: number) => `${job}|${slot}`;

/** Whether a run was created by the planner (maxRuns counts these; backfills and triggers do not). */
export function isScheduled(run: Pick<Run, 'origin'>): boolean {
  return run.origin === undefined || SCHEDULED_ORIGINS.has(run.origin);
}

/** Distinct scheduled slots per job. */
export function scheduledSlots(runs: readonly Run[]): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  for (const run of runs) {
    if (!isScheduled(run)) continue;
    const slots = out.get(run.job) ?? new Set<number>();
    out.set(run.job, slots);
    slots.add(run.slot);
  }
  return out;
}

/**
 * `maxRuns`: never more than N scheduled slots, and N of them once the model owed N or more (it
 * owes every slot the planner had to plan, bound or not); fewer owed, at least those.
 */
export function checkMaxRuns(
  bounded: ReadonlyMap<string, number>,
  owedSlots: ReadonlyMap<string, number>,
  runs: readonly Run[],
): CheckViolation[] {
  const scheduled = scheduledSlots(runs);
  const out: CheckViolation[] = [];
  for (const [job, maxRuns] of bounded) {
    const count = scheduled.get(job)?.size ?? 0;
    const owed = owedSlots.get(job) ?? 0;
    const least = Math.min(maxRuns, owed);
    if (count > maxRuns)
      out.push({ invariant: Invariant.MAX_RUNS_EXACT, runKey: job, detail: `${count} scheduled slots for maxRuns ${maxRuns}` });
    else if (count < least)
      out.push({
        invariant: Invariant.MAX_RUNS_EXACT,
        runKey: job,
        detail: `${count} scheduled slots for maxRuns ${maxRuns}, though ${owed} were owed`,
      });
  }
  return out;
}

/**
 * Owed slots of a `maxRuns` job passed while its count was spent are not owed: the planner rightly
 * planned none, and a raised bound plans from its raise on. Each slot is judged by the bound in
 * force when the planner passed it (`planned`, from the definition the slot was owed under): the
 * bound was spent when the job's scheduled slots up to the last slot owed under that bound number
 * it. A slot a backfill owes is owed whatever the count.
 */
export function withoutSpentMaxRuns(
  slots: readonly ExpectedSlot[],
  owed: { readonly planned: ReadonlyMap<string, ReadonlyMap<number, number | undefined>>; readonly backfilled: ReadonlySet<string> },
  runs: readonly Run[],
): ExpectedSlot[] {
  const scheduled = scheduledSlots(runs);
  const spent = spentBounds(owed.planned, scheduled);
  return slots.filter((slot) => {
    const bound = owed.planned.get(slot.job)?.get(slot.slot);
    if (bound === undefined || owed.backfilled.has(slotOf(slot.job, slot.slot))) return true;
    return scheduled.get(slot.job)?.has(slot.slot) === true || !spent.has(`${slot.job}|${bound}`);
  });
}

/** `job|bound` of every bound whose count was spent by the slots owed under it (see withoutSpentMaxRuns). */
function spentBounds(
  planned: ReadonlyMap<string, ReadonlyMap<number, number | undefined>>,
  scheduled: ReadonlyMap<string, ReadonlySet<number>>,
): Set<string> {
  const out = new Set<string>();
  for (const [job, bySlot] of planned) {
    const lastUnder = new Map<number, number>();
    for (const [slot, bound] of bySlot) if (bound !== undefined) lastUnder.set(bound, Math.max(lastUnder.get(bound) ?? slot, slot));
    const mine = [...(scheduled.get(job) ?? [])];
    for (const [bound, last] of lastUnder) if (mine.filter((slot) => slot <= last).length >= bound) out.add(`${job}|${bound}`);
  }
  return out;
}

/** How many scheduled slots of each job are still owed once the spent ones are left out (checkMaxRuns' `owedSlots`). */
export function owedScheduledCounts(
  kept: readonly ExpectedSlot[],
  planned: ReadonlyMap<string, ReadonlyMap<number, number | undefined>>,
): Map<string, number> {
  const distinct = new Map<string, Set<number>>();
  for (const slot of kept) {
    if (!planned.get(slot.job)?.has(slot.slot)) continue;
    const slots = distinct.get(slot.job) ?? new Set<number>();
    distinct.set(slot.job, slots);
    slots.add(slot.slot);
  }
  return new Map([...distinct].map(([job, slots]) => [job, slots.size]));
}

/**
 * A message moved to the DLQ whose run's last accepted outcome before the move was a yield with
 * progress: the run was working, and its invocations used up the message's receives.
 */
export function checkYieldsNeverDeadLettered(
  history: readonly HistoryEvent[],
  deadLettered: readonly { readonly runKey: string; readonly at: number }[],
): CheckViolation[] {
  const out: CheckViolation[] = [];
  for (const moved of deadLettered) {
    let last: string | undefined;
    let yields = 0;
    for (const e of history) {
      if (e.type !== 'outcome' || e.runKey !== moved.runKey || !e.accepted || e.at > moved.at) continue;
      last = e.code;
      if (e.code === YIELDED) yields++;
    }
    if (last === YIELDED)
      out.push({
        invariant: Invariant.YIELD_NEVER_DLQ,
        runKey: moved.runKey,
        detail: `its message went to the DLQ at ${iso(moved.at)} after ${yields} yield(s) with progress, the last one its last outcome`,
      });
  }
  return out;
}

/**
 * Messages moved to the DLQ though their run exists, its job was configured all along (the model
 * never re-adds a removed job's name) and nobody had claimed it: the worker refused a message the
 * scheduler built from the run item, as poison.
 */
export function checkOnlyPoisonDeadLettered(
  history: readonly HistoryEvent[],
  deadLettered: readonly { readonly runKey: string; readonly at: number }[],
  runs: readonly Run[],
  configured: ReadonlySet<string>,
): CheckViolation[] {
  const byKey = new Map(runs.map((r) => [r.runKey, r]));
  const firstClaim = new Map<string, number>();
  for (const e of history) if (e.type === 'claimed' && !firstClaim.has(e.runKey)) firstClaim.set(e.runKey, e.at);
  const out: CheckViolation[] = [];
  for (const moved of deadLettered) {
    const run = byKey.get(moved.runKey);
    if (!run || !configured.has(run.job) || (firstClaim.get(moved.runKey) ?? Infinity) <= moved.at) continue;
    out.push({
      invariant: Invariant.RUN_MESSAGE_ACCEPTED,
      runKey: moved.runKey,
      detail: `its message went to the DLQ at ${iso(moved.at)} without any claim of the run (${run.shards} shard(s), now ${run.status}): refused as poison`,
    });
  }
  return out;
}

/**
 * A backfilled or manual run refused for its deadline before it ever started must have been
 * refused after its deadline counted from its creation (README: a backfill or a trigger asks for the
 * slot's work now). `deadlines` holds each job's shortest deadline over the scenario (the most any
 * worker may have applied); `toleranceMs` covers the creator's and the worker's clocks.
 */
export function checkCreatedRunsRun(
  history: readonly HistoryEvent[],
  runs: readonly Run[],
  deadlines: ReadonlyMap<string, number>,
  toleranceMs: number,
): CheckViolation[] {
  const asked = new Map(runs.filter((r) => r.origin === RunOrigin.BACKFILL || r.origin === RunOrigin.MANUAL).map((r) => [r.runKey, r]));
  const out: CheckViolation[] = [];
  for (const e of history) {
    if (e.type !== 'outcome' || !e.accepted || e.code !== DEADLINE_BEFORE_START) continue;
    const run = asked.get(e.runKey);
    const deadline = run ? deadlines.get(run.job) : undefined;
    if (!run || deadline === undefined) continue;
    const due = run.createdAt + deadline;
    if (e.at + toleranceMs < due) {
      out.push({
        invariant: Invariant.CREATED_RUNS_RUN,
        runKey: run.runKey,
        detail: `created by ${run.origin} at ${iso(run.createdAt)}, refused at ${iso(e.at)} as past its deadline, which counted from its creation is ${iso(due)}: it never ran`,
      });
    }
  }
  return out;
}

/** The runs of one slot with more than one shard count. */
export function checkOneShardCountPerSlot(runs: readonly Run[]): CheckViolation[] {
  const counts = new Map<string, Set<number>>();
  for (const run of runs) {
    const key = slotOf(run.job, run.slot);
    const seen = counts.get(key) ?? new Set<number>();
    counts.set(key, seen);
    seen.add(run.shards);
  }
  const out: CheckViolation[] = [];
  for (const [key, seen] of counts) {
    if (seen.size > 1)
      out.push({
        invariant: Invariant.ONE_RUN_PER_SLOT,
        runKey: key.replace('|', '@'),
        detail: `runs of ${[...seen].sort().join(' and ')} shards for one slot`,
      });
  }
  return out;
}

/**
 * The owed slots with the shard count their slot's runs were created with (shard 0's, else any
 * run's), or the owing definition's when the slot has no run: a slot first put under another
 * count is completed under it, and the new count applies from the next slot with no runs.
 */
export function withSlotShards(slots: readonly ExpectedSlot[], runs: readonly Run[]): ExpectedSlot[] {
  const counts = new Map<string, number>();
  for (const run of runs) {
    const key = slotOf(run.job, run.slot);
    if (run.shard === 0 || !counts.has(key)) counts.set(key, run.shards);
  }
  const out: ExpectedSlot[] = [];
  const done = new Set<string>();
  for (const slot of slots) {
    const key = slotOf(slot.job, slot.slot);
    const shards = counts.get(key);
    if (shards === undefined) {
      out.push(slot);
      continue;
    }
    if (done.has(key)) continue;
    done.add(key);
    for (let shard = 0; shard < shards; shard++) out.push({ job: slot.job, slot: slot.slot, shard, shards });
  }
  return out;
}

/** What operator commands reported, as the model's operator read it from their output. */
export interface OperatorReports {
  /** `ops retry` reported the run revived at `at`. */
  readonly revived: { readonly runKey: string; readonly at: number }[];
  /** `ops trigger` commands: the run keys their last try reported (none when every try exited non-zero). */
  readonly triggers: { readonly job: string; readonly key: string; readonly runKeys: readonly string[] }[];
}

/** Ends a revival may have without a claim: refused on arrival by its overlap policy (README "Overlap"). */
const REFUSED_ON_ARRIVAL: readonly RunStatus[] = [RunStatus.SKIPPED, RunStatus.SUPERSEDED];

/**
 * The runs of a job removed from the config since are left out: nobody runs them (the sweeper
 * reports them as orphans, README), whatever a command reported before the removal.
 */
export function checkReportsKept(
  reports: OperatorReports,
  history: readonly HistoryEvent[],
  runs: readonly Run[],
  stuck: ReadonlySet<string>,
  configured: ReadonlySet<string>,
): CheckViolation[] {
  const byKey = new Map(runs.filter((r) => configured.has(r.job)).map((r) => [r.runKey, r]));
  const removed = new Set(runs.filter((r) => !configured.has(r.job)).map((r) => r.runKey));
  const claims = new Map<string, number[]>();
  // Operator acts in history order: virtual time stands still within a command burst, so a
  // resolve right after a retry has the retry's own instant and only the order tells them apart.
  const opsActs = new Map<string, { readonly at: number; readonly action: string; readonly index: number }[]>();
  history.forEach((e, index) => {
    if (e.type === 'claimed') claims.set(e.runKey, [...(claims.get(e.runKey) ?? []), e.at]);
    else if (e.type === 'ops') opsActs.set(e.runKey, [...(opsActs.get(e.runKey) ?? []), { at: e.at, action: e.action, index }]);
  });
  const out: CheckViolation[] = [];
  for (const { runKey, at } of reports.revived) {
    if (removed.has(runKey)) continue;
    const run = byKey.get(runKey);
    const ran = (claims.get(runKey) ?? []).some((t) => t >= at);
    const acts = opsActs.get(runKey) ?? [];
    const own = acts.filter((a) => a.action === 'retry' && a.at <= at).at(-1);
    const actedOnAgain = acts.some((a) => (own === undefined ? a.at > at : a.index > own.index));
    if (ran || actedOnAgain || stuck.has(runKey) || (run !== undefined && REFUSED_ON_ARRIVAL.includes(run.status))) continue;
    out.push({
      invariant: Invariant.REPORT_KEPT,
      runKey,
      detail: `ops retry reported it revived at ${iso(at)}, but it never ran after (${run ? `now ${run.status}` : 'no run item'})`,
    });
  }
  const reported = new Set<string>();
  for (const trigger of reports.triggers) {
    if (!configured.has(trigger.job)) continue;
    for (const runKey of trigger.runKeys) {
      reported.add(runKey);
      const run = byKey.get(runKey);
      if (run && (isTerminal(run.status) || claims.has(runKey) || stuck.has(runKey))) continue;
      out.push({
        invariant: Invariant.REPORT_KEPT,
        runKey,
        detail: `ops trigger ${trigger.job} --idempotency-key ${trigger.key} reported it created, but it ${run ? `never ran (now ${run.status})` : 'does not exist'}`,
      });
    }
  }
  for (const run of byKey.values()) {
    if (run.origin !== RunOrigin.MANUAL || reported.has(run.runKey)) continue;
    out.push({
      invariant: Invariant.REPORT_KEPT,
      runKey: run.runKey,
      detail: `a manual run no ops trigger reported (${run.status}): a command that exited non-zero created it`,
    });
  }
  return out;
}
