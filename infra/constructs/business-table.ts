/**
 * A business table whose items the jobs own and write through `ctx.fenced` (the sample
 * `payments` table of shared/core/resources.ts). Real teams bring their own tables and grant the
 * worker the same item-level actions on them.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { PAYMENTS_TABLE } from '../../shared/core/resources.js';
import { FUNCTION_ACCESS } from '../iam-access.js';
import { integerIn, validateProps, type PropRule } from '../validation.js';

export interface BusinessTableProps {
  /**
   * Partition and sort key names.
   * @default the payments table's keys from shared/core/resources.ts ('pk', 'sk')
   */
  readonly keys?: { readonly partitionKey: string; readonly sortKey: string };
  /**
   * Point-in-time recovery window in days.
   * @default 35
   */
  readonly pointInTimeRecoveryDays?: number;
  /**
   * Customer-managed KMS key.
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

const KEY_NAME = /^[A-Za-z0-9_.-]{1,255}$/;

const RULES: readonly PropRule<BusinessTableProps>[] = [
  { prop: 'pointInTimeRecoveryDays', ...integerIn(1, 35) },
  {
    prop: 'keys',
    must: 'two distinct attribute names matching [A-Za-z0-9_.-]{1,255}',
    ok: (keys: BusinessTableProps['keys'] & object) =>
      KEY_NAME.test(keys.partitionKey) && KEY_NAME.test(keys.sortKey) && keys.partitionKey !== keys.sortKey,
  },
];

/**
 * Item-level actions the worker's handlers use on a business table: what `ctx.fenced` (conditional
 * Put/Update, TransactWriteItems of Puts and Updates) and `ctx.reader` (GetItem, Query) call.
 * No Scan, no DeleteItem. From FUNCTION_ACCESS.worker.code.handlerTables.
 */
export const FENCED_WRITER_ACTIONS = FUNCTION_ACCESS.worker.code.handlerTables;

export class BusinessTable extends Construct {
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: BusinessTableProps = {}) {
    super(scope, id);
    validateProps(`BusinessTable "${id}"`, props, RULES);
    const keys = props.keys ?? PAYMENTS_TABLE;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: keys.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: keys.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: {
        pointInTimeRecoveryEnabled: true,
        recoveryPeriodInDays: props.pointInTimeRecoveryDays ?? 35,
      },
      encryption: props.encryptionKey ? dynamodb.TableEncryption.CUSTOMER_MANAGED : dynamodb.TableEncryption.AWS_MANAGED,
      encryptionKey: props.encryptionKey,
      removalPolicy,
      deletionProtection: props.deletionProtection ?? removalPolicy === RemovalPolicy.RETAIN,
    });
  }

  /** Worker: the item-level actions of FENCED_WRITER_ACTIONS on this table (it has no index). */
  grantFencedWrites(grantee: iam.IGrantable): iam.Grant {
    this.table.encryptionKey?.grantEncryptDecrypt(grantee);
    return this.table.grant(grantee, ...FENCED_WRITER_ACTIONS);
  }
}
