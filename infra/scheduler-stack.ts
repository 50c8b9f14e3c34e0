/**
 * The scheduler stack: ledger table, run queues, planner, worker, outbox relay, observability and
 * the operators' policy, composed from the constructs in infra/constructs/. The job config
 * (shared/jobs.ts, plus shared/example-jobs.ts with `exampleJobs`) is validated here, at synth: an
 * invalid job fails `cdk synth` with the job and the field named. The functions bundle the same
 * config, are told by EXAMPLE_JOBS which definitions apply, and validate them again at cold start.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { configuredJobDefinitions, loadJobs } from '../shared/config.js';
import { JobConfigError, type Job } from '../shared/schedule/job-schema.js';
import { partitionOf } from '../shared/core/partition.js';
import { RUN_QUEUES } from '../shared/core/resources.js';
import { BusinessTable } from './constructs/business-table.js';
import { LedgerTable } from './constructs/ledger-table.js';
import { Observability } from './constructs/observability.js';
import { OperatorPolicy } from './constructs/operator-policy.js';
import { OutboxRelay } from './constructs/outbox-relay.js';
import { PlannerFunction } from './constructs/planner-function.js';
import { RunQueues, VISIBILITY_TIMEOUT_FACTOR } from './constructs/run-queues.js';
import { WORKER_TIMEOUT_LIMITS, WorkerFunction } from './constructs/worker-function.js';
import { durationIn, validateProps, type PropRule } from './validation.js';
import { LAMBDA_RUNTIME } from './lambda-defaults.js';
import { StackOutput } from './outputs.js';

export interface SchedulerStackProps extends StackProps {
  /**
   * Job definitions validated at synth. The functions always bundle shared/jobs.ts; pass this
   * only to check other definitions (tests).
   * @default jobDefinitions from shared/jobs.ts (and the example jobs with exampleJobs)
   */
  readonly jobs?: readonly unknown[];
  /**
   * Deploy the example jobs (shared/example-jobs.ts: cache-refresh every 10 s, payments-reconcile
   * every minute) and the payments table they own. The functions learn it from EXAMPLE_JOBS.
   * @default false
   */
  readonly exampleJobs?: boolean;
  /**
   * Planner partitions: one scheduled invocation `{ partition, of }` per partition per minute.
   * @default 1
   */
  readonly plannerPartitions?: number;
  /**
   * Days terminal runs are kept before TTL deletes them.
   * @default 30
   */
  readonly runRetentionDays?: number;
  /**
   * Days outbox rows are kept (for republishing) before TTL deletes them; at least 14.
   * @default 14
   */
  readonly outboxRetentionDays?: number;
  /**
   * Removal policy of the tables (RETAIN also turns on deletion protection). Use DESTROY only for
   * throwaway stacks.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Customer-managed KMS key for both tables.
   * @default AWS-managed encryption
   */
  readonly tableEncryptionKey?: kms.IKey;
  /**
   * Worker function timeout; the run queue's visibility timeout is 6 × this. Every job's attempt
   * (its `timeout` and start wait, plus a 10 s yield margin) must fit in it unless it checkpoints.
   * @default Duration.seconds(RUN_QUEUES.workerTimeoutSeconds) (60 s)
   */
  readonly workerTimeout?: Duration;
  /**
   * Messages per worker invocation.
   * @default 10
   */
  readonly workerBatchSize?: number;
  /**
   * Maximum concurrent worker invocations started by the event source.
   * @default 20
   */
  readonly workerMaxConcurrency?: number;
  /**
   * Bus the outbox relay publishes to.
   * @default a new event bus created by the outbox relay
   */
  readonly eventBus?: events.IEventBus;
  /**
   * Log retention of the functions.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Topic for alarm notifications (its policy must let cloudwatch.amazonaws.com publish).
   * @default the topic given by alarmTopicArn, else a topic created for this stack's alarms
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * ARN of an existing topic every alarm notifies, instead of the one the stack creates: a team's
   * chat or paging topic. Ignored when alarmTopic is given.
   * @default a topic created for this stack's alarms
   */
  readonly alarmTopicArn?: string;
  /**
   * E-mail address that receives alarm notifications.
   * @default none
   */
  readonly alarmEmail?: string;
  /**
   * TriggerLag p99 alarm threshold.
   * @default Duration.seconds(10)
   */
  readonly triggerLagThreshold?: Duration;
  /**
   * Oldest open run age alarm threshold.
   * @default Duration.minutes(15)
   */
  readonly oldestOpenRunAgeThreshold?: Duration;
}

