/**
 * The outbox relay (DESIGN §6): one NodejsFunction from functions/outbox-relay.ts fed by the
 * ledger table's stream (NEW_IMAGE) and publishing each outbox row to an EventBridge bus with
 * PutEvents. The event source only invokes it for INSERTs of items whose `pk` begins with
 * `OUTBOX#`; it retries from the first record the handler reports (ReportBatchItemFailures),
 * bisects a failing batch, and after the retries (or the record age) are exhausted it sends the
 * batch's metadata (shard, sequence numbers) to an on-failure queue. The outbox row itself stays
 * in the ledger for the ledger's outbox retention (at least 14 days, as long as the on-failure
 * queue keeps a batch), so a failed event can be republished from it; its TTL delete is a REMOVE
 * record, which the filter never lets through.
 */
import { ENV } from '../../shared/core/resources.js';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { OUTBOX_PK_PREFIX } from '../../shared/core/outbox.js';
import { LEDGER_TABLE } from '../../shared/core/resources.js';
import { FUNCTION_ACCESS } from '../iam-access.js';
import { createSchedulerFunction, type SchedulerFunctionOptions } from '../lambda-defaults.js';
import { QueueEventSourceDlq } from '../queue-destinations.js';
import { durationIn, integerIn, validateProps, type PropRule } from '../validation.js';
import type { LedgerTable } from './ledger-table.js';

/** Environment variable functions/outbox-relay.ts reads the bus name from. */
export const EVENT_BUS_NAME_ENV = ENV.eventBusName;

/**
 * IAM actions the DynamoDB event source grants the relay on the ledger's stream ARN (plus
 * `dynamodb:ListStreams`, which CDK grants on `*`, and kms:Decrypt/DescribeKey on a
 * customer-managed table key). The relay reads no table items.
 */
export const RELAY_STREAM_ACTIONS = FUNCTION_ACCESS.outboxRelay.service.ledgerStream;
/** IAM action the relay needs on the bus. */
export const RELAY_BUS_ACTIONS = FUNCTION_ACCESS.outboxRelay.code.eventBus;

export interface OutboxRelayProps extends SchedulerFunctionOptions {
  /** The ledger whose stream carries the outbox rows (its NEW_IMAGE stream must be enabled). */
  readonly ledger: LedgerTable;
  /**
   * The bus the outbox events are published to.
   * @default a new event bus, named by CDK after its construct path (CloudFormation requires a name)
   */
  readonly eventBus?: events.IEventBus;
  /**
   * Most stream records per invocation.
   * @default 100
   */
  readonly batchSize?: number;
  /**
   * Retries of a failing batch (each bisection retries too) before its metadata goes to the
   * on-failure queue. Bounded on purpose: an unbounded retry would block the shard until the
   * records expire from the stream (24 h).
   * @default 10
   */
  readonly retryAttempts?: number;
  /**
   * Records older than this are not retried further but sent to the on-failure queue.
   * @default Duration.hours(1)
   */
  readonly maxRecordAge?: Duration;
  /**
   * Function timeout.
   * @default Duration.seconds(60)
   */
  readonly timeout?: Duration;
  /**
   * How long the on-failure queue keeps the metadata of a failed batch.
   * @default Duration.days(14)
   */
  readonly failureRetentionPeriod?: Duration;
  /**
   * Whether the event source mapping is enabled (false stops relaying; records wait in the
   * stream for up to 24 h).
   * @default true
   */
  readonly enabled?: boolean;
}

interface Resolved extends SchedulerFunctionOptions {
  readonly batchSize: number;
  readonly retryAttempts: number;
  readonly maxRecordAge: Duration;
  readonly timeout: Duration;
  readonly failureRetentionPeriod: Duration;
}

const RULES: readonly PropRule<Resolved>[] = [
  // The limits AWS accepts for a DynamoDB stream event source.
  { prop: 'batchSize', ...integerIn(1, 10000) },
  { prop: 'retryAttempts', ...integerIn(0, 10000) },
  { prop: 'maxRecordAge', ...durationIn(Duration.seconds(60), Duration.days(7)) },
  { prop: 'timeout', ...durationIn(Duration.seconds(5), Duration.minutes(15)) },
  { prop: 'failureRetentionPeriod', ...durationIn(Duration.minutes(1), Duration.days(14)) },
  { prop: 'memorySize', ...integerIn(128, 10240) },
];

/**
 * The event filter: new items (INSERT) whose partition key begins with `OUTBOX#`. A MODIFY of an
 * outbox row re-writes an event key that was already published (shared/core/outbox.ts).
 */
export function outboxFilter(): Record<string, unknown> {
  return lambda.FilterCriteria.filter({
    eventName: lambda.FilterRule.isEqual('INSERT'),
    dynamodb: { NewImage: { [LEDGER_TABLE.partitionKey]: { S: lambda.FilterRule.beginsWith(OUTBOX_PK_PREFIX) } } },
  });
}

export class OutboxRelay extends Construct {
  readonly eventBus: events.IEventBus;
  readonly function: NodejsFunction;
  readonly role: iam.IRole;
  readonly logGroup: logs.ILogGroup;
  /** Receives the metadata of stream batches the relay gave up on. */
  readonly failureQueue: sqs.Queue;
  readonly eventSource: DynamoEventSource;

  constructor(scope: Construct, id: string, props: OutboxRelayProps) {
    super(scope, id);
    const resolved: Resolved = {
      ...props,
      batchSize: props.batchSize ?? 100,
      retryAttempts: props.retryAttempts ?? 10,
      maxRecordAge: props.maxRecordAge ?? Duration.hours(1),
      timeout: props.timeout ?? Duration.seconds(60),
      failureRetentionPeriod: props.failureRetentionPeriod ?? Duration.days(14),
    };
    validateProps(`OutboxRelay "${id}"`, resolved, RULES);

    this.eventBus = props.eventBus ?? new events.EventBus(this, 'Bus', { description: 'Fenced scheduler outbox events' });

    const { fn, role, logGroup } = createSchedulerFunction(this, {
      ...props,
      entry: 'functions/outbox-relay.ts',
      description: 'Scheduler outbox relay: publishes outbox rows from the ledger stream to EventBridge',
      timeout: resolved.timeout,
      environment: {
        [EVENT_BUS_NAME_ENV]: this.eventBus.eventBusName,
        ...props.environment,
      },
    });
    this.function = fn;
    this.role = role;
    this.logGroup = logGroup;

    this.failureQueue = new sqs.Queue(this, 'FailureQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: resolved.failureRetentionPeriod,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.eventBus.grantPutEventsTo(fn);

    // Binding grants RELAY_STREAM_ACTIONS on the stream ARN, ListStreams, and sqs:SendMessage (only) on the failure queue.
    this.eventSource = new DynamoEventSource(props.ledger.table, {
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: resolved.batchSize,
      retryAttempts: resolved.retryAttempts,
      maxRecordAge: resolved.maxRecordAge,
      bisectBatchOnError: true,
      reportBatchItemFailures: true,
      filters: [outboxFilter()],
      onFailure: new QueueEventSourceDlq(this.failureQueue),
      enabled: props.enabled ?? true,
    });
    fn.addEventSource(this.eventSource);
  }
}
