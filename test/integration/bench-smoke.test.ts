/**
 * The benchmark's smoke mode, in-process on the shared local stack, so `npm run bench`
 * cannot rot. It checks that every figure is produced and numeric, never that a target is met:
 * performance is judged by the full bench (docs/performance.md), not by timed tests.
 */
import { describe, expect, it } from 'vitest';
import { REQUIRED_KEYS, runBench } from '../../tools/bench/run.js';
import { sharedEndpoints } from '../support/stack.js';

describe('benchmark smoke mode', () => {
  it('produces every figure as a number', { timeout: 600_000 }, async () => {
    const result = await runBench({ mode: 'smoke', endpoints: sharedEndpoints() });
    for (const key of REQUIRED_KEYS) {
      expect(result.figures, key).toHaveProperty(key);
      const value = result.figures[key];
      expect(typeof value, `${key} = ${String(value)}`).toBe('number');
      expect(Number.isFinite(value), `${key} = ${String(value)}`).toBe(true);
    }
    // The --json line must be one parseable object carrying the same figures.
    expect(JSON.parse(JSON.stringify(result.figures))).toEqual(result.figures);
    expect(result.table).toContain('cost per million short runs');
  });
});
