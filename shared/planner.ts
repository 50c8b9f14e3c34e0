/**
 * The planner's I/O loop (DESIGN §7). Order per tick:
 *   read the partition watermark (consistent) → plan (pure) → put runs (bounded parallelism),
 *   sending one message per run this tick created as the puts complete (batches of 10, in plan
 *   order: on-time first) → advance the watermark (forward only) → sweep.
 *
 * No leader election: EventBridge may invoke twice, and a slow tick may overlap the next. Every
 * write is conditional, so a concurrent planner only loses conditional checks, and only the
 * planner whose put created a run sends its message. A crash between put and send leaves a
 * READY run with no message; the sweeper re-dispatches it once its slot is `sweep.graceMs` old.
 */
import { randomUUID } from 'node:crypto';
import type { Ledger } from './adapters/ledger.js';
import { SEND_BATCH_SIZE, type OutgoingRun, type RunQueue } from './adapters/run-queue.js';
import type { HistorySink } from './core/history.js';
import { NO_HISTORY } from './core/history.js';
import type { Job } from './core/job-schema.js';
import { partitionOf, type PartitionRef } from './core/partition.js';
import { planTick, type PlannedRun } from './core/plan.js';
import { RunStatus } from './core/vocabulary.js';
import { messageFor } from './core/run-message.js';
import { MetricName, type MetricsSink, type RunLogger } from './observability.js';
import { mapBounded } from './core/concurrency.js';
import { PLANNER_SCHEDULE } from './resources.js';

/**
 * Beyond one tick and the jobs' startLead: EventBridge delivers a scheduled invocation up to a
 * few seconds late, and a cold start adds more.
 */
const TICK_DELAY_MARGIN_MS = 3_500;

/**
 * The default horizon of a tick: one tick interval, plus the largest startLead among the jobs,
 * plus a margin (65 s with the default startLead of 1.5 s). A slot just past one tick's horizon is
 * planned by the next tick; with a horizon of exactly one tick, a next tick that fires late sends
 * such a slot with less notice than its startLead and it starts late.
 */
export function defaultLookaheadMs(jobs: readonly Pick<Job, 'startLead'>[]): number {
  const longestStartLead = jobs.reduce((longest, job) => Math.max(longest, job.startLead), 0);
  return PLANNER_SCHEDULE.tickMs + longestStartLead + TICK_DELAY_MARGIN_MS;
}

export interface PlannerOptions {
  /** How far past `now` a tick materializes slots. @default defaultLookaheadMs(the partition's jobs): 65 s with default startLead */
  readonly lookaheadMs?: number;
  /** Concurrent PutItem calls. @default 16 */
  readonly putConcurrency?: number;
  /** Concurrent SendMessageBatch calls while the puts go on. @default 4 */
  readonly sendConcurrency?: number;
  /** Sweeper: how late an open run must be before its message counts as lost. @default 120 s */
  readonly sweepGraceMs?: number;
  /** Sweeper: most runs examined per tick. @default 100 */
  readonly sweepLimit?: number;
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
}

/**
 * SQS delays are whole seconds. Rounding up makes the message visible in
 * [slot − startLead, slot − startLead + 1 s), so the worker waits between startLead − 1 s and
 * startLead for the slot (default 1.5 s: 0.5–1.5 s, about 1 s of Lambda time per run) and the
 * handler starts on the slot's millisecond. startLead 0 skips the wait: up to ~1 s late.
 */
export function delaySecondsFor(job: Job, slot: number, now: number): number {
  return Math.max(0, Math.ceil((slot - job.startLead - now) / 1000));
}

export { messageFor };

export async function runPlannerTick(deps: PlannerDeps, ref: PartitionRef): Promise<TickReport> {
  const history = deps.history ?? NO_HISTORY;
  const options = deps.options ?? {};
  const now = deps.clock();
  const jobs = deps.jobs.filter((job) => partitionOf(job.name, ref.of) === ref.partition);
  const state = await deps.ledger.readPartition(ref.partition, ref.of);
  const plan = planTick({
    jobs,
    plannedUntil: state.plannedUntil,
    paused: state.paused,
    behind: state.behind,
    catchUpEdges: state.catchUpEdges,
    now,
    lookaheadMs: options.lookaheadMs ?? defaultLookaheadMs(jobs),
  });

  // Identifies this tick's puts, so a put retried after a lost response is still recognised as ours.
  const tickId = randomUUID();
  const dispatch = new OrderedDispatch(deps.queue, plan.runs.length, options.sendConcurrency ?? 4, (sent) => {
    for (const out of sent) history.record({ type: 'message-sent', at: deps.clock(), runKey: out.message.runKey, reason: 'planned' });
  });
  let created = 0;
  let skipped = 0;
  await mapBounded(plan.runs, options.putConcurrency ?? 16, async (planned: PlannedRun, index) => {
    const result = await deps.ledger.createRun(
      { job: planned.job.name, slot: planned.slot, shard: planned.shard, shards: planned.job.shards, status: planned.status, reason: planned.reason },
      now,
      tickId,
    );
    // Only the planner whose put created the run sends: concurrent planners send nothing twice.
    if (!result.created) return dispatch.settle(index, undefined);
    created++;
    history.record({ type: 'run-created', at: now, runKey: result.run.runKey, job: planned.job.name, slot: planned.slot, shard: planned.shard, status: planned.status });
    if (planned.status === RunStatus.SKIPPED) {
      skipped++;
      return dispatch.settle(index, undefined);
    }
    return dispatch.settle(index, { message: messageFor(result.run), delaySeconds: delaySecondsFor(planned.job, planned.slot, deps.clock()) });
  });
  // A refused send fails the tick before the watermark moves; the runs it left unsent exist and
  // are re-dispatched by the sweeper, as after a crash between put and send.
  const sent = await dispatch.finish();

  const watermarkAdvanced = await deps.ledger.advancePartition(ref.partition, ref.of, plan.plannedUntil, {
    set: plan.behindSet,
    edges: plan.edgeSet,
    clear: plan.behindClear,
  });

  const swept = await sweep(deps, jobs);

  deps.metrics.count(MetricName.SlotsMaterialized, created - skipped);
  deps.metrics.count(MetricName.SlotsSkipped, skipped);
  deps.metrics.count(MetricName.SlotsMisfired, [...plan.misfired.values()].reduce((a, b) => a + b, 0));
  deps.metrics.count(MetricName.RunsSwept, swept);
  deps.metrics.observe(MetricName.PlannerLag, state.plannedUntil === undefined ? 0 : Math.max(0, now - state.plannedUntil), 'Milliseconds');
  const report: TickReport = {
    partition: ref.partition,
    of: ref.of,
    created,
    existing: plan.runs.length - created,
    skipped,
    sent,
    swept,
    plannedUntil: plan.plannedUntil,
    watermarkAdvanced,
  };
  deps.logger.info('planner tick', { ...report });
  return report;
}

