/**
 * Drill (a) against the local stack: the connection drops after a run's PutItem committed but
 * before its response (SDK middleware). The retry finds the existing run: no second run, no lost
 * slot, and the planner still sends the run's message. Runs of a tick that failed outright wait
 * for the sweeper, which dispatches them after its grace period.
 */
import { describe, expect, it } from 'vitest';
import { describeViolations } from '../../tools/chaos/drill.js';
import { putDroppedDrill } from '../../tools/chaos/drills/put-dropped.js';
import { ownLocalStack } from '../support/own-stack.js';

const stack = ownLocalStack();

describe('drill (a): connection dropped after a put commits, before its response', () => {
  it('no second run and no lost slot; a retried put is still sent on time, runs of failed ticks are swept', async () => {
    const result = await putDroppedDrill({ base: stack(), runs: 150, seed: 11, maxIterations: 2 });
    expect(result.violations, describeViolations(result)).toEqual([]);
    expect(result.runs).toBeGreaterThanOrEqual(100);
    expect(result.faults).toBeGreaterThan(0);
    // The fault really hit committed puts and the SDK (or the next tick) retried them.
    expect(result.facts.putsRetried! + result.facts.tickFailures!).toBeGreaterThan(0);
    // A put retried by the SDK after its response was lost is recognised as the tick's own
    // (createRun's creator nonce): its run is sent on time, not left to the sweeper.
    expect(result.facts.orphansAfterSdkRetry).toBe(0);
    // Runs of a tick that failed outright are not sent by the next tick (they exist and are not its
    // own): the sweeper re-dispatches every one of them, after its grace period, and they succeed.
    expect(result.facts.orphansSwept).toBe(result.facts.orphans);
    expect(result.facts.orphansLost).toBe(0);
    if (result.facts.orphans! > 0) expect(result.facts.maxOrphanDelayMs).toBeGreaterThanOrEqual(120_000);
  }, 600_000);
});
