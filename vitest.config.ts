import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One DynamoDB Local + local-aws-sqs for the whole run, on free ports (test/support/global-setup.ts).
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: keep Java and the test workers from starving each other.
    maxWorkers: 2,
  },
});
