/**
 * The one table of what each scheduler function, and each ops command, may do on which resource.
 * The constructs grant from it and nothing else; test/infra/iam-access.test.ts derives the SDK
 * calls each Lambda's code can make (and records the calls each ops command makes) and requires
 * them to match it exactly. A code change that adds a call fails that test until a row here says
 * so, instead of failing in AWS with AccessDenied; a call that goes away must leave the table too.
 *
 * Plain data (no aws-cdk-lib import), so docs and tests can read it without the CDK.
 */

/** Resources a function's code calls. */
export type CodeResource =
  /** The ledger table's items. */
  | 'ledgerTable'
  /** The ledger's open-runs index. */
  | 'openRunsIndex'
  /** Every table a handler writes through `ctx.fenced` / reads through `ctx.reader`: the ledger and each business table. */
  | 'handlerTables'
  | 'runQueue'
  | 'eventBus';

export interface FunctionAccess {
  /** The Lambda entry file. */
  readonly entry: string;
  /** What the function's own code calls (derived from the code by the test). */
  readonly code: Partial<Record<CodeResource, readonly string[]>>;
  /**
   * What AWS needs on the function's behalf (event source mapping, failure destination): not
   * called by the code, so not derivable from it; each is required by the service's documentation.
   */
  readonly service: Readonly<Record<string, readonly string[]>>;
}

