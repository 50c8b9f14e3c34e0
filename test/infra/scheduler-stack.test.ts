/**
 * The whole stack as `cdk synth` builds it: one real synth with esbuild bundling and the cdk-nag
 * plugin shared by the tests below, plus cheap unbundled stacks for the failure cases.
 */
import { App, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as events from 'aws-cdk-lib/aws-events';
import { AwsSolutionsChecks } from 'cdk-nag';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { operatorActions } from '../../infra/constructs/operator-policy.js';
import { OPS_ACCESS } from '../../infra/iam-access.js';
import { StackOutput } from '../../infra/outputs.js';
import { CONTEXT_PARAMETERS, ContextError, ContextKey, createSchedulerApp, stackPropsFromContext } from '../../infra/scheduler-app.js';
import { NAG_ACKNOWLEDGMENTS, SchedulerStack, validateJobsForDeployment } from '../../infra/scheduler-stack.js';
import { exampleJobDefinitions } from '../../shared/example-jobs.js';
import { ENV, RUN_QUEUES } from '../../shared/core/resources.js';
import { FAST_APP, iamStatements, isWildcardResource, schedulerApp, testContext } from './support.js';

function nagViolations(scope: Parameters<AwsSolutionsChecks['validateScope']>[0]) {
  return new AwsSolutionsChecks()
    .validateScope(scope)
    .violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);
}

