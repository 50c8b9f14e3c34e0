/**
 * Where an ops command acts:
 *
 * - `--local`: the running local runtime, from `.local-data/endpoints.json` (written by `npm start`);
 * - `--endpoints FILE`: the same JSON shape from any file (tests point at their sandbox);
 * - otherwise AWS: default credential chain, region from the environment/config (or `--region`),
 *   resources from the CloudFormation outputs of `--stack` (default FencedScheduler).
 *
 * No command needs the planner's partition count: pause and resume write the job's own plan item,
 * which follows the job whatever the count, and `status` reads the count from the planner's state.
 */
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { Ledger } from '../../shared/store/ledger.js';
import { LedgerOps } from '../../shared/store/repairs.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import { createClients, type Clients } from '../../shared/runtime/clients.js';
import { DEFAULT_STACK_NAME, StackOutput } from '../../infra/outputs.js';
import { LOCAL_ENDPOINTS_FILE, localClientConfig, localEndpointsPath } from '../local-stack.js';
import type { CommonValues } from './args.js';
import { OpsFailure, UsageError, type OpsIo } from './io.js';

/** The endpoints file: LocalEndpoints (tools/local-stack.ts) plus what `npm start` adds. */
export interface EndpointsFile {
  readonly dynamoEndpoint: string;
  readonly sqsEndpoint: string;
  readonly ledgerTable: string;
  readonly runQueueUrl: string;
  readonly deadLetterQueueUrl: string;
  readonly paymentsTable?: string;
  /** The local planner's partition count (`npm start --partitions`): accepted, never read. */
  readonly partitions?: number;
  /** `npm start` runs the example jobs and says so here. */
  readonly exampleJobs?: boolean;
  readonly deadLetterQueueArn?: string;
  readonly runQueueArn?: string;
}

export interface Target {
  /** One line: what the command talks to. */
  readonly description: string;
  readonly clients: Clients;
  readonly ledger: Ledger;
  readonly ops: LedgerOps;
  readonly queue: RunQueue;
  readonly runQueueUrl: string;
  readonly deadLetterQueueUrl: string;
  /**
   * Whether the target runs the example jobs: its endpoints file says so (`npm start` writes
   * true), or the stack's `ExampleJobs` output; undefined for a stack from before that output.
   * The checkout's config that the deployed one is compared with follows it.
   */
  readonly exampleJobs?: boolean;
  runQueueArn(): Promise<string>;
  deadLetterQueueArn(): Promise<string>;
  destroy(): void;
}

const REQUIRED_ENDPOINT_FIELDS = ['dynamoEndpoint', 'sqsEndpoint', 'ledgerTable', 'runQueueUrl', 'deadLetterQueueUrl'] as const;

export function readEndpointsFile(path: string, field: string): EndpointsFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(field, `cannot read endpoints JSON ${path}: ${error instanceof Error ? error.message.split('\n')[0] : error}`);
  }
  if (parsed === null || typeof parsed !== 'object') throw new UsageError(field, `${path} must hold a JSON object`);
  const record = parsed as Record<string, unknown>;
  for (const key of REQUIRED_ENDPOINT_FIELDS) {
    if (typeof record[key] !== 'string' || record[key] === '') throw new UsageError(field, `${path}: "${key}" is missing`);
  }
  return record as unknown as EndpointsFile;
}

/** How long a local endpoint may take to accept a connection. */
const PROBE_TIMEOUT_MS = 1_000;

