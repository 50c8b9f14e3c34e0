/**
 * The planner's I/O loop (DESIGN §7). Order per tick:
 *   read the layout and the exception lists (one BatchGet) → switch layout if the partition count
 *   changed → read the exceptional jobs' plans → plan (pure) → put runs (bounded parallelism),
 *   sending one message per run this tick created as the puts complete (batches of 10, in plan
 *   order: on-time first) → record catch-up cursors → advance the watermark (forward only) → sweep.
 *
 * No leader election: EventBridge may invoke twice, and a slow tick may overlap the next. Every
 * write is conditional, so a concurrent planner only loses conditional checks, and only the
 * planner whose put created a run sends its message. A crash between put and send leaves a
 * READY run with no message; the sweeper re-dispatches it once its slot is `sweep.graceMs` old.
 */
import { randomUUID } from 'node:crypto';
import type { Ledger } from '../store/ledger.js';
import { SEND_BATCH_SIZE, type OutgoingRun, type RunQueue } from '../messaging/run-queue.js';
import { OrderedDispatch, slotTasks } from './dispatch.js';
import { readJobStates } from './job-states.js';
import type { CountedCreateResult, NewRun } from '../store/ledger.js';
import type { HistorySink } from '../core/history.js';
import { NO_HISTORY } from '../core/history.js';
import type { Job } from '../schedule/job-schema.js';
import type { PartitionRef } from '../core/partition.js';
import { planTick, shardsOfSlot, type PlannedRun } from '../core/plan.js';
import { configFingerprint, jobsOfPartition, relayout, replanFromOf, type PlannerLayout } from '../core/planner-state.js';
import { RunOrigin, RunStatus } from '../core/vocabulary.js';
import { messageFor } from '../core/run-message.js';
import { MetricName, type MetricsSink, type RunLogger } from '../runtime/observability.js';
import { limiter, mapBounded } from '../core/concurrency.js';
import { PLANNER_SCHEDULE } from '../core/resources.js';
import { sweep, type SweepOptions } from './sweeper.js';
import { publishOperatorGauges } from './operator-gauges.js';

/**
 * Beyond one tick and the jobs' startLead: EventBridge delivers a scheduled invocation up to a
 * few seconds late, and a cold start adds more.
 */
const TICK_DELAY_MARGIN_MS = 3_500;

/**
 * The default horizon of a tick: one tick interval, plus the largest startLead among the jobs,
 * plus a margin. A slot just past one tick's horizon is planned by the next tick; with a horizon
 * of exactly one tick, a next tick that fires late sends such a slot with less notice than its
 * startLead and it starts late.
 */
export function defaultLookaheadMs(jobs: readonly Pick<Job, 'startLead'>[]): number {
  const longestStartLead = jobs.reduce((longest, job) => Math.max(longest, job.startLead), 0);
  return PLANNER_SCHEDULE.tickMs + longestStartLead + TICK_DELAY_MARGIN_MS;
}

export interface PlannerOptions {
  /** How far past `now` a tick materializes slots. @default defaultLookaheadMs(the partition's jobs) */
  readonly lookaheadMs?: number;
  /** Concurrent PutItem calls. @default 16 */
  readonly putConcurrency?: number;
  /** Concurrent SendMessageBatch calls while the puts go on. @default 4 */
  readonly sendConcurrency?: number;
  /** Most catch-up runs one tick creates (on-time runs are never limited). @default 2,000 */
  readonly catchUpBudget?: number;
  /** Sweeper: how late an open run must be before its message counts as lost. @default 120 s */
  readonly sweepGraceMs?: number;
  /** Sweeper: most watch-index entries examined per tick. @default 1,000 */
  readonly sweepLimit?: number;
  /** Sweeper: the rest of its knobs. */
  readonly sweep?: Omit<SweepOptions, 'graceMs' | 'watchBudget'>;
}

export interface PlannerDeps {
  readonly ledger: Ledger;
  readonly queue: RunQueue;
  readonly jobs: readonly Job[];
  readonly clock: () => number;
  readonly logger: RunLogger;
  readonly metrics: MetricsSink;
  readonly history?: HistorySink;
  readonly options?: PlannerOptions;
}

export interface TickReport {
  readonly partition: number;
  readonly of: number;
  readonly created: number;
  readonly existing: number;
  readonly skipped: number;
  readonly sent: number;
  readonly swept: number;
  readonly plannedUntil: number;
  readonly watermarkAdvanced: boolean;
  /** Catch-up runs left for later ticks by the catch-up budget. */
  readonly deferred: number;
  /** Jobs still catching up after this tick. */
  readonly behind: number;
  /** Open runs of jobs no longer configured, seen by this tick's sweep. */
  readonly orphans: number;
}

