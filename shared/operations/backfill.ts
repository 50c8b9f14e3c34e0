/**
 * Backfill: create the runs of a past range of a job's slots, idempotently and
 * rate-limited, and dispatch them.
 *
 * - Slots come from exactly the planner's slot code (`slotsBetween` on the job's spec), so a
 *   backfilled run is the same (job, slot, shard) the planner would have created.
 * - Every run is a conditional `createRun`: a slot that already has a run (planned, or an earlier
 *   backfill) is counted as existing and left alone; a second identical backfill creates nothing.
 * - Only runs this call created get a message (delay 0), like the planner: existing runs already
 *   had theirs, and the sweeper covers any that were lost.
 * - At most `maxPerSecond` createRun calls per second (existing ones count too: each is a write),
 *   with messages sent per one-second batch, so neither DynamoDB nor the workers see a burst.
 */
import type { Ledger } from '../store/ledger.js';
import { newWriteId } from '../store/write-id.js';
import type { OutgoingRun, RunQueue } from '../messaging/run-queue.js';
import { Effects, OverlapPolicy, type Job } from '../schedule/job-schema.js';
import { shardsOfSlot, slotSpecOf } from '../core/plan.js';
import { slotsBetween } from '../schedule/slots.js';
import { RunOrigin, RunStatus } from '../core/vocabulary.js';
import { messageFor } from '../planner/planner.js';

/** Above this many slots a backfill needs `force`. */
export const BACKFILL_MAX_SLOTS = 10_000;
/** @default createRun calls per second */
export const BACKFILL_DEFAULT_RATE = 10;

/** The request cannot be carried out as asked; `field` names the input at fault. */
export class BackfillRequestError extends Error {
  override readonly name = 'BackfillRequestError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export interface BackfillRequest {
  readonly job: Job;
  /** Inclusive, UTC ms. */
  readonly from: number;
  /** Exclusive, UTC ms; must not be after now. */
  readonly to: number;
  /** @default 10 */
  readonly maxPerSecond?: number;
  /** Enumerate only; write and send nothing. */
  readonly dryRun?: boolean;
  /** Allow more than BACKFILL_MAX_SLOTS slots. */
  readonly force?: boolean;
  /** Create the runs of a latest-wins job although each will be superseded (supersededWarning). */
  readonly allowSuperseded?: boolean;
}

export interface BackfillDeps {
  readonly ledger: Ledger;
  readonly queue: RunQueue;
  readonly clock: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Called after each createRun (progress output, tests). */
  readonly onCreate?: (event: { readonly runKey: string; readonly created: boolean; readonly at: number }) => void;
}

export interface BackfillReport {
  readonly job: string;
  readonly from: number;
  readonly to: number;
  readonly slots: number;
  /** slots × shards */
  readonly runs: number;
  readonly created: number;
  readonly existing: number;
  readonly sent: number;
  readonly dryRun: boolean;
  readonly firstSlot?: number;
  readonly lastSlot?: number;
}

/** The job's slots in [from, to). `slotsBetween` is (after, until], hence the 1 ms shifts. */
export function slotsInRange(job: Job, from: number, to: number, limit?: number): number[] {
  return slotsBetween(slotSpecOf(job), from - 1, to - 1, limit);
}

/**
 * What a backfill of a latest-wins job does (Job.effects): its runs overwrite one shared fenced
 * item, and a newer slot's write there refuses every older slot's, so each backfilled run ends
 * SUPERSEDED_BY_NEWER_SLOT without effect. Undefined for a per-slot job (a config recorded before
 * the field existed is per-slot too).
 */
export function supersededWarning(job: Pick<Job, 'name' | 'effects'>, runs: number): string | undefined {
  if (job.effects !== Effects.LATEST_WINS) return undefined;
  return (
    `"${job.name}" has effects 'latest-wins' (its runs overwrite one shared fenced item): each older slot's write will be refused by a newer slot, ` +
    `so the ${runs} backfilled run(s) would end SUPERSEDED_BY_NEWER_SLOT without effect; to run its work now use \`ops trigger ${job.name}\``
  );
}

/** Slots enumerated at a time when counting a range. */
const COUNT_CHUNK = 100_000;

/**
 * How many slots [from, to) holds, and the first and last, without holding them all: a dry run
 * counts any range (a year of a per-second job is 31.5 million slots), a chunk at a time.
 */
export function countSlotsInRange(
  job: Job,
  from: number,
  to: number,
): { readonly slots: number; readonly firstSlot?: number; readonly lastSlot?: number } {
  let slots = 0;
  let firstSlot: number | undefined;
  let lastSlot: number | undefined;
  for (let after = from - 1; ; ) {
    const chunk = slotsBetween(slotSpecOf(job), after, to - 1, COUNT_CHUNK);
    if (chunk.length === 0) break;
    firstSlot ??= chunk[0];
    lastSlot = chunk.at(-1)!;
    slots += chunk.length;
    if (chunk.length < COUNT_CHUNK) break;
    after = lastSlot;
  }
  return { slots, firstSlot, lastSlot };
}

