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
 */
import type { Ledger } from './adapters/ledger.js';
import { newWriteId } from './adapters/write-id.js';
import type { RunQueue } from './adapters/run-queue.js';
import { OverlapPolicy, type Job } from './core/job-schema-core.js';
import { messageFor } from './core/run-message.js';
import { RunOrigin, RunStatus, type Run } from './core/vocabulary.js';

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
}

export interface TriggerDeps {
  readonly ledger: Pick<Ledger, 'createRun'>;
  readonly queue: Pick<RunQueue, 'send'>;
  readonly clock: () => number;
}

/** The manual slot for a trigger at `now`: its millisecond, moved off a whole second. */
export function manualSlot(now: number): number {
  return now % 1000 === 0 ? now + 1 : now;
}

export async function triggerRun(deps: TriggerDeps, request: TriggerRequest): Promise<Run[]> {
  const { job } = request;
  if (request.shard !== undefined && !(Number.isInteger(request.shard) && request.shard >= 0 && request.shard < job.shards)) {
    throw new TriggerRequestError('shard', `must be an integer in [0, ${job.shards}) for job "${job.name}", got ${request.shard}`);
  }
  if (request.overlap !== undefined && !(Object.values(OverlapPolicy) as string[]).includes(request.overlap)) {
    throw new TriggerRequestError('overlap', `must be one of ${Object.values(OverlapPolicy).join(', ')}, got "${request.overlap}"`);
  }
  const shards = request.shard === undefined ? Array.from({ length: job.shards }, (_, s) => s) : [request.shard];
  const overlap = request.overlap === undefined || request.overlap === job.overlap ? undefined : request.overlap;
  // The creator id recognises our own put when the SDK retries one whose response was lost after
  // it committed: without it that retry looks like a second trigger in the same millisecond, and
  // the loop would create (and run) a second manual run.
  const creator = newWriteId();
  // Two triggers in one millisecond: the second moves to the next one (the put is conditional).
  for (let slot = manualSlot(deps.clock()), tries = 0; tries < 100; slot = manualSlot(slot + 1), tries++) {
    const created: Run[] = [];
    for (const shard of shards) {
      const result = await deps.ledger.createRun(
        { job: job.name, slot, shard, shards: job.shards, status: RunStatus.READY, origin: RunOrigin.MANUAL, watch: true, note: request.note, triggeredBy: request.by, overlap },
        deps.clock(),
        creator,
      );
      if (!result.created) break;
      created.push(result.run);
    }
    if (created.length === 0) continue;
    await deps.queue.send(created.map((run) => ({ message: messageFor(run), delaySeconds: 0 })));
    return created;
  }
  throw new Error(`could not find a free manual slot for ${job.name}`);
}
