/**
 * The worker (docs/design.md, "Worker"): one NodejsFunction from functions/worker.ts fed by the run
 * queue through an SQS event source mapping with ReportBatchItemFailures, so one failed message
 * never redelivers its whole batch. It claims, heartbeats and completes runs in the ledger, writes
 * the business items its jobs own, and changes message visibility. Its IAM actions are the rows of
 * FUNCTION_ACCESS.worker (infra/iam-access.ts), on the resources named there.
 */
import { Duration } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ENV, RUN_QUEUES } from '../../shared/core/resources.js';
import {
  createSchedulerFunction,
  jobConfigEnvironment,
  runResourcesEnvironment,
  type SchedulerFunctionOptions,
} from '../lambda-defaults.js';
import { durationIn, integerIn, validateProps, type PropRule } from '../validation.js';
import type { BusinessTable } from './business-table.js';
import type { LedgerTable } from './ledger-table.js';
import { VISIBILITY_TIMEOUT_FACTOR, type RunQueues } from './run-queues.js';

export interface WorkerFunctionProps extends SchedulerFunctionOptions {
  /** The ledger holding the runs. */
  readonly ledger: LedgerTable;
  /** The run queue the worker consumes (and changes visibility on). */
  readonly runQueues: RunQueues;
  /**
   * The payments table the example jobs own (env PAYMENTS_TABLE_NAME).
   * @default none: PAYMENTS_TABLE_NAME is not set
   */
  readonly paymentsTable?: BusinessTable;
  /**
   * Other business tables the jobs write through `ctx.fenced` (each granted FENCED_WRITER_ACTIONS).
   * Their names reach the handlers through `environment`.
   * @default none
   */
  readonly businessTables?: readonly BusinessTable[];
  /**
   * Whether the example jobs are part of the job config (env EXAMPLE_JOBS).
   * @default false
   */
  readonly exampleJobs?: boolean;
  /**
   * Messages per invocation.
   * @default 10
   */
  readonly batchSize?: number;
  /**
   * Most concurrent invocations the event source starts (bounds the load on the ledger and on
   * the systems the jobs call).
   * @default 20
   */
  readonly maxConcurrency?: number;
  /**
   * Function timeout; the run queue's visibility timeout must be at least 6 × this.
   * @default Duration.seconds(RUN_QUEUES.workerTimeoutSeconds) (60 s)
   */
  readonly timeout?: Duration;
}

interface Resolved extends SchedulerFunctionOptions {
  readonly batchSize: number;
  readonly maxConcurrency: number;
  readonly timeout: Duration;
}

/** The worker function's timeout: 10 s (a yield margin and an attempt) to Lambda's 15 minutes. */
export const WORKER_TIMEOUT_LIMITS = { min: Duration.seconds(10), max: Duration.minutes(15) } as const;

const RULES: readonly PropRule<Resolved>[] = [
  // Above 10 SQS requires a batching window, which would delay runs that are due now.
  { prop: 'batchSize', ...integerIn(1, 10) },
  // The limits AWS accepts for an SQS event source's maximum concurrency.
  { prop: 'maxConcurrency', ...integerIn(2, 1000) },
  { prop: 'timeout', ...durationIn(WORKER_TIMEOUT_LIMITS.min, WORKER_TIMEOUT_LIMITS.max) },
  { prop: 'memorySize', ...integerIn(128, 10240) },
];

export class WorkerFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: iam.IRole;
  readonly logGroup: logs.ILogGroup;
  readonly eventSource: lambda.EventSourceMapping;

  constructor(scope: Construct, id: string, props: WorkerFunctionProps) {
    super(scope, id);
    const resolved: Resolved = {
      ...props,
      batchSize: props.batchSize ?? 10,
      maxConcurrency: props.maxConcurrency ?? 20,
      timeout: props.timeout ?? Duration.seconds(RUN_QUEUES.workerTimeoutSeconds),
    };
    validateProps(`WorkerFunction "${id}"`, resolved, [
      ...RULES,
      {
        prop: 'timeout',
        must: `≤ the run queue's visibility timeout / ${VISIBILITY_TIMEOUT_FACTOR} (${props.runQueues.visibilityTimeout.toHumanString()} / ${VISIBILITY_TIMEOUT_FACTOR})`,
        ok: (value: Duration) =>
          props.runQueues.visibilityTimeout.isUnresolved() ||
          VISIBILITY_TIMEOUT_FACTOR * value.toSeconds() <= props.runQueues.visibilityTimeout.toSeconds(),
      },
    ]);

    const { fn, role, logGroup } = createSchedulerFunction(this, {
      ...props,
      entry: 'functions/worker.ts',
      description: 'Scheduler worker: claims runs, executes job handlers under a fenced lease',
      timeout: resolved.timeout,
      environment: {
        ...runResourcesEnvironment(props.ledger, props.runQueues),
        ...jobConfigEnvironment(props.exampleJobs ?? false),
        [ENV.outboxRetentionDays]: String(props.ledger.outboxRetentionDays),
        ...(props.paymentsTable ? { [ENV.paymentsTable]: props.paymentsTable.table.tableName } : {}),
        ...props.environment,
      },
    });
    this.function = fn;
    this.role = role;
    this.logGroup = logGroup;

    props.ledger.grantWorkerAccess(fn);
    for (const table of [props.paymentsTable, ...(props.businessTables ?? [])]) table?.grantFencedWrites(fn);
    // The code's visibility changes and dispatches, and the event source mapping's receive/delete.
    props.runQueues.grantWorkerAccess(fn);

    // Not SqsEventSource: it grants grantConsumeMessages, whose sqs:GetQueueUrl nothing calls.
    this.eventSource = new lambda.EventSourceMapping(this, 'RunQueueSource', {
      target: fn,
      eventSourceArn: props.runQueues.runQueue.queueArn,
      batchSize: resolved.batchSize,
      maxConcurrency: resolved.maxConcurrency,
      reportBatchItemFailures: true,
    });
  }
}
