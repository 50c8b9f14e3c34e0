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
   * Sparse, keys-only index of the open runs the sweeper watches, spread over OPEN_BUCKETS
   * partition keys and ordered by slot within each. A run is put in it only when it needs
   * watching: still open when the sweep window passed its slot, created late (catch-up, backfill,
   * manual), revived by ops, or waiting in an exclusive lane. On-time runs that simply run never
   * enter it, so creating and finishing them writes no index at all. A run leaves it when a
   * terminal transition REMOVEs `openPk`. Keys only: the sweeper reads candidates here and
   * decides from a consistent read of the run (a GSI read is eventually consistent). A run that
   * ends DEAD instead moves to a DEAD#bb key of the same index, until `ops retry` (back to OPEN#)
   * or `ops resolve` (out) or its TTL: the runs-dead gauge counts those keys.
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

/**
 * Partition-key spread (DESIGN §12: one key value takes ~1,000 WCU/s). Both counts are fixed for
 * the life of a table: items keyed by them never move when the planner's partition count changes.
 */
export const KEY_SPREAD = {
  /**
   * Partition keys of the watched-open-runs index; planner partition p sweeps buckets b with
   * b % of = p (one Query each per tick). Only runs that need watching enter the index (two writes
   * each, in and out): even if every run did, 2,000 runs/s spread over 16 keys is 250 WCU/s a key.
   */
  openBuckets: 16,
  /** Items listing the jobs whose planning is exceptional (paused, or catching up). */
  exceptionBuckets: 64,
} as const;

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** Item key layout inside the ledger table. */
export const LedgerKeys = {
  jobPk: (job: string) => `JOB#${job}`,
  /** The job a `JOB#<name>` partition key names. */
  jobOfPk: (pk: string) => pk.slice('JOB#'.length),
  /** The job's planning state: pause (with note), catch-up cursor. Follows the job across planner partitions. */
  jobPlanSk: '#PLAN',
  /** The job's active-run marker for one shard's lane (overlap policies other than parallel). */
  activeSk: (shard: number) => `#ACTIVE#${pad(shard, 3)}`,
  runSk: (slot: number, shard: number) => `RUN#${new Date(slot).toISOString()}#${pad(shard, 3)}`,
  runSkPrefix: 'RUN#',
  /** Sorts after every shard of `slot`'s runs and before the next slot's. */
  runSkAfterSlot: (slot: number) => `RUN#${new Date(slot).toISOString()}#\uffff`,
  /** Sorts after every run sort key. */
  runSkEnd: 'RUN#\uffff',
  /** The slot and shard a run sort key (`RUN#<ISO slot>#<shard>`) names; NaN where it names none. */
  runOfSk: (sk: string) => {
    const [, slotIso = '', shard = '0'] = sk.split('#');
    return { slot: Date.parse(slotIso), shard: Number(shard) };
  },
  /** `ops trigger --idempotency-key`: which manual slot a key's runs have (one item per job and key). */
  triggerPk: (job: string) => `TRIGGER#${job}`,
  triggerKeySk: (key: string) => `KEY#${key}`,
  /** The planner's own items: its layout and partition watermarks, and the exception lists. */
  plannerPk: 'PLANNER',
  plannerStateSk: '#STATE',
  exceptionsSk: (bucket: number) => `#EXCEPTIONS#${pad(bucket, 2)}`,
  /**
   * The job config the planner runs, recorded on each cold start for the ops CLI: its head item
   * (hash, when, the first chunk of the gzip'd JSON) and, for a config over one chunk, the further
   * chunks under the hash they belong to.
   */
  configPk: 'CONFIG',
  deployedConfigSk: '#DEPLOYED',
  deployedConfigChunkSk: (hash: string, index: number) => `#DEPLOYED#${hash}#${pad(index, 3)}`,
  openPk: (bucket: number) => `OPEN#${pad(bucket, 2)}`,
  /** Watch-index prefix of the open runs the sweeper pages through (OPEN#bb). */
  openPkPrefix: 'OPEN#',
  /**
   * DEAD runs no operator has acted on (not retried, not resolved) sit in the same index under
   * their own keys, which the sweeper never pages: the planner counts them for the runs-dead gauge.
   */
  deadPk: (bucket: number) => `DEAD#${pad(bucket, 2)}`,
  openSk: (slot: number, job: string, shard: number) => `${new Date(slot).toISOString()}#${job}#${pad(shard, 3)}`,
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

/**
 * Upper bound on planner partitions: one EventBridge rule each, well under EventBridge's 300 rules
 * per bus. The stack refuses more at synth, and `npm start --partitions` refuses more too.
 */
export const MAX_PLANNER_PARTITIONS = 64;

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
  /** The worker Lambda's timeout: every job's attempt must fit in it (validated at cold start). */
  workerTimeoutSeconds: 'WORKER_TIMEOUT_SECONDS',
  /** Retention of outbox rows in days before TTL deletes them (the worker stamps `expiresAt`). */
  outboxRetentionDays: 'OUTBOX_RETENTION_DAYS',
  /** "true" adds the example jobs (shared/example-jobs.ts) to the job config. */
  exampleJobs: 'EXAMPLE_JOBS',
  /** The stack name, a dimension of every metric (shared/runtime/powertools.ts); absent locally. */
  metricsStack: 'METRICS_STACK',
} as const;