/** Checks the request (job, range, rate) and throws BackfillRequestError naming the field. */
export function checkBackfill(request: BackfillRequest, now: number): void {
  const { from, to } = request;
  const latestOnly = request.job.overlap === OverlapPolicy.COALESCE || request.job.overlap === OverlapPolicy.REPLACE;
  if (latestOnly) {
    throw new BackfillRequestError(
      'job',
      `"${request.job.name}" is ${request.job.overlap}: only a lane's newest due run executes, so backfilled slots would be superseded without running; to run it now use \`ops trigger ${request.job.name}\``,
    );
  }
  if (!Number.isFinite(from)) throw new BackfillRequestError('from', 'must be an ISO-8601 instant');
  if (!Number.isFinite(to)) throw new BackfillRequestError('to', 'must be an ISO-8601 instant');
  if (to <= from) throw new BackfillRequestError('to', `must be after from (${new Date(from).toISOString()})`);
  if (to > now) {
    throw new BackfillRequestError(
      'to',
      `${new Date(to).toISOString()} is in the future (now ${new Date(now).toISOString()}): future slots are the planner's job`,
    );
  }
  const rate = request.maxPerSecond ?? BACKFILL_DEFAULT_RATE;
  if (!(Number.isFinite(rate) && rate > 0)) throw new BackfillRequestError('max-per-second', 'must be a positive number');
}

/** Checks the request and returns its slots; more than BACKFILL_MAX_SLOTS needs `force`. */
export function planBackfill(request: BackfillRequest, now: number): number[] {
  checkBackfill(request, now);
  const { from, to } = request;
  const slots = slotsInRange(request.job, from, to, request.force ? undefined : BACKFILL_MAX_SLOTS + 1);
  if (!request.force && slots.length > BACKFILL_MAX_SLOTS) {
    throw new BackfillRequestError(
      'to',
      `the range holds more than ${BACKFILL_MAX_SLOTS} slots of "${request.job.name}": narrow it or pass --force`,
    );
  }
  // A real backfill creates nothing unless told to (a dry run, counted in `backfill`, only warns).
  const superseded = supersededWarning(request.job, slots.length * request.job.shards);
  if (superseded !== undefined && !request.allowSuperseded) {
    throw new BackfillRequestError('job', `${superseded}, or pass --allow-superseded to create them anyway`);
  }
  return slots;
}

export async function backfill(deps: BackfillDeps, request: BackfillRequest): Promise<BackfillReport> {
  const { job } = request;
  if (request.dryRun) {
    // Counted, never capped: a dry run says how big a range is, however big (a real one needs force).
    checkBackfill(request, deps.clock());
    const counted = countSlotsInRange(job, request.from, request.to);
    return {
      job: job.name,
      from: request.from,
      to: request.to,
      runs: counted.slots * job.shards,
      created: 0,
      existing: 0,
      sent: 0,
      dryRun: true,
      ...counted,
    };
  }
  const slots = planBackfill(request, deps.clock());
  const base = {
    job: job.name,
    from: request.from,
    to: request.to,
    slots: slots.length,
    dryRun: false,
    firstSlot: slots[0],
    lastSlot: slots.at(-1),
  };

  const perSecond = request.maxPerSecond ?? BACKFILL_DEFAULT_RATE;
  // Whole calls per window; a fractional rate (0.5/s) becomes one call per 1/rate seconds.
  const batchSize = Math.max(1, Math.floor(perSecond));
  const windowMs = (batchSize / perSecond) * 1000;
  let calls = 0;
  let runs = 0;
  let created = 0;
  let existing = 0;
  let sent = 0;
  let toSend: OutgoingRun[] = [];
  const started = deps.clock();
  const flush = async () => {
    await deps.queue.send(toSend);
    sent += toSend.length;
    toSend = [];
  };
  // Recognises our own put when the SDK retries one whose response was lost after it committed:
  // the run is then ours to dispatch now, not an existing one left to the sweeper.
  const creator = newWriteId();
  const put = async (slot: number, shard: number, shards: number) => {
    if (calls > 0 && calls % batchSize === 0) {
      await flush();
      const wait = started + (calls / batchSize) * windowMs - deps.clock();
      if (wait > 0) await deps.sleep(wait);
    }
    calls++;
    runs++;
    // Backfilled slots are older than the window the sweeper scans behind the planner, so the run
    // goes into the watch index at once: a lost message is then still found and re-sent.
    const result = await deps.ledger.createRun(
      { job: job.name, slot, shard, shards, status: RunStatus.READY, origin: RunOrigin.BACKFILL, watch: true, laneOverlap: job.overlap },
      deps.clock(),
      creator,
    );
    const run = result.created ? result.run : result.existing;
    deps.onCreate?.({ runKey: run.runKey, created: result.created, at: deps.clock() });
    if (result.created) {
      created++;
      toSend.push({ message: messageFor(result.run), delaySeconds: 0 });
    } else {
      existing++;
    }
    return run;
  };
  for (const slot of slots) {
    // Shard 0 first, as the planner puts a slot: a slot belongs to the shard count its first put
    // had (shardsOfSlot), so a slot planned before a change of shards is completed under its own
    // count and never gets runs of two counts (which would run the slot's work twice).
    const zero = await put(slot, 0, job.shards);
    const shards = shardsOfSlot(job.shards, zero);
    for (let shard = 1; shard < shards; shard++) await put(slot, shard, shards);
  }
  await flush();
  return { ...base, runs, created, existing, sent };
}