/** An SNS topic ARN (standard or FIFO topic name). */
export const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/;

const STACK_RULES: readonly PropRule<{ workerTimeout: Duration; alarmTopicArn?: string }>[] = [
  { prop: 'workerTimeout', ...durationIn(WORKER_TIMEOUT_LIMITS.min, WORKER_TIMEOUT_LIMITS.max) },
  {
    prop: 'alarmTopicArn',
    must: 'an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)',
    ok: (value: string) => SNS_TOPIC_ARN.test(value),
  },
];

/** Thrown when the job config cannot be deployed; the message names the job and the field. */
export class InvalidJobConfigError extends Error {
  override readonly name = 'InvalidJobConfigError';
  constructor(source: string, problems: readonly string[], options: { cause?: unknown } = {}) {
    // One problem: one line (what synth prints); several: one line each under the header.
    super(`invalid job configuration (${source}):${problems.length === 1 ? ' ' : '\n'}${problems.join('\n')}`, options);
  }
}

/**
 * Validates the jobs for this deployment: the schema (via loadJobs) and the constraints that
 * depend on infrastructure, e.g. the DLQ must only see messages the retry budget gave up on.
 */
export function validateJobsForDeployment(
  definitions: readonly unknown[] | undefined,
  maxReceiveCount: number,
  options: { readonly exampleJobs?: boolean; readonly workerTimeout?: Duration } = {},
): readonly Job[] {
  const exampleJobs = options.exampleJobs ?? false;
  const source = definitions !== undefined ? 'jobs prop' : exampleJobs ? 'shared/jobs.ts and shared/example-jobs.ts' : 'shared/jobs.ts';
  let jobs: readonly Job[];
  try {
    jobs = loadJobs(definitions ?? configuredJobDefinitions({ exampleJobs }), {
      workerTimeoutMs: options.workerTimeout?.toMilliseconds() ?? RUN_QUEUES.workerTimeoutSeconds * 1000,
    });
  } catch (error) {
    if (error instanceof JobConfigError) throw new InvalidJobConfigError(source, error.message.split('\n'), { cause: error });
    throw error;
  }
  const problems = jobs
    .filter((job) => job.retry.maxAttempts >= maxReceiveCount)
    .map(
      (job) =>
        `job "${job.name}": field "retry.maxAttempts": must be below the run queue's maxReceiveCount (${maxReceiveCount}) so only poison messages reach the DLQ (value: ${job.retry.maxAttempts})`,
    );
  if (problems.length > 0) throw new InvalidJobConfigError(source, problems);
  return jobs;
}

export class SchedulerStack extends Stack {
  readonly jobs: readonly Job[];
  readonly ledger: LedgerTable;
  /** The example jobs' payments table: only with exampleJobs. */
  readonly payments?: BusinessTable;
  readonly exampleJobs: boolean;
  readonly runQueues: RunQueues;
  readonly planner: PlannerFunction;
  readonly worker: WorkerFunction;
  readonly outboxRelay: OutboxRelay;
  readonly observability: Observability;
  readonly operatorPolicy: OperatorPolicy;

