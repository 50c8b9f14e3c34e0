/**
 * Least privilege from the code: the SDK calls each Lambda entry can reach (test/infra/sdk-calls.ts,
 * a call graph over the TypeScript sources) must be exactly FUNCTION_ACCESS's rows, and the
 * synthesized roles must grant exactly those rows (plus the service rows) on exactly those
 * resources. A new call in the code fails here until infra/iam-access.ts names it; a call that
 * goes away fails here until its grant goes too.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { FUNCTION_ACCESS, SDK_CALLERS, type SchedulerFunction } from '../../infra/iam-access.js';
import type { SchedulerStack } from '../../infra/scheduler-stack.js';
import { iamActionsOf, sdkCallsOf, type SdkCall } from './sdk-calls.js';
import { iamStatements, schedulerApp, statementsOfRole } from './support.js';

type Access = Record<string, string[]>;

function sorted(access: Record<string, Iterable<string>>): Access {
  return Object.fromEntries(
    Object.entries(access)
      .map(([resource, actions]) => [resource, [...new Set(actions)].sort()] as const)
      .filter(([, actions]) => actions.length > 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

/** The calls by resource (SDK_CALLERS says where each class's calls go) and IAM action. */
function derive(calls: readonly SdkCall[]): { access: Access; unplaced: string[] } {
  const access: Record<string, string[]> = {};
  const unplaced: string[] = [];
  for (const call of calls) {
    const target = SDK_CALLERS[call.caller];
    if (!target) {
      unplaced.push(`${call.command} in ${call.caller} (${call.at}): add ${call.caller} to SDK_CALLERS`);
      continue;
    }
    if (call.onIndex && target !== 'ledger') {
      unplaced.push(`${call.command} on an index in ${call.caller} (${call.at}): only the ledger's open-runs index is granted`);
      continue;
    }
    const resource = target === 'ledger' ? (call.onIndex ? 'openRunsIndex' : 'ledgerTable') : target;
    (access[resource] ??= []).push(...iamActionsOf(call.sdkPackage, call.command, call.transactItems));
  }
  return { access: sorted(access), unplaced };
}

const FUNCTIONS = Object.keys(FUNCTION_ACCESS) as SchedulerFunction[];

describe('IAM actions derived from the code (infra/iam-access.ts)', () => {
  let calls: Map<string, SdkCall[]>;
  beforeAll(() => {
    calls = sdkCallsOf([...FUNCTIONS.map((fn) => FUNCTION_ACCESS[fn].entry), 'test/infra/fixtures/sdk-calls-entry.ts']);
  });

  it('finds calls through classes, interfaces and module code, reads transaction items and index queries, and skips methods nothing calls', () => {
    const found = calls
      .get('test/infra/fixtures/sdk-calls-entry.ts')!
      .map(
        (call) =>
          `${call.caller} ${call.command}${call.onIndex ? ' on index' : ''}: ${iamActionsOf(call.sdkPackage, call.command, call.transactItems).join(' ')}`,
      )
      .sort();
    expect(found).toEqual([
      // Through the Store interface: the ConditionCheck and the Update of the transaction.
      'FixtureStore QueryCommand on index: dynamodb:Query',
      'FixtureStore TransactWriteCommand: dynamodb:ConditionCheckItem dynamodb:UpdateItem',
      'test/infra/fixtures/sdk-calls-entry.ts SendMessageBatchCommand: sqs:SendMessage',
      // No ScanCommand: `everything()` is never called.
    ]);
  });

  it('names a class whose SDK calls have no resource yet', () => {
    const { unplaced } = derive(calls.get('test/infra/fixtures/sdk-calls-entry.ts')!);
    expect(unplaced.length).toBeGreaterThan(0);
    expect(unplaced[0]).toMatch(/in FixtureStore \(test\/infra\/fixtures\/sdk-calls-entry\.ts:\d+\): add FixtureStore to SDK_CALLERS/);
  });

  it.each(FUNCTIONS)('%s: the calls its bundle can make are exactly its FUNCTION_ACCESS code rows', (fn) => {
    const { access, unplaced } = derive(calls.get(FUNCTION_ACCESS[fn].entry)!);
    expect(unplaced).toEqual([]);
    expect(access).toEqual(sorted(FUNCTION_ACCESS[fn].code));
  });

  it('the planner queries the open-runs index (watch sweep) and the table (window sweep of due jobs)', () => {
    const planner = calls.get(FUNCTION_ACCESS.planner.entry)!.filter((call) => call.command === 'QueryCommand');
    expect(planner.some((call) => call.onIndex)).toBe(true);
    expect(planner.some((call) => !call.onIndex)).toBe(true);
  });
});

