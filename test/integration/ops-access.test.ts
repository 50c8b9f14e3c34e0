/**
 * The operators' policy from the commands themselves: each ops command runs against the local
 * stack with SDK middleware recording every call (command, table or index, queue), and what it
 * called, mapped to IAM actions per resource, must be exactly its OPS_ACCESS row
 * (infra/iam-access.ts), from which the stack's OperatorPolicy is built. A command that starts
 * calling something new fails here until the row (and so the policy) says so.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPS_ACCESS, type OpsCommandName, type OpsResource } from '../../infra/iam-access.js';
import { DeployedConfigStore } from '../../shared/store/deployed-config.js';
import { messageFor } from '../../shared/core/run-message.js';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import type { Clients } from '../../shared/runtime/clients.js';
import { COMMANDS, runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { iamActionsOf } from '../infra/sdk-calls.js';
import { drain, testJobs, waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MINUTE = 60_000;
const NOW = Math.floor(Date.now() / MINUTE) * MINUTE;
const JOBS = testJobs([
  { name: 'alpha', schedule: '* * * * *', handler: 'noop', retry: { maxAttempts: 2 }, startLead: 0 },
  // Exclusive: resolving its run frees the lane and dispatches the next waiting run.
  { name: 'beta', schedule: '* * * * *', handler: 'noop', overlap: 'forbid-queue', startLead: 0 },
]);

type Recorded = Partial<Record<OpsResource, Set<string>>>;

/** Records every call of the target's clients as IAM actions on the resource it names. */
class CallRecorder {
  calls: Recorded = {};
  readonly strays: string[] = [];

  constructor(
    private readonly box: Sandbox,
    private readonly deadLetterQueueArn: string,
  ) {}

  private resourceOf(input: Record<string, unknown>): OpsResource | undefined {
    const e = this.box.endpoints;
    if (input.TableName === e.ledgerTable) return input.IndexName === undefined ? 'ledgerTable' : 'openRunsIndex';
    // BatchGetItem names its tables as the keys of RequestItems.
    const batch = input.RequestItems as Record<string, unknown> | undefined;
    if (batch && Object.keys(batch).length === 1 && Object.keys(batch)[0] === e.ledgerTable) return 'ledgerTable';
    if (input.QueueUrl === e.runQueueUrl) return 'runQueue';
    if (input.QueueUrl === e.deadLetterQueueUrl || input.SourceArn === this.deadLetterQueueArn) return 'deadLetterQueue';
    return undefined;
  }

  private record(sdkPackage: string, command: string, input: Record<string, unknown>): void {
    const items = (input.TransactItems as Record<string, Record<string, unknown>>[] | undefined) ?? [];
    if (items.length > 0) {
      // A transaction: each item on its own table.
      for (const item of items) {
        for (const [kind, part] of Object.entries(item))
          this.add(this.resourceOf(part), iamActionsOf(sdkPackage, command, [kind]), command);
      }
      return;
    }
    this.add(this.resourceOf(input), iamActionsOf(sdkPackage, command), command);
  }

  private add(resource: OpsResource | undefined, actions: string[], command: string): void {
    if (!resource) {
      this.strays.push(command);
      return;
    }
    const set = (this.calls[resource] ??= new Set());
    for (const action of actions) set.add(action);
  }

  attach = (clients: Clients): void => {
    const hook =
      (sdkPackage: string) =>
      (next: (args: { input: object }) => Promise<unknown>, context: { commandName?: string }) =>
      async (args: { input: object }) => {
        this.record(sdkPackage, context.commandName ?? 'unknown', args.input as Record<string, unknown>);
        return next(args);
      };
    clients.dynamo.middlewareStack.add(hook('@aws-sdk/client-dynamodb') as never, { step: 'initialize', name: 'opsAccessRecorder' });
    clients.sqs.middlewareStack.add(hook('@aws-sdk/client-sqs') as never, { step: 'initialize', name: 'opsAccessRecorder' });
  };

  take(): Record<string, string[]> {
    const out = Object.fromEntries(Object.entries(this.calls).map(([resource, actions]) => [resource, [...actions].sort()]));
    this.calls = {};
    return out;
  }
}

/** The row's calls without the stack read (local targets have no CloudFormation stack). */
function expectedCalls(command: OpsCommandName): Record<string, string[]> {
  const { stack: _stack, ...calls } = OPS_ACCESS[command].calls as Partial<Record<OpsResource, readonly string[]>>;
  return Object.fromEntries(Object.entries(calls).map(([resource, actions]) => [resource, [...actions].sort()]));
}

