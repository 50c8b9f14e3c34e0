/**
 * Builds the CDK app: the scheduler stack with parameters from CDK context (`-c key=value` or
 * cdk.json), and cdk-nag's AwsSolutions checks on every synth. infra/app.ts runs it; the tests
 * build the same app.
 */
import { App, Duration, RemovalPolicy, Validations, type AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { DEFAULT_STACK_NAME } from './outputs.js';
import { SchedulerStack, type SchedulerStackProps } from './scheduler-stack.js';

/** Context keys the app reads; every one is optional. */
export const ContextKey = {
  stackName: 'stackName',
  plannerPartitions: 'plannerPartitions',
  runRetentionDays: 'runRetentionDays',
  removalPolicy: 'removalPolicy',
  workerBatchSize: 'workerBatchSize',
  workerMaxConcurrency: 'workerMaxConcurrency',
  alarmEmail: 'alarmEmail',
  triggerLagThresholdSeconds: 'triggerLagThresholdSeconds',
  oldestOpenRunAgeThresholdMinutes: 'oldestOpenRunAgeThresholdMinutes',
} as const;

function numberContext(app: App, key: string): number | undefined {
  const raw: unknown = app.node.tryGetContext(key);
  if (raw === undefined || raw === null || raw === '') return undefined;
  const value = typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isFinite(value)) throw new Error(`context "${key}" must be a number, got ${JSON.stringify(raw)}`);
  return value;
}

function stringContext(app: App, key: string): string | undefined {
  const raw: unknown = app.node.tryGetContext(key);
  if (raw === undefined || raw === null || raw === '') return undefined;
  return String(raw);
}

/** Stack props from CDK context; anything not set keeps the stack's default. */
export function stackPropsFromContext(app: App): SchedulerStackProps {
  const removal = stringContext(app, ContextKey.removalPolicy);
  if (removal !== undefined && removal !== 'retain' && removal !== 'destroy') {
    throw new Error(`context "${ContextKey.removalPolicy}" must be "retain" or "destroy", got ${JSON.stringify(removal)}`);
  }
  const lagSeconds = numberContext(app, ContextKey.triggerLagThresholdSeconds);
  const ageMinutes = numberContext(app, ContextKey.oldestOpenRunAgeThresholdMinutes);
  return {
    plannerPartitions: numberContext(app, ContextKey.plannerPartitions),
    runRetentionDays: numberContext(app, ContextKey.runRetentionDays),
    removalPolicy: removal === 'destroy' ? RemovalPolicy.DESTROY : removal === 'retain' ? RemovalPolicy.RETAIN : undefined,
    workerBatchSize: numberContext(app, ContextKey.workerBatchSize),
    workerMaxConcurrency: numberContext(app, ContextKey.workerMaxConcurrency),
    alarmEmail: stringContext(app, ContextKey.alarmEmail),
    triggerLagThreshold: lagSeconds === undefined ? undefined : Duration.seconds(lagSeconds),
    oldestOpenRunAgeThreshold: ageMinutes === undefined ? undefined : Duration.minutes(ageMinutes),
  };
}

export interface SchedulerApp {
  readonly app: App;
  readonly stack: SchedulerStack;
}

/** The app with one scheduler stack; `overrides` win over context (tests use them). */
export function createSchedulerApp(options: { appProps?: AppProps; overrides?: SchedulerStackProps } = {}): SchedulerApp {
  const app = new App(options.appProps);
  const stackName = stringContext(app, ContextKey.stackName) ?? DEFAULT_STACK_NAME;
  const stack = new SchedulerStack(app, stackName, {
    description: 'Fenced scheduler: planner, ledger, run queues, worker, dashboard and alarms',
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
    ...stackPropsFromContext(app),
    ...options.overrides,
  });
  // Any unacknowledged finding (error or warning) fails synth.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}
