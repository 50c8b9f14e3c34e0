import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The suite as mutation testing runs it (stryker.config.json): the unit and integration tests
 * that judge the mutated modules, against the same DynamoDB Local and local-aws-sqs (global
 * setup). Left out: the drills, the chaos run and the benchmark (minutes each, timing-based:
 * a mutant that slows them is not a mutant they kill), the infra tests (cdk synth) and the
 * bundle tests (esbuild), which exercise none of the mutated code's decisions.
 */
export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
      exclude: [
        'test/integration/drill-*.test.ts',
        'test/integration/bench-smoke.test.ts',
        'test/integration/lambda-credentials.test.ts',
        'test/unit/worker-bundle.test.ts',
        'test/chaos/**',
        'test/infra/**',
        '**/node_modules/**',
      ],
    },
  }),
);