describe('ops commands call exactly what OPS_ACCESS grants', () => {
  let box: Sandbox;
  let endpoints: string;
  let recorder: CallRecorder;
  const recorded = new Map<OpsCommandName, Record<string, Set<string>>>();
  const slot = { dead: NOW - 30 * MINUTE, succeeded: NOW - 29 * MINUTE, open: NOW - 28 * MINUTE };
  const key = (s: number) => runKeyOf('alpha', s, 0, 1);

  /** Runs one command line (exit 0 required) and adds its calls to the command's record. */
  async function ops(command: OpsCommandName, ...args: string[]): Promise<void> {
    const err: string[] = [];
    // The commands read the config the planner recorded (beforeAll), as against a deployed stack.
    const io: OpsIo = {
      stdout: () => undefined,
      stderr: (l) => err.push(l),
      now: () => NOW,
      checkoutJobs: JOBS,
      env: { USER: 'test' },
      instrument: recorder.attach,
    };
    const code = await runOps([command, ...args, '--endpoints', endpoints, '--json'], io);
    expect(code, `${command} ${args.join(' ')}: ${err.join(' | ')}`).toBe(0);
    const into = recorded.get(command) ?? {};
    for (const [resource, actions] of Object.entries(recorder.take())) for (const a of actions) (into[resource] ??= new Set()).add(a);
    recorded.set(command, into);
  }

  beforeAll(async () => {
    box = await sandbox({ maxReceiveCount: 1 });
    const { Attributes = {} } = await box.clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, AttributeNames: ['QueueArn'] }),
    );
    const deadLetterQueueArn = Attributes.QueueArn!;
    recorder = new CallRecorder(box, deadLetterQueueArn);
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-access-')), 'endpoints.json');
    // As the stack outputs give it: the DLQ's ARN, not the run queue's (redrive looks that one up).
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1, deadLetterQueueArn }));
    await DeployedConfigStore.of(box.ledger).recordIfChanged(JOBS, NOW);

    for (const s of Object.values(slot))
      await box.ledger.createRun({ job: 'alpha', slot: s, shard: 0, shards: 1, status: RunStatus.READY }, s);
    const claim = async (s: number) => {
      const claimed = await box.ledger.claim({ job: 'alpha', slot: s, shard: 0 }, 'w', s + 1_000, 30_000, 2_000);
      if (claimed.kind !== 'claimed') throw new Error(claimed.kind);
      return claimed.run;
    };
    await box.ledger.complete(
      await claim(slot.dead),
      { status: RunStatus.DEAD, lastError: { code: 'E', message: 'gave up' } },
      slot.dead + 2_000,
    );
    await box.ledger.complete(await claim(slot.succeeded), { status: RunStatus.SUCCEEDED }, slot.succeeded + 2_000);
    // The DEAD run's and the SUCCEEDED run's messages reach the DLQ (maxReceiveCount 1).
    for (const s of [slot.dead, slot.succeeded]) {
      await box.clients.sqs.send(
        new SendMessageCommand({
          QueueUrl: box.endpoints.runQueueUrl,
          MessageBody: JSON.stringify(messageFor({ job: 'alpha', slot: s, shard: 0, runKey: key(s) })),
        }),
      );
    }
    expect(await drain(box.clients.sqs, box.endpoints.runQueueUrl, { expected: 2, visibilityTimeoutSeconds: 1 })).toHaveLength(2);
    await waitFor(
      async () => {
        const { Attributes: a = {} } = await box.clients.sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
        );
        return Number(a.ApproximateNumberOfMessages) === 2 ? true : undefined;
      },
      10_000,
      'two messages in the DLQ',
    );

    // Every command, through the paths an operator takes.
    await ops('status');
    await ops('status', '--since', '2h');
    await ops('jobs');
    await ops('jobs', '--job', 'alpha');
    await ops('runs', '--job', 'alpha');
    await ops('runs', '--job', 'alpha', '--state', 'DEAD,READY', '--since', '2h', '--limit', '1');
    await ops('show', key(slot.open));
    await ops('pause', 'alpha');
    await ops('pause', 'alpha');
    await ops('resume', 'alpha');
    await ops(
      'backfill',
      'alpha',
      '--from',
      new Date(NOW - 10 * MINUTE).toISOString(),
      '--to',
      new Date(NOW - 7 * MINUTE).toISOString(),
      '--dry-run',
    );
    await ops(
      'backfill',
      'alpha',
      '--from',
      new Date(NOW - 10 * MINUTE).toISOString(),
      '--to',
      new Date(NOW - 7 * MINUTE).toISOString(),
      '--max-per-second',
      '100',
    );
    // A junk message deleted by id (before the move task runs, which would move it back).
    const junk = await box.clients.sqs.send(new SendMessageCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, MessageBody: 'junk' }));
    await ops('redrive', '--drop', junk.MessageId!);
    await ops('redrive', '--dry-run');
    await ops('redrive', '--max-per-second', '50');
    await ops('resolve', key(slot.open), '--as', 'dead', '--reason', 'not needed');
    // An exclusive job's run, holding its lane, with the next run waiting behind it.
    const beta = (s: number) => ({ job: 'beta', slot: s, shard: 0 });
    for (const s of [slot.dead, slot.succeeded]) await box.ledger.createRun({ ...beta(s), shards: 1, status: RunStatus.READY }, s);
    await box.ledger.lanes.acquire('beta', { slot: slot.dead, shard: 0 }, slot.dead);
    await ops('resolve', runKeyOf('beta', slot.dead, 0, 1), '--as', 'succeeded', '--reason', 'done by hand');
    await ops('retry', key(slot.open), '--dry-run');
    await ops('retry', '--job', 'alpha', '--state', 'DEAD');
    await ops('trigger', 'alpha', '--note', 'access check');
  }, 600_000);
  afterAll(() => box.destroy());

  it('every call names a resource of the stack', () => {
    expect(recorder.strays).toEqual([]);
  });

  it.each(Object.keys(OPS_ACCESS) as OpsCommandName[])('%s', (command) => {
    const calls = Object.fromEntries(
      Object.entries(recorded.get(command) ?? {}).map(([resource, actions]) => [resource, [...actions].sort()]),
    );
    expect(calls).toEqual(expectedCalls(command));
  });

  it("every command of the CLI has a row (preview reads no stack), so none is left out of the operators' policy", () => {
    expect(Object.keys(OPS_ACCESS).sort()).toEqual(
      Object.keys(COMMANDS)
        .filter((c) => c !== 'preview')
        .sort(),
    );
  });

  it('every command but preview reads the stack outputs first, which is its only CloudFormation call', () => {
    for (const access of Object.values(OPS_ACCESS)) expect(access.calls.stack).toEqual(['cloudformation:DescribeStacks']);
    expect(Object.keys(OPS_ACCESS)).not.toContain('preview');
  });
});
