/**
 * The one definition of the scheduler's storage and queues. The CDK stack (infra/) and the local
 * runtime (tools/local-stack.ts) both build from these values, so the table the tests run against
 * has the same keys, index and TTL attribute as the one that is deployed.
 */

/** Ledger table: watermarks, run items and scheduler-owned fenced state (DESIGN §2). */
export const LEDGER_TABLE = {
  /** Logical/local name; the deployed name comes from CloudFormation. */
  name: 'scheduler-ledger',
  partitionKey: 'pk',
  sortKey: 'sk',
  /** TTL attribute set on terminal runs and on outbox rows (epoch seconds). */
  ttlAttribute: 'expiresAt',
  /**
   * Sparse index of open (non-terminal) runs, ordered by slot: the sweeper and `ops status` read
   * it instead of scanning. A run leaves it when its terminal transition REMOVEs `openPk`.
   */
  openRunsIndex: {
    name: 'open-runs',
    partitionKey: 'openPk',
    sortKey: 'openSk',
  },
} as const;

/** Sample business table the example jobs own (payments); real teams bring their own tables. */
export const PAYMENTS_TABLE = {
  name: 'scheduler-payments',
  partitionKey: 'pk',
  sortKey: 'sk',
} as const;

/** Item key layout inside the ledger table. */
export const LedgerKeys = {
  jobPk: (job: string) => `JOB#${job}`,
  watermarkSk: '#WATERMARK',
  /** The job's active-run marker (overlap policies other than parallel). */
  activeSk: (shard: number) => `#ACTIVE#${String(shard).padStart(3, '0')}`,
  runSk: (slot: number, shard: number) => `RUN#${new Date(slot).toISOString()}#${String(shard).padStart(3, '0')}`,
  runSkPrefix: 'RUN#',
  partitionPk: (partition: number, of: number) => `PLANNER#${partition}/${of}`,
  /** All open runs share one index partition; buckets can be added if it ever gets hot. */
  openPk: 'OPEN',
  openSk: (slot: number, job: string, shard: number) =>
    `${new Date(slot).toISOString()}#${job}#${String(shard).padStart(3, '0')}`,
} as const;

/** Run queue and its dead-letter queue (DESIGN §8: visibility ≥ 6 × worker timeout). */
export const RUN_QUEUES = {
  runQueueName: 'scheduler-runs',
  deadLetterQueueName: 'scheduler-runs-dlq',
  /** Worker Lambda timeout in seconds; the queue's visibility timeout is derived from it. */
  workerTimeoutSeconds: 60,
  visibilityTimeoutSeconds: 6 * 60,
  /**
   * Larger than any job's retry budget, so only poison messages and crash-looping runs reach
   * the DLQ: runs that fail normally go RETRY/DEAD in the ledger and their message is deleted.
   */
  maxReceiveCount: 15,
  dlqRetentionSeconds: 14 * 24 * 3600,
  /** SQS caps DelaySeconds at 15 minutes. */
  maxDelaySeconds: 900,
} as const;

/** The planner's EventBridge rule fires every `tickMs` (one rule per partition). */
export const PLANNER_SCHEDULE = {
  tickMs: 60_000,
} as const;

/** Environment variables the Lambda entry points read (set by the CDK stack and the local runtime). */
export const ENV = {
  ledgerTable: 'LEDGER_TABLE_NAME',
  paymentsTable: 'PAYMENTS_TABLE_NAME',
  runQueueUrl: 'RUN_QUEUE_URL',
  /** The EventBridge bus the outbox relay publishes to. */
  eventBusName: 'EVENT_BUS_NAME',
  /** Retention of terminal runs in days before TTL deletes them. */
  runRetentionDays: 'RUN_RETENTION_DAYS',
  /** Retention of outbox rows in days before TTL deletes them (the worker stamps `expiresAt`). */
  outboxRetentionDays: 'OUTBOX_RETENTION_DAYS',
  /** "true" adds the example jobs (shared/example-jobs.ts) to the job config. */
  exampleJobs: 'EXAMPLE_JOBS',
} as const;