export const FUNCTION_ACCESS = {
  planner: {
    entry: 'functions/planner.ts',
    code: {
      // Layout and exception lists (one BatchGet), job plans, createRun (conditional put), catch-up
      // cursors, watermark and sweep cursor, re-dispatch marks; the window sweep queries each due
      // job's runs of the window, and reads lane markers and holders of idle exclusive lanes.
      ledgerTable: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      // The watch sweep pages through its share of the open-runs index.
      openRunsIndex: ['dynamodb:Query'],
      // SendMessageBatch is authorized by sqs:SendMessage.
      runQueue: ['sqs:SendMessage'],
    },
    service: {
      // The asynchronous invocation's on-failure destination (a failed or expired tick).
      plannerFailureQueue: ['sqs:SendMessage'],
    },
  },
  worker: {
    entry: 'functions/worker.ts',
    code: {
      // Claim, heartbeat, completion, checkpoint, settle, watch (UpdateItem); lane markers (Update
      // to take, release and move the floor, an Update + ConditionCheck transaction to take one
      // from an ended holder); run reads, neighbour runs for the overlap policies; where the job's planning stands when pauseOnFailure pauses it (the planner
      // state items, read together).
      ledgerTable: ['dynamodb:BatchGetItem', 'dynamodb:ConditionCheckItem', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      // ctx.fenced put/update/transact (Put and Update items) and ctx.reader get/query.
      handlerTables: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
      // Heartbeats and retry hiding; dispatch of the next waiting run (forbid-queue, coalesce).
      runQueue: ['sqs:ChangeMessageVisibility', 'sqs:SendMessage'],
    },
    service: {
      // The SQS event source mapping (Lambda's documented execution-role permissions for SQS).
      runQueue: ['sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ReceiveMessage'],
    },
  },
  outboxRelay: {
    entry: 'functions/outbox-relay.ts',
    code: {
      eventBus: ['events:PutEvents'],
    },
    service: {
      // The DynamoDB stream event source mapping (CDK's grantStreamRead); ListStreams is on `*`.
      ledgerStream: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
      allStreams: ['dynamodb:ListStreams'],
      // The event source mapping's on-failure destination.
      relayFailureQueue: ['sqs:SendMessage'],
    },
  },
} as const satisfies Record<string, FunctionAccess>;

export type SchedulerFunction = keyof typeof FUNCTION_ACCESS;

/**
 * Which resource each adapter class's SDK calls land on. A Ledger call that names an index is on
 * the open-runs index (the ledger's only index). A class that makes SDK calls and is not listed
 * here fails the derivation test: say where its calls go first.
 */
export const SDK_CALLERS: Readonly<Record<string, 'ledger' | Exclude<CodeResource, 'ledgerTable' | 'openRunsIndex'>>> = {
  Ledger: 'ledger',
  // The run adapters' conditional updates of a run item (RunTable.updateRun, run-items.ts).
  RunTable: 'ledger',
  RunCreation: 'ledger',
  RunHolds: 'ledger',
  RunEndings: 'ledger',
  FencedOutNotes: 'ledger',
  RunQueries: 'ledger',
  WatchIndex: 'ledger',
  // The batch read the ledger's stores share (the envelope sends commands built by its callers).
  'shared/store/conditional.ts': 'ledger',
  LedgerOps: 'ledger',
  LaneStore: 'ledger',
  PlannerStore: 'ledger',
  DeployedConfigStore: 'ledger',
  DynamoFencedStore: 'handlerTables',
  DynamoItemReader: 'handlerTables',
  RunQueue: 'runQueue',
  EventBridgePublisher: 'eventBus',
};

/** Resources an ops command acts on. */
export type OpsResource = 'stack' | 'ledgerTable' | 'openRunsIndex' | 'runQueue' | 'deadLetterQueue';

export interface OpsCommandAccess {
  /** What the command's code calls, by resource (recorded by the test against the local stack). */
  readonly calls: Partial<Record<OpsResource, readonly string[]>>;
  /** What AWS checks on the caller's behalf beyond those calls, and why. */
  readonly implied?: { readonly grants: Partial<Record<OpsResource, readonly string[]>>; readonly why: string };
}

/** Every command against AWS first reads the stack's outputs. */
const READ_STACK = ['cloudformation:DescribeStacks'] as const;
/**
 * Every command with a target then reads the job config the planner recorded (GetItem of
 * CONFIG/#DEPLOYED and of its further chunks, tools/ops/job-config.ts): it acts on what is deployed.
 */

/**
 * What each ops command needs against a deployed stack (`preview` needs nothing: it touches no
 * AWS resource). The operators' managed policy (stack output OperatorPolicyArn) grants the union;
 * docs/operating.md lists them per command.
 */
export const OPS_ACCESS = {
  status: {
    calls: {
      stack: READ_STACK,
      // The deployed config (Get); the planner's layout and exception lists and the watched runs (BatchGet); each job's runs.
      ledgerTable: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'],
      openRunsIndex: ['dynamodb:Query'],
      deadLetterQueue: ['sqs:GetQueueAttributes'],
    },
  },
  // As status: the deployed config (Get), the planner's state and the watched runs (BatchGet), each job's runs (Query).
  jobs: {
    calls: {
      stack: READ_STACK,
      ledgerTable: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'],
      openRunsIndex: ['dynamodb:Query'],
    },
  },
  runs: { calls: { stack: READ_STACK, ledgerTable: ['dynamodb:GetItem', 'dynamodb:Query'] } },
  show: { calls: { stack: READ_STACK, ledgerTable: ['dynamodb:GetItem'] } },
  // The job's plan item and its exception list, read together and changed in one transaction.
  pause: { calls: { stack: READ_STACK, ledgerTable: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem'] } },
  resume: { calls: { stack: READ_STACK, ledgerTable: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem'] } },
  backfill: {
    calls: { stack: READ_STACK, ledgerTable: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query'], runQueue: ['sqs:SendMessage'] },
  },
  redrive: {
    calls: {
      stack: READ_STACK,
      ledgerTable: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      runQueue: ['sqs:GetQueueAttributes'],
      // DeleteMessage: `redrive --drop` deletes one junk message (the move task deletes the others).
      deadLetterQueue: [
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:ReceiveMessage',
        'sqs:StartMessageMoveTask',
      ],
    },
    implied: {
      grants: { deadLetterQueue: ['sqs:ListMessageMoveTasks'], runQueue: ['sqs:SendMessage'] },
      why: "the message move task started by StartMessageMoveTask receives and deletes on the DLQ and sends to the run queue with the caller's permissions; ListMessageMoveTasks shows its progress",
    },
  },
  // Closing an exclusive job's run frees its lane (Delete) and dispatches the next waiting run.
  resolve: {
    calls: { stack: READ_STACK, ledgerTable: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'], runQueue: ['sqs:SendMessage'] },
  },
  // Revive DEAD runs (one by key, or a job's by query) and send each a message.
  retry: {
    calls: { stack: READ_STACK, ledgerTable: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'], runQueue: ['sqs:SendMessage'] },
  },
  // One run now under its own millisecond run key (a conditional put), and its message.
  trigger: { calls: { stack: READ_STACK, ledgerTable: ['dynamodb:GetItem', 'dynamodb:PutItem'], runQueue: ['sqs:SendMessage'] } },
} as const satisfies Record<string, OpsCommandAccess>;

export type OpsCommandName = keyof typeof OPS_ACCESS;
