/**
 * Conventions shared by the planner and worker functions: Node.js 22 on arm64, bundled locally by
 * esbuild (no Docker) as one minified ESM file with the AWS SDK and the job config inside, an
 * explicit log group with retention, a role that can only write that log group (the data grants
 * are added by the constructs), and the Powertools environment.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { fileURLToPath } from 'node:url';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../shared/runtime/powertools.js';
import { ENV } from '../shared/core/resources.js';
import type { LedgerTable } from './constructs/ledger-table.js';
import type { RunQueues } from './constructs/run-queues.js';

/** Repository root (the folder holding package.json and package-lock.json). */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Absolute path of a file under the repository root. */
export function projectPath(relative: string): string {
  return fileURLToPath(new URL(`../${relative}`, import.meta.url));
}

export const LAMBDA_RUNTIME = lambda.Runtime.NODEJS_22_X;
export const LAMBDA_ARCHITECTURE = lambda.Architecture.ARM_64;

/** Lets bundled CommonJS dependencies call `require` inside the ESM bundle. */
export const REQUIRE_BANNER =
  "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);";

/**
 * Module substitutions in every Lambda bundle. The SDK's default credential chain is replaced by
 * its environment link (functions/lambda-credentials.ts explains why that is the only link that
 * answers in Lambda): about 100 KB less per function, so less to load on each cold start.
 */
export const LAMBDA_BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  '@aws-sdk/credential-provider-node': projectPath('functions/lambda-credentials.ts'),
};

/** What the planner and the worker both read to find runs (shared/runtime/clients.ts, resourcesFromEnv). */
export function runResourcesEnvironment(ledger: LedgerTable, runQueues: RunQueues): Record<string, string> {
  return {
    [ENV.ledgerTable]: ledger.table.tableName,
    [ENV.runQueueUrl]: runQueues.runQueue.queueUrl,
    [ENV.runRetentionDays]: String(ledger.runRetentionDays),
    // Cold starts validate every job's attempt against the worker's time limit, as synth did.
    [ENV.workerTimeoutSeconds]: String(runQueues.workerTimeout.toSeconds()),
  };
}

/**
 * Which job definitions the planner and the worker load at cold start (shared/worker/config.ts):
 * both get the same value, so they always agree on the job set.
 */
export function jobConfigEnvironment(exampleJobs: boolean): Record<string, string> {
  return { [ENV.exampleJobs]: String(exampleJobs) };
}

/** Props every scheduler function accepts. */
export interface SchedulerFunctionOptions {
  /** @default 512 */
  readonly memorySize?: number;
  /** Retention of the function's log group. @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** What happens to the log group when the stack is deleted. @default RemovalPolicy.DESTROY */
  readonly logRemovalPolicy?: RemovalPolicy;
  /** Powertools log level (POWERTOOLS_LOG_LEVEL). @default 'INFO' */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** Extra environment variables, merged over the scheduler's own. @default none */
  readonly environment?: Readonly<Record<string, string>>;
}

export interface SchedulerFunctionSpec extends SchedulerFunctionOptions {
  /** Entry file relative to the repository root, e.g. 'functions/planner.ts'. */
  readonly entry: string;
  readonly description: string;
  readonly timeout: Duration;
  /** Variables the entry point reads (names from shared/resources ENV). */
  readonly environment: Readonly<Record<string, string>>;
}

export interface SchedulerFunctionParts {
  readonly fn: NodejsFunction;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
}

/** Builds one scheduler function with the conventions above. */
export function createSchedulerFunction(scope: Construct, spec: SchedulerFunctionSpec): SchedulerFunctionParts {
  const logGroup = new logs.LogGroup(scope, 'LogGroup', {
    retention: spec.logRetention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: spec.logRemovalPolicy ?? RemovalPolicy.DESTROY,
  });
  // No AWSLambdaBasicExecutionRole: that managed policy may write to every log group.
  const role = new iam.Role(scope, 'Role', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: spec.description,
  });
  logGroup.grantWrite(role);

  const fn = new NodejsFunction(scope, 'Function', {
    entry: projectPath(spec.entry),
    handler: 'handler',
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: projectPath('package-lock.json'),
    description: spec.description,
    runtime: LAMBDA_RUNTIME,
    architecture: LAMBDA_ARCHITECTURE,
    memorySize: spec.memorySize ?? 512,
    timeout: spec.timeout,
    role,
    logGroup,
    environment: {
      POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      // Every metric carries its stack's name: alarms and dashboards of one stack see only its own.
      [ENV.metricsStack]: Stack.of(scope).stackName,
      POWERTOOLS_LOG_LEVEL: spec.logLevel ?? 'INFO',
      NODE_OPTIONS: '--enable-source-maps',
      ...spec.environment,
    },
    bundling: {
      forceDockerBundling: false,
      format: OutputFormat.ESM,
      target: 'node22',
      mainFields: ['module', 'main'],
      banner: REQUIRE_BANNER,
      minify: true,
      sourceMap: true,
      sourceMapMode: SourceMapMode.DEFAULT,
      sourcesContent: false,
      // The AWS SDK and every other dependency go into the bundle: the function runs the
      // versions the tests ran, not whatever the Lambda runtime happens to ship.
      bundleAwsSDK: true,
      externalModules: [],
      esbuildArgs: { '--alias': Object.entries(LAMBDA_BUNDLE_ALIASES).map(([from, to]) => `${from}=${to}`) },
    },
  });
  return { fn, role, logGroup };
}
