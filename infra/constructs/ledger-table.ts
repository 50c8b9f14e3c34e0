/**
 * The ledger (DESIGN §2): one DynamoDB table holding watermarks, run items and the fenced state
 * the scheduler owns. Keys, the sparse `open-runs` index and the TTL attribute come from
 * shared/resources.ts, the same definition the local runtime and the tests build from.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { LEDGER_TABLE } from '../../shared/resources.js';
import { integerIn, validateProps, type PropRule } from '../validation.js';

export interface LedgerTableProps {
  /**
   * Days a terminal run is kept before TTL deletes it. The functions write `expiresAt` from this
   * value (env RUN_RETENTION_DAYS); the table only declares the TTL attribute.
   * @default 30
   */
  readonly runRetentionDays?: number;
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
  { prop: 'pointInTimeRecoveryDays', ...integerIn(1, 35) },
];

/** IAM actions the planner needs: create runs, advance watermarks, read them, find open runs. */
export const PLANNER_LEDGER_ACTIONS = ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'] as const;
/** IAM actions the worker needs: claim/heartbeat/complete runs, fenced state, transactions. */
export const WORKER_LEDGER_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:Query',
  'dynamodb:ConditionCheckItem',
  // The overlap policies release the job's active-run marker with a Delete inside the completion transaction.
  'dynamodb:DeleteItem',
] as const;

export class LedgerTable extends Construct {
  readonly table: dynamodb.Table;
  readonly runRetentionDays: number;
  /** ARN of the open-runs index (the only index; granted by name, never `index/*`). */
  readonly openRunsIndexArn: string;
  private readonly encryptionKey?: kms.IKey;

  constructor(scope: Construct, id: string, props: LedgerTableProps = {}) {
    super(scope, id);
    validateProps(`LedgerTable "${id}"`, props, RULES);
    this.runRetentionDays = props.runRetentionDays ?? 30;
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

  /** Planner: get/put/update/query runs and watermarks, plus Query on the open-runs index. */
  grantPlannerAccess(grantee: iam.IGrantable): iam.Grant {
    this.grantKey(grantee);
    iam.Grant.addToPrincipal({ grantee, actions: ['dynamodb:Query'], resourceArns: [this.openRunsIndexArn] });
    return iam.Grant.addToPrincipal({ grantee, actions: [...PLANNER_LEDGER_ACTIONS], resourceArns: [this.table.tableArn] });
  }

  /**
   * Worker: claim, heartbeat and complete runs and write scheduler-owned fenced state. All writes
   * are item-level; TransactWriteItems is authorized by these same actions.
   */
  grantWorkerAccess(grantee: iam.IGrantable): iam.Grant {
    this.grantKey(grantee);
    return iam.Grant.addToPrincipal({ grantee, actions: [...WORKER_LEDGER_ACTIONS], resourceArns: [this.table.tableArn] });
  }

  private grantKey(grantee: iam.IGrantable): void {
    this.encryptionKey?.grantEncryptDecrypt(grantee);
  }
}