  constructor(scope: Construct, id: string, props: SchedulerStackProps = {}) {
    super(scope, id, props);
    this.exampleJobs = props.exampleJobs ?? false;
    const workerTimeout = props.workerTimeout ?? Duration.seconds(RUN_QUEUES.workerTimeoutSeconds);
    // Before the jobs are checked against it: an out-of-range value is named as such, not as a job's.
    validateProps(`SchedulerStack "${id}"`, { workerTimeout, alarmTopicArn: props.alarmTopicArn }, STACK_RULES);
    this.jobs = validateJobsForDeployment(props.jobs, RUN_QUEUES.maxReceiveCount, { exampleJobs: this.exampleJobs, workerTimeout });
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.ledger = new LedgerTable(this, 'Ledger', {
      runRetentionDays: props.runRetentionDays,
      outboxRetentionDays: props.outboxRetentionDays,
      encryptionKey: props.tableEncryptionKey,
      removalPolicy,
    });
    if (this.exampleJobs) this.payments = new BusinessTable(this, 'Payments', { encryptionKey: props.tableEncryptionKey, removalPolicy });
    this.runQueues = new RunQueues(this, 'Queues', {
      workerTimeout,
      visibilityTimeout: Duration.seconds(
        Math.max(RUN_QUEUES.visibilityTimeoutSeconds, VISIBILITY_TIMEOUT_FACTOR * workerTimeout.toSeconds()),
      ),
      maxReceiveCount: RUN_QUEUES.maxReceiveCount,
    });
    this.planner = new PlannerFunction(this, 'Planner', {
      ledger: this.ledger,
      runQueues: this.runQueues,
      plannerPartitions: props.plannerPartitions,
      exampleJobs: this.exampleJobs,
      logRetention: props.logRetention,
    });
    this.worker = new WorkerFunction(this, 'Worker', {
      ledger: this.ledger,
      runQueues: this.runQueues,
      paymentsTable: this.payments,
      exampleJobs: this.exampleJobs,
      batchSize: props.workerBatchSize,
      maxConcurrency: props.workerMaxConcurrency,
      timeout: workerTimeout,
      logRetention: props.logRetention,
    });
    this.outboxRelay = new OutboxRelay(this, 'OutboxRelay', {
      ledger: this.ledger,
      eventBus: props.eventBus,
      logRetention: props.logRetention,
    });
    this.observability = new Observability(this, 'Observability', {
      plannerFunction: this.planner.function,
      plannerFailureQueue: this.planner.failureQueue,
      workerFunction: this.worker.function,
      runQueue: this.runQueues.runQueue,
      deadLetterQueue: this.runQueues.deadLetterQueue,
      outboxRelayFunction: this.outboxRelay.function,
      outboxRelayFailureQueue: this.outboxRelay.failureQueue,
      alarmTopic: props.alarmTopic ?? (props.alarmTopicArn ? sns.Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn) : undefined),
      alarmEmail: props.alarmEmail,
      plannerPartitions: this.planner.plannerPartitions,
      triggerLagThreshold: props.triggerLagThreshold,
      oldestOpenRunAgeThreshold: props.oldestOpenRunAgeThreshold,
    });
    this.operatorPolicy = new OperatorPolicy(this, 'Operators', { ledger: this.ledger, runQueues: this.runQueues });

