import { RemovalPolicy } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { describe, expect, it } from 'vitest';
import { LedgerTable } from '../../infra/constructs/ledger-table.js';
import { FUNCTION_ACCESS } from '../../infra/iam-access.js';
import { LEDGER_TABLE } from '../../shared/core/resources.js';
import { actionsOfRole, constructStack, isWildcardResource, statementsOfRole } from './support.js';

function ledger(props: ConstructorParameters<typeof LedgerTable>[2] = {}) {
  const stack = constructStack();
  const construct = new LedgerTable(stack, 'Ledger', props);
  return { stack, construct };
}

describe('LedgerTable', () => {
  it('has the keys, open-runs index and TTL attribute of shared/core/resources.ts', () => {
    const template = Template.fromStack(ledger().stack);
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: LEDGER_TABLE.partitionKey, KeyType: 'HASH' },
        { AttributeName: LEDGER_TABLE.sortKey, KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      GlobalSecondaryIndexes: [
        {
          IndexName: LEDGER_TABLE.openRunsIndex.name,
          KeySchema: [
            { AttributeName: LEDGER_TABLE.openRunsIndex.partitionKey, KeyType: 'HASH' },
            { AttributeName: LEDGER_TABLE.openRunsIndex.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ],
      TimeToLiveSpecification: { AttributeName: LEDGER_TABLE.ttlAttribute, Enabled: true },
    });
  });

  it('has point-in-time recovery, encryption, a NEW_IMAGE stream and is retained by default', () => {
    const template = Template.fromStack(ledger().stack);
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 35 },
        SSESpecification: { SSEEnabled: true },
        StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
        DeletionProtectionEnabled: true,
      }),
    });
  });

  it('honours removalPolicy DESTROY (no deletion protection) and a customer-managed key', () => {
    const stack = constructStack();
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
    new LedgerTable(stack, 'Ledger', { removalPolicy: RemovalPolicy.DESTROY, encryptionKey: key, pointInTimeRecoveryDays: 7 });
    const template = Template.fromStack(stack);
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({
        DeletionProtectionEnabled: false,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 7 },
        SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: Match.anyValue() },
      }),
    });
  });

  it.each([
    [{ runRetentionDays: 0 }, /LedgerTable "Ledger": prop "runRetentionDays" must be an integer in \[1, 3650\], got 0/],
    [{ runRetentionDays: 1.5 }, /prop "runRetentionDays".*got 1\.5/],
    [{ pointInTimeRecoveryDays: 36 }, /prop "pointInTimeRecoveryDays" must be an integer in \[1, 35\], got 36/],
    // Shorter than the relay's on-failure queue keeps a failed batch: its rows could not be republished.
    [{ outboxRetentionDays: 13 }, /prop "outboxRetentionDays" must be an integer in \[14, 3650\], got 13/],
  ])('rejects %o naming the prop and value', (props, message) => {
    expect(() => ledger(props)).toThrow(message);
  });

  it('keeps outbox rows 14 days by default, and as configured', () => {
    expect(ledger().construct.outboxRetentionDays).toBe(14);
    expect(ledger({ outboxRetentionDays: 30 }).construct.outboxRetentionDays).toBe(30);
  });

  it('grants the planner its table actions on the table (the window sweep queries due jobs there) and Query on the open-runs index', () => {
    const { stack, construct } = ledger();
    const role = new iam.Role(stack, 'PlannerRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    construct.grantPlannerAccess(role);
    const template = Template.fromStack(stack);
    const statements = statementsOfRole(template, 'PlannerRole');
    const indexStatement = statements.find((s) => JSON.stringify(s.resources).includes('/index/'));
    const tableStatement = statements.find((s) => !JSON.stringify(s.resources).includes('/index/'));
    expect(indexStatement?.actions).toEqual(['dynamodb:Query']);
    expect(JSON.stringify(indexStatement?.resources)).toContain(`/index/${LEDGER_TABLE.openRunsIndex.name}`);
    expect(tableStatement?.actions).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    expect(tableStatement?.actions).toEqual(FUNCTION_ACCESS.planner.code.ledgerTable);
    for (const s of statements) expect(s.resources.some(isWildcardResource)).toBe(false);
  });

  it("grants the worker its own and its handlers' item actions on the table: BatchGetItem for the planning state a pauseOnFailure reads, ConditionCheckItem for the lane takeover's check, never Scan", () => {
    const { stack, construct } = ledger();
    const role = new iam.Role(stack, 'WorkerRole', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    construct.grantWorkerAccess(role);
    const template = Template.fromStack(stack);
    const actions = actionsOfRole(template, 'WorkerRole');
    expect(actions).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:ConditionCheckItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    expect(actions).not.toContain('dynamodb:Scan');
    for (const s of statementsOfRole(template, 'WorkerRole')) {
      expect(s.resources.some(isWildcardResource)).toBe(false);
      expect(JSON.stringify(s.resources)).not.toContain('/index/');
    }
  });
});