/**
 * SQS delays are whole seconds. Rounding up makes the message visible in
 * [fire − startLead, fire − startLead + 1 s), so the worker waits at most startLead for the fire
 * time and the handler starts on its millisecond. startLead 0: up to ~1 s late, no wait.
 */
export function delaySecondsFor(job: Pick<Job, 'startLead'>, fireAt: number, now: number): number {
  return Math.max(0, Math.ceil((fireAt - job.startLead - now) / 1000));
}

export { messageFor };

/** Fingerprints of the partitions' jobs, per config (a Lambda's config never changes: ~20 ms per tick for 10,000 jobs saved). */
const fingerprints = new WeakMap<readonly Job[], Map<string, string>>();

function partitionFingerprint(all: readonly Job[], partition: number, of: number): string {
  let byPartition = fingerprints.get(all);
  if (!byPartition) fingerprints.set(all, (byPartition = new Map()));
  const key = `${partition}/${of}`;
  let fingerprint = byPartition.get(key);
  if (fingerprint === undefined) byPartition.set(key, (fingerprint = configFingerprint(jobsOfPartition(all, partition, of))));
  return fingerprint;
}

/** The layout this tick works under, switching to `of` partitions if the stored one differs. */
async function layoutFor(
  deps: PlannerDeps,
  stored: PlannerLayout | undefined,
  of: number,
  now: number,
): Promise<PlannerLayout | undefined> {
  if (stored && stored.of === of) return stored;
  const next = relayout(stored, of, now, (partition) => partitionFingerprint(deps.jobs, partition, of));
  if (await deps.ledger.planning.writeLayout(stored, next, now)) {
    deps.logger.info('planner layout changed', { from: stored?.of, to: of, gen: next.gen });
    return next;
  }
  // Another planner switched first; take its layout if it agrees with ours.
  const current = await deps.ledger.planning.readLayout();
  return current?.of === of ? current : undefined;
}

