/**
 * Against AWS the ops CLI finds its resources in the stack's outputs, and which of the checkout's
 * configs to compare the deployed one with in the stack's `ExampleJobs` output, not in an
 * environment variable the operator must remember to set (an operator without EXAMPLE_JOBS=true
 * was told on every command that their checkout differs from a stack deployed with the example
 * jobs). CloudFormation has no local implementation: its one call is answered by
 * aws-sdk-client-mock; DynamoDB and SQS are the local stack's, reached through the SDK's
 * AWS_ENDPOINT_URL_<SERVICE> settings as the stack's real endpoints would be.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StackOutput } from '../../infra/outputs.js';
import { DeployedConfigStore } from '../../shared/store/deployed-config.js';
import { configuredJobDefinitions, loadJobs } from '../../shared/config.js';
import { runOps } from '../../tools/ops/cli.js';
import { OpsFailure, type OpsIo } from '../../tools/ops/io.js';
import { exampleJobsOutput } from '../../tools/ops/target.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const NOW = Date.UTC(2026, 11, 6, 12, 0, 30);
const cfn = mockClient(CloudFormationClient);
const ENV_KEYS = [
  'AWS_ENDPOINT_URL_DYNAMODB',
  'AWS_ENDPOINT_URL_SQS',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'EXAMPLE_JOBS',
] as const;

describe('ops against a stack', () => {
  let box: Sandbox;
  const saved = new Map<string, string | undefined>();

  beforeAll(async () => {
    box = await sandbox();
    for (const key of ENV_KEYS) saved.set(key, process.env[key]);
    process.env.AWS_ENDPOINT_URL_DYNAMODB = box.endpoints.dynamoEndpoint;
    process.env.AWS_ENDPOINT_URL_SQS = box.endpoints.sqsEndpoint;
    process.env.AWS_ACCESS_KEY_ID = 'local';
    process.env.AWS_SECRET_ACCESS_KEY = 'local';
    // The operator has not set it: the stack's output decides.
    delete process.env.EXAMPLE_JOBS;
    // What a stack deployed with -c exampleJobs=true runs, as its planner records it.
    await DeployedConfigStore.of(box.ledger).recordIfChanged(loadJobs(configuredJobDefinitions({ exampleJobs: true })), NOW);
  });

  afterAll(() => {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    box.destroy();
  });

  afterEach(() => {
    cfn.reset();
  });

  function stackWith(exampleJobs: string | undefined): void {
    const outputs: Record<string, string> = {
      [StackOutput.LedgerTableName]: box.endpoints.ledgerTable,
      [StackOutput.RunQueueUrl]: box.endpoints.runQueueUrl,
      [StackOutput.DeadLetterQueueUrl]: box.endpoints.deadLetterQueueUrl,
      ...(exampleJobs === undefined ? {} : { [StackOutput.ExampleJobs]: exampleJobs }),
    };
    cfn.on(DescribeStacksCommand).resolves({
      Stacks: [
        {
          StackName: 'Prod',
          CreationTime: new Date(NOW),
          StackStatus: 'CREATE_COMPLETE',
          Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })),
        },
      ],
    });
  }

  async function jobsCommand(): Promise<{ code: number; err: string[]; out: string[] }> {
    const out: string[] = [];
    const err: string[] = [];
    const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), now: () => NOW };
    const code = await runOps(['jobs', '--stack', 'Prod', '--region', 'eu-west-1'], io);
    return { code, err, out };
  }

  it("a stack whose ExampleJobs output is true is compared with the checkout's config with the example jobs: no warning, though EXAMPLE_JOBS is unset", async () => {
    stackWith('true');
    const { code, err, out } = await jobsCommand();
    expect(err).toEqual([]);
    expect(code).toBe(0);
    expect(out.join('\n')).toContain('payments-reconcile');
  });

  it('the same deployed config under a stack that says false is named as differing from the checkout (only deployed: the example jobs)', async () => {
    stackWith('false');
    const { code, err } = await jobsCommand();
    expect(code).toBe(0);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(/only deployed: .*cache-refresh/);
  });

  it('a stack from before the output leaves the choice to EXAMPLE_JOBS, as before', async () => {
    stackWith(undefined);
    process.env.EXAMPLE_JOBS = 'true';
    try {
      const { err } = await jobsCommand();
      expect(err).toEqual([]);
    } finally {
      delete process.env.EXAMPLE_JOBS;
    }
  });

  it("a local target's endpoints file says the same for --local and --endpoints (npm start writes exampleJobs: true)", async () => {
    for (const exampleJobs of [true, false]) {
      const file = join(mkdtempSync(join(tmpdir(), 'ops-examples-')), 'endpoints.json');
      writeFileSync(file, JSON.stringify({ ...box.endpoints, ...(exampleJobs ? { exampleJobs } : {}) }));
      for (const target of [['--endpoints', file], [`--endpoints=${file}`]]) {
        const err: string[] = [];
        const code = await runOps(['jobs', ...target], { stdout: () => undefined, stderr: (l) => err.push(l), now: () => NOW });
        expect(code).toBe(0);
        if (exampleJobs) expect(err, target.join(' ')).toEqual([]);
        else expect(err.join('\n'), target.join(' ')).toMatch(/only deployed: .*cache-refresh/);
      }
    }
  });

  it('an ExampleJobs output that is neither "true" nor "false" is an error naming the stack, the output and the value', () => {
    expect(() => exampleJobsOutput('Prod', 'yes')).toThrow(OpsFailure);
    expect(() => exampleJobsOutput('Prod', 'yes')).toThrow('stack "Prod" output ExampleJobs must be "true" or "false", got "yes"');
  });
});
