import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as kms from 'aws-cdk-lib/aws-kms';
import { describe, expect, it } from 'vitest';
import { LedgerTable } from '../../infra/constructs/ledger-table.js';
import { EVENT_BUS_NAME_ENV, OutboxRelay, RELAY_STREAM_ACTIONS, type OutboxRelayProps } from '../../infra/constructs/outbox-relay.js';
import { readFileSync } from 'node:fs';
import { projectPath } from '../../infra/lambda-defaults.js';
import { StackOutput } from '../../infra/outputs.js';
import { actionsOfRole, constructStack, isWildcardResource, schedulerApp, statementsOfRole } from './support.js';

function relay(props: Partial<Omit<OutboxRelayProps, 'ledger'>> = {}, ledgerKey = false) {
  const stack = constructStack();
  const ledger = new LedgerTable(
    stack,
    'Ledger',
    ledgerKey ? { encryptionKey: new kms.Key(stack, 'Key', { enableKeyRotation: true }) } : {},
  );
  const construct = new OutboxRelay(stack, 'Relay', { ledger, ...props });
  return { stack, construct, template: () => Template.fromStack(stack) };
}

const STREAM_ARN = { 'Fn::GetAtt': [Match.stringLikeRegexp('^LedgerTable'), 'StreamArn'] };