/**
 * Re-dispatches open runs whose message was lost: READY/RETRY/UNKNOWN runs overdue by more than
 * the grace period, and RUNNING runs whose lease expired that long ago (the worker died and its
 * message is gone). Re-sending is safe because claims stay conditional; `markRedispatch` keeps
 * concurrent sweepers from sending more than one replacement per grace period.
 */
async function sweep(deps: PlannerDeps, jobs: readonly Job[]): Promise<number> {
  const options = deps.options ?? {};
  const graceMs = options.sweepGraceMs ?? 120_000;
  const now = deps.clock();
  const ours = new Map(jobs.map((job) => [job.name, job]));
  const open = await deps.ledger.listOpenRuns(now - graceMs, options.sweepLimit ?? 100);
  // The index is ordered by slot: its first entry is the oldest open run (0 when none is overdue).
  deps.metrics.observe(MetricName.OldestOpenRunAge, open[0] ? now - open[0].slot : 0, 'Milliseconds');
  const lost = open.filter((run) => {
    if (!ours.has(run.job)) return false;
    if (run.status === RunStatus.RUNNING) return (run.leaseUntil ?? 0) < now - graceMs;
    // A catch-up or backfilled run is due when it was created or last sent, not at its old slot.
    const dueAt = Math.max(run.nextAttemptAt ?? run.slot, run.createdAt, run.dispatchedAt ?? 0);
    return dueAt < now - graceMs;
  });
  const toSend: OutgoingRun[] = [];
  for (const run of lost) {
    if (await deps.ledger.markRedispatch(run, now, graceMs)) toSend.push({ message: messageFor(run), delaySeconds: 0 });
  }
  await deps.queue.send(toSend);
  const history = deps.history ?? NO_HISTORY;
  for (const out of toSend) {
    history.record({ type: 'message-sent', at: deps.clock(), runKey: out.message.runKey, reason: 'swept' });
    deps.logger.warn('re-dispatched a run whose message was lost', { runKey: out.message.runKey });
  }
  return toSend.length;
}

/**
 * Sends the runs a tick created while its later puts are still in flight. A batch leaves as soon
 * as the next 10 runs *in plan order* are known, so a tick of thousands of runs costs its puts
 * plus one batch, not its puts plus every batch, and on-time runs (planned before catch-up runs)
 * never queue behind a catch-up run whose put happened to finish first. Batches stay full (10
 * messages per call) except the last, so the SQS request count is what sending at the end cost.
 */
class OrderedDispatch {
  /** Per plan index: undefined = put pending, null = nothing to send, else the message. */
  private readonly settled: (OutgoingRun | null | undefined)[];
  private cursor = 0;
  private buffer: OutgoingRun[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private sentCount = 0;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly queue: Pick<RunQueue, 'send'>,
    size: number,
    private readonly concurrency: number,
    private readonly onSent: (runs: readonly OutgoingRun[]) => void,
  ) {
    this.settled = new Array<OutgoingRun | null | undefined>(size);
  }

  /** Records plan entry `index`; waits when `concurrency` batches are already in flight (backpressure on the puts). */
  async settle(index: number, run: OutgoingRun | undefined): Promise<void> {
    this.settled[index] = run ?? null;
    while (this.cursor < this.settled.length && this.settled[this.cursor] !== undefined) {
      const next = this.settled[this.cursor++];
      if (next) this.buffer.push(next);
      if (this.buffer.length === SEND_BATCH_SIZE) this.flush();
    }
    while (this.inFlight.size >= Math.max(1, this.concurrency)) await Promise.race(this.inFlight);
  }

  /** Sends what is left and resolves with the number of messages sent; rethrows the first refused send. */
  async finish(): Promise<number> {
    if (this.buffer.length > 0) this.flush();
    while (this.inFlight.size > 0) await Promise.race(this.inFlight);
    if (this.failure) throw this.failure.error;
    return this.sentCount;
  }

  private flush(): void {
    const batch = this.buffer;
    this.buffer = [];
    const sending: Promise<void> = this.queue.send(batch).then(
      () => {
        this.sentCount += batch.length;
        this.onSent(batch);
      },
      (error: unknown) => {
        this.failure ??= { error };
      },
    );
    const tracked = sending.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}
