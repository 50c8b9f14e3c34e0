import { Duration } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import {
  AlarmKey,
  OLDEST_OPEN_RUN_AGE,
  OUTBOX_RELAY_ALARM_KEYS,
  Observability,
  type ObservabilityProps,
} from '../../infra/constructs/observability.js';
import { MetricName } from '../../shared/runtime/observability.js';
import { METRICS_NAMESPACE, PARTITION_DIMENSION, SERVICE_NAME, STACK_DIMENSION } from '../../shared/runtime/powertools.js';
import { constructStack } from './support.js';

type Extra = Partial<
  Omit<
    ObservabilityProps,
    | 'plannerFunction'
    | 'plannerFailureQueue'
    | 'workerFunction'
    | 'runQueue'
    | 'deadLetterQueue'
    | 'outboxRelayFunction'
    | 'outboxRelayFailureQueue'
  >
>;

function observability(props: Extra = {}, withTopic = false, withRelay = true) {
  const stack = constructStack();
  const fn = (id: string) =>
    new lambda.Function(stack, id, {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler=()=>{}'),
    });
  const deadLetterQueue = new sqs.Queue(stack, 'Dlq');
  const runQueue = new sqs.Queue(stack, 'RunQueue', { deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: 10 } });
  const construct = new Observability(stack, 'Observability', {
    plannerFunction: fn('Planner'),
    plannerFailureQueue: new sqs.Queue(stack, 'PlannerFailures'),
    workerFunction: fn('Worker'),
    runQueue,
    deadLetterQueue,
    outboxRelayFunction: withRelay ? fn('Relay') : undefined,
    outboxRelayFailureQueue: withRelay ? new sqs.Queue(stack, 'RelayFailures') : undefined,
    alarmTopic: withTopic ? new sns.Topic(stack, 'ExistingTopic') : undefined,
    ...props,
  });
  return { stack, construct, template: () => Template.fromStack(stack) };
}

// constructStack() names its stack 'Test': every scheduler metric is scoped to it.
const schedulerDimension = [
  { Name: 'service', Value: SERVICE_NAME },
  { Name: STACK_DIMENSION, Value: 'Test' },
];

