/**
 * Names the deployed stack is known by. Plain constants (no aws-cdk-lib import) so the ops CLI can
 * read the stack's outputs with the AWS SDK without loading the CDK.
 */

/** Default CloudFormation stack name (override with `-c stackName=...`). */
export const DEFAULT_STACK_NAME = 'FencedScheduler';

/** CloudFormation output keys of the scheduler stack. */
export const StackOutput = {
  LedgerTableName: 'LedgerTableName',
  /** Only with the example jobs (`-c exampleJobs=true`). */
  PaymentsTableName: 'PaymentsTableName',
  RunQueueUrl: 'RunQueueUrl',
  DeadLetterQueueUrl: 'DeadLetterQueueUrl',
  DeadLetterQueueArn: 'DeadLetterQueueArn',
  DashboardName: 'DashboardName',
  /** The SNS topic every alarm notifies (created, or the one given by -c alarmTopicArn). */
  AlarmTopicArn: 'AlarmTopicArn',
  PlannerFunctionName: 'PlannerFunctionName',
  WorkerFunctionName: 'WorkerFunctionName',
  /** Planner partition count (`plannerPartitions`), for reference: no ops command needs it. */
  PlannerPartitions: 'PlannerPartitions',
  /** Days terminal runs are kept before TTL deletes them. */
  RunRetentionDays: 'RunRetentionDays',
  /** EventBridge bus the outbox relay publishes to. */
  EventBusName: 'EventBusName',
  EventBusArn: 'EventBusArn',
  /** "true" when the example jobs are deployed. */
  ExampleJobs: 'ExampleJobs',
  /** Days outbox rows are kept before TTL deletes them. */
  OutboxRetentionDays: 'OutboxRetentionDays',
  /** Records of planner ticks that failed or were dropped as stale. */
  PlannerFailureQueueUrl: 'PlannerFailureQueueUrl',
  /** Records of ledger stream batches the outbox relay gave up on (their events were not published). */
  OutboxRelayFailureQueueUrl: 'OutboxRelayFailureQueueUrl',
  /** The operators' managed policy: what every ops command needs (docs/operating.md). */
  OperatorPolicyArn: 'OperatorPolicyArn',
} as const;
export type StackOutput = (typeof StackOutput)[keyof typeof StackOutput];
