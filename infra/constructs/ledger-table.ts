/**
 * The ledger (DESIGN §2): one DynamoDB table holding watermarks, run items and the fenced state
 * the scheduler owns. Keys, the sparse `open-runs` index and the TTL attribute come from
 * shared/core/resources.ts, the same definition the local runtime and the tests build from.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { OUTBOX_DEFAULT_RETENTION_DAYS, OUTBOX_MIN_RETENTION_DAYS } from '../../shared/core/outbox.js';
import { LEDGER_TABLE } from '../../shared/core/resources.js';
import { FUNCTION_ACCESS } from '../iam-access.js';
import { integerIn, validateProps, type PropRule } from '../validation.js';

export interface LedgerTableProps {
  /**
   * Days a terminal run is kept before TTL deletes it. The functions write `expiresAt` from this
   * value (env RUN_RETENTION_DAYS); the table only declares the TTL attribute.
   * @default 30
   */
  readonly runRetentionDays?: number;
  /**
   * Days an outbox row is kept before TTL deletes it: how long a batch the relay gave up on can
   * still be republished from its rows. The worker stamps `expiresAt` on each row from this value
   * (env OUTBOX_RETENTION_DAYS). At least 14: the relay's on-failure queue keeps a failed batch's
   * metadata that long.
   * @default 14
   */
  readonly outboxRetentionDays?: number;
  /**
   * Point-in-time recovery window in days.
   * @default 35
   */
  readonly pointInTimeRecoveryDays?: number;
  /**
   * Customer-managed KMS key for the table. Principals granted table access are also granted
   * encrypt/decrypt on the key.
   * @default the AWS-managed key (aws/dynamodb)
   */
  readonly encryptionKey?: kms.IKey;
  /**
   * What happens to the table when it leaves the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * CloudFormation deletion protection.
   * @default true when removalPolicy is RETAIN, otherwise false
   */
  readonly deletionProtection?: boolean;
}

const RULES: readonly PropRule<LedgerTableProps>[] = [
  { prop: 'runRetentionDays', ...integerIn(1, 3650) },
  { prop: 'outboxRetentionDays', ...integerIn(OUTBOX_MIN_RETENTION_DAYS, 3650) },
  { prop: 'pointInTimeRecoveryDays', ...integerIn(1, 35) },
];

/** Actions on the ledger's items and on its open-runs index (rows of FUNCTION_ACCESS). */
export interface LedgerAccess {
  readonly ledgerTable?: readonly string[];
  readonly openRunsIndex?: readonly string[];
}

export class LedgerTable extends Construct {
  readonly table: dynamodb.Table;
  readonly runRetentionDays: number;
  readonly outboxRetentionDays: number;
  /** ARN of the open-runs index (the only index; granted by name, never `index/*`). */
  readonly openRunsIndexArn: string;
  private readonly encryptionKey?: kms.IKey;

  constructor(scope: Construct, id: string, props: LedgerTableProps = {}) {
    super(scope, id);
    validateProps(`LedgerTable "${id}"`, props, RULES);
    this.runRetentionDays = props.runRetentionDays ?? 30;
    this.outboxRetentionDays = props.outboxRetentionDays ?? OUTBOX_DEFAULT_RETENTION_DAYS;
    this.encryptionKey = props.encryptionKey;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: LEDGER_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: LEDGER_TABLE.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: LEDGER_TABLE.ttlAttribute,
      pointInTimeRecoverySpecification: {
        pointInTimeRecoveryEnabled: true,
        recoveryPeriodInDays: props.pointInTimeRecoveryDays ?? 35,
      },
      encryption: props.encryptionKey ? dynamodb.TableEncryption.CUSTOMER_MANAGED : dynamodb.TableEncryption.AWS_MANAGED,
      encryptionKey: props.encryptionKey,
      // For the outbox relay: every committed change of a run, as written.
      stream: dynamodb.StreamViewType.NEW_IMAGE,
      removalPolicy,
      deletionProtection: props.deletionProtection ?? removalPolicy === RemovalPolicy.RETAIN,
    });
    this.table.addGlobalSecondaryIndex({
      indexName: LEDGER_TABLE.openRunsIndex.name,
      partitionKey: { name: LEDGER_TABLE.openRunsIndex.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: LEDGER_TABLE.openRunsIndex.sortKey, type: dynamodb.AttributeType.STRING },
      // Keys only: the sweeper reads candidates here and decides from a consistent read of the
      // run, so claims and heartbeats of a watched run write no index.
      projectionType: dynamodb.ProjectionType.KEYS_ONLY,
    });
    this.openRunsIndexArn = `${this.table.tableArn}/index/${LEDGER_TABLE.openRunsIndex.name}`;
  }

  /**
   * Planner (FUNCTION_ACCESS.planner), on the table: BatchGetItem (the layout and exception lists
   * in one read, job plans, the sweep's consistent reads of the watched runs), GetItem (the layout
   * after a lost layout switch, lane markers and holders of idle exclusive lanes), PutItem
   * (createRun), Query (the window sweep reads each due job's runs of the window: the sweeper does
   * query the table) and UpdateItem (layout, catch-up cursors, watermark and sweep cursor, watch
   * marks, re-dispatch marks); on the open-runs index, Query only (the watch sweep pages through
   * its share of the buckets).
   */
  grantPlannerAccess(grantee: iam.IGrantable): void {
    this.grantAccess(grantee, FUNCTION_ACCESS.planner.code);
  }

  /**
   * Worker (FUNCTION_ACCESS.worker): its own ledger calls (claim, heartbeat, completion and the
   * active-run marker: GetItem, PutItem, UpdateItem, Query, and ConditionCheckItem in
   * the transaction that takes a lane from an ended holder) plus what the handlers' `ctx.fenced` /
   * `ctx.reader` do on the ledger. TransactWriteItems is authorized by the actions of its items.
   */
  grantWorkerAccess(grantee: iam.IGrantable): void {
    const { ledgerTable, handlerTables } = FUNCTION_ACCESS.worker.code;
    this.grantAccess(grantee, { ledgerTable: [...new Set([...ledgerTable, ...handlerTables])].sort() });
  }

  /** Exactly `access`: table actions on the table ARN, index actions on the open-runs index ARN. */
  grantAccess(grantee: iam.IGrantable, access: LedgerAccess): void {
    this.grantKey(grantee);
    if (access.ledgerTable?.length)
      iam.Grant.addToPrincipal({ grantee, actions: [...access.ledgerTable], resourceArns: [this.table.tableArn] });
    if (access.openRunsIndex?.length)
      iam.Grant.addToPrincipal({ grantee, actions: [...access.openRunsIndex], resourceArns: [this.openRunsIndexArn] });
  }

  private grantKey(grantee: iam.IGrantable): void {
    this.encryptionKey?.grantEncryptDecrypt(grantee);
  }
}