/** Whether something accepts TCP connections at the endpoint's host and port. */
export function answers(endpoint: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  const url = new URL(endpoint);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return new Promise((resolveProbe) => {
    const socket = connect({ host: url.hostname, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolveProbe(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * A local target's endpoints must answer before any command runs: an endpoints file left behind
 * by an `npm start` that is gone would otherwise fail after the SDK's retries with a connection
 * error that names neither.
 */
async function expectAnswer(file: EndpointsFile, problem: string, hint: string): Promise<void> {
  const endpoints = [
    ['DynamoDB Local', file.dynamoEndpoint],
    ['local SQS', file.sqsEndpoint],
  ] as const;
  const results = await Promise.all(endpoints.map(async ([name, url]) => ({ name, url, ok: await answers(url) })));
  const silent = results.filter((r) => !r.ok);
  if (silent.length > 0) {
    throw new OpsFailure(
      `${problem}: ${silent.map((r) => `${r.name} at ${r.url}`).join(' and ')} ${silent.length > 1 ? 'do' : 'does'} not answer${hint}`,
    );
  }
}

export async function openTarget(values: CommonValues, io: OpsIo): Promise<Target> {
  const chosen = [values.local, values.endpoints !== undefined, values.stack !== undefined].filter(Boolean).length;
  if (chosen > 1) throw new UsageError('target', 'choose one of --local, --endpoints FILE, --stack NAME');
  if (values.local || values.endpoints !== undefined) {
    let path: string;
    if (values.local) {
      path = localEndpointsPath(io.cwd);
      if (!existsSync(path))
        throw new OpsFailure(`\`npm start\` is not running (${LOCAL_ENDPOINTS_FILE} is missing): start it in another terminal`);
    } else {
      path = resolve(process.cwd(), values.endpoints!);
    }
    const file = readEndpointsFile(path, values.local ? 'local' : 'endpoints');
    if (values.local)
      await expectAnswer(
        file,
        `\`npm start\` is not running (${LOCAL_ENDPOINTS_FILE} is left from an earlier run)`,
        '; start it with `npm start` in another terminal',
      );
    else await expectAnswer(file, `the local stack of ${path} is not running`, '');
    const clients = createClients({ dynamo: localClientConfig(file.dynamoEndpoint), sqs: localClientConfig(file.sqsEndpoint) });
    io.instrument?.(clients);
    return build(clients, {
      description: `local stack (${path})`,
      ledgerTable: file.ledgerTable,
      runQueueUrl: file.runQueueUrl,
      deadLetterQueueUrl: file.deadLetterQueueUrl,
      deadLetterQueueArn: file.deadLetterQueueArn,
      runQueueArn: file.runQueueArn,
      exampleJobs: file.exampleJobs === true,
    });
  }
  return openStack(values, io);
}

async function openStack(values: CommonValues, io: OpsIo): Promise<Target> {
  const stackName = values.stack ?? DEFAULT_STACK_NAME;
  const region = values.region;
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const cfn = new CloudFormationClient(region ? { region } : {});
  let outputs: Map<string, string>;
  let resolvedRegion: string;
  try {
    const { Stacks = [] } = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
    outputs = new Map((Stacks[0]?.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']));
    resolvedRegion = await cfn.config.region();
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    if (/does not exist/i.test(message ?? '')) {
      throw new OpsFailure(`stack "${stackName}" not found: deploy it (npx cdk deploy), pass --stack NAME or --region, or use --local`);
    }
    throw new OpsFailure(`cannot read stack "${stackName}" outputs: ${message} (use --local for the local runtime)`);
  } finally {
    cfn.destroy();
  }
  const need = (key: string) => {
    const value = outputs.get(key);
    if (!value) throw new OpsFailure(`stack "${stackName}" has no output ${key}: deploy the current infra/ or use --endpoints`);
    return value;
  };
  const clients = createClients(region ? { dynamo: { region }, sqs: { region } } : {});
  io.instrument?.(clients);
  return build(clients, {
    description: `stack ${stackName} (${resolvedRegion})`,
    ledgerTable: need(StackOutput.LedgerTableName),
    runQueueUrl: need(StackOutput.RunQueueUrl),
    deadLetterQueueUrl: need(StackOutput.DeadLetterQueueUrl),
    deadLetterQueueArn: outputs.get(StackOutput.DeadLetterQueueArn),
    exampleJobs: exampleJobsOutput(stackName, outputs.get(StackOutput.ExampleJobs)),
  });
}

/** The stack's `ExampleJobs` output ("true" or "false"; absent on a stack from before it). */
export function exampleJobsOutput(stackName: string, value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new OpsFailure(`stack "${stackName}" output ${StackOutput.ExampleJobs} must be "true" or "false", got ${JSON.stringify(value)}`);
}

interface TargetSpec {
  readonly description: string;
  readonly ledgerTable: string;
  readonly runQueueUrl: string;
  readonly deadLetterQueueUrl: string;
  readonly deadLetterQueueArn?: string;
  readonly runQueueArn?: string;
  readonly exampleJobs?: boolean;
}

function build(clients: Clients, spec: TargetSpec): Target {
  const arnOf = async (url: string): Promise<string> => {
    const { Attributes } = await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
    const arn = Attributes?.QueueArn;
    if (!arn) throw new OpsFailure(`cannot read the ARN of ${url}`);
    return arn;
  };
  return {
    description: spec.description,
    clients,
    ledger: new Ledger(clients.doc, { tableName: spec.ledgerTable }),
    ops: new LedgerOps(clients.doc, { tableName: spec.ledgerTable }),
    queue: new RunQueue(clients.sqs, spec.runQueueUrl),
    runQueueUrl: spec.runQueueUrl,
    deadLetterQueueUrl: spec.deadLetterQueueUrl,
    exampleJobs: spec.exampleJobs,
    runQueueArn: () => (spec.runQueueArn ? Promise.resolve(spec.runQueueArn) : arnOf(spec.runQueueUrl)),
    deadLetterQueueArn: () => (spec.deadLetterQueueArn ? Promise.resolve(spec.deadLetterQueueArn) : arnOf(spec.deadLetterQueueUrl)),
    destroy: () => {
      clients.dynamo.destroy();
      clients.sqs.destroy();
    },
  };
}

/**
 * Opens the target, runs `fn`, and always releases the clients. A target runOps already opened
 * (io.target, to read the deployed config) is used as it is, and released by runOps.
 */
export async function withTarget<T>(values: CommonValues, io: OpsIo, fn: (target: Target) => Promise<T>): Promise<T> {
  if (io.target) return fn(io.target);
  const target = await openTarget(values, io);
  try {
    return await fn(target);
  } finally {
    target.destroy();
  }
}
