import { configDefaults, defineConfig } from 'vitest/config';
import { LongFirstSequencer } from './test/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The lane model's Spin check takes minutes on 2 cores: .ci/run runs it beside `npm test`
    // (MODEL_CHECK=1 includes it here).
    exclude: [...configDefaults.exclude, ...(process.env.MODEL_CHECK ? [] : ['test/unit/model-check.test.ts'])],
    // One DynamoDB Local + local-aws-sqs for the whole run, on free ports (test/support/global-setup.ts).
    globalSetup: ['test/support/global-setup.ts'],
    // The minutes-long files first (test/support/sequencer.ts).
    sequence: { sequencer: LongFirstSequencer },
    // Timeouts only catch a hang: on a loaded 2-core machine a test may take several times its
    // idle duration, and that must not fail it (no test asserts on how long it took).
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // Two cores: keep Java and the test workers from starving each other.
    maxWorkers: 2,
    // Node 20 is supported here; the SDK's notice about 2027 releases needing Node 22 is noise.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
