/**
 * Drill (b) against the local stack: a worker killed after its side effect, before recording the
 * outcome: once as a real child process (SIGKILL), once in-process (KillSwitch). A successor takes
 * over after the lease; the business-key condition (or reconcile) prevents a second charge.
 */
import { describe, expect, it } from 'vitest';
import { describeViolations } from '../../tools/chaos/drill.js';
import { workerKilledDrill } from '../../tools/chaos/drills/worker-killed.js';
import { sharedEndpoints } from '../support/stack.js';

describe('drill (b): worker killed after its side effect, before recording the outcome', () => {
  it('SIGKILLed child and in-process kill: takeover after the lease, no second effect, no lost run', async () => {
    const result = await workerKilledDrill({ base: sharedEndpoints(), runs: 40, seed: 22, childIterations: 1, maxIterations: 2 });
    expect(result.violations, describeViolations(result)).toEqual([]);
    expect(result.iterations).toBe(2);
    expect(result.childIterations).toBe(1);
    expect(result.facts.chargedThenKilled).toBeGreaterThan(0);
    // Every run that died after its charge was taken over, and its charge was not repeated.
    expect(result.takeovers).toBeGreaterThanOrEqual(result.facts.chargedThenKilled!);
    expect(result.facts.secondChargePrevented! + result.facts.reconcileOnTakeover!).toBeGreaterThanOrEqual(result.facts.chargedThenKilled!);
  }, 600_000);
});
