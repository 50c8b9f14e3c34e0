/**
 * Drill (f) against the local stack: one job failing forever next to healthy ones, on the real
 * clock with the real planner: no starvation, the failing job's runs end DEAD within their retry
 * budget, and the RunsDead metric says so.
 */
import { describe, expect, it } from 'vitest';
import { describeViolations } from '../../tools/chaos/drill.js';
import { failingJobDrill, LAG_BOUND_MS } from '../../tools/chaos/drills/failing-job.js';
import { ownLocalStack } from '../support/own-stack.js';

const stack = ownLocalStack();

describe('drill (f): one job failing forever among healthy jobs', () => {
  it('healthy runs all succeed on time, the failing runs end DEAD, RunsDead counts them', async () => {
    const result = await failingJobDrill({ base: stack(), runs: 60, seed: 66, maxIterations: 1 });
    expect(result.violations, describeViolations(result)).toEqual([]);
    expect(result.facts.healthyRuns).toBeGreaterThan(20);
    expect(result.facts.failingRuns).toBeGreaterThan(2);
    expect(result.facts.runsDeadMetric).toBe(result.facts.failingRuns);
    // On time: within the bound plus what the machine itself cost (this process's stalls, a path of slow calls).
    expect(result.facts.lagBoundMs).toBeGreaterThanOrEqual(LAG_BOUND_MS);
    expect(result.facts.maxHealthyLagMs).toBeLessThanOrEqual(result.facts.lagBoundMs!);
  }, 600_000);
});
