/**
 * The short version of `npm run chaos` inside `npm test`: all six drills with randomized timing
 * (fixed seed) for about 1,000 runs, one child-process iteration per worker-fault drill. Zero
 * violations across the checker's five invariants and every drill's own facts.
 *
 * On a local stack of its own (test/support/own-stack.ts says why).
 */
import { describe, expect, it } from 'vitest';
import { formatDetails, formatTable, runChaos } from '../../tools/chaos/run.js';
import { ownLocalStack } from '../support/own-stack.js';

const stack = ownLocalStack();

describe('chaos (short): the six drills, ~1,000 runs', () => {
  it('runs about 1,000 runs across all drills with zero violations', async () => {
    const report = await runChaos({ base: stack(), runs: 1_000, seed: 20261129, childIterations: 1, concurrency: 1 });
    const summary = `${formatTable(report)}\n\n${formatDetails(report)}`;
    console.log(summary);
    expect(report.results.map((r) => r.drill)).toEqual(['put-dropped', 'worker-killed', 'worker-paused', 'ledger-unreachable', 'planner-down', 'failing-job']);
    expect(report.totals.runs).toBeGreaterThanOrEqual(1_000);
    expect(report.totals.faults).toBeGreaterThan(0);
    expect(report.totals.takeovers).toBeGreaterThan(0);
    expect(report.totals.fencingRejections).toBeGreaterThan(0);
    expect(report.totals.violations, summary).toBe(0);
  }, 900_000);
});
