import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { BusinessTable } from '../../infra/constructs/business-table.js';
import { LedgerTable } from '../../infra/constructs/ledger-table.js';
import { RunQueues } from '../../infra/constructs/run-queues.js';
import { WorkerFunction, type WorkerFunctionProps } from '../../infra/constructs/worker-function.js';
import { ENV } from '../../shared/core/resources.js';
import { actionsOfRole, constructStack, isWildcardResource, statementsOfRole } from './support.js';

function worker(props: Partial<Omit<WorkerFunctionProps, 'ledger' | 'runQueues'>> = {}, queueTimeout?: Duration) {
  const stack = constructStack();
  const ledger = new LedgerTable(stack, 'Ledger');
  const paymentsTable = new BusinessTable(stack, 'Payments');
  const runQueues = new RunQueues(
    stack,
    'Queues',
    queueTimeout ? { workerTimeout: queueTimeout, visibilityTimeout: Duration.seconds(queueTimeout.toSeconds() * 6) } : {},
  );
  const construct = new WorkerFunction(stack, 'Worker', { ledger, runQueues, paymentsTable, ...props });
  return { stack, construct, template: () => Template.fromStack(stack) };
}

describe('WorkerFunction', () => {
  it('consumes the run queue with ReportBatchItemFailures, batch size and maximum concurrency', () => {
    const template = worker().template();
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      ScalingConfig: { MaximumConcurrency: 20 },
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^QueuesRunQueue'), 'Arn'] },
    });
  });

  it('takes batchSize and maxConcurrency from props', () => {
    worker({ batchSize: 3, maxConcurrency: 50 })
      .template()
      .hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 3, ScalingConfig: { MaximumConcurrency: 50 } });
  });

  it('is a Node.js 22 arm64 function whose timeout is at most 1/6 of the queue visibility', () => {
    const template = worker().template();
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: 60,
      Environment: {
        Variables: Match.objectLike({
          POWERTOOLS_SERVICE_NAME: 'scheduler',
          POWERTOOLS_METRICS_NAMESPACE: 'FencedScheduler',
          [ENV.ledgerTable]: Match.anyValue(),
          [ENV.paymentsTable]: Match.anyValue(),
          [ENV.runQueueUrl]: Match.anyValue(),
          [ENV.runRetentionDays]: '30',
          [ENV.outboxRetentionDays]: '14',
          [ENV.exampleJobs]: 'false',
        }),
      },
    });
  });

  it('grants item-level ledger and payments actions, visibility changes and the event source consume actions; no Scan, no GetQueueUrl', () => {
    const template = worker().template();
    const actions = actionsOfRole(template, 'WorkerRole');
    expect(actions).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:ConditionCheckItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:ReceiveMessage',
      'sqs:SendMessage',
    ]);
    // No DeleteItem anywhere: a lane's release is an update (its marker keeps the floor).
    const payments = statementsOfRole(template, 'WorkerRole').filter((s) => JSON.stringify(s.resources).includes('PaymentsTable'));
    expect(payments.flatMap((s) => s.actions).sort()).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    const statements = statementsOfRole(template, 'WorkerRole');
    for (const s of statements) expect(s.resources.some(isWildcardResource)).toBe(false);
    const dynamoResources = JSON.stringify(
      statements.filter((s) => s.actions.some((a) => a.startsWith('dynamodb:'))).map((s) => s.resources),
    );
    expect(dynamoResources).toMatch(/LedgerTable/);
    expect(dynamoResources).toMatch(/PaymentsTable/);
  });

  it('accepts a longer timeout when the queue visibility matches', () => {
    worker({ timeout: Duration.minutes(2) }, Duration.minutes(2))
      .template()
      .hasResourceProperties('AWS::Lambda::Function', { Timeout: 120 });
  });

  it.each([
    [{ batchSize: 11 }, /WorkerFunction "Worker": prop "batchSize" must be an integer in \[1, 10\], got 11/],
    [{ batchSize: 0 }, /prop "batchSize".*got 0/],
    [{ maxConcurrency: 1 }, /prop "maxConcurrency" must be an integer in \[2, 1000\], got 1/],
    [
      { timeout: Duration.minutes(2) },
      /prop "timeout" must be ≤ the run queue's visibility timeout \/ 6 \(6 minutes \/ 6\), got 2 minutes/,
    ],
    [{ timeout: Duration.seconds(5) }, /prop "timeout" must be a duration in \[10 seconds, 15 minutes\], got 5 seconds/],
  ])('rejects %o naming the prop and value', (props, message) => {
    expect(() => worker(props)).toThrow(message);
  });
});
