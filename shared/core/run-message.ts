/**
 * Validation of run messages read from the queue (DESIGN §8). A message that fails here is
 * poison: logged with its id, counted, and left to reach the DLQ; it never crashes the batch.
 */
import { OverlapPolicy, type Job } from '../schedule/job-schema-core.js';
import { MAX_FENCEABLE_SLOT } from './fence.js';
import { RUN_MESSAGE_VERSION, runKeyOf, type Run, type RunId, type RunMessage } from './vocabulary.js';

export type ParsedRunMessage =
  | { readonly ok: true; readonly message: RunMessage; readonly job: Job }
  | {
      readonly ok: false;
      readonly code: 'MALFORMED' | 'UNSUPPORTED_VERSION' | 'UNKNOWN_JOB' | 'INCONSISTENT';
      readonly reason: string;
      /** For UNKNOWN_JOB: the run the message names (its job was removed from the config). */
      readonly orphan?: RunId;
    };

export function parseRunMessage(body: string, jobs: ReadonlyMap<string, Job>): ParsedRunMessage {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return { ok: false, code: 'MALFORMED', reason: 'body is not JSON' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { ok: false, code: 'MALFORMED', reason: 'body is not a JSON object' };
  const { v, job, slot, shard, shards, runKey, overlap, fireAt } = value as Record<string, unknown>;
  if (v !== RUN_MESSAGE_VERSION) {
    return typeof v === 'number'
      ? { ok: false, code: 'UNSUPPORTED_VERSION', reason: `message version ${v} is not supported (expected ${RUN_MESSAGE_VERSION})` }
      : { ok: false, code: 'MALFORMED', reason: 'field "v" is missing or not a number' };
  }
  if (typeof job !== 'string' || job === '') return { ok: false, code: 'MALFORMED', reason: 'field "job" must be a non-empty string' };
  if (typeof slot !== 'number' || !Number.isSafeInteger(slot) || slot < 0 || slot > MAX_FENCEABLE_SLOT)
    return { ok: false, code: 'MALFORMED', reason: 'field "slot" must be epoch milliseconds before 2255 (fencing tokens must stay exact)' };
  if (typeof shard !== 'number' || !Number.isInteger(shard) || shard < 0)
    return { ok: false, code: 'MALFORMED', reason: 'field "shard" must be a non-negative integer' };
  if (shards !== undefined && !(typeof shards === 'number' && Number.isInteger(shards) && shards >= 1))
    return { ok: false, code: 'MALFORMED', reason: 'field "shards" must be a positive integer' };
  if (typeof runKey !== 'string') return { ok: false, code: 'MALFORMED', reason: 'field "runKey" must be a string' };
  const definition = jobs.get(job);
  if (!definition) return { ok: false, code: 'UNKNOWN_JOB', reason: `job "${job}" is not configured`, orphan: { job, slot, shard } };
  // The run's own shard count, not the job's current one: a run created before `shards` changed
  // is still the run its message names. A message sent by earlier code carries none: the job's.
  const own = shards ?? definition.shards;
  if (shard >= own) return { ok: false, code: 'INCONSISTENT', reason: `shard ${shard} out of range for the run's ${own} shard(s)` };
  const expected = runKeyOf(job, slot, shard, own);
  if (runKey !== expected) return { ok: false, code: 'INCONSISTENT', reason: `runKey "${runKey}" does not match "${expected}"` };
  if (overlap !== undefined && !(typeof overlap === 'string' && (Object.values(OverlapPolicy) as string[]).includes(overlap))) {
    return { ok: false, code: 'MALFORMED', reason: `field "overlap" must be one of ${Object.values(OverlapPolicy).join(', ')}` };
  }
  if (fireAt !== undefined && !(typeof fireAt === 'number' && Number.isSafeInteger(fireAt) && fireAt >= slot)) {
    return { ok: false, code: 'MALFORMED', reason: 'field "fireAt" must be epoch milliseconds at or after the slot' };
  }
  // A manual run may override the job's overlap policy; the worker applies the run's.
  const effective =
    overlap === undefined || overlap === definition.overlap ? definition : { ...definition, overlap: overlap as Job['overlap'] };
  return {
    ok: true,
    message: {
      v: RUN_MESSAGE_VERSION,
      job,
      slot,
      shard,
      ...(shards === undefined ? {} : { shards: shards as number }),
      runKey,
      ...(overlap === undefined ? {} : { overlap }),
      ...(fireAt === undefined ? {} : { fireAt: fireAt as number }),
    },
    job: effective,
  };
}

/** The message that asks a worker to execute `run`. */
export function messageFor(
  run: Pick<Run, 'job' | 'slot' | 'shard' | 'runKey' | 'overlap' | 'fireAt'> & Partial<Pick<Run, 'shards'>>,
): RunMessage {
  return {
    v: RUN_MESSAGE_VERSION,
    job: run.job,
    slot: run.slot,
    shard: run.shard,
    ...(run.shards === undefined ? {} : { shards: run.shards }),
    runKey: run.runKey,
    ...(run.overlap ? { overlap: run.overlap } : {}),
    // A jittered run's fire time: the worker takes its overlap decisions then, without a read.
    ...(run.fireAt !== undefined && run.fireAt !== run.slot ? { fireAt: run.fireAt } : {}),
  };
}
