/**
 * The planner (DESIGN §7): one NodejsFunction from functions/planner.ts and one EventBridge rule
 * per planner partition, each firing every minute with input `{ partition, of }`. Jobs hash into
 * partitions (shared/core/partition.ts), so each tick reads and writes only its partition's jobs;
 * concurrent or duplicate ticks are harmless because every planner write is conditional.
 *
 * EventBridge invokes the planner asynchronously. Lambda's own retries of a failed tick are off and
 * a tick waiting longer than one tick interval is dropped: the next tick plans the same slots from
 * the watermark, so a retried or late tick only adds load. A tick that failed or was dropped leaves
 * a record in the failure queue (alarm planner-failed-ticks).
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { PartitionRef } from '../../shared/core/partition.js';
import { MAX_PLANNER_PARTITIONS, PLANNER_SCHEDULE } from '../../shared/core/resources.js';
import {
  createSchedulerFunction,
  jobConfigEnvironment,
  runResourcesEnvironment,
  type SchedulerFunctionOptions,
} from '../lambda-defaults.js';
import { QueueFailureDestination } from '../queue-destinations.js';
import { durationIn, integerIn, validateProps, type PropRule } from '../validation.js';
import type { LedgerTable } from './ledger-table.js';
import type { RunQueues } from './run-queues.js';

/** Upper bound on partitions (shared/core/resources.ts: the local runtime refuses more too). */
export { MAX_PLANNER_PARTITIONS };

export interface PlannerFunctionProps extends SchedulerFunctionOptions {
  /** The ledger the planner materializes runs into. */
  readonly ledger: LedgerTable;
  /** The queues the planner dispatches runs to. */
  readonly runQueues: RunQueues;
  /**
   * Number of planner partitions; each is its own scheduled invocation with `{ partition, of }`.
   * @default 1
   */
  readonly plannerPartitions?: number;
  /**
   * Function timeout. A tick that runs long overlaps the next one harmlessly.
   * @default Duration.seconds(60)
   */
  readonly timeout?: Duration;
  /**
   * Whether the schedule rules are enabled (false pauses all planning, e.g. during a migration).
   * @default true
   */
  readonly enabled?: boolean;
  /**
   * Whether the example jobs are part of the job config (env EXAMPLE_JOBS).
   * @default false
   */
  readonly exampleJobs?: boolean;
  /**
   * How long the failure queue keeps the record of a failed or dropped tick.
   * @default Duration.days(14)
   */
  readonly failureRetentionPeriod?: Duration;
}

/** A tick older than this is superseded by the next one (Lambda's minimum is 60 s). */
export const PLANNER_MAX_EVENT_AGE = Duration.millis(Math.max(60_000, PLANNER_SCHEDULE.tickMs));

interface Resolved extends SchedulerFunctionOptions {
  readonly plannerPartitions: number;
  readonly timeout: Duration;
  readonly failureRetentionPeriod: Duration;
}

const RULES: readonly PropRule<Resolved>[] = [
  { prop: 'plannerPartitions', ...integerIn(1, MAX_PLANNER_PARTITIONS) },
  { prop: 'failureRetentionPeriod', ...durationIn(Duration.minutes(1), Duration.days(14)) },
  { prop: 'timeout', ...durationIn(Duration.seconds(5), Duration.minutes(15)) },
  { prop: 'memorySize', ...integerIn(128, 10240) },
];

/** The EventBridge inputs, one per partition: `{ partition: 0..of-1, of }`. */
export function plannerInputs(partitions: number): PartitionRef[] {
  return Array.from({ length: partitions }, (_, partition) => ({ partition, of: partitions }));
}

export class PlannerFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: iam.IRole;
  readonly logGroup: logs.ILogGroup;
  readonly rules: readonly events.Rule[];
  readonly plannerPartitions: number;
  /** Receives a record of each tick that failed or was dropped as stale (on-failure destination). */
  readonly failureQueue: sqs.Queue;

  constructor(scope: Construct, id: string, props: PlannerFunctionProps) {
    super(scope, id);
    const resolved: Resolved = {
      ...props,
      plannerPartitions: props.plannerPartitions ?? 1,
      timeout: props.timeout ?? Duration.seconds(60),
      failureRetentionPeriod: props.failureRetentionPeriod ?? Duration.days(14),
    };
    validateProps(`PlannerFunction "${id}"`, resolved, RULES);
    this.plannerPartitions = resolved.plannerPartitions;

    const { fn, role, logGroup } = createSchedulerFunction(this, {
      ...props,
      entry: 'functions/planner.ts',
      description: 'Scheduler planner: materializes due slots into the ledger and dispatches runs',
      timeout: resolved.timeout,
      environment: {
        ...runResourcesEnvironment(props.ledger, props.runQueues),
        ...jobConfigEnvironment(props.exampleJobs ?? false),
        ...props.environment,
      },
    });
    this.function = fn;
    this.role = role;
    this.logGroup = logGroup;

    props.ledger.grantPlannerAccess(fn);
    props.runQueues.grantSendRuns(fn);

    this.failureQueue = new sqs.Queue(this, 'FailureQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: resolved.failureRetentionPeriod,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    fn.configureAsyncInvoke({
      retryAttempts: 0,
      maxEventAge: PLANNER_MAX_EVENT_AGE,
      onFailure: new QueueFailureDestination(this.failureQueue),
    });

    this.rules = plannerInputs(resolved.plannerPartitions).map(
      (input) =>
        new events.Rule(this, `Tick${input.partition}`, {
          description: `Scheduler planner tick, partition ${input.partition} of ${input.of}`,
          schedule: events.Schedule.rate(Duration.minutes(PLANNER_SCHEDULE.tickMs / 60_000)),
          enabled: props.enabled ?? true,
          targets: [
            new targets.LambdaFunction(fn, {
              event: events.RuleTargetInput.fromObject(input),
              // EventBridge's own delivery retries (the async Invoke call refused), bounded the same way.
              maxEventAge: PLANNER_MAX_EVENT_AGE,
              retryAttempts: 2,
            }),
          ],
        }),
    );
  }
}