describe('Observability', () => {
  const template = observability().template();

  it('has one alarm per condition', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', Object.keys(AlarmKey).length);
  });

  it('alarms on DLQ visible messages > 0', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.DeadLetterQueueNotEmpty}$`),
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('^Dlq'), 'QueueName'] } }],
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
  });

  it.each([
    [AlarmKey.JobPausedOnFailure, MetricName.JobsPausedByFailure, 'Maximum'],
    [AlarmKey.RunsDead, MetricName.OpenDeadRuns, 'Maximum'],
    [AlarmKey.RunsStuck, MetricName.RunsStuck, 'Sum'],
    [AlarmKey.OrphanedOpenRuns, MetricName.OrphanedOpenRuns, 'Maximum'],
  ])('alarms on %s (%s > 0): a state that waits for an operator', (key, metric, statistic) => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${key}$`),
      Namespace: METRICS_NAMESPACE,
      MetricName: metric,
      Dimensions: schedulerDimension,
      Statistic: statistic,
      Threshold: 0,
    });
  });

  it.each([
    [AlarmKey.RunsDead, MetricName.OpenDeadRuns],
    [AlarmKey.JobPausedOnFailure, MetricName.JobsPausedByFailure],
  ])(
    '%s stays in ALARM while the state lasts: a gauge published every tick (%s), on its Maximum, a period without data keeps the state',
    (key, metric) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: Match.stringLikeRegexp(`-${key}$`),
        Namespace: METRICS_NAMESPACE,
        MetricName: metric,
        Dimensions: schedulerDimension,
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 1,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        TreatMissingData: 'ignore',
      });
    },
  );

  it('alarms on planner errors > 0 and on planner silence with missing data breaching', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.PlannerErrors}$`),
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('^Planner') } }],
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: `Test-${AlarmKey.PlannerSilent}`,
      Namespace: METRICS_NAMESPACE,
      MetricName: MetricName.PlannerTicks,
      Dimensions: [{ Name: PARTITION_DIMENSION, Value: '0' }, ...schedulerDimension],
      Statistic: 'Sum',
      Period: 300,
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      TreatMissingData: 'breaching',
    });
  });

  it('alarms on a record in the planner failure queue: a tick that failed or was dropped as stale', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.PlannerFailedTicks}$`),
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('^PlannerFailures'), 'QueueName'] } }],
      Statistic: 'Maximum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms on TriggerLag p99 and oldest open run age over their thresholds (ms)', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.TriggerLagHigh}$`),
      Namespace: METRICS_NAMESPACE,
      MetricName: MetricName.TriggerLag,
      Dimensions: schedulerDimension,
      ExtendedStatistic: 'p99',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 10_000,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.OldestOpenRunAgeHigh}$`),
      Namespace: METRICS_NAMESPACE,
      MetricName: OLDEST_OPEN_RUN_AGE,
      Dimensions: schedulerDimension,
      Statistic: 'Maximum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 15 * 60_000,
    });
  });

  it('alarms on worker record errors > 0: a failing record no longer fails its invocation, so Lambda Errors would not show it', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.WorkerRecordErrors}$`),
      Namespace: METRICS_NAMESPACE,
      MetricName: MetricName.WorkerRecordErrors,
      Dimensions: schedulerDimension,
      Statistic: 'Sum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms on worker throttles > 0', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.WorkerThrottles}$`),
      Namespace: 'AWS/Lambda',
      MetricName: 'Throttles',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('^Worker') } }],
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
    });
  });

  it('alarms on outbox relay errors > 0 and on failed relay batches in its on-failure queue > 0', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.OutboxRelayErrors}$`),
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('^Relay') } }],
      Statistic: 'Sum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: Match.stringLikeRegexp(`-${AlarmKey.OutboxRelayFailedBatches}$`),
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('^RelayFailures'), 'QueueName'] } }],
      Statistic: 'Maximum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      TreatMissingData: 'notBreaching',
    });
  });

  it('has no planner-failed-ticks alarm without a planner failure queue', () => {
    const stack = constructStack();
    const fn = (id: string) =>
      new lambda.Function(stack, id, {
        runtime: lambda.Runtime.NODEJS_22_X,
        handler: 'index.handler',
        code: lambda.Code.fromInline('exports.handler=()=>{}'),
      });
    const deadLetterQueue = new sqs.Queue(stack, 'Dlq');
    const construct = new Observability(stack, 'Observability', {
      plannerFunction: fn('P'),
      workerFunction: fn('W'),
      runQueue: new sqs.Queue(stack, 'Q'),
      deadLetterQueue,
    });
    expect(construct.alarms[AlarmKey.PlannerFailedTicks]).toBeUndefined();
  });

  it('has no outbox relay alarms or widget when no relay is given', () => {
    const { construct, template: without } = observability({}, false, false);
    const t = without();
    t.resourceCountIs('AWS::CloudWatch::Alarm', Object.keys(AlarmKey).length - OUTBOX_RELAY_ALARM_KEYS.length);
    for (const key of OUTBOX_RELAY_ALARM_KEYS) expect(construct.alarms[key]).toBeUndefined();
    expect(JSON.stringify(Object.values(t.findResources('AWS::CloudWatch::Dashboard'))[0])).not.toContain('Outbox relay');
  });

  it('takes the thresholds from props', () => {
    const custom = observability({
      triggerLagThreshold: Duration.seconds(3),
      oldestOpenRunAgeThreshold: Duration.hours(1),
      plannerSilencePeriod: Duration.minutes(10),
    }).template();
    custom.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: MetricName.TriggerLag, Threshold: 3000 });
    custom.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: OLDEST_OPEN_RUN_AGE, Threshold: 3_600_000 });
    custom.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: MetricName.PlannerTicks, Period: 600 });
  });

  it('an alarm without alarmEmail still notifies: every alarm (ALARM and OK) goes to the topic it creates, and synth warns that nobody is subscribed', () => {
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.resourceCountIs('AWS::SNS::Subscription', 0);
    template.allResourcesProperties('AWS::CloudWatch::Alarm', {
      AlarmActions: [{ Ref: Match.stringLikeRegexp('^ObservabilityAlarmTopic') }],
      OKActions: [{ Ref: Match.stringLikeRegexp('^ObservabilityAlarmTopic') }],
    });
    const { stack } = observability();
    Annotations.fromStack(stack).hasWarning(
      '/Test/Observability',
      Match.stringLikeRegexp('The alarm topic has no subscriber.*AlarmTopicArn.*alarmEmail.*alarmTopicArn'),
    );
  });

  it('does not warn when a subscriber or a topic of the team is given', () => {
    for (const { stack } of [observability({ alarmEmail: 'ops@example.com' }), observability({}, true)]) {
      Annotations.fromStack(stack).hasNoWarning('*', Match.stringLikeRegexp('no subscriber'));
    }
  });

  it('a silent planner partition alarms though the others tick: one planner-silent alarm per partition, on its own completed ticks (3 partitions)', () => {
    const { construct, template: three } = observability({ plannerPartitions: 3 });
    const t = three();
    t.resourceCountIs('AWS::CloudWatch::Alarm', Object.keys(AlarmKey).length + 2);
    expect(construct.plannerSilentAlarms).toHaveLength(3);
    for (const partition of [0, 1, 2]) {
      t.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: `Test-${AlarmKey.PlannerSilent}-p${partition}`,
        MetricName: MetricName.PlannerTicks,
        Dimensions: [{ Name: PARTITION_DIMENSION, Value: String(partition) }, ...schedulerDimension],
        Statistic: 'Sum',
        ComparisonOperator: 'LessThanThreshold',
        Threshold: 1,
        TreatMissingData: 'breaching',
      });
    }
    // No alarm sums the planner's invocations over every partition's rule.
    expect(Object.values(t.findResources('AWS::CloudWatch::Alarm')).filter((a) => JSON.stringify(a).includes('"Invocations"'))).toEqual([]);
  });

  it('creates a KMS-encrypted, TLS-only topic with the e-mail subscribed when alarmEmail is set', () => {
    const withEmail = observability({ alarmEmail: 'ops@example.com' }).template();
    withEmail.resourceCountIs('AWS::SNS::Topic', 1);
    withEmail.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    withEmail.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
    withEmail.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    withEmail.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: { Statement: Match.arrayWith([Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' } })]) },
    });
    withEmail.allResourcesProperties('AWS::CloudWatch::Alarm', {
      AlarmActions: [{ Ref: Match.stringLikeRegexp('AlarmTopic') }],
      OKActions: [{ Ref: Match.stringLikeRegexp('AlarmTopic') }],
    });
  });

  it("lets CloudWatch publish to the TLS-only topic, for this stack's alarms in this account only (the topic policy replaces SNS's default one)", () => {
    const withEmail = observability({ alarmEmail: 'ops@example.com' }).template();
    const [policy] = Object.values(withEmail.findResources('AWS::SNS::TopicPolicy'));
    const statements = (policy as { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }).Properties.PolicyDocument
      .Statement;
    const allows = statements.filter((s) => s.Effect === 'Allow');
    expect(allows).toHaveLength(1);
    expect(allows[0]).toEqual({
      Sid: 'AllowThisStacksAlarmsToPublish',
      Effect: 'Allow',
      Principal: { Service: 'cloudwatch.amazonaws.com' },
      Action: 'sns:Publish',
      Resource: { Ref: expect.stringMatching(/^ObservabilityAlarmTopic/) },
      Condition: {
        ArnLike: {
          'aws:SourceArn': {
            'Fn::Join': [
              '',
              ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':alarm:Test-*'],
            ],
          },
        },
        StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
      },
    });
    // Every alarm of the stack is named `<stack>-<key>`, so the ArnLike pattern covers each one and nothing else.
    for (const alarm of Object.values(withEmail.findResources('AWS::CloudWatch::Alarm'))) {
      expect((alarm as { Properties: { AlarmName: string } }).Properties.AlarmName).toMatch(/^Test-/);
    }
    // The TLS rule is still there beside it.
    expect(
      statements.some(
        (s) => s.Effect === 'Deny' && JSON.stringify(s.Condition) === JSON.stringify({ Bool: { 'aws:SecureTransport': 'false' } }),
      ),
    ).toBe(true);
  });

  it('sends alarms to a given topic', () => {
    const withTopic = observability({}, true).template();
    withTopic.resourceCountIs('AWS::SNS::Topic', 1);
    withTopic.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [{ Ref: Match.stringLikeRegexp('^ExistingTopic') }] });
  });

  it('shows every MetricName, the oldest open run age and the DLQ depth on the dashboard', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]);
    // PlannerTicks has one series per partition (its alarms' metric), graphed as such.
    expect(body).toContain(
      `\\"${METRICS_NAMESPACE}\\",\\"${MetricName.PlannerTicks}\\",\\"${PARTITION_DIMENSION}\\",\\"0\\",\\"service\\",\\"${SERVICE_NAME}\\",\\"${STACK_DIMENSION}\\",\\"Test\\"`,
    );
    for (const name of [...Object.values(MetricName).filter((n) => n !== MetricName.PlannerTicks), OLDEST_OPEN_RUN_AGE]) {
      expect(body, name).toContain(
        `\\"${METRICS_NAMESPACE}\\",\\"${name}\\",\\"service\\",\\"${SERVICE_NAME}\\",\\"${STACK_DIMENSION}\\",\\"Test\\"`,
      );
    }
    expect(body).toContain('ApproximateNumberOfMessagesVisible');
    expect(body).toMatch(/Dlq[0-9A-F]+/);
  });

  it('graphs each start lag as percentiles in milliseconds, never as a sum (a sum of lags means nothing)', () => {
    const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]);
    for (const name of [MetricName.TriggerLag, MetricName.LateStartLag]) {
      const graphed = [
        ...body.matchAll(
          new RegExp(
            `\\\\"${name}\\\\",\\\\"service\\\\",\\\\"${SERVICE_NAME}\\\\",\\\\"${STACK_DIMENSION}\\\\",\\\\"Test\\\\",\\{([^}]*)\\}`,
            'g',
          ),
        ),
      ].map((m) => m[1]);
      expect(graphed.length, name).toBeGreaterThan(0);
      for (const options of graphed) expect(options, name).toMatch(/stat\\":\\"p\d+/);
    }
  });

  it('shows the outbox relay errors, iterator age and failed batches on the dashboard', () => {
    const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]);
    expect(body).toContain('Outbox relay');
    expect(body).toMatch(/\\"AWS\/Lambda\\",\\"Errors\\",\\"FunctionName\\",\\"",\{\"Ref\":\"Relay[0-9A-F]+\"\}/);
    expect(body).toMatch(/\\"AWS\/Lambda\\",\\"IteratorAge\\",\\"FunctionName\\",\\"",\{\"Ref\":\"Relay[0-9A-F]+\"\}/);
    expect(body).toMatch(/RelayFailures[0-9A-F]+/);
  });

  it.each([
    [{ alarmEmail: 'not-an-email' }, /Observability "Observability": prop "alarmEmail" must be an e-mail address, got "not-an-email"/],
    [
      { plannerSilencePeriod: Duration.seconds(90) },
      /prop "plannerSilencePeriod" must be a whole number of minutes in \[2 minutes, 1 day\], got 1 minute 30 seconds/,
    ],
    [{ oldestOpenRunAgeThreshold: Duration.seconds(10) }, /prop "oldestOpenRunAgeThreshold".*got 10 seconds/],
    [{ dashboardName: 'has spaces' }, /prop "dashboardName".*got "has spaces"/],
  ])('rejects %o naming the prop and value', (props, message) => {
    expect(() => observability(props)).toThrow(message);
  });
});