export async function runPlannerTick(deps: PlannerDeps, ref: PartitionRef): Promise<TickReport> {
  const history = deps.history ?? NO_HISTORY;
  const options = deps.options ?? {};
  const now = deps.clock();
  const state = await deps.ledger.planning.readTickState();
  const layout = await layoutFor(deps, state.layout, ref.of, now);
  const jobs = jobsOfPartition(deps.jobs, ref.partition, ref.of);
  const idle: TickReport = {
    partition: ref.partition,
    of: ref.of,
    created: 0,
    existing: 0,
    skipped: 0,
    sent: 0,
    swept: 0,
    plannedUntil: now,
    watermarkAdvanced: false,
    deferred: 0,
    behind: 0,
    orphans: 0,
  };
  if (!layout) {
    // Planners of two different partition counts are running (a deploy in progress): the newer
    // layout wins the next tick; this one does nothing rather than fight over the watermarks.
    deps.logger.warn('planner layout changed by a planner with another partition count: tick skipped', { of: ref.of });
    return idle;
  }
  const cursor = layout.partitions.get(ref.partition) ?? {};
  const { paused, behind, edges, runCounts, staleListings } = await readJobStates(
    deps.ledger.planning,
    jobs,
    state,
    cursor.plannedUntil,
    now,
  );

  const lookaheadMs = options.lookaheadMs ?? defaultLookaheadMs(jobs);
  const fingerprint = partitionFingerprint(deps.jobs, ref.partition, ref.of);
  const plan = planTick({
    jobs,
    plannedUntil: cursor.plannedUntil,
    paused,
    behind,
    catchUpEdges: edges,
    now,
    lookaheadMs,
    catchUpBudget: options.catchUpBudget,
    runCounts,
    replanFrom: replanFromOf(cursor, fingerprint, lookaheadMs),
  });

  // Identifies this tick's puts, so a put retried after a lost response is still recognised as ours.
  const tickId = randomUUID();
  const dispatch = new OrderedDispatch(deps.queue, plan.runs.length, options.sendConcurrency ?? 4, (sent) => {
    for (const out of sent) history.record({ type: 'message-sent', at: deps.clock(), runKey: out.message.runKey, reason: 'planned' });
  });
  // Runs whose slot the window sweep has already passed must be watched from the start.
  const sweptUntil = cursor.sweptUntil ?? Number.NEGATIVE_INFINITY;
  let created = 0;
  let skipped = 0;
  // Shards of a slot put under an earlier, larger shard count: sent after the planned runs.
  const olderShards: OutgoingRun[] = [];
  const put = limiter(options.putConcurrency ?? 16);
  const newRun = (planned: PlannedRun, shard: number, shards: number): NewRun => ({
    job: planned.job.name,
    slot: planned.slot,
    shard,
    shards,
    status: planned.status,
    reason: planned.reason,
    // Trigger lag measures slots whose first dispatch could be on time: one planned after its
    // fire time (resumed within misfire.after, a tick late past its lookahead) starts late by construction.
    origin: planned.catchUp ? RunOrigin.CATCH_UP : planned.fireAt < now ? RunOrigin.PLANNED_LATE : RunOrigin.PLANNED,
    watch: planned.catchUp || planned.slot <= sweptUntil,
    fireAt: planned.fireAt,
    laneOverlap: planned.job.overlap,
  });
  /** What one put leaves to send: the run it created, or nothing. */
  const settle = async (planned: PlannedRun, shard: number, result: CountedCreateResult): Promise<OutgoingRun | undefined> => {
    // Only the planner whose put created the run sends: concurrent planners send nothing twice.
    if (!result.created) {
      // A run found unclaimed was put by an earlier tick that may have failed before sending it
      // (its put's response lost, its send refused). The window sweep finds it only while its slot
      // is one of the job's current schedule: a schedule change before the sweep reached it would
      // leave it READY for good. Watching it costs a write only on this path (a failed or
      // duplicated tick), and the watch sweep re-sends it if nobody claims it.
      // A slot at or before the watermark (re-planned after a config change) needs none: the tick
      // that moved the watermark past it sent it, or found it and watched it.
      const sentBefore = !planned.catchUp && planned.slot <= (cursor.plannedUntil ?? Number.NEGATIVE_INFINITY);
      if (!sentBefore && 'existing' in result && result.existing.status === RunStatus.READY && result.existing.attempt === 0)
        await deps.ledger.watch(result.existing);
      return undefined;
    }
    created++;
    history.record({
      type: 'run-created',
      at: now,
      runKey: result.run.runKey,
      job: planned.job.name,
      slot: planned.slot,
      shard,
      status: planned.status,
    });
    if (planned.status === RunStatus.SKIPPED) {
      skipped++;
      return undefined;
    }
    return { message: messageFor(result.run), delaySeconds: delaySecondsFor(planned.job, planned.fireAt, deps.clock()) };
  };
  /**
   * Puts one slot: shard 0 first (counted for a maxRuns job), then the other shards under the
   * count shard 0 holds (shardsOfSlot). Returns false when the job's maxRuns count refused the slot.
   */
  const putSlot = async (indices: readonly number[]): Promise<boolean> => {
    const first = plan.runs[indices[0]!]!;
    const job = first.job;
    const zero = newRun(first, 0, job.shards);
    const result: CountedCreateResult =
      job.maxRuns === undefined
        ? await put(() => deps.ledger.createRun(zero, now, tickId))
        : await put(() => deps.ledger.createCountedRun(zero, now, tickId, { maxRuns: job.maxRuns!, start: runCounts.get(job.name) ?? 0 }));
    if ('full' in result) {
      for (const index of indices) await dispatch.settle(index, undefined);
      return false;
    }
    const shards = shardsOfSlot(job.shards, result.created ? result.run : result.existing);
    await dispatch.settle(indices[0]!, await settle(first, 0, result));
    await Promise.all([
      ...indices.slice(1).map(async (index) => {
        const planned = plan.runs[index]!;
        const out =
          planned.shard < shards
            ? await settle(
                planned,
                planned.shard,
                await put(() => deps.ledger.createRun(newRun(planned, planned.shard, shards), now, tickId)),
              )
            : undefined;
        await dispatch.settle(index, out);
      }),
      ...Array.from({ length: Math.max(0, shards - job.shards) }, async (_, k) => {
        const shard = job.shards + k;
        const out = await settle(first, shard, await put(() => deps.ledger.createRun(newRun(first, shard, shards), now, tickId)));
        if (out) olderShards.push(out);
      }),
    ]);
    return true;
  };
  // A maxRuns job's slots go one after another, oldest first: each waits for the count the one
  // before it left, and the first one refused ends the job's planning for this tick.
  await mapBounded(slotTasks(plan.runs), options.putConcurrency ?? 16, async (slots) => {
    for (let i = 0; i < slots.length; i++) {
      if (await putSlot(slots[i]!)) continue;
      for (const rest of slots.slice(i + 1)) for (const index of rest) await dispatch.settle(index, undefined);
      return;
    }
  });
  // A refused send fails the tick before the watermark moves; the runs it left unsent exist and
  // are re-dispatched by the sweeper, as after a crash between put and send.
  let sent = await dispatch.finish();
  for (let i = 0; i < olderShards.length; i += SEND_BATCH_SIZE) {
    const batch = olderShards.slice(i, i + SEND_BATCH_SIZE);
    await deps.queue.send(batch);
    sent += batch.length;
    for (const out of batch) history.record({ type: 'message-sent', at: deps.clock(), runKey: out.message.runKey, reason: 'planned' });
  }

  await recordCatchUp(deps, now, plan.behindSet, plan.edgeSet, plan.behindClear, behind, staleListings);

  history.record({
    type: 'partition-planning',
    at: now,
    runKey: '',
    partition: ref.partition,
    of: ref.of,
    plannedUntil: plan.plannedUntil,
  });
  const watermarkAdvanced = await deps.ledger.planning.advancePartition(layout.gen, ref.partition, plan.plannedUntil, {
    configHash: fingerprint,
    at: now,
  });
  if (watermarkAdvanced)
    history.record({
      type: 'partition-planned',
      at: now,
      runKey: '',
      partition: ref.partition,
      of: ref.of,
      plannedUntil: plan.plannedUntil,
    });

  const swept = await sweep(
    { ledger: deps.ledger, queue: deps.queue, clock: deps.clock, logger: deps.logger, metrics: deps.metrics, history: deps.history },
    { partition: ref.partition, of: ref.of, gen: layout.gen, jobs, configured: new Map(deps.jobs.map((j) => [j.name, j])), cursor },
    { ...options.sweep, graceMs: options.sweepGraceMs, watchBudget: options.sweepLimit },
  );

  await publishOperatorGauges(deps, { paused, partition: ref.partition, of: ref.of });

  deps.metrics.count(MetricName.SlotsMaterialized, created - skipped);
  deps.metrics.count(MetricName.SlotsSkipped, skipped);
  deps.metrics.count(
    MetricName.SlotsMisfired,
    [...plan.misfired.values()].reduce((a, b) => a + b, 0),
  );
  deps.metrics.count(MetricName.CatchUpDeferred, plan.deferred);
  deps.metrics.count(MetricName.RunsSwept, swept.swept);
  deps.metrics.observe(
    MetricName.PlannerLag,
    cursor.plannedUntil === undefined ? 0 : Math.max(0, now - cursor.plannedUntil),
    'Milliseconds',
  );
  const report: TickReport = {
    partition: ref.partition,
    of: ref.of,
    created,
    existing: plan.runs.length - created,
    skipped,
    sent,
    swept: swept.swept,
    plannedUntil: plan.plannedUntil,
    watermarkAdvanced,
    deferred: plan.deferred,
    behind: plan.behindSet.size,
    orphans: swept.orphans,
  };
  deps.logger.info('planner tick', { ...report });
  return report;
}