describe('OutboxRelay', () => {
  const template = relay().template();

  it('consumes the ledger stream from TRIM_HORIZON with ReportBatchItemFailures, bisection, bounded retries and record age', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: STREAM_ARN,
      FunctionName: { Ref: Match.stringLikeRegexp('^RelayFunction') },
      StartingPosition: 'TRIM_HORIZON',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 3600,
      BatchSize: 100,
      Enabled: true,
    });
  });

  it('is invoked only for INSERTs of items whose pk begins with OUTBOX#', () => {
    const [mapping] = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'));
    const filters = (mapping as { Properties: { FilterCriteria: { Filters: { Pattern: string }[] } } }).Properties.FilterCriteria.Filters;
    expect(filters).toHaveLength(1);
    expect(JSON.parse(filters[0]!.Pattern)).toEqual({
      eventName: ['INSERT'],
      dynamodb: { NewImage: { pk: { S: [{ prefix: 'OUTBOX#' }] } } },
    });
  });

  it('sends exhausted batches to an encrypted, TLS-only on-failure queue', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('^RelayFailureQueue'), 'Arn'] } } },
    });
    template.resourceCountIs('AWS::SQS::Queue', 1);
    template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
      Queues: [{ Ref: Match.stringLikeRegexp('^RelayFailureQueue') }],
    });
  });

  it('creates an event bus and passes its name to the function', () => {
    template.resourceCountIs('AWS::Events::EventBus', 1);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Timeout: 60,
      Environment: { Variables: Match.objectLike({ [EVENT_BUS_NAME_ENV]: { Ref: Match.stringLikeRegexp('^RelayBus') } }) },
    });
  });

  it('grants PutEvents on the bus ARN only, stream reads on the stream ARN, and no table item access', () => {
    const statements = statementsOfRole(template, 'RelayRole');
    const putEvents = statements.filter((s) => s.actions.includes('events:PutEvents'));
    expect(putEvents).toHaveLength(1);
    expect(putEvents[0]!.actions).toEqual(['events:PutEvents']);
    expect(putEvents[0]!.resources).toEqual([{ 'Fn::GetAtt': [expect.stringMatching(/^RelayBus/), 'Arn'] }]);

    const stream = statements.filter((s) => s.actions.some((a) => (RELAY_STREAM_ACTIONS as readonly string[]).includes(a)));
    expect(stream).toHaveLength(1);
    expect([...stream[0]!.actions].sort()).toEqual([...RELAY_STREAM_ACTIONS].sort());
    expect(stream[0]!.resources).toEqual([{ 'Fn::GetAtt': [expect.stringMatching(/^LedgerTable/), 'StreamArn'] }]);

    expect(actionsOfRole(template, 'RelayRole')).toEqual([
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
      'events:PutEvents',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      // Only what the on-failure destination needs (CDK's SqsDlq would add GetQueueAttributes and GetQueueUrl).
      'sqs:SendMessage',
    ]);
    // The one wildcard resource is ListStreams (CDK's stream grant; it reads no data).
    for (const s of statements.filter((st) => st.resources.some(isWildcardResource))) expect(s.actions).toEqual(['dynamodb:ListStreams']);
    expect(JSON.stringify(template.toJSON())).not.toContain('dynamodb:Scan');
  });

  it('publishes to a given bus instead of creating one', () => {
    const stack = constructStack();
    const ledger = new LedgerTable(stack, 'Ledger');
    const bus = events.EventBus.fromEventBusArn(stack, 'Central', 'arn:aws:events:eu-west-1:123456789012:event-bus/central');
    new OutboxRelay(stack, 'Relay', { ledger, eventBus: bus });
    const t = Template.fromStack(stack);
    t.resourceCountIs('AWS::Events::EventBus', 0);
    t.hasResourceProperties('AWS::Lambda::Function', { Environment: { Variables: Match.objectLike({ [EVENT_BUS_NAME_ENV]: 'central' }) } });
    const putEvents = statementsOfRole(t, 'RelayRole').filter((s) => s.actions.includes('events:PutEvents'));
    expect(putEvents.map((s) => s.resources)).toEqual([['arn:aws:events:eu-west-1:123456789012:event-bus/central']]);
  });

  it('takes batch size, retries, record age and enabled from props', () => {
    relay({ batchSize: 25, retryAttempts: 3, maxRecordAge: Duration.minutes(10), enabled: false })
      .template()
      .hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        BatchSize: 25,
        MaximumRetryAttempts: 3,
        MaximumRecordAgeInSeconds: 600,
        Enabled: false,
      });
  });

  it('decrypts the stream with a customer-managed table key, on that key only', () => {
    const t = relay({}, true).template();
    const kmsStatements = statementsOfRole(t, 'RelayRole').filter((s) => s.actions.some((a) => a.startsWith('kms:')));
    expect(kmsStatements.flatMap((s) => s.actions).sort()).toEqual(['kms:Decrypt', 'kms:DescribeKey']);
    for (const s of kmsStatements) expect(s.resources.filter(isWildcardResource)).toEqual([]);
  });

  it.each([
    [{ batchSize: 0 }, /OutboxRelay "Relay": prop "batchSize" must be an integer in \[1, 10000\], got 0/],
    [{ retryAttempts: -1 }, /prop "retryAttempts" must be an integer in \[0, 10000\], got -1/],
    [{ maxRecordAge: Duration.seconds(30) }, /prop "maxRecordAge" must be a duration in \[1 minute, 7 days\], got 30 seconds/],
    [{ timeout: Duration.minutes(20) }, /prop "timeout".*got 20 minutes/],
  ])('rejects %o naming the prop and value', (props, message) => {
    expect(() => relay(props)).toThrow(message);
  });
});

describe("the relay's failure queue in the stack", () => {
  it('has its URL as the stack output OutboxRelayFailureQueueUrl, so an operator paged by its alarm can find the queue to read', () => {
    const { stack } = schedulerApp();
    const template = Template.fromStack(stack);
    template.hasOutput(StackOutput.OutboxRelayFailureQueueUrl, {
      Value: stack.resolve(stack.outboxRelay.failureQueue.queueUrl) as unknown,
    });
    // The relay's on-failure destination is that queue, not another one.
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      DestinationConfig: { OnFailure: { Destination: stack.resolve(stack.outboxRelay.failureQueue.queueArn) as unknown } },
    });
  });

  it('its runbook tells operators to read the queue by that output', () => {
    const operating = readFileSync(projectPath('docs/operating.md'), 'utf8');
    const runbook = operating.slice(operating.indexOf('### `outbox-relay-failed-batches`'), operating.indexOf('### `trigger-lag-p99`'));
    expect(runbook).toContain('`OutboxRelayFailureQueueUrl`');
    expect(runbook).toMatch(/aws sqs receive-message --queue-url <OutboxRelayFailureQueueUrl>/);
  });
});
