/**
 * The sweeper (DESIGN §7, §11): every planner tick, after planning, it looks for open runs whose
 * message is lost and re-dispatches them, in two bounded passes that resume where they stopped:
 *
 * 1. Window sweep. Every slot of the partition's jobs is visited once, when it is `graceMs` old:
 *    the job's runs in the window (sweptUntil, now − grace] are read (one consistent Query per job
 *    that has slots there, from the slot math alone). Open runs found there are put in the watch
 *    index; the lost ones are re-dispatched.
 * 2. Watch sweep. The partition's share of the watch index (the buckets b with b % of = p) is paged
 *    through, at most `watchBudget` entries per tick, each candidate decided from a consistent read.
 *
 * On-time runs that run normally are seen once by pass 1 and never written by the sweeper, so the
 * scheduler's index costs nothing per run. Runs of jobs no longer configured are counted and
 * reported (never dispatched: no worker could run them). A run the sweeper re-dispatched
 * `maxRedispatches` times without anyone claiming it stops being sent and is counted stuck.
 */
import { Ledger, idOfKey } from '../store/ledger.js';
import type { OutgoingRun, RunQueue } from '../messaging/run-queue.js';
import { mapBounded } from '../core/concurrency.js';
import type { HistorySink } from '../core/history.js';
import { NO_HISTORY } from '../core/history.js';
import { OverlapPolicy, type Job } from '../schedule/job-schema.js';
import { ownedOpenBuckets, type PartitionCursor } from '../core/planner-state.js';
import { slotSpecOf } from '../schedule/schedule-spec.js';
import { nextSlotAfter } from '../schedule/slots.js';
import { keepsFloor } from '../core/lanes.js';
import { laneHead, sendBehindLiveHolder, sweepVerdict } from '../core/sweep.js';
import { isTerminal, RunStatus, type Run, type RunId } from '../core/vocabulary.js';
import { messageFor } from '../core/run-message.js';
import { MetricName, type MetricsSink, type RunLogger } from '../runtime/observability.js';

export interface SweepOptions {
  /** How late an open run must be before its message counts as lost. @default 120 s */
  readonly graceMs?: number;
  /** Longest stretch of slots one window sweep covers. @default 10 min */
  readonly windowMaxMs?: number;
  /** Most job queries one window sweep makes (the window shrinks to fit). @default 1,000 */
  readonly queryBudget?: number;
  /** Most watch-index entries examined per tick. @default 1,000 */
  readonly watchBudget?: number;
  /** Re-dispatches of one run without a claim before it counts as stuck. @default 10 */
  readonly maxRedispatches?: number;
}

export interface SweepDeps {
  readonly ledger: Ledger;
  readonly queue: Pick<RunQueue, 'send'>;
  readonly clock: () => number;
  readonly logger: RunLogger;
  readonly metrics: MetricsSink;
  readonly history?: HistorySink;
}

export interface SweepInput {
  readonly partition: number;
  readonly of: number;
  readonly gen: number;
  /** The partition's jobs (window sweep). */
  readonly jobs: readonly Job[];
  /** Every configured job (a watched run of any other job is an orphan). */
  readonly configured: ReadonlyMap<string, Job>;
  readonly cursor: PartitionCursor;
}

export interface SweepReport {
  readonly swept: number;
  readonly visited: number;
  readonly orphans: number;
  readonly stuck: number;
  readonly sweptUntil: number;
}

export const SWEEP_DEFAULTS = {
  graceMs: 120_000,
  windowMaxMs: 600_000,
  queryBudget: 1_000,
  watchBudget: 1_000,
  maxRedispatches: 10,
} as const;

