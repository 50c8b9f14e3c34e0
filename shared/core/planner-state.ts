/**
 * The planner's state, independent of how many planner partitions there are (DESIGN §7, §11).
 *
 * - One layout record holds the partition count in force and, per partition, how far it has
 *   planned (`plannedUntil`) and swept (`sweptUntil`, plus where its watch-index sweep stopped).
 * - A job's own planning state (paused with its note, a catch-up cursor) lives on the job, not on
 *   a partition, and the names of such exceptional jobs are listed in EXCEPTION buckets chosen by
 *   a hash of the job name alone.
 * So changing `plannerPartitions` moves no job state: a new layout starts every partition from
 * the earliest point any partition of the previous layout had reached. Slots between that point
 * and where a job's old partition had got are planned again, which creates nothing (every run
 * put is conditional), and the slots of the deploy gap are planned, not dropped.
 *
 * Pure: no I/O, `now` passed in.
 */
import { createHash } from 'node:crypto';
import { partitionOf, stableHash } from './partition.js';
import { KEY_SPREAD } from './resources.js';

/** Where one planner partition stands. */
export interface PartitionCursor {
  /** Every job of the partition is planned up to here (UTC ms), except the exceptional ones. */
  readonly plannedUntil?: number;
  /** The window sweep has visited every slot up to here. */
  readonly sweptUntil?: number;
  /** Where the watch-index sweep resumes in the buckets it did not finish (encoded by the sweeper). */
  readonly watchAfter?: string;
  /**
   * The fingerprint of the partition's jobs (configFingerprint) the watermark was planned under,
   * and the `now` of the tick that moved it there. A tick that finds another fingerprint plans
   * on time from `plannedAt`: a job added or changed since may have slots before the watermark.
   */
  readonly configHash?: string;
  readonly plannedAt?: number;
}

export interface PlannerLayout {
  readonly of: number;
  /** Bumped on every change of `of`: a tick of an older layout can no longer move a watermark. */
  readonly gen: number;
  readonly partitions: ReadonlyMap<number, PartitionCursor>;
}

function earliest(values: readonly (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === 0 ? undefined : Math.min(...known);
}

/**
 * The layout after a tick of a `partitions`-way planner found `previous` (undefined: the first tick
 * ever) at `now`. Every partition of a new layout starts where the slowest old one stood; a first
 * layout starts planned and swept up to `now`: no slot of this deployment is older. It is written
 * before the first tick puts anything, so a first tick that fails half-way leaves the next one
 * planning from this instant. Starting each tick at its own `now` until one succeeded skipped the
 * slots in between, some of whose shards the failed tick had put (model seed 20269141: shards 1
 * and 2 of a slot ran, shard 0 never existed).
 */
export function relayout(
  previous: PlannerLayout | undefined,
  partitions: number,
  now: number,
  fingerprintOf?: (partition: number) => string,
): PlannerLayout {
  const cursors = previous ? [...previous.partitions.values()] : [];
  // The slowest old partition's last `now` goes with its watermark: a new partition re-plans a job
  // added meanwhile from there. An estimate from the watermark (minus a lookahead, which grows
  // with the jobs' startLead) would reach back before that tick and give a job added after it a
  // slot from before it existed. Unknown when an old partition never recorded one.
  const ats = cursors.map((c) => c.plannedAt);
  const start: PartitionCursor = {
    plannedUntil: earliest(cursors.map((c) => c.plannedUntil)) ?? now,
    sweptUntil: earliest(cursors.map((c) => c.sweptUntil)) ?? now,
    ...(ats.length > 0 && ats.every((at) => at !== undefined) ? { plannedAt: Math.min(...ats) } : {}),
  };
  // A first layout owes nothing before `now`, so it records the jobs it starts with as planned: its
  // first tick must not re-plan the minute before. A later layout records none: its first ticks
  // re-plan from the watermark's previous tick, which creates only what a new job was owed.
  const first = (p: number): PartitionCursor =>
    previous === undefined && fingerprintOf ? { ...start, configHash: fingerprintOf(p), plannedAt: now } : start;
  return {
    of: partitions,
    gen: (previous?.gen ?? 0) + 1,
    partitions: new Map(Array.from({ length: partitions }, (_, p) => [p, first(p)])),
  };
}

/**
 * A fingerprint of a partition's job definitions (every field, as validated), independent of their
 * order: it changes when a job is added, removed or changed. 64 bits of SHA-256, hex.
 */
export function configFingerprint(jobs: readonly { readonly name: string }[]): string {
  const sorted = [...jobs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex').slice(0, 16);
}

/**
 * Where a tick plans on time from when its partition's watermark may have skipped slots of a job
 * new to the planner (undefined: it cannot have, or nothing was planned yet): the previous tick's
 * `now`, every slot after which was ahead when that tick ran. That is the case unless the
 * watermark was moved by a tick of the same jobs that recorded its `now` (`plannedUntil` is then
 * `plannedAt` + the lookahead, which the jobs fix): a different fingerprint means jobs were added
 * or changed; a watermark without one, or moved past `plannedAt` + lookahead, was moved by a
 * relayout or by earlier code still running during a deploy, which planned without the jobs it did
 * not know. A watermark that never recorded a `now` counts back one lookahead. The plan never goes
 * back past a job's misfire edge.
 */
export function replanFromOf(cursor: PartitionCursor, fingerprint: string, lookaheadMs: number): number | undefined {
  if (cursor.plannedUntil === undefined) return undefined;
  const plannedByThisConfig =
    cursor.configHash === fingerprint && cursor.plannedAt !== undefined && cursor.plannedAt + lookaheadMs === cursor.plannedUntil;
  if (plannedByThisConfig) return undefined;
  return cursor.plannedAt ?? cursor.plannedUntil - lookaheadMs;
}

/** The exception bucket that lists `job` while it is paused or catching up. */
export function exceptionBucketOf(job: string): number {
  // A different hash input than partitionOf's, so a partition's jobs spread over every bucket.
  return stableHash(`exceptions/${job}`) % KEY_SPREAD.exceptionBuckets;
}

/** The watch-index bucket of one run. */
export function openBucketOf(job: string, slot: number, shard: number): number {
  return stableHash(`open/${job}/${slot}/${shard}`) % KEY_SPREAD.openBuckets;
}

/** The watch-index buckets partition `partition` of `of` sweeps; together the partitions sweep each bucket once. */
export function ownedOpenBuckets(partition: number, of: number): number[] {
  return Array.from({ length: KEY_SPREAD.openBuckets }, (_, b) => b).filter((b) => b % of === partition);
}

/** The jobs of one partition. */
export function jobsOfPartition<J extends { readonly name: string }>(jobs: readonly J[], partition: number, of: number): J[] {
  return jobs.filter((job) => partitionOf(job.name, of) === partition);
}
