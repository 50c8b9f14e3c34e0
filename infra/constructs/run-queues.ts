/**
 * The run queue and its dead-letter queue (DESIGN §8). Visibility is at least six times the
 * worker's timeout so a message cannot reappear while an invocation still holds it;
 * maxReceiveCount is above every job's retry budget, so the DLQ receives only poison messages
 * and crash-looping runs (checked against the jobs by the stack).
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { RUN_QUEUES } from '../../shared/core/resources.js';
import { FUNCTION_ACCESS } from '../iam-access.js';
import { durationIn, integerIn, validateProps, type PropRule } from '../validation.js';

/** Queue settings must be at least this multiple of the consumer's timeout (AWS guidance for Lambda). */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

export interface RunQueuesProps {
  /**
   * Timeout of the worker function consuming the run queue; the visibility timeout must be at
   * least 6 × this.
   * @default Duration.seconds(RUN_QUEUES.workerTimeoutSeconds) (60 s)
   */
  readonly workerTimeout?: Duration;
  /**
   * Visibility timeout of the run queue.
   * @default Duration.seconds(RUN_QUEUES.visibilityTimeoutSeconds) (6 min = 6 × 60 s)
   */
  readonly visibilityTimeout?: Duration;
  /**
   * Receives before a message moves to the DLQ; must exceed every job's retry.maxAttempts.
   * @default RUN_QUEUES.maxReceiveCount (shared/core/resources.ts)
   */
  readonly maxReceiveCount?: number;
  /**
   * How long the run queue keeps a message. Runs hidden until their retry is due stay in the
   * queue, so this must exceed the longest backoff.
   * @default Duration.days(4)
   */
  readonly retentionPeriod?: Duration;
  /**
   * How long the DLQ keeps a message (must exceed retentionPeriod: SQS keeps the original
   * enqueue time when it moves a message).
   * @default Duration.seconds(RUN_QUEUES.dlqRetentionSeconds) (14 days)
   */
  readonly deadLetterRetentionPeriod?: Duration;
  /**
   * What happens to both queues when they leave the stack.
   * @default RemovalPolicy.DESTROY
   */
  readonly removalPolicy?: RemovalPolicy;
}

interface Resolved {
  readonly workerTimeout: Duration;
  readonly visibilityTimeout: Duration;
  readonly maxReceiveCount: number;
  readonly retentionPeriod: Duration;
  readonly deadLetterRetentionPeriod: Duration;
}

const RULES: readonly PropRule<Resolved>[] = [
  { prop: 'workerTimeout', ...durationIn(Duration.seconds(1), Duration.minutes(15)) },
  { prop: 'visibilityTimeout', ...durationIn(Duration.seconds(0), Duration.hours(12)) },
  {
    prop: 'visibilityTimeout',
    must: `≥ ${VISIBILITY_TIMEOUT_FACTOR} × workerTimeout`,
    ok: (value: Duration, all) =>
      all.workerTimeout.isUnresolved() || value.toSeconds() >= VISIBILITY_TIMEOUT_FACTOR * all.workerTimeout.toSeconds(),
  },
  { prop: 'maxReceiveCount', ...integerIn(2, 1000) },
  { prop: 'retentionPeriod', ...durationIn(Duration.minutes(1), Duration.days(14)) },
  { prop: 'deadLetterRetentionPeriod', ...durationIn(Duration.minutes(1), Duration.days(14)) },
  {
    prop: 'deadLetterRetentionPeriod',
    must: 'longer than retentionPeriod',
    ok: (value: Duration, all) => all.retentionPeriod.isUnresolved() || value.toSeconds() > all.retentionPeriod.toSeconds(),
  },
];

export class RunQueues extends Construct {
  readonly runQueue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly maxReceiveCount: number;
  readonly visibilityTimeout: Duration;
  /** The worker timeout the queue was sized for. */
  readonly workerTimeout: Duration;

  constructor(scope: Construct, id: string, props: RunQueuesProps = {}) {
    super(scope, id);
    const resolved: Resolved = {
      workerTimeout: props.workerTimeout ?? Duration.seconds(RUN_QUEUES.workerTimeoutSeconds),
      visibilityTimeout: props.visibilityTimeout ?? Duration.seconds(RUN_QUEUES.visibilityTimeoutSeconds),
      maxReceiveCount: props.maxReceiveCount ?? RUN_QUEUES.maxReceiveCount,
      retentionPeriod: props.retentionPeriod ?? Duration.days(4),
      deadLetterRetentionPeriod: props.deadLetterRetentionPeriod ?? Duration.seconds(RUN_QUEUES.dlqRetentionSeconds),
    };
    validateProps(`RunQueues "${id}"`, resolved, RULES);
    this.maxReceiveCount = resolved.maxReceiveCount;
    this.visibilityTimeout = resolved.visibilityTimeout;
    this.workerTimeout = resolved.workerTimeout;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.DESTROY;

    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: resolved.deadLetterRetentionPeriod,
      removalPolicy,
    });
    this.runQueue = new sqs.Queue(this, 'RunQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: resolved.visibilityTimeout,
      retentionPeriod: resolved.retentionPeriod,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: resolved.maxReceiveCount },
      removalPolicy,
    });
  }

  /** Planner (FUNCTION_ACCESS.planner): sqs:SendMessage on the run queue (SendMessageBatch is authorized by it). */
  grantSendRuns(grantee: iam.IGrantable): iam.Grant {
    return this.runQueue.grant(grantee, ...FUNCTION_ACCESS.planner.code.runQueue);
  }

  /**
   * Worker (FUNCTION_ACCESS.worker), on the run queue: its code's sqs:ChangeMessageVisibility
   * (heartbeats, hiding a message until its retry is due) and sqs:SendMessage (dispatching the next
   * waiting run of forbid-queue and coalesce), and the event source mapping's sqs:ReceiveMessage,
   * sqs:DeleteMessage, sqs:GetQueueAttributes. No sqs:GetQueueUrl: nothing looks the queue up.
   */
  grantWorkerAccess(grantee: iam.IGrantable): iam.Grant {
    const actions = new Set<string>([...FUNCTION_ACCESS.worker.code.runQueue, ...FUNCTION_ACCESS.worker.service.runQueue]);
    return this.runQueue.grant(grantee, ...[...actions].sort());
  }
}
