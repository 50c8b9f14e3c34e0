/**
 * Planner partitions (DESIGN §7): every job belongs to exactly one partition by a stable hash of
 * its name, so adding a job never moves the others and each tick touches one partition's jobs.
 */

/** FNV-1a, 32 bit: stable across Node versions and processes, unlike any built-in hash. */
export function stableHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

export function partitionOf(jobName: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) {
    throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  }
  return stableHash(jobName) % partitions;
}

export interface PartitionRef {
  readonly partition: number;
  readonly of: number;
}

/** Validates a planner invocation's `{ partition, of }` input. */
export function partitionRefError(input: unknown): string | undefined {
  if (input === null || typeof input !== 'object') return 'planner input must be an object { partition, of }';
  const { partition, of } = input as Record<string, unknown>;
  if (typeof of !== 'number' || !Number.isInteger(of) || of < 1) return `"of" must be a positive integer, got ${JSON.stringify(of)}`;
  if (typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0 || partition >= of) {
    return `"partition" must be an integer in [0, ${of}), got ${JSON.stringify(partition)}`;
  }
  return undefined;
}
