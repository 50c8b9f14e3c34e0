/**
 * Starts one local stack (DynamoDB Local + local-aws-sqs on free ports) for the whole test run
 * and hands its endpoints to the tests through `inject('localStack')`.
 */
import '../../tools/quiet-sdk.js';
import type { TestProject } from 'vitest/node';
import { endpointsOf, startLocalStack, type LocalEndpoints, type LocalStack } from '../../tools/local-stack.js';

declare module 'vitest' {
  export interface ProvidedContext {
    localStack: LocalEndpoints;
  }
}

let stack: LocalStack | undefined;

export async function setup(project: TestProject): Promise<void> {
  // Short visibility so poison messages reach the DLQ within a test's time.
  stack = await startLocalStack({ visibilityTimeoutSeconds: 30, maxReceiveCount: 3 });
  project.provide('localStack', endpointsOf(stack));
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
