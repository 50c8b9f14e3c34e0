/**
 * Trigger now (`ops trigger`): one extra run of a job, outside its schedule, created and
 * dispatched at once, whether or not the job is paused.
 *
 * Its slot is the trigger instant in milliseconds, never a whole second: scheduled slots are
 * whole seconds, so a manual run's key (`job@2026-12-01T12:00:30.417Z`) can never collide with,
 * or replace, a scheduled slot's run. Its fencing token is composed like any other (slot × 1000 +
 * claims), which orders it with the scheduled slots by time: it may overwrite state the slots
 * before it wrote, and the next scheduled slot fences it out. It follows the job's overlap
 * policy unless the request overrides it (the override travels on the run and its messages). It
 * is watched by the sweeper from the start, counts for pauseOnFailure, and not for maxRuns.
 *
 * Its message is sent after the run is created; if the send fails the run still exists, READY
 * and watched, so the sweeper dispatches it: the trigger reports it created, with the send's error,
 * never as a failure (a second try would add a second run). `idempotencyKey` makes a repeated
 * request (a lost answer, a crash of the command) find the first one's runs instead of adding more.
 */
import type { Ledger } from '../store/ledger.js';
import { newWriteId } from '../store/write-id.js';
import type { RunQueue } from '../messaging/run-queue.js';
import { OverlapPolicy, type Job } from '../schedule/job-schema-core.js';
import { messageFor } from '../core/run-message.js';
import { RunOrigin, RunStatus, type Run } from '../core/vocabulary.js';
import { shardsOfSlot } from '../core/plan.js';

/** The request cannot be carried out as asked; `field` names the input at fault. */
export class TriggerRequestError extends Error {
  override readonly name = 'TriggerRequestError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export interface TriggerRequest {
  readonly job: Job;
  /** One shard's run; @default every shard of the job */
  readonly shard?: number;
  readonly note?: string;
  /** @default the job's own policy */
  readonly overlap?: OverlapPolicy;
  /** Who triggered it. */
  readonly by: string;
  /**
   * A repeated request with the same key (for this job) creates no second run: it finds the runs
   * the first created (or creates those it did not get to) and dispatches the ones still waiting.
   */
  readonly idempotencyKey?: string;
}

export interface TriggerDeps {
  readonly ledger: Pick<Ledger, 'createRun' | 'reserveTriggerKey' | 'moveTriggerKey'>;
  readonly queue: Pick<RunQueue, 'send'>;
  readonly clock: () => number;
}

/** What a trigger did: every run of it exists, READY or further, and is watched by the sweeper. */
export interface TriggerReport {
  readonly runs: Run[];
  /** The key was used before: these are the runs of that earlier trigger, none is a second one. */
  readonly repeated: boolean;
  /** Messages sent now (runs still READY). */
  readonly sent: number;
  /** The send failed: the runs are READY and watched, so the sweeper dispatches them after its grace. */
  readonly sendError?: string;
}

/** Longest idempotency key: it is part of a DynamoDB sort key. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 200;

/** The manual slot for a trigger at `now`: its millisecond, moved off a whole second. */
export function manualSlot(now: number): number {
  return now % 1000 === 0 ? now + 1 : now;
}

export async function triggerRun(deps: TriggerDeps, request: TriggerRequest): Promise<Run[]> {
  return (await trigger(deps, request)).runs;
}

export async function trigger(deps: TriggerDeps, request: TriggerRequest): Promise<TriggerReport> {
  const { job, idempotencyKey: key } = request;
  if (request.shard !== undefined && !(Number.isInteger(request.shard) && request.shard >= 0 && request.shard < job.shards)) {
    throw new TriggerRequestError('shard', `must be an integer in [0, ${job.shards}) for job "${job.name}", got ${request.shard}`);
  }
  if (request.overlap !== undefined && !(Object.values(OverlapPolicy) as string[]).includes(request.overlap)) {
    throw new TriggerRequestError('overlap', `must be one of ${Object.values(OverlapPolicy).join(', ')}, got "${request.overlap}"`);
  }
  if (key !== undefined && !(key.length > 0 && key.length <= MAX_IDEMPOTENCY_KEY_CHARS && key.trim() === key)) {
    throw new TriggerRequestError(
      'idempotency-key',
      `must be 1 to ${MAX_IDEMPOTENCY_KEY_CHARS} characters without surrounding spaces, got "${key}"`,
    );
  }
  const overlap = request.overlap === undefined || request.overlap === job.overlap ? undefined : request.overlap;
  // The creator id recognises our own put when the SDK retries one whose response was lost after
  // it committed: without it that retry looks like a second trigger in the same millisecond, and
  // the loop would create (and run) a second manual run. With a key, the key is the creator: a
  // repeated command recognises the runs the first one created as its own.
  const creator = key === undefined ? newWriteId() : `trigger-key:${key}`;
  let slot = manualSlot(deps.clock());
  let repeated = false;
  if (key !== undefined) {
    const reserved = await deps.ledger.reserveTriggerKey(job.name, key, { slot, shard: request.shard }, deps.clock());
    if (reserved.shard !== request.shard) {
      throw new TriggerRequestError(
        'idempotency-key',
        `"${key}" was first used for ${reserved.shard === undefined ? 'every shard' : `shard ${reserved.shard}`} of job "${job.name}" (${new Date(reserved.createdAt).toISOString()}), not for ${request.shard === undefined ? 'every shard' : `shard ${request.shard}`}`,
      );
    }
    slot = reserved.slot;
    repeated = !reserved.fresh;
  }
  // Two triggers in one millisecond: the second moves to the next one (the put is conditional).
  for (let tries = 0; tries < 100; tries++) {
    const runs: Run[] = [];
    // Every shard, or the one asked for; the first put decides the slot's count (shardsOfSlot): a
    // command repeated with its key after a change of shards completes the slot it found under
    // that slot's own count, never adding runs of a second count (the slot's work twice).
    let count = job.shards;
    for (let i = 0; ; i++) {
      const shard = request.shard ?? i;
      if ((request.shard !== undefined && i > 0) || shard >= count) break;
      const result = await deps.ledger.createRun(
        {
          job: job.name,
          slot,
          shard,
          shards: count,
          status: RunStatus.READY,
          origin: RunOrigin.MANUAL,
          watch: true,
          note: request.note,
          triggeredBy: request.by,
          overlap,
        },
        deps.clock(),
        creator,
      );
      if (!result.created) break;
      runs.push(result.run);
      if (i === 0) count = shardsOfSlot(job.shards, result.run);
    }
    if (runs.length === 0) {
      const next = manualSlot(slot + 1);
      slot = key === undefined ? next : await deps.ledger.moveTriggerKey(job.name, key, slot, next);
      continue;
    }
    // A repeat finds runs the first command may have dispatched already (or that ran): only those
    // still READY get a message; a duplicate of one already sent is harmless (the claim admits one).
    const waiting = runs.filter((run) => run.status === RunStatus.READY);
    try {
      await deps.queue.send(waiting.map((run) => ({ message: messageFor(run), delaySeconds: 0 })));
    } catch (error) {
      // The runs exist and are watched: the sweeper sends them. Reporting this as a failure would
      // invite a second trigger, and a second run.
      return { runs, repeated, sent: 0, sendError: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
    return { runs, repeated, sent: waiting.length };
  }
  throw new Error(`could not find a free manual slot for ${job.name}`);
}
