import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The suite as mutation testing runs it (stryker.config.json): the unit tests and the integration
 * tests that judge the mutated modules' decisions, against the same DynamoDB Local and
 * local-aws-sqs (global setup). Stryker runs, per mutant, only the tests that cover it and stops
 * at the first failure; a mutant that survives costs every test covering it, so the set is kept to
 * tests that are quick and do not depend on timing they do not control. Left out:
 * - the drills, the chaos run and the benchmark: minutes each, timing-based;
 * - planner.test.ts, planner-state.test.ts (a 10,000-job partition), end-to-end, ops-*, outbox,
 *   shards: minutes of planner ticks over code judged faster by the files below
 *   (ledger-conditions.test.ts holds the watermark and planning-state conditions);
 * - effect-safety.test.ts: its yield test runs 1.2 s invocations under a 2 s lease and fails on
 *   a busy machine, and a failing test aborts Stryker's initial run (fenced-effects and
 *   time-limits judge the same fence and yield code);
 * - infra (cdk synth) and bundle tests: none of the mutated decisions.
 * Included although integration-level: forbid-queue-liveness (about 20 s) and lane-sequences
 * (about 26 s, one generated-sequence test) judge the forbid-queue and coalesce hand-on of
 * worker-lanes.ts (look-back for older waiting runs, superseding the runs in between, the
 * dispatch delay) that no other file here reaches; both run on virtual or stepped time, not races.
 */
// Spread, not mergeConfig: mergeConfig would append these lists to the whole suite's.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'test/unit/**/*.test.ts',
      'test/integration/failure-semantics.test.ts',
      'test/integration/fenced-effects.test.ts',
      'test/integration/forbid-queue-liveness.test.ts',
      'test/integration/lane-sequences.test.ts',
      'test/integration/lease.test.ts',
      'test/integration/lease-loss.test.ts',
      'test/integration/ledger-conditions.test.ts',
      'test/integration/ledger-reads.test.ts',
      'test/integration/outcome-recording.test.ts',
      'test/integration/overlap.test.ts',
      'test/integration/planner-store.test.ts',
      'test/integration/overlap-liveness.test.ts',
      'test/integration/time-limits.test.ts',
      'test/integration/worker.test.ts',
      'test/integration/worker-attempt.test.ts',
      'test/integration/worker-lanes.test.ts',
      'test/integration/worker-lanes-hand-on.test.ts',
    ],
    exclude: ['test/unit/worker-bundle.test.ts', '**/node_modules/**'],
    setupFiles: [...(base.test?.setupFiles ?? []), 'test/support/mutation-setup.ts'],
  },
});
