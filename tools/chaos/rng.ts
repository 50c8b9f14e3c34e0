/**
 * A small seeded PRNG (mulberry32) for the drills' randomized timing: the same seed gives the
 * same choices (job sets, lease lengths, fault points, delays). Wall-clock timing on a loaded
 * machine still varies; the seed fixes what the drill asks for, not how the OS schedules it.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** An independent stream, e.g. one per drill or per iteration. */
  fork(label: string | number): Rng {
    return new Rng(hash32(`${this.state}:${label}`));
  }
}

/** FNV-1a, for deriving seeds from labels. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Deterministic [0, 1) from a seed and a label (used by handlers, which see only the run key). */
export function unit(seed: number, label: string): number {
  return new Rng(hash32(`${seed}:${label}`)).next();
}
