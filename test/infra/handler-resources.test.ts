/**
 * The README's worked example ("Giving a handler its own table or secret"): a team's business
 * table and secret granted to the worker role, their names handed to the handler through the
 * environment. The same steps as the README, checked for the grants and for zero cdk-nag findings.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { BusinessTable, FENCED_WRITER_ACTIONS } from '../../infra/constructs/business-table.js';
import { schedulerApp, statementsOfRole } from './support.js';

describe("a handler's own table and secret (README worked example)", () => {
  const { app, stack } = schedulerApp();
  // As in the README:
  const invoices = new BusinessTable(stack, 'Invoices', { removalPolicy: RemovalPolicy.RETAIN });
  invoices.grantFencedWrites(stack.worker.function);
  stack.worker.function.addEnvironment('INVOICES_TABLE_NAME', invoices.table.tableName);
  const billingKey = secretsmanager.Secret.fromSecretCompleteArn(
    stack,
    'BillingKey',
    'arn:aws:secretsmanager:eu-west-1:123456789012:secret:billing/api-key-AbCdEf',
  );
  billingKey.grantRead(stack.worker.function);
  stack.worker.function.addEnvironment('BILLING_SECRET_ARN', billingKey.secretArn);
  const template = Template.fromStack(stack);

  it('grants the worker the fenced-writer actions on the new table, and reading the one secret', () => {
    const statements = statementsOfRole(template, 'WorkerRole');
    const onInvoices = statements.filter((s) => JSON.stringify(s.resources).includes('InvoicesTable'));
    expect(onInvoices.flatMap((s) => s.actions).sort()).toEqual([...FENCED_WRITER_ACTIONS].sort());
    const onSecret = statements.filter((s) => JSON.stringify(s.resources).includes('billing/api-key'));
    expect(onSecret.flatMap((s) => s.actions).sort()).toEqual(['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue']);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('worker'),
      Environment: {
        Variables: Match.objectLike({
          INVOICES_TABLE_NAME: { Ref: Match.stringLikeRegexp('^InvoicesTable') },
          BILLING_SECRET_ARN: Match.anyValue(),
        }),
      },
    });
  });

  it('leaves no cdk-nag finding (synth would fail on one)', () => {
    expect(new AwsSolutionsChecks().validateScope(app).violations.map((v) => v.ruleName)).toEqual([]);
  });
});
