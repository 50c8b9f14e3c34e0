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
    expect(report.results.map((r) => r.drill)).toEqual([
      'put-dropped',
      'worker-killed',
      'worker-paused',
      'ledger-unreachable',
      'planner-down',
      'failing-job',
    ]);
    expect(report.totals.runs).toBeGreaterThanOrEqual(1_000);
    expect(report.totals.faults).toBeGreaterThan(0);
    expect(report.totals.takeovers).toBeGreaterThan(0);
    // The paused workers were stopped where their effects land: a stale write fenced out, or, when
    // the attempt's held-back write was aborted at its lease's end (as it is when the pause outlasts
    // it on a loaded machine: CI of 16275fb saw 0 fenced writes and 50 refused completions), a stale
    // completion refused. Which of the two depends on timing; that the stale worker was stopped
    // does not (the drill's own stale-writer check holds it per paused run, among the violations).
    const paused = report.results.find((r) => r.drill === 'worker-paused');
    expect((paused?.facts.staleWritesFencedOut ?? 0) + (paused?.facts.staleCompletionsRefused ?? 0)).toBeGreaterThan(0);
    expect(report.totals.violations, summary).toBe(0);
  }, 900_000);
});
