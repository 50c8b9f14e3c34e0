/**
 * Alarms that reach someone and see only their own stack: every alarm notifies a topic whether or
 * not an e-mail is given (a team's own topic by -c alarmTopicArn), synth warns when nobody is
 * subscribed, two stacks in one account keep their metrics, alarms and dashboards apart, and the
 * worker timeout is a context key. Unbundled synths, few and shared.
 */
import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { AlarmKey } from '../../infra/constructs/observability.js';
import { StackOutput } from '../../infra/outputs.js';
import { ContextKey } from '../../infra/scheduler-app.js';
import { SchedulerStack } from '../../infra/scheduler-stack.js';
import { MetricName } from '../../shared/runtime/observability.js';
import { METRICS_NAMESPACE, STACK_DIMENSION } from '../../shared/runtime/powertools.js';
import { ENV } from '../../shared/core/resources.js';
import { FAST_APP, schedulerApp, testContext } from './support.js';

type AlarmResource = {
  Properties: {
    AlarmName: string;
    Namespace?: string;
    Dimensions?: { Name: string; Value: unknown }[];
    AlarmActions?: unknown[];
    OKActions?: unknown[];
  };
};

function alarmsOf(template: Template): AlarmResource[] {
  return Object.values(template.findResources('AWS::CloudWatch::Alarm')) as AlarmResource[];
}

const TEAM_TOPIC = 'arn:aws:sns:eu-west-1:123456789012:team-paging';

describe('alarm routing', () => {
  const plain = schedulerApp().stack;
  const plainTemplate = Template.fromStack(plain);

  it("without -c alarmEmail every alarm still notifies (ALARM and OK) the stack's topic, whose ARN is an output", () => {
    const alarms = alarmsOf(plainTemplate);
    expect(alarms.length).toBeGreaterThanOrEqual(Object.keys(AlarmKey).length);
    const topic = plain.resolve(plain.observability.alarmTopic.topicArn) as unknown;
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions, alarm.Properties.AlarmName).toEqual([topic]);
      expect(alarm.Properties.OKActions, alarm.Properties.AlarmName).toEqual([topic]);
    }
    plainTemplate.resourceCountIs('AWS::SNS::Topic', 1);
    plainTemplate.hasOutput(StackOutput.AlarmTopicArn, { Value: topic });
  });

  it('synth without any subscriber warns that no alarm reaches anyone, naming the output and the context keys', () => {
    Annotations.fromStack(plain).hasWarning('*', Match.stringLikeRegexp('no subscriber.*AlarmTopicArn.*-c alarmEmail.*-c alarmTopicArn'));
  });

  it("-c alarmTopicArn sends every alarm to the team's topic instead of creating one, without the warning", () => {
    const { stack } = schedulerApp({}, { context: { [ContextKey.alarmTopicArn]: TEAM_TOPIC } });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::SNS::Topic', 0);
    for (const alarm of alarmsOf(template)) {
      expect(alarm.Properties.AlarmActions).toEqual([TEAM_TOPIC]);
      expect(alarm.Properties.OKActions).toEqual([TEAM_TOPIC]);
    }
    template.hasOutput(StackOutput.AlarmTopicArn, { Value: TEAM_TOPIC });
    Annotations.fromStack(stack).hasNoWarning('*', Match.stringLikeRegexp('no subscriber'));
  });

  it('refuses an -c alarmTopicArn that is not an SNS topic ARN, naming the key and the value', () => {
    expect(() => schedulerApp({}, { context: { [ContextKey.alarmTopicArn]: 'team-paging' } })).toThrow(
      'context "alarmTopicArn" must be an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>), got "team-paging"',
    );
  });
});

describe('two stacks in one account and region', () => {
  // The hazard: staging's DEAD run fires production's alarm when both publish one namespace and dimension.
  const app = new App({ ...FAST_APP, context: testContext() });
  const stacks = ['Production', 'Staging'].map((name) => new SchedulerStack(app, name, { plannerPartitions: 2 }));

  it.each([0, 1])("a staging run cannot fire production's alarms: each alarm of stack %i selects its own stack dimension only", (index) => {
    const stack = stacks[index]!;
    const other = stacks[1 - index]!;
    const template = Template.fromStack(stack);
    const scheduler = alarmsOf(template).filter((a) => a.Properties.Namespace === METRICS_NAMESPACE);
    // Every alarm on a scheduler metric: the operator-waiting gauges, lags, planner silence...
    expect(scheduler.map((a) => a.Properties.AlarmName)).toEqual(
      expect.arrayContaining([`${stack.stackName}-${AlarmKey.RunsDead}`, `${stack.stackName}-${AlarmKey.PlannerSilent}-p1`]),
    );
    for (const alarm of scheduler) {
      expect(alarm.Properties.Dimensions, alarm.Properties.AlarmName).toContainEqual({ Name: STACK_DIMENSION, Value: stack.stackName });
      expect(JSON.stringify(alarm), alarm.Properties.AlarmName).not.toContain(other.stackName);
    }
  });

  it.each([0, 1])("the dashboard of stack %i graphs only its own stack's scheduler metrics", (index) => {
    const stack = stacks[index]!;
    const body = JSON.stringify(Object.values(Template.fromStack(stack).findResources('AWS::CloudWatch::Dashboard'))[0]);
    const series = [...body.matchAll(/\[\\"FencedScheduler\\",\\"(\w+)\\",([^{]*)\{/g)];
    expect(series.length).toBeGreaterThan(Object.keys(MetricName).length);
    for (const [, name, dimensions] of series) expect(dimensions, name).toContain(`\\"${STACK_DIMENSION}\\",\\"${stack.stackName}\\"`);
    expect(body).not.toContain(stacks[1 - index]!.stackName);
  });

  it.each([0, 1])('the functions of stack %i publish under its name (%s)', (index) => {
    const stack = stacks[index]!;
    const functions = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')) as {
      Properties: { Environment: { Variables: Record<string, unknown> } };
    }[];
    expect(functions.length).toBeGreaterThanOrEqual(3);
    for (const fn of functions) expect(fn.Properties.Environment.Variables[ENV.metricsStack]).toBe(stack.stackName);
  });
});

describe('worker timeout', () => {
  it('-c workerTimeoutSeconds sets the worker timeout, and a job timeout of 5m fits a 6-minute worker', () => {
    const jobs = [{ name: 'long-report', schedule: '0 * * * *', handler: 'cache-refresh', timeout: '5m' }];
    expect(() => schedulerApp({ jobs })).toThrow(/raise the worker timeout \(context key workerTimeoutSeconds\)/);
    const { stack } = schedulerApp({ jobs }, { context: { [ContextKey.workerTimeoutSeconds]: '360' } });
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('worker'),
      Timeout: 360,
    });
    expect(stack.jobs[0]!.timeout).toBe(300_000);
  });

  it.each([
    ['5', 'context "workerTimeoutSeconds" must be a duration in [10 seconds, 15 minutes], got "5"'],
    ['1000', 'context "workerTimeoutSeconds" must be a duration in [10 seconds, 15 minutes], got "1000"'],
    ['12.5', 'context "workerTimeoutSeconds" must be a whole number of seconds, got "12.5"'],
    ['soon', 'context "workerTimeoutSeconds" must be a number, got "soon"'],
  ])('refuses -c workerTimeoutSeconds=%s naming the key and the value', (raw, message) => {
    expect(() => schedulerApp({}, { context: { [ContextKey.workerTimeoutSeconds]: raw } })).toThrow(message);
  });
});
