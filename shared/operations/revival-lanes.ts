/**
 * What a revival (`ops retry`, `ops redrive`, the console's Retry) asks of an exclusive job's lane
 * (DESIGN §8 "Lanes"): before reviving, whether the lane would refuse the run on arrival; after,
 * lowering a forbid-queue lane's floor below it so its hand-on finds it. The decisions are the
 * lane rules of core/lanes.ts; this file reads and writes the lane through the store.
 */
import type { Ledger } from '../store/ledger.js';
import { OverlapPolicy, type Job } from '../schedule/job-schema-core.js';
import { inLane, isExclusive, lowersFloor, SUPERSEDING, supersedingRun } from '../core/lanes.js';
import type { Run } from '../core/vocabulary.js';

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Why a revived run would not run, said before reviving it (`ops retry`, `ops redrive`), or
 * undefined: under coalesce and replace a newer due run supersedes it on arrival; under
 * forbid-skip a lane held by another run skips it.
 */
export async function revivalRefusalInLane(
  ledger: Pick<Ledger, 'laneRunsAfter' | 'lanes'>,
  job: Job,
  run: Run,
  now: number,
): Promise<string | undefined> {
  if (!isExclusive(job) || !inLane(run)) return undefined;
  if (job.overlap === OverlapPolicy.COALESCE || job.overlap === OverlapPolicy.REPLACE) {
    const newer = supersedingRun(run, await ledger.laneRunsAfter(job.name, run.shard, run.slot, now, SUPERSEDING), now);
    if (newer)
      return `${job.overlap}: a newer run ${newer.runKey} (${newer.status}) exists, so the revived run would be superseded on arrival without running; to run the job now use \`ops trigger ${job.name}\``;
  }
  if (job.overlap === OverlapPolicy.FORBID_SKIP) {
    const holderSlot = (await ledger.lanes.read(job.name, run.shard))?.holderSlot;
    if (holderSlot !== undefined && holderSlot !== run.slot)
      return `forbid-skip: the run of ${iso(holderSlot)} holds the lane, so the revived run would be skipped on arrival; retry it once that run has ended`;
  }
  return undefined;
}

/** After a run was revived, before its message is sent: a forbid-queue lane's floor goes below it. */
export async function revivedInLane(
  ledger: Pick<Ledger, 'lanes'>,
  job: Job,
  run: Pick<Run, 'job' | 'slot' | 'shard' | 'overlap'>,
  now: number,
): Promise<void> {
  if (lowersFloor(run.overlap ?? job.overlap, run.slot, now)) await ledger.lanes.lowerFloor(job.name, run.shard, run.slot);
}
