import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { LedgerTable } from '../../infra/constructs/ledger-table.js';
import { PlannerFunction, plannerInputs, type PlannerFunctionProps } from '../../infra/constructs/planner-function.js';
import { RunQueues } from '../../infra/constructs/run-queues.js';
import { partitionOf } from '../../shared/core/partition.js';
import { ENV } from '../../shared/core/resources.js';
import { actionsOfRole, constructStack, isWildcardResource, statementsOfRole } from './support.js';

function planner(props: Partial<Omit<PlannerFunctionProps, 'ledger' | 'runQueues'>> = {}) {
  const stack = constructStack();
  const ledger = new LedgerTable(stack, 'Ledger');
  const runQueues = new RunQueues(stack, 'Queues');
  const construct = new PlannerFunction(stack, 'Planner', { ledger, runQueues, ...props });
  return { stack, construct, template: () => Template.fromStack(stack) };
}

function ruleInputs(template: Template): unknown[] {
  return Object.values(template.findResources('AWS::Events::Rule')).map((rule) => {
    const targets = (rule as { Properties: { Targets: { Input: string }[] } }).Properties.Targets;
    expect(targets).toHaveLength(1);
    return JSON.parse(targets[0]!.Input);
  });
}

describe('PlannerFunction', () => {
  it('is a Node.js 22 arm64 function with the Powertools and resource environment', () => {
    const template = planner().template();
    template.resourceCountIs('AWS::Lambda::Function', 1);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: 60,
      LoggingConfig: { LogGroup: Match.anyValue() },
      Environment: {
        Variables: Match.objectLike({
          POWERTOOLS_SERVICE_NAME: 'scheduler',
          POWERTOOLS_METRICS_NAMESPACE: 'FencedScheduler',
          [ENV.ledgerTable]: Match.anyValue(),
          [ENV.runQueueUrl]: Match.anyValue(),
          [ENV.runRetentionDays]: '30',
          [ENV.exampleJobs]: 'false',
        }),
      },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('has no DEAD_LETTER_QUEUE_URL (nothing in the planner reads it) and EXAMPLE_JOBS=true only when asked', () => {
    const variables = (t: Template) =>
      (
        Object.values(t.findResources('AWS::Lambda::Function'))[0] as {
          Properties: { Environment: { Variables: Record<string, unknown> } };
        }
      ).Properties.Environment.Variables;
    expect(Object.keys(variables(planner().template()))).not.toContain('DEAD_LETTER_QUEUE_URL');
    expect(variables(planner({ exampleJobs: true }).template())[ENV.exampleJobs]).toBe('true');
  });

  it('does not retry a failed tick, drops one older than a tick, and records both in an encrypted failure queue', () => {
    const template = planner().template();
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: Match.stringLikeRegexp('^PlannerFunction') },
      Qualifier: '$LATEST',
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 60,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PlannerFailureQueue'), 'Arn'] } } },
    });
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
      Queues: [{ Ref: Match.stringLikeRegexp('^PlannerFailureQueue') }],
    });
    // The destination needs sqs:SendMessage only (not CDK's grantSendMessages trio).
    const toFailureQueue = statementsOfRole(template, 'PlannerRole').filter((s) =>
      JSON.stringify(s.resources).includes('PlannerFailureQueue'),
    );
    expect(toFailureQueue.map((s) => s.actions)).toEqual([['sqs:SendMessage']]);
    // EventBridge's delivery retries stop at the same age.
    const [rule] = Object.values(template.findResources('AWS::Events::Rule'));
    expect((rule as { Properties: { Targets: { RetryPolicy: unknown }[] } }).Properties.Targets[0]!.RetryPolicy).toEqual({
      MaximumEventAgeInSeconds: 60,
      MaximumRetryAttempts: 2,
    });
  });

  it('has one rate(1 minute) rule by default with input { partition: 0, of: 1 }', () => {
    const template = planner().template();
    template.resourceCountIs('AWS::Events::Rule', 1);
    template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' });
    expect(ruleInputs(template)).toEqual([{ partition: 0, of: 1 }]);
  });

  it.each([2, 4, 7])('has %i rules for %i partitions, one per partition, each targeting the planner', (partitions) => {
    const template = planner({ plannerPartitions: partitions }).template();
    template.resourceCountIs('AWS::Events::Rule', partitions);
    template.resourceCountIs('AWS::Lambda::Permission', partitions);
    const inputs = ruleInputs(template);
    expect(inputs).toEqual(expect.arrayContaining(plannerInputs(partitions)));
    expect(new Set(inputs.map((i) => JSON.stringify(i))).size).toBe(partitions);
    // Every job name lands in exactly one of the scheduled partitions.
    for (const job of ['payments-reconcile', 'cache-refresh', 'a', 'b-very-long-job-name']) {
      const owners = inputs.filter((i) => (i as { partition: number }).partition === partitionOf(job, partitions));
      expect(owners).toHaveLength(1);
    }
  });

  it('grants item reads and writes and Query on the ledger, Query on the index, SendMessage on the run queue and the failure queue; nothing else', () => {
    const template = planner().template();
    expect(actionsOfRole(template, 'PlannerRole')).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:SendMessage',
    ]);
    const query = statementsOfRole(template, 'PlannerRole').filter((s) => s.actions.includes('dynamodb:Query'));
    expect(query.some((s) => JSON.stringify(s.resources).includes('/index/open-runs'))).toBe(true);
    for (const s of statementsOfRole(template, 'PlannerRole')) expect(s.resources.some(isWildcardResource)).toBe(false);
    // No managed policy (AWSLambdaBasicExecutionRole would allow writing every log group).
    template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
  });

  it('can be created paused', () => {
    planner({ enabled: false }).template().hasResourceProperties('AWS::Events::Rule', { State: 'DISABLED' });
  });

  it.each([
    [{ plannerPartitions: 0 }, /PlannerFunction "Planner": prop "plannerPartitions" must be an integer in \[1, 64\], got 0/],
    [{ plannerPartitions: 2.5 }, /prop "plannerPartitions".*got 2\.5/],
    [{ plannerPartitions: 65 }, /prop "plannerPartitions".*got 65/],
    [{ timeout: Duration.minutes(16) }, /prop "timeout" must be a duration in \[5 seconds, 15 minutes\], got 16 minutes/],
    [{ memorySize: 64 }, /prop "memorySize" must be an integer in \[128, 10240\], got 64/],
  ])('rejects %o naming the prop and value', (props, message) => {
    expect(() => planner(props)).toThrow(message);
  });
});