    this.addOutputs();
    this.addNagSuppressions(props);
  }

  /** Which planner partition each job belongs to (for humans reading the synth output). */
  partitionOfJobs(): Record<string, number> {
    return Object.fromEntries(this.jobs.map((job) => [job.name, partitionOf(job.name, this.planner.plannerPartitions)]));
  }

  private addOutputs(): void {
    const output = (key: string, value: string, description: string) => new CfnOutput(this, key, { value, description });
    output(StackOutput.LedgerTableName, this.ledger.table.tableName, 'Ledger table (runs, watermarks, fenced state)');
    if (this.payments)
      output(StackOutput.PaymentsTableName, this.payments.table.tableName, 'Business table of the payments-reconcile example job');
    output(StackOutput.RunQueueUrl, this.runQueues.runQueue.queueUrl, 'Run queue URL');
    output(StackOutput.DeadLetterQueueUrl, this.runQueues.deadLetterQueue.queueUrl, 'Run dead-letter queue URL');
    output(
      StackOutput.DeadLetterQueueArn,
      this.runQueues.deadLetterQueue.queueArn,
      'Run dead-letter queue ARN (StartMessageMoveTask source)',
    );
    output(
      StackOutput.AlarmTopicArn,
      this.observability.alarmTopic.topicArn,
      'SNS topic every alarm notifies (alarm and OK): subscribe e-mail, chat or paging to it',
    );
    output(StackOutput.DashboardName, this.observability.dashboard.dashboardName, 'CloudWatch dashboard');
    output(StackOutput.PlannerFunctionName, this.planner.function.functionName, 'Planner function');
    output(StackOutput.WorkerFunctionName, this.worker.function.functionName, 'Worker function');
    output(
      StackOutput.PlannerPartitions,
      String(this.planner.plannerPartitions),
      'Planner partition count (one scheduled planner invocation each)',
    );
    output(StackOutput.RunRetentionDays, String(this.ledger.runRetentionDays), 'Days terminal runs are kept before TTL deletes them');
    output(StackOutput.EventBusName, this.outboxRelay.eventBus.eventBusName, 'EventBridge bus the outbox relay publishes to');
    output(StackOutput.EventBusArn, this.outboxRelay.eventBus.eventBusArn, 'EventBridge bus ARN (rules and cross-account targets)');
    output(StackOutput.ExampleJobs, String(this.exampleJobs), 'Whether the example jobs are deployed (-c exampleJobs=true)');
    output(StackOutput.OutboxRetentionDays, String(this.ledger.outboxRetentionDays), 'Days outbox rows are kept before TTL deletes them');
    output(
      StackOutput.PlannerFailureQueueUrl,
      this.planner.failureQueue.queueUrl,
      'Records of planner ticks that failed or were dropped as stale',
    );
    output(
      StackOutput.OutboxRelayFailureQueueUrl,
      this.outboxRelay.failureQueue.queueUrl,
      'Records of ledger stream batches the outbox relay gave up on (runbook outbox-relay-failed-batches)',
    );
    output(
      StackOutput.OperatorPolicyArn,
      this.operatorPolicy.policy.managedPolicyArn,
      "Managed policy for the ops CLI (attach it to the operators' role)",
    );
  }

  /**
   * Every cdk-nag finding that is accepted, each acknowledged on the one resource it concerns with
   * its reason (cdk-nag v3 reads CDK's Validations acknowledgments). NAG_ACKNOWLEDGMENTS lists them.
   */
  private addNagSuppressions(props: SchedulerStackProps): void {
    const functions = [this.planner.function, this.worker.function, this.outboxRelay.function];
    for (const fn of functions) {
      Validations.of(fn).acknowledge(NAG_ACKNOWLEDGMENTS.runtime);
    }
    Validations.of(this.outboxRelay.role).acknowledge(NAG_ACKNOWLEDGMENTS.streamListStreams);
    Validations.of(this.outboxRelay.failureQueue).acknowledge(NAG_ACKNOWLEDGMENTS.streamFailureQueue);
    Validations.of(this.planner.failureQueue).acknowledge(NAG_ACKNOWLEDGMENTS.plannerFailureQueue);
    if (props.tableEncryptionKey) {
      for (const fn of [this.planner.function, this.worker.function]) {
        Validations.of(fn.role!).acknowledge(...NAG_ACKNOWLEDGMENTS.customerManagedTableKey);
      }
    }
  }
}

/** The accepted cdk-nag findings and why. */
export const NAG_ACKNOWLEDGMENTS = {
  runtime: {
    id: 'AwsSolutions-L1',
    reason: `Pinned to ${LAMBDA_RUNTIME.name}, the runtime the bundles target and the tests run on; upgraded deliberately, not by a CDK release.`,
  },
  streamListStreams: {
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'Only dynamodb:ListStreams, which CDK DynamoEventSource grants on * (lists stream ARNs, reads no data); stream reads are on the ledger stream ARN.',
  },
  streamFailureQueue: {
    id: 'AwsSolutions-SQS3',
    reason: 'This queue is the outbox relay event source on-failure destination (its DLQ); nothing consumes it that could fail.',
  },
  plannerFailureQueue: {
    id: 'AwsSolutions-SQS3',
    reason: 'This queue is the planner async invocation on-failure destination (its DLQ); nothing consumes it that could fail.',
  },
  customerManagedTableKey: [
    {
      id: 'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]',
      reason: 'DynamoDB with a customer-managed key needs kms:GenerateDataKey* on that one key (resource is the key ARN).',
    },
    {
      id: 'AwsSolutions-IAM5[Action::kms:ReEncrypt*]',
      reason: 'DynamoDB with a customer-managed key needs kms:ReEncrypt* on that one key (resource is the key ARN).',
    },
  ],
} as const;
