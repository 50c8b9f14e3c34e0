import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { BusinessTable, FENCED_WRITER_ACTIONS } from '../../infra/constructs/business-table.js';
import { PAYMENTS_TABLE } from '../../shared/core/resources.js';
import { actionsOfRole, constructStack, isWildcardResource, statementsOfRole } from './support.js';

describe('BusinessTable', () => {
  it('is the payments table of shared/core/resources.ts with PITR and encryption', () => {
    const stack = constructStack();
    new BusinessTable(stack, 'Payments');
    Template.fromStack(stack).hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        KeySchema: [
          { AttributeName: PAYMENTS_TABLE.partitionKey, KeyType: 'HASH' },
          { AttributeName: PAYMENTS_TABLE.sortKey, KeyType: 'RANGE' },
        ],
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 35 },
        SSESpecification: { SSEEnabled: true },
      }),
    });
  });

  it('grants the fenced-writer item actions on the table only', () => {
    const stack = constructStack();
    const table = new BusinessTable(stack, 'Payments');
    const role = new iam.Role(stack, 'Writer', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    table.grantFencedWrites(role);
    const template = Template.fromStack(stack);
    expect(actionsOfRole(template, 'Writer')).toEqual([...FENCED_WRITER_ACTIONS].sort());
    for (const s of statementsOfRole(template, 'Writer')) {
      expect(s.resources.some(isWildcardResource)).toBe(false);
      expect(s.resources).toHaveLength(1);
      expect(JSON.stringify(s.resources)).toMatch(/"Fn::GetAtt":\["Payments[0-9A-Za-z]+","Arn"\]/);
    }
  });

  it('rejects identical key names, naming the prop', () => {
    const stack = constructStack();
    expect(() => new BusinessTable(stack, 'Bad', { keys: { partitionKey: 'id', sortKey: 'id' } })).toThrow(
      /BusinessTable "Bad": prop "keys" must be two distinct attribute names.*got \{"partitionKey":"id","sortKey":"id"\}/,
    );
  });
});
