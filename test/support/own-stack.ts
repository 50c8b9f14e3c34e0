/**
 * A local stack (DynamoDB Local + local-aws-sqs on free ports) for one test file alone, for the
 * fault drills. Their leases are 1.2–5 s and they judge how soon a takeover or a start comes; on
 * the suite's shared stack their calls wait behind the heavy files' thousands (the model runs, the
 * planner-state sequences): on the CI box that made a drill's slowest call 8 s, longer than any of
 * its leases, and the drill failed for the traffic, not for the scheduler. CPU load alone does
 * not do that (`stress-ng --cpu 10` beside drills b and c: slowest call 1.7 s). A store of its own
 * is slowed down by the machine's CPU only, which the drills' bounds measure and allow for.
 */
import { afterAll, beforeAll } from 'vitest';
import { warmUp } from '../../tools/chaos/sandbox.js';
import { startLocalStack, type LocalStack } from '../../tools/local-stack.js';

/** Starts the file's own stack before its tests (warmed up) and stops it after; call at top level. */
export function ownLocalStack(): () => LocalStack {
  let stack: LocalStack | undefined;
  beforeAll(async () => {
    stack = await startLocalStack({});
    await warmUp(stack);
  });
  afterAll(async () => {
    await stack?.stop();
  });
  return () => {
    if (!stack) throw new Error('ownLocalStack(): the stack is started in beforeAll; read it inside a test');
    return stack;
  };
}