export async function sweep(deps: SweepDeps, input: SweepInput, options: SweepOptions = {}): Promise<SweepReport> {
  const o = { ...SWEEP_DEFAULTS, ...definedOnly(options) };
  const now = deps.clock();
  const overdue = now - o.graceMs;
  const open: Run[] = [];

  // ---- 1. window sweep
  const from = input.cursor.sweptUntil ?? overdue;
  let until = Math.min(overdue, from + o.windowMaxMs);
  let windowJobs: Job[] = [];
  if (until > from) {
    const due = input.jobs
      .map((job) => ({ job, next: nextSlotAfter(slotSpecOf(job), from) }))
      .filter((d): d is { job: Job; next: number } => d.next !== undefined && d.next <= until)
      .sort((a, b) => a.next - b.next);
    if (due.length > o.queryBudget) {
      // Cover a shorter window completely rather than a long one in part, but never one that ends
      // before the first due slot: when more jobs than the budget share that instant (thousands
      // of hourly jobs at minute 0), cutting before it would leave the window where it was, every
      // tick, and no later slot of the partition would be swept again. That instant's jobs are
      // all queried in this tick, past the budget.
      const cut = Math.max(due[o.queryBudget]!.next - 1, due[0]!.next);
      until = cut;
      const beyond = due.findIndex((d) => d.next > cut);
      if (beyond !== -1) due.length = beyond;
    }
    windowJobs = due.map((d) => d.job);
    const found = await mapBounded(windowJobs, 16, (job) => deps.ledger.openRunsInWindow(job.name, from, until));
    open.push(...found.flat());
  }
  const sweptUntil = Math.max(from, until);

  // ---- 2. watch sweep: every owned bucket, concurrently, sharing the budget; each resumes after
  // where the last sweep of it stopped.
  const owned = ownedOpenBuckets(input.partition, input.of);
  const resumeAt = decodeCursor(input.cursor.watchAfter);
  const share = Math.max(1, Math.floor(o.watchBudget / Math.max(1, owned.length)));
  const pages = await mapBounded(owned, 16, async (bucket) => {
    const after = resumeAt.get(bucket);
    const page = await deps.ledger.watchedPage(bucket, overdue, after, share);
    // A bucket read to its end starts over next time.
    return {
      bucket,
      entries: page.entries,
      next: page.more && page.entries.length > 0 ? page.entries[page.entries.length - 1] : undefined,
    };
  });
  const watchedIds: RunId[] = pages.flatMap((p) => p.entries.map(idOfKey));
  const nextResume = new Map(pages.filter((p) => p.next !== undefined).map((p) => [p.bucket, p.next!]));
  const watched = await deps.ledger.getRuns(watchedIds);

  // ---- decide
  const seen = new Map<string, Run>();
  for (const run of [...open, ...watched]) seen.set(run.runKey, run);
  const lost: Run[] = [];
  let orphans = 0;
  let oldest: number | undefined;
  const watchedKeys = new Set(watched.map((r) => r.runKey));
  const writes: Promise<unknown>[] = [];
  for (const run of seen.values()) {
    const job = input.configured.get(run.job);
    const verdict = sweepVerdict(run, job !== undefined, now, o.graceMs);
    if (verdict !== 'ended' && run.slot <= overdue) oldest = Math.min(oldest ?? run.slot, run.slot);
    switch (verdict) {
      case 'ended':
        // Only a watched run can have an index entry left over.
        if (watchedKeys.has(run.runKey)) writes.push(deps.ledger.unwatch(run));
        break;
      case 'orphan':
        orphans++;
        deps.logger.warn('open run of a job that is no longer configured', { runKey: run.runKey, status: run.status });
        break;
      case 'lost':
        lost.push(run);
        break;
      case 'in-hand':
        // Open past its slot's sweep: watch it so later sweeps see it again.
        if (!watchedKeys.has(run.runKey)) writes.push(deps.ledger.watch(run));
        break;
    }
  }
  await Promise.all(writes);

  const toSend = await dispatchable(deps, lost, input.configured);
  // A lost run not sent now (it waits behind its lane's live holder, or another run of its lane
  // goes first) must stay in view: once the window sweep has passed its slot only the watch index
  // brings it back, and no holder hands the lane to a run older than itself (coalesce).
  const sending = new Set(toSend.map((run) => run.runKey));
  await mapBounded(
    lost.filter((run) => !sending.has(run.runKey) && !watchedKeys.has(run.runKey)),
    16,
    (run) => deps.ledger.watch(run),
  );
  const marks = await mapBounded(toSend, 16, async (run) => ({
    run,
    marked: await deps.ledger.markRedispatch(run, now, o.graceMs, o.maxRedispatches),
  }));
  let stuck = 0;
  const outgoing: OutgoingRun[] = [];
  for (const { run, marked } of marks) {
    if (marked === 'marked') outgoing.push({ message: messageFor(run), delaySeconds: 0 });
    if (marked === 'exhausted') {
      stuck++;
      deps.logger.error('run re-dispatched without ever being claimed: left for an operator', {
        runKey: run.runKey,
        status: run.status,
        redispatches: run.redispatches,
      });
    }
  }
  await deps.queue.send(outgoing);
  const history = deps.history ?? NO_HISTORY;
  for (const out of outgoing) {
    history.record({ type: 'message-sent', at: deps.clock(), runKey: out.message.runKey, reason: 'swept' });
    deps.logger.warn('re-dispatched a run whose message was lost', { runKey: out.message.runKey });
  }

  const nextCursor = { sweptUntil, watchAfter: encodeCursor(nextResume) };
  await deps.ledger.planning.saveSweep(input.gen, input.partition, nextCursor);

  deps.metrics.observe(MetricName.OldestOpenRunAge, oldest === undefined ? 0 : now - oldest, 'Milliseconds');
  deps.metrics.count(MetricName.OrphanedOpenRuns, orphans);
  deps.metrics.count(MetricName.RunsStuck, stuck);
  return { swept: outgoing.length, visited: seen.size, orphans, stuck, sweptUntil };
}

