/**
 * Jitter: a job's runs fire a little after their slots, spread over [slot, slot + jitter), so many
 * jobs on the same schedule (`0 * * * *`) do not all start in the same millisecond.
 *
 * The offset is a stable hash of (job name, slot), never Math.random: every planner (and the
 * worker) computes the same fire time, re-planning never moves it, and the run keeps its slot
 * (and run key); only when it fires changes. It never reaches the next slot: with `nextSlot` the
 * offset is scaled into [0, min(jitter, nextSlot − slot)), so fire times stay in slot order.
 *
 * Pure and dependency-free: the worker imports it without the slot engine or the cron parser.
 */

/** 32-bit FNV-1a of the text, finished with murmur3's fmix32 for an even spread of the top bits. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The offset (whole ms) of the run of `job` at `slot`: in [0, min(jitterMs, capMs)), the same
 * fraction of that span for every caller. 0 when there is no span (no jitter).
 */
export function jitterOffsetMs(job: string, slot: number, jitterMs: number, capMs = Infinity): number {
  const span = Math.min(jitterMs, capMs);
  if (!(span >= 1)) return 0;
  return Math.floor((hash32(`${job}@${slot}`) / 2 ** 32) * span);
}

/** The fields of a job jitter depends on. */
export interface JitterFields {
  readonly name: string;
  /** ms; undefined or 0: none. */
  readonly jitter?: number;
}

/**
 * When the run of `job` at `slot` fires. With `nextSlot` (the job's next slot after `slot`, from
 * nextSlotAfter) the offset stays below nextSlot − slot; without it (the job has no next slot, or
 * the caller has no slot math) the offset is the uncapped one, which is the same number whenever
 * the jitter is shorter than the gap to the next slot.
 */
export function fireTimeOf(job: JitterFields, slot: number, nextSlot?: number): number {
  const jitter = job.jitter ?? 0;
  if (jitter <= 0) return slot;
  return slot + jitterOffsetMs(job.name, slot, jitter, nextSlot === undefined ? Infinity : nextSlot - slot);
}
