import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { partitionOf, partitionRefError, stableHash } from '../../shared/core/partition.js';

describe('planner partitions', () => {
  it('the hash is stable across processes and releases (pinned values)', () => {
    // FNV-1a 32-bit reference values: a change here would move jobs between partitions on deploy.
    expect(stableHash('')).toBe(0x811c9dc5);
    expect(stableHash('a')).toBe(0xe40c292c);
    expect(stableHash('payments-reconcile') % 7).toBe(partitionOf('payments-reconcile', 7));
  });

  it('adding jobs never moves an existing job to another partition', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.stringMatching(/^[a-z0-9-]{1,20}$/), { minLength: 1, maxLength: 50 }),
        fc.integer({ min: 1, max: 16 }),
        (names, of) => {
          const before = new Map(names.map((n) => [n, partitionOf(n, of)]));
          const more = [...names, 'new-job-a', 'new-job-b'];
          for (const n of names) expect(partitionOf(n, of)).toBe(before.get(n));
          for (const n of more) expect(partitionOf(n, of)).toBeLessThan(of);
        },
      ),
    );
  });

  it('every job belongs to exactly one partition', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{1,30}$/), fc.integer({ min: 1, max: 64 }), (name, of) => {
        const owners = Array.from({ length: of }, (_, p) => p).filter((p) => partitionOf(name, of) === p);
        expect(owners).toHaveLength(1);
      }),
    );
  });

  it('rejects invalid planner inputs naming the field', () => {
    expect(partitionRefError({ partition: 0, of: 1 })).toBeUndefined();
    expect(partitionRefError({ partition: 3, of: 3 })).toContain('"partition"');
    expect(partitionRefError({ partition: 0, of: 0 })).toContain('"of"');
    expect(partitionRefError(null)).toContain('object');
    expect(() => partitionOf('x', 0)).toThrow(RangeError);
  });

  it('each way a planner input can be wrong is refused, with the value as written', () => {
    expect(partitionRefError(5)).toBe('planner input must be an object { partition, of }');
    expect(partitionRefError('0/1')).toBe('planner input must be an object { partition, of }');
    for (const of of ['2', 1.5, 0, -1, undefined])
      expect(partitionRefError({ partition: 0, of }), String(of)).toBe(`"of" must be a positive integer, got ${JSON.stringify(of)}`);
    for (const partition of ['0', 0.5, -1, 4, undefined])
      expect(partitionRefError({ partition, of: 4 }), String(partition)).toBe(
        `"partition" must be an integer in [0, 4), got ${JSON.stringify(partition)}`,
      );
    expect(partitionRefError({ partition: 3, of: 4 })).toBeUndefined();
    expect(() => partitionOf('x', 1.5)).toThrow('partitions must be a positive integer, got 1.5');
  });
});