describe('SchedulerStack (bundled synth)', () => {
  let stack: SchedulerStack;
  let template: Template;
  let assembly: CloudAssembly;

  beforeAll(() => {
    const built = schedulerApp({}, { bundle: true });
    stack = built.stack;
    // app.synth() runs the cdk-nag plugin: any unacknowledged finding throws here.
    assembly = built.app.synth();
    template = Template.fromJSON(assembly.getStackByName(stack.stackName).template);
  });

  it('synthesizes with zero unacknowledged cdk-nag findings', () => {
    expect(nagViolations(stack)).toEqual([]);
  });

  it('acknowledges only the listed findings, each with a one-line reason on the resource it concerns', () => {
    const acknowledged = stack.node.findAll().flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) =>
          Object.entries(m.data as Record<string, string>).map(([id, reason]) => ({
            path: c.node.path,
            id: id.replace(/^annotation::/i, ''),
            reason,
          })),
        ),
    );
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const { reason } of acknowledged) {
      expect(reason.length).toBeGreaterThan(20);
      expect(reason).not.toContain('\n');
    }
    const where = (id: string) =>
      acknowledged
        .filter((a) => a.id === id)
        .map((a) => a.path)
        .sort();
    expect(where(NAG_ACKNOWLEDGMENTS.runtime.id)).toEqual(
      [stack.planner.function, stack.worker.function, stack.outboxRelay.function].map((fn) => fn.node.path).sort(),
    );
    expect(where(NAG_ACKNOWLEDGMENTS.streamListStreams.id)).toEqual([stack.outboxRelay.role.node.path]);
    expect(where(NAG_ACKNOWLEDGMENTS.streamFailureQueue.id)).toEqual(
      [stack.outboxRelay.failureQueue.node.path, stack.planner.failureQueue.node.path].sort(),
    );
    // No CMK in this stack, so nothing else is acknowledged.
    expect(acknowledged).toHaveLength(6);
  });

  it('bundles each function into one minified ESM file with a source map', () => {
    const assetDirs = Object.values(template.findResources('AWS::Lambda::Function')).map((fn) => {
      const key = (fn as { Properties: { Code: { S3Key: string } } }).Properties.Code.S3Key;
      return join(assembly.directory, `asset.${key.replace(/\.zip$/, '')}`);
    });
    expect(assetDirs).toHaveLength(3);
    for (const dir of assetDirs) {
      const bundle = join(dir, 'index.mjs');
      expect(existsSync(bundle), bundle).toBe(true);
      expect(existsSync(`${bundle}.map`)).toBe(true);
      // The AWS SDK is inside (not external), and the whole bundle stays small.
      expect(statSync(bundle).size).toBeGreaterThan(100_000);
      expect(statSync(bundle).size).toBeLessThan(3_000_000);
      // The SDK's full credential chain is aliased away (LAMBDA_BUNDLE_ALIASES): its SSO and
      // instance-metadata links, whose messages would survive minification, are absent.
      const code = readFileSync(bundle, 'utf8');
      expect(code).not.toContain('defaultProvider::fromSSO');
      expect(code).not.toContain('defaultProvider::remoteProvider');
      expect(code).toContain('AWS_SESSION_TOKEN');
    }
  });

  it('exports the names the ops CLI needs (the payments table only with the example jobs)', () => {
    for (const key of Object.values(StackOutput).filter((k) => k !== StackOutput.PaymentsTableName))
      template.hasOutput(key, { Value: Match.anyValue() });
    expect(Object.keys(template.findOutputs(StackOutput.PaymentsTableName))).toEqual([]);
    template.hasOutput(StackOutput.ExampleJobs, { Value: 'false' });
    template.hasOutput(StackOutput.OutboxRetentionDays, { Value: '14' });
    template.hasOutput(StackOutput.OperatorPolicyArn, { Value: { Ref: Match.stringLikeRegexp('^OperatorsPolicy') } });
    template.hasOutput(StackOutput.DeadLetterQueueArn, {
      Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('^QueuesDeadLetterQueue'), 'Arn'] },
    });
    template.hasOutput(StackOutput.PlannerPartitions, { Value: '1' });
    template.hasOutput(StackOutput.RunRetentionDays, { Value: '30' });
    template.hasOutput(StackOutput.EventBusName, { Value: { Ref: Match.stringLikeRegexp('^OutboxRelayBus') } });
    template.hasOutput(StackOutput.EventBusArn, { Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('^OutboxRelayBus'), 'Arn'] } });
  });

  it('relays outbox rows from the ledger stream to the event bus, failed batches to an on-failure queue', () => {
    template.resourceCountIs('AWS::Events::EventBus', 1);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^LedgerTable'), 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [Match.stringLikeRegexp('^OutboxRelayFailureQueue'), 'Arn'] } } },
    });
  });

  it('gives the run queue a visibility timeout ≥ 6 × the worker function timeout', () => {
    const [queue] = Object.values(template.findResources('AWS::SQS::Queue', { Properties: { RedrivePolicy: Match.anyValue() } }));
    const [worker] = Object.values(
      template.findResources('AWS::Lambda::Function', { Properties: { Description: Match.stringLikeRegexp('worker') } }),
    );
    const visibility = (queue as { Properties: { VisibilityTimeout: number } }).Properties.VisibilityTimeout;
    const timeout = (worker as { Properties: { Timeout: number } }).Properties.Timeout;
    expect(timeout).toBe(RUN_QUEUES.workerTimeoutSeconds);
    expect(visibility).toBeGreaterThanOrEqual(6 * timeout);
  });

  it('redrives after maxReceiveCount, above every job retry budget', () => {
    template.hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: Match.objectLike({ maxReceiveCount: RUN_QUEUES.maxReceiveCount }) });
    for (const job of stack.jobs) expect(job.retry.maxAttempts).toBeLessThan(RUN_QUEUES.maxReceiveCount);
  });

  it('reports batch item failures from the worker event source', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { FunctionResponseTypes: ['ReportBatchItemFailures'] });
  });

  it('has no IAM statement with a wildcard resource on dynamodb:/sqs:/events: actions (but ListStreams) and no dynamodb:Scan', () => {
    const statements = iamStatements(template);
    expect(statements.length).toBeGreaterThan(0);
    for (const s of statements) {
      // dynamodb:ListStreams is granted on * by CDK's stream event source (acknowledged; it reads no data).
      const data = s.actions.filter((a) => /^(dynamodb|sqs|events):/.test(a) && a !== 'dynamodb:ListStreams');
      if (data.length > 0) expect(s.resources.filter(isWildcardResource), `${s.policy} ${data.join(',')}`).toEqual([]);
      if (s.actions.includes('dynamodb:ListStreams')) expect(s.actions).toEqual(['dynamodb:ListStreams']);
      for (const action of s.actions) {
        expect(action).not.toMatch(/^dynamodb:(Scan|\*)$/);
        expect(action).not.toBe('*');
        expect(action).not.toMatch(/^(dynamodb|sqs):.*\*/);
      }
    }
    expect(JSON.stringify(template.toJSON())).not.toContain('dynamodb:Scan');
  });

  it('deploys no example job, no payments table and no PAYMENTS_TABLE_NAME by default; the functions are told EXAMPLE_JOBS=false', () => {
    expect(stack.jobs).toEqual([]);
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
      const variables = (fn as { Properties: { Description: string; Environment: { Variables: Record<string, unknown> } } }).Properties;
      expect(Object.keys(variables.Environment.Variables)).not.toContain(ENV.paymentsTable);
      if (!/outbox/.test(variables.Description)) expect(variables.Environment.Variables[ENV.exampleJobs]).toBe('false');
    }
  });

  it('has the eleven alarms (one per AlarmKey) and the dashboard', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', 14);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: Match.stringLikeRegexp('^OutboxRelayFunction') } }],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('^OutboxRelayFailureQueue'), 'QueueName'] } }],
    });
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'PlannerTicks', TreatMissingData: 'breaching' });
  });
});

