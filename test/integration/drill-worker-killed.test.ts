/**
 * Drill (b) against the local stack: a worker killed after its side effect, before recording the
 * outcome: once as a real child process (SIGKILL), once in-process (KillSwitch). A successor takes
 * over after the lease; the business-key condition (or reconcile) prevents a second charge.
 */
import { describe, expect, it } from 'vitest';
import { describeViolations } from '../../tools/chaos/drill.js';
import { workerKilledDrill } from '../../tools/chaos/drills/worker-killed.js';
import { ownLocalStack } from '../support/own-stack.js';

const stack = ownLocalStack();

describe('drill (b): worker killed after its side effect, before recording the outcome', () => {
  it('SIGKILLed child and in-process kill: takeover within lease + allowance, no second effect, no lost run', async () => {
    const result = await workerKilledDrill({ base: stack(), runs: 40, seed: 22, childIterations: 1, maxIterations: 2 });
    expect(result.violations, describeViolations(result)).toEqual([]);
    expect(result.iterations).toBe(2);
    expect(result.childIterations).toBe(1);
    expect(result.facts.chargedThenKilled).toBeGreaterThan(0);
    // Every run that died after its charge was taken over, and its charge was not repeated.
    expect(result.takeovers).toBeGreaterThanOrEqual(result.facts.chargedThenKilled!);
    // Each of those takeovers came within lease + clock allowance (+ the stated slack) of the
    // victim's last accepted heartbeat: a 'takeover-bound' violation above names any that did not.
    // Never earlier than the lease: the ledger's condition forbids it.
    expect(result.facts.maxTakeoverLateMs).toBeGreaterThan(0);
    expect(result.facts.secondChargePrevented! + result.facts.reconcileOnTakeover!).toBeGreaterThanOrEqual(result.facts.chargedThenKilled!);
  }, 600_000);
});
