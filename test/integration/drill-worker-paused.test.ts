/**
 * Drill (c) against the local stack: a worker paused past its lease (SIGSTOP on a child process,
 * and an in-process PauseSwitch), then resumed (SIGCONT): a successor completed its runs, and the
 * resumed worker's writes are fenced out and its completions refused.
 */
import { describe, expect, it } from 'vitest';
import { describeViolations } from '../../tools/chaos/drill.js';
import { workerPausedDrill } from '../../tools/chaos/drills/worker-paused.js';
import { ownLocalStack } from '../support/own-stack.js';

const stack = ownLocalStack();

describe('drill (c): worker paused past its lease, then resumed', () => {
  it('SIGSTOP/SIGCONT child and in-process pause: the stale writes are fenced out, the stale completions refused', async () => {
    const result = await workerPausedDrill({ base: stack(), runs: 30, seed: 33, childIterations: 1, maxIterations: 2 });
    expect(result.violations, describeViolations(result)).toEqual([]);
    expect(result.childIterations).toBe(1);
    expect(result.facts.pausedRuns).toBeGreaterThan(0);
    expect(result.facts.pausedInAGap).toBeGreaterThan(0);
    expect(result.takeovers).toBeGreaterThanOrEqual(result.facts.pausedRuns!);
    // FencedOutError on the resumed worker's writes, and no completion of its accepted.
    expect(result.fencingRejections).toBeGreaterThan(0);
    expect(result.facts.staleWritesFencedOut).toBeGreaterThan(0);
    expect(result.facts.staleCompletionsRefused).toBeGreaterThan(0);
  }, 600_000);
});