describe('IAM actions granted by the stack', () => {
  let stack: SchedulerStack;
  let template: Template;
  beforeAll(() => {
    // With the example jobs, so that a business table (payments) is granted too.
    stack = schedulerApp({ exampleJobs: true }).stack;
    template = Template.fromStack(stack);
  });

  /** Actions granted to a role by resource (resolved ARN as JSON), logs excluded. */
  function granted(rolePrefix: string): Access {
    const byResource: Record<string, string[]> = {};
    for (const s of statementsOfRole(template, rolePrefix).filter((st) => st.effect === 'Allow')) {
      const actions = s.actions.filter((a) => !a.startsWith('logs:') && !a.startsWith('kms:'));
      for (const resource of s.resources) (byResource[JSON.stringify(resource)] ??= []).push(...actions);
    }
    return sorted(byResource);
  }

  const arn = (value: string) => JSON.stringify(stack.resolve(value));

  it('planner: its code rows and its failure destination, each on its resource', () => {
    const { code, service } = FUNCTION_ACCESS.planner;
    expect(granted('PlannerRole')).toEqual(
      sorted({
        [arn(stack.ledger.table.tableArn)]: code.ledgerTable,
        [arn(stack.ledger.openRunsIndexArn)]: code.openRunsIndex,
        [arn(stack.runQueues.runQueue.queueArn)]: code.runQueue,
        [arn(stack.planner.failureQueue.queueArn)]: service.plannerFailureQueue,
      }),
    );
  });

  it("worker: its own and its handlers' rows on the ledger, the handlers' rows on each business table, code + event source rows on the run queue", () => {
    const { code, service } = FUNCTION_ACCESS.worker;
    expect(granted('WorkerRole')).toEqual(
      sorted({
        [arn(stack.ledger.table.tableArn)]: [...code.ledgerTable, ...code.handlerTables],
        [arn(stack.payments!.table.tableArn)]: code.handlerTables,
        [arn(stack.runQueues.runQueue.queueArn)]: [...code.runQueue, ...service.runQueue],
      }),
    );
  });

  it('outbox relay: PutEvents on the bus, the stream event source rows, SendMessage on its failure queue', () => {
    const { code, service } = FUNCTION_ACCESS.outboxRelay;
    expect(granted('OutboxRelayRole')).toEqual(
      sorted({
        [arn(stack.outboxRelay.eventBus.eventBusArn)]: code.eventBus,
        [arn(stack.ledger.table.tableStreamArn!)]: service.ledgerStream,
        [JSON.stringify('*')]: service.allStreams,
        [arn(stack.outboxRelay.failureQueue.queueArn)]: service.relayFailureQueue,
      }),
    );
  });

  it('no role holds an action FUNCTION_ACCESS does not list (no GetQueueUrl, no ConditionCheckItem, no Scan)', () => {
    const listed = new Set(
      FUNCTIONS.flatMap(
        (fn) => [...Object.values(FUNCTION_ACCESS[fn].code), ...Object.values(FUNCTION_ACCESS[fn].service)].flat() as string[],
      ),
    );
    const roleActions = iamStatements(template)
      .filter((s) => !s.policy.startsWith('Operators'))
      .flatMap((s) => s.actions)
      .filter((a) => !a.startsWith('logs:') && !a.startsWith('kms:'));
    expect(roleActions.filter((a) => !listed.has(a))).toEqual([]);
    for (const absent of ['sqs:GetQueueUrl', 'dynamodb:Scan']) expect(roleActions).not.toContain(absent);
    // ConditionCheckItem only where a transaction has a ConditionCheck: the worker's lane takeover.
    const planner = iamStatements(template)
      .filter((s) => s.policy.startsWith('Planner'))
      .flatMap((s) => s.actions);
    expect(planner).not.toContain('dynamodb:ConditionCheckItem');
  });
});