/**
 * Records where each catching-up job stands. Listing a job as behind comes before setting its
 * cursor, and clearing its cursor before unlisting it, so an interruption leaves at worst a
 * listed job without a cursor (dropped by the next tick), never a cursor nobody reads.
 */
async function recordCatchUp(
  deps: PlannerDeps,
  now: number,
  set: ReadonlyMap<string, number>,
  edges: ReadonlyMap<string, number>,
  clear: readonly string[],
  before: ReadonlyMap<string, number>,
  staleListings: readonly string[],
): Promise<void> {
  const newlyBehind = [...set.keys()].filter((job) => !before.has(job));
  if (newlyBehind.length > 0) await deps.ledger.planning.listBehind(newlyBehind, []);
  await mapBounded([...set], 16, ([job, cursor]) =>
    deps.ledger.planning.setCatchUp(job, cursor, edges.get(job) ?? cursor, before.get(job), now),
  );
  const cleared = await mapBounded(clear, 16, async (job) =>
    (await deps.ledger.planning.clearCatchUp(job, before.get(job), now)) ? job : undefined,
  );
  // A stale listing (read at the tick's start, without a cursor) whose job this tick found behind
  // again was just listed anew, with its cursor set: unlisting it would leave a cursor nobody reads
  // and the job's missed slots unplanned for good.
  const unlist = [...cleared.filter((job): job is string => job !== undefined), ...staleListings.filter((job) => !set.has(job))];
  if (unlist.length > 0) await deps.ledger.planning.listBehind([], unlist);
}