describe('SchedulerStack (configuration)', () => {
  it('maps each configured job to exactly one scheduled planner partition', () => {
    const examples = schedulerApp({ exampleJobs: true, plannerPartitions: 3 }).stack;
    expect(examples.jobs.length).toBeGreaterThan(0);
    const inputs = Object.values(Template.fromStack(examples).findResources('AWS::Events::Rule')).map(
      (rule) =>
        JSON.parse((rule as { Properties: { Targets: { Input: string }[] } }).Properties.Targets[0]!.Input) as {
          partition: number;
          of: number;
        },
    );
    for (const [job, partition] of Object.entries(examples.partitionOfJobs())) {
      expect(
        inputs.filter((i) => i.partition === partition),
        job,
      ).toHaveLength(1);
    }
  });

  it('deploys the example jobs with -c exampleJobs=true: their payments table, its env var and output, EXAMPLE_JOBS=true', () => {
    const { stack } = schedulerApp({}, { context: { [ContextKey.exampleJobs]: 'true' } });
    expect(stack.jobs.map((job) => job.name).sort()).toEqual(exampleJobDefinitions.map((job) => job.name).sort());
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::DynamoDB::Table', 2);
    template.hasOutput(StackOutput.PaymentsTableName, { Value: { Ref: Match.stringLikeRegexp('^PaymentsTable') } });
    template.hasOutput(StackOutput.ExampleJobs, { Value: 'true' });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('worker'),
      Environment: {
        Variables: Match.objectLike({ [ENV.paymentsTable]: { Ref: Match.stringLikeRegexp('^PaymentsTable') }, [ENV.exampleJobs]: 'true' }),
      },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('planner'),
      Environment: { Variables: Match.objectLike({ [ENV.exampleJobs]: 'true' }) },
    });
  });

  it("rejects an unknown context key that looks like ours, naming it, a near key and the valid ones; CDK's own keys pass", () => {
    const attempt = (context: Record<string, unknown>) => () =>
      createSchedulerApp({ appProps: { ...FAST_APP, context: testContext({ extra: context }) } });
    expect(attempt({ triggerLagThreshold: '5' })).toThrow(ContextError);
    expect(attempt({ triggerLagThreshold: '5' })).toThrow(
      `unknown context key "triggerLagThreshold" (did you mean "triggerLagThresholdSeconds"?); valid keys: ${Object.keys(CONTEXT_PARAMETERS).join(', ')}`,
    );
    expect(attempt({ partitions: '2' })).toThrow(/unknown context key "partitions"; valid keys: stackName, /);
    // Feature flags, CDK's namespaced keys and its unnamespaced cli-telemetry are not ours.
    expect(() =>
      attempt({
        '@aws-cdk/core:newStyleStackSynthesis': true,
        'aws:cdk:enable-path-metadata': true,
        'availability-zones:account=1:region=r': ['a'],
        'cli-telemetry': false,
      })(),
    ).not.toThrow();
  });

  it.each([
    [{ plannerPartitions: '0' }, 'context "plannerPartitions" must be an integer in [1, 64], got "0"'],
    [{ workerBatchSize: '50' }, 'context "workerBatchSize" must be an integer in [1, 10], got "50"'],
    [{ triggerLagThresholdSeconds: '7200' }, 'context "triggerLagThresholdSeconds" must be a duration in [1 ms, 1 hour], got "7200"'],
    [{ outboxRetentionDays: '7' }, 'context "outboxRetentionDays" must be an integer in [14, 3650], got "7"'],
    [{ alarmEmail: 'ops' }, 'context "alarmEmail" must be an e-mail address, got "ops"'],
    [{ exampleJobs: 'yes' }, 'context "exampleJobs" must be true or false, got "yes"'],
    [{ stackName: 'has space' }, /context "stackName" must be a stack name .*got "has space"/],
  ])('names the context key and the value as written when a construct refuses it: %o', (context, message) => {
    expect(() => schedulerApp({}, { context })).toThrow(message);
  });

  it('fails synth for an invalid job, naming the job and the field', () => {
    const bad = [...exampleJobDefinitions, { name: 'broken-job', schedule: '* *', handler: 'payments-reconcile' }];
    expect(() => schedulerApp({ jobs: bad })).toThrow(/invalid job configuration[\s\S]*job "broken-job": field "schedule"/);
  });

  it('fails synth for a job naming an unknown handler', () => {
    expect(() => schedulerApp({ jobs: [{ name: 'orphan', schedule: '* * * * *', handler: 'nope' }] })).toThrow(
      /job "orphan": field "handler"/,
    );
  });

  it('rejects a job whose retry budget reaches the queue maxReceiveCount', () => {
    const greedy = [{ name: 'greedy', schedule: '* * * * *', handler: 'cache-refresh', retry: { maxAttempts: 5 } }];
    expect(() => validateJobsForDeployment(greedy, 5)).toThrow(
      /job "greedy": field "retry\.maxAttempts": must be below the run queue's maxReceiveCount \(5\).*\(value: 5\)/,
    );
    expect(validateJobsForDeployment(greedy, 6).map((job) => job.name)).toEqual(['greedy']);
  });

  it('passes construct validation errors through, naming the prop', () => {
    expect(() => schedulerApp({ plannerPartitions: 0 })).toThrow(/prop "plannerPartitions".*got 0/);
    expect(() => schedulerApp({ workerBatchSize: 50 })).toThrow(/prop "batchSize".*got 50/);
  });

  it('derives the queue visibility from a longer worker timeout', () => {
    const { stack } = schedulerApp({ workerTimeout: Duration.minutes(3) });
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: Match.anyValue(), VisibilityTimeout: 18 * 60 });
    template.hasResourceProperties('AWS::Lambda::Function', { Description: Match.stringLikeRegexp('worker'), Timeout: 180 });
  });

  it('emits the configured planner partitions and run retention as outputs', () => {
    const template = Template.fromStack(schedulerApp({ plannerPartitions: 4, runRetentionDays: 7 }).stack);
    template.hasOutput(StackOutput.PlannerPartitions, { Value: '4' });
    template.hasOutput(StackOutput.RunRetentionDays, { Value: '7' });
  });

  it('relays to a given event bus instead of creating one', () => {
    const app = new App({ ...FAST_APP, context: testContext() });
    const stack = new SchedulerStack(app, 'CentralBus', {
      eventBus: events.EventBus.fromEventBusName(new Stack(app, 'Buses'), 'Central', 'central'),
    });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::Events::EventBus', 0);
    template.hasOutput(StackOutput.EventBusName, { Value: 'central' });
    expect(nagViolations(app)).toEqual([]);
  });

  it('reads parameters from CDK context', () => {
    const { stack } = schedulerApp(
      {},
      {
        context: {
          [ContextKey.plannerPartitions]: '3',
          [ContextKey.alarmEmail]: 'ops@example.com',
          [ContextKey.stackName]: 'Sched2',
          [ContextKey.removalPolicy]: 'destroy',
        },
      },
    );
    expect(stack.stackName).toBe('Sched2');
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::Events::Rule', 3);
    template.hasResourceProperties('AWS::SNS::Subscription', { Endpoint: 'ops@example.com' });
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
  });

  it('rejects malformed context values', () => {
    const app = new App({ context: { [ContextKey.plannerPartitions]: 'four' } });
    expect(() => stackPropsFromContext(app)).toThrow(/context "plannerPartitions" must be a number, got "four"/);
    const app2 = new App({ context: { [ContextKey.removalPolicy]: 'keep' } });
    expect(() => stackPropsFromContext(app2)).toThrow(/context "removalPolicy" must be "retain" or "destroy", got "keep"/);
  });

  it("exports an operators' managed policy granting exactly the ops commands' actions, each on this stack's resource", () => {
    const { stack } = schedulerApp();
    const template = Template.fromStack(stack);
    const [policy] = Object.values(template.findResources('AWS::IAM::ManagedPolicy'));
    const statements = (policy as { Properties: { PolicyDocument: { Statement: { Action: string | string[]; Resource: unknown }[] } } })
      .Properties.PolicyDocument.Statement;
    const expected = operatorActions(Object.keys(OPS_ACCESS) as (keyof typeof OPS_ACCESS)[]);
    const granted = Object.fromEntries(statements.map((s) => [JSON.stringify(s.Resource), [s.Action].flat().sort()]));
    const ref = (value: unknown) => JSON.stringify(stack.resolve(value));
    expect(granted).toEqual({
      [ref(stack.stackId)]: expected.stack,
      [ref(stack.ledger.table.tableArn)]: expected.ledgerTable,
      [ref(stack.ledger.openRunsIndexArn)]: expected.openRunsIndex,
      [ref(stack.runQueues.runQueue.queueArn)]: expected.runQueue,
      [ref(stack.runQueues.deadLetterQueue.queueArn)]: expected.deadLetterQueue,
    });
    expect(expected.ledgerTable).not.toContain('dynamodb:Scan');
  });

  it('has zero unacknowledged cdk-nag findings with every option on (CMK tables, alarm e-mail, partitions, example jobs)', () => {
    const app = new App({ ...FAST_APP, context: testContext() });
    const key = new kms.Key(new Stack(app, 'Keys'), 'TableKey', { enableKeyRotation: true });
    const stack = new SchedulerStack(app, 'AllOptions', {
      tableEncryptionKey: key,
      alarmEmail: 'ops@example.com',
      plannerPartitions: 4,
      exampleJobs: true,
    });
    expect(nagViolations(app)).toEqual([]);
    // The CMK grants are on the key only; the wildcard actions are the acknowledged kms ones.
    const kmsStatements = iamStatements(Template.fromStack(stack)).filter((st) => st.actions.some((action) => action.startsWith('kms:')));
    expect(kmsStatements.length).toBeGreaterThan(0);
    for (const st of kmsStatements) expect(st.resources.filter(isWildcardResource)).toEqual([]);
  });
});