/**
 * The lost runs to re-dispatch. A waiting run of an exclusive lane is only sent when its lane is
 * idle (no marker, or one whose holder ended), and only the run the holder would have dispatched:
 * re-sending runs that wait behind a live holder would only poll the lane.
 */
async function dispatchable(deps: SweepDeps, lost: readonly Run[], configured: ReadonlyMap<string, Job>): Promise<Run[]> {
  const out: Run[] = [];
  const lanes = new Map<string, { job: Job; runs: Run[] }>();
  for (const run of lost) {
    const configuredJob = configured.get(run.job);
    if (!configuredJob) continue;
    // A manual run may carry its own overlap policy.
    const job = run.overlap ? { ...configuredJob, overlap: run.overlap as Job['overlap'] } : configuredJob;
    if (job.overlap === OverlapPolicy.PARALLEL || run.status === RunStatus.RUNNING) {
      out.push(run);
      continue;
    }
    const key = `${run.job}#${run.shard}`;
    const lane = lanes.get(key) ?? { job, runs: [] };
    lane.runs.push(run);
    lanes.set(key, lane);
  }
  for (const { job, runs } of lanes.values()) {
    const shard = runs[0]!.shard;
    // A lost forbid-queue run may lie below its lane's floor (its creator crashed between the
    // put and the floor's write): lower it, so that the holder's look finds the run.
    if (keepsFloor(job.overlap)) await deps.ledger.lanes.lowerFloor(job.name, shard, Math.min(...runs.map((r) => r.slot)));
    const holderSlot = (await deps.ledger.lanes.read(job.name, shard))?.holderSlot;
    if (holderSlot !== undefined) {
      const holder = runs.find((r) => r.slot === holderSlot) ?? (await deps.ledger.getRun({ job: job.name, slot: holderSlot, shard }));
      if (holder && !isTerminal(holder.status)) {
        // The holder is one of the lost runs: it goes first (it holds the lane).
        if (runs.includes(holder)) out.push(holder);
        else out.push(...sendBehindLiveHolder(runs, exclusive(job.overlap), { slot: holderSlot }));
        continue;
      }
    }
    const head = laneHead(runs, exclusive(job.overlap));
    if (head) out.push(head);
  }
  return out;
}

function exclusive(overlap: Job['overlap']): Exclude<Job['overlap'], 'parallel'> {
  if (overlap === OverlapPolicy.PARALLEL) throw new Error('a parallel job has no lane');
  return overlap;
}

export type IndexKey = { openSk: string; pk: string; sk: string };

/** Where each bucket's sweep resumes, as stored on the partition cursor (only unfinished buckets). */
function encodeCursor(resume: ReadonlyMap<number, IndexKey>): string | undefined {
  if (resume.size === 0) return undefined;
  return JSON.stringify([...resume].map(([bucket, k]) => [bucket, k.openSk, k.pk, k.sk]));
}

export function decodeCursor(raw: string | undefined): Map<number, IndexKey> {
  const out = new Map<number, IndexKey>();
  if (!raw) return out;
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (!Array.isArray(parsed)) return out;
    for (const entry of parsed) {
      if (!Array.isArray(entry) || entry.length !== 4) continue;
      const [bucket, openSk, pk, sk] = entry as unknown[];
      if (typeof bucket === 'number' && typeof openSk === 'string' && typeof pk === 'string' && typeof sk === 'string')
        out.set(bucket, { openSk, pk, sk });
    }
  } catch {
    // A cursor that does not parse only means every bucket is swept from its start.
  }
  return out;
}

/** The options actually given: an explicit `undefined` must not hide a default. */
function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}
