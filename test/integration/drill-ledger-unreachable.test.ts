/**
 * Drill (d) against the local stack: the ledger unreachable during heartbeats. A TCP proxy between
 * the worker (a child process, then in-process) and DynamoDB Local resets or black-holes its
 * connections: the holder's handler is aborted through ctx.signal before its lease ends, and a
 * successor takes over after expiry.
 */
import { describe, expect, it } from 'vitest';
import { describeViolations } from '../../tools/chaos/drill.js';
import { ledgerUnreachableDrill } from '../../tools/chaos/drills/ledger-unreachable.js';
import { ownLocalStack } from '../support/own-stack.js';

const stack = ownLocalStack();

describe('drill (d): ledger unreachable during heartbeats', () => {
  it('the holder stops before its lease ends; a successor takes over after expiry', async () => {
    const result = await ledgerUnreachableDrill({ base: stack(), runs: 30, seed: 44, childIterations: 1, maxIterations: 2 });
    expect(result.violations, describeViolations(result)).toEqual([]);
    expect(result.childIterations).toBe(1);
    expect(result.facts.holdersAtDrop).toBeGreaterThan(0);
    expect(result.facts.holdersStopped).toBe(result.facts.holdersAtDrop);
    expect(result.takeovers).toBeGreaterThanOrEqual(result.facts.holdersAtDrop!);
  }, 600_000);
});
