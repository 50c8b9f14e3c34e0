import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { RunQueues } from '../../infra/constructs/run-queues.js';
import { RUN_QUEUES } from '../../shared/core/resources.js';
import { actionsOfRole, constructStack, isWildcardResource, statementsOfRole } from './support.js';

function queues(props: ConstructorParameters<typeof RunQueues>[2] = {}) {
  const stack = constructStack();
  const construct = new RunQueues(stack, 'Queues', props);
  return { stack, construct, template: () => Template.fromStack(stack) };
}

function logicalId(template: Template, construct: RunQueues, which: 'runQueue' | 'deadLetterQueue'): string {
  return template.getResourceId('AWS::SQS::Queue', {
    Properties:
      which === 'runQueue' ? Match.objectLike({ RedrivePolicy: Match.anyValue() }) : Match.objectLike({ RedrivePolicy: Match.absent() }),
  });
}

describe('RunQueues', () => {
  it('redrives to the DLQ after maxReceiveCount from shared/core/resources.ts', () => {
    const { construct, template: t } = queues();
    const template = t();
    const dlq = logicalId(template, construct, 'deadLetterQueue');
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] }, maxReceiveCount: RUN_QUEUES.maxReceiveCount },
    });
    expect(construct.maxReceiveCount).toBe(RUN_QUEUES.maxReceiveCount);
  });

  it('sets visibility to 6 × the worker timeout and keeps DLQ messages 14 days', () => {
    const template = queues().template();
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: Match.anyValue(),
      VisibilityTimeout: RUN_QUEUES.visibilityTimeoutSeconds,
    });
    expect(RUN_QUEUES.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * RUN_QUEUES.workerTimeoutSeconds);
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: Match.absent(),
      MessageRetentionPeriod: 14 * 24 * 3600,
    });
  });

  it('encrypts both queues and denies requests without TLS', () => {
    const template = queues().template();
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.allResourcesProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true });
    template.resourceCountIs('AWS::SQS::QueuePolicy', 2);
    template.allResourcesProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
  });

  it.each([
    [{ visibilityTimeout: Duration.minutes(5) }, /RunQueues "Queues": prop "visibilityTimeout" must be ≥ 6 × workerTimeout, got 5 minutes/],
    [{ workerTimeout: Duration.minutes(2) }, /prop "visibilityTimeout" must be ≥ 6 × workerTimeout, got 6 minutes/],
    [{ maxReceiveCount: 1 }, /prop "maxReceiveCount" must be an integer in \[2, 1000\], got 1/],
    [
      { deadLetterRetentionPeriod: Duration.days(15) },
      /prop "deadLetterRetentionPeriod" must be a duration in \[1 minute, 14 days\], got 15 days/,
    ],
    [{ retentionPeriod: Duration.days(14) }, /prop "deadLetterRetentionPeriod" must be longer than retentionPeriod, got 14 days/],
  ])('rejects %o naming the prop and value', (props, message) => {
    expect(() => queues(props)).toThrow(message);
  });

  it('accepts a longer worker timeout with a matching visibility timeout', () => {
    const template = queues({ workerTimeout: Duration.minutes(2), visibilityTimeout: Duration.minutes(12) }).template();
    template.hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: Match.anyValue(), VisibilityTimeout: 720 });
  });

  it("grants the planner sqs:SendMessage and the worker its code's and its event source's actions on the run queue, no GetQueueUrl", () => {
    const { stack, construct } = queues();
    const sender = new iam.Role(stack, 'Sender', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    const worker = new iam.Role(stack, 'Worker', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    construct.grantSendRuns(sender);
    construct.grantWorkerAccess(worker);
    const template = Template.fromStack(stack);
    const runQueue = logicalId(template, construct, 'runQueue');
    expect(actionsOfRole(template, 'Sender')).toEqual(['sqs:SendMessage']);
    expect(actionsOfRole(template, 'Worker')).toEqual([
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:ReceiveMessage',
      'sqs:SendMessage',
    ]);
    for (const s of [...statementsOfRole(template, 'Sender'), ...statementsOfRole(template, 'Worker')]) {
      expect(s.resources).toEqual([{ 'Fn::GetAtt': [runQueue, 'Arn'] }]);
      expect(s.resources.some(isWildcardResource)).toBe(false);
    }
  });
});
