/**
 * Builds the CDK app: the scheduler stack with parameters from CDK context (`-c key=value` or
 * cdk.json), and cdk-nag's AwsSolutions checks on every synth. infra/app.ts runs it; the tests
 * build the same app.
 *
 * The context parameters are one table (CONTEXT_PARAMETERS). A key that looks like ours but is not
 * in it is refused with the list of valid keys, so a misspelt `-c` fails synth instead of being
 * ignored; a value the stack's constructs refuse is reported under its context key, not under the
 * construct prop it feeds.
 */
import { App, Duration, RemovalPolicy, Validations, type AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { RUN_QUEUES } from '../shared/core/resources.js';
import { DEFAULT_STACK_NAME } from './outputs.js';
import { SchedulerStack, type SchedulerStackProps } from './scheduler-stack.js';
import { describeValue, InvalidPropsError, type PropProblem } from './validation.js';

/** A CDK context value the app cannot use; the message names the key and the value as written. */
export class ContextError extends Error {
  override readonly name = 'ContextError';
  constructor(
    readonly key: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

/** The construct prop whose rule checks a context value (infra/validation.ts). */
interface CheckedAs {
  /** Construct class, as the first word of its validation messages, e.g. 'WorkerFunction'. */
  readonly construct: string;
  readonly prop: string;
}

interface ContextParameter {
  /** For the list of valid keys and the README. */
  readonly description: string;
  /** The stack prop the value sets (overrides of the same prop win over context). */
  readonly stackProp?: keyof SchedulerStackProps;
  readonly checkedAs?: CheckedAs;
  /** Parses the raw context value (a string from `-c`, or any JSON from cdk.json). */
  readonly read: (key: string, raw: unknown) => SchedulerStackProps;
}

function parseNumber(key: string, raw: unknown): number {
  const value = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
  if (!Number.isFinite(value)) throw new ContextError(key, `context "${key}" must be a number, got ${describeValue(raw)}`);
  return value;
}

function parseBoolean(key: string, raw: unknown): boolean {
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  throw new ContextError(key, `context "${key}" must be true or false, got ${describeValue(raw)}`);
}

function numberParameter(
  description: string,
  stackProp: keyof SchedulerStackProps,
  checkedAs: CheckedAs,
  toProps: (value: number) => SchedulerStackProps,
): ContextParameter {
  return { description, stackProp, checkedAs, read: (key, raw) => toProps(parseNumber(key, raw)) };
}

/** CloudFormation's rule for stack names. */
const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,127}$/;

/** Every context key the app reads; every one is optional. */
export const CONTEXT_PARAMETERS = {
  stackName: {
    description: `CloudFormation stack name (default ${DEFAULT_STACK_NAME})`,
    read: (key, raw) => {
      if (typeof raw !== 'string' || !STACK_NAME.test(raw)) {
        throw new ContextError(
          key,
          `context "${key}" must be a stack name (a letter, then letters, digits or "-", at most 128), got ${describeValue(raw)}`,
        );
      }
      return {};
    },
  },
  exampleJobs: {
    description: 'true deploys the example jobs (cache-refresh, payments-reconcile) and their payments table (default false)',
    stackProp: 'exampleJobs',
    read: (key, raw) => ({ exampleJobs: parseBoolean(key, raw) }),
  },
  plannerPartitions: numberParameter(
    'planner partitions, one scheduled invocation each (default 1)',
    'plannerPartitions',
    { construct: 'PlannerFunction', prop: 'plannerPartitions' },
    (plannerPartitions) => ({ plannerPartitions }),
  ),
  runRetentionDays: numberParameter(
    'days finished runs are kept before TTL deletes them (default 30)',
    'runRetentionDays',
    { construct: 'LedgerTable', prop: 'runRetentionDays' },
    (runRetentionDays) => ({ runRetentionDays }),
  ),
  outboxRetentionDays: numberParameter(
    'days outbox rows are kept for republishing before TTL deletes them (default 14, at least 14)',
    'outboxRetentionDays',
    { construct: 'LedgerTable', prop: 'outboxRetentionDays' },
    (outboxRetentionDays) => ({ outboxRetentionDays }),
  ),
  removalPolicy: {
    description: 'retain or destroy: what happens to the tables when the stack is deleted (default retain)',
    stackProp: 'removalPolicy',
    read: (key, raw) => {
      if (raw !== 'retain' && raw !== 'destroy')
        throw new ContextError(key, `context "${key}" must be "retain" or "destroy", got ${describeValue(raw)}`);
      return { removalPolicy: raw === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN };
    },
  },
  workerBatchSize: numberParameter(
    'messages per worker invocation (default 10)',
    'workerBatchSize',
    { construct: 'WorkerFunction', prop: 'batchSize' },
    (workerBatchSize) => ({ workerBatchSize }),
  ),
  workerMaxConcurrency: numberParameter(
    'most concurrent worker invocations (default 20)',
    'workerMaxConcurrency',
    { construct: 'WorkerFunction', prop: 'maxConcurrency' },
    (workerMaxConcurrency) => ({ workerMaxConcurrency }),
  ),
  workerTimeoutSeconds: {
    description: `worker Lambda timeout in whole seconds, 10 to 900 (default ${RUN_QUEUES.workerTimeoutSeconds}): every job's \`timeout\` plus its start wait and a 10 s yield margin must fit in it unless the job checkpoints`,
    stackProp: 'workerTimeout',
    checkedAs: { construct: 'SchedulerStack', prop: 'workerTimeout' },
    read: (key, raw) => {
      const seconds = parseNumber(key, raw);
      // Lambda takes whole seconds.
      if (!Number.isInteger(seconds))
        throw new ContextError(key, `context "${key}" must be a whole number of seconds, got ${describeValue(raw)}`);
      return { workerTimeout: Duration.seconds(seconds) };
    },
  },
  alarmEmail: {
    description: 'e-mail address subscribed to the alarm topic (confirm the subscription e-mail)',
    stackProp: 'alarmEmail',
    checkedAs: { construct: 'Observability', prop: 'alarmEmail' },
    read: (_key, raw) => ({ alarmEmail: String(raw) }),
  },
  alarmTopicArn: {
    description:
      'ARN of an existing SNS topic (chat, paging) that every alarm notifies instead of the topic the stack creates; its policy must let cloudwatch.amazonaws.com publish',
    stackProp: 'alarmTopicArn',
    checkedAs: { construct: 'SchedulerStack', prop: 'alarmTopicArn' },
    read: (_key, raw) => ({ alarmTopicArn: String(raw) }),
  },
  triggerLagThresholdSeconds: numberParameter(
    'trigger-lag-p99 alarm threshold in seconds (default 10)',
    'triggerLagThreshold',
    { construct: 'Observability', prop: 'triggerLagThreshold' },
    (value) => ({ triggerLagThreshold: Duration.millis(Math.round(value * 1000)) }),
  ),
  oldestOpenRunAgeThresholdMinutes: numberParameter(
    'oldest-open-run-age alarm threshold in minutes (default 15)',
    'oldestOpenRunAgeThreshold',
    { construct: 'Observability', prop: 'oldestOpenRunAgeThreshold' },
    (value) => ({ oldestOpenRunAgeThreshold: Duration.millis(Math.round(value * 60_000)) }),
  ),
} as const satisfies Record<string, ContextParameter>;

export type ContextKey = keyof typeof CONTEXT_PARAMETERS;
/** The context keys by name (`ContextKey.plannerPartitions === 'plannerPartitions'`). */
export const ContextKey = Object.fromEntries(Object.keys(CONTEXT_PARAMETERS).map((key) => [key, key])) as { readonly [K in ContextKey]: K };

/**
 * Keys that CDK itself (CLI, cdk.json, ~/.cdk.json) puts in the context without a namespace.
 * Namespaced ones (`@aws-cdk/...` feature flags, `aws:cdk:*`, `availability-zones:...`) contain
 * '@', ':' or '/' and are never taken for ours.
 */
const CDK_OWN_KEYS: ReadonlySet<string> = new Set(['cli-telemetry', 'acknowledged-issue-numbers']);

function looksLikeOurs(key: string): boolean {
  return !key.startsWith('@') && !key.includes(':') && !key.includes('/') && !CDK_OWN_KEYS.has(key);
}

function isParameter(key: string): key is ContextKey {
  return Object.hasOwn(CONTEXT_PARAMETERS, key);
}

function rawContext(app: App, key: string): unknown {
  const raw: unknown = app.node.tryGetContext(key);
  return raw === null || raw === '' ? undefined : raw;
}

/** Refuses every context key that looks like ours and is not one, listing the valid ones. */
export function checkContextKeys(app: App): void {
  const unknown = Object.keys(app.node.getAllContext()).filter((key) => looksLikeOurs(key) && !isParameter(key));
  if (unknown.length === 0) return;
  const valid = Object.keys(CONTEXT_PARAMETERS);
  const lines = unknown.map((key) => {
    const near = valid.filter((v) => v.toLowerCase().startsWith(key.toLowerCase()) || key.toLowerCase().startsWith(v.toLowerCase()));
    return `unknown context key "${key}"${near.length > 0 ? ` (did you mean ${near.map((n) => `"${n}"`).join(' or ')}?)` : ''}`;
  });
  throw new ContextError(unknown[0]!, `${lines.join('; ')}; valid keys: ${valid.join(', ')}`);
}

/** Stack props from CDK context; anything not set keeps the stack's default. */
export function stackPropsFromContext(app: App): SchedulerStackProps {
  checkContextKeys(app);
  let props: SchedulerStackProps = {};
  for (const [key, parameter] of Object.entries(CONTEXT_PARAMETERS) as [ContextKey, ContextParameter][]) {
    const raw = rawContext(app, key);
    if (raw !== undefined) props = { ...props, ...parameter.read(key, raw) };
  }
  return props;
}

function stackNameOf(app: App): string {
  const raw = rawContext(app, ContextKey.stackName);
  return raw === undefined ? DEFAULT_STACK_NAME : String(raw);
}

/**
 * A construct's refusal of a value that came from context, restated under the context key and
 * the value as written; undefined when some problem did not come from context.
 */
function asContextError(app: App, error: InvalidPropsError, overrides: SchedulerStackProps): ContextError | undefined {
  const fromContext = (problem: PropProblem): { key: string; line: string } | undefined => {
    for (const [key, parameter] of Object.entries(CONTEXT_PARAMETERS) as [ContextKey, ContextParameter][]) {
      const checked = parameter.checkedAs;
      if (!checked || checked.prop !== problem.prop || problem.construct.split(' ')[0] !== checked.construct) continue;
      const raw = rawContext(app, key);
      if (raw === undefined || (parameter.stackProp && overrides[parameter.stackProp] !== undefined)) continue;
      return { key, line: `context "${key}" must be ${problem.must}, got ${describeValue(raw)}` };
    }
    return undefined;
  };
  const restated = error.problems.map(fromContext).filter((r) => r !== undefined);
  if (restated.length === 0 || restated.length !== error.problems.length) return undefined;
  return new ContextError(restated[0]!.key, restated.map((r) => r.line).join('\n'), { cause: error });
}

export interface SchedulerApp {
  readonly app: App;
  readonly stack: SchedulerStack;
}

/** The app with one scheduler stack; `overrides` win over context (tests use them). */
export function createSchedulerApp(options: { appProps?: AppProps; overrides?: SchedulerStackProps } = {}): SchedulerApp {
  const app = new App(options.appProps);
  const overrides = options.overrides ?? {};
  const fromContext = stackPropsFromContext(app);
  const stackName = stackNameOf(app);
  let stack: SchedulerStack;
  try {
    stack = new SchedulerStack(app, stackName, {
      description: 'Fenced scheduler: planner, ledger, run queues, worker, dashboard and alarms',
      env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
      ...fromContext,
      ...overrides,
    });
  } catch (error) {
    if (error instanceof InvalidPropsError) throw asContextError(app, error, overrides) ?? error;
    throw error;
  }
  // Any unacknowledged finding (error or warning) fails synth.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { app, stack };
}
