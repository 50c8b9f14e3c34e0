/**
 * A drill iteration's own resources on shared local servers: a fresh ledger + payments table and
 * a fresh run queue + DLQ (same definitions as deployed), so iterations never see each other's
 * watermarks, runs or stray messages. `destroy` deletes them to keep DynamoDB Local small.
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteQueueCommand } from '@aws-sdk/client-sqs';
import { Ledger } from '../../shared/store/ledger.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import { createClients, type Clients } from '../../shared/runtime/clients.js';
import { createQueues, createTables, localClientConfig, type LocalEndpoints } from '../local-stack.js';

export interface SandboxOptions {
  /** Queue visibility timeout, seconds. @default 30 */
  readonly visibilityTimeoutSeconds?: number;
  /** @default 10 */
  readonly maxReceiveCount?: number;
}

export interface ChaosSandbox {
  readonly endpoints: LocalEndpoints;
  readonly clients: Clients;
  readonly ledger: Ledger;
  readonly queue: RunQueue;
  destroy(): Promise<void>;
}

export function clientsFor(endpoints: Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint'>): Clients {
  return createClients({ dynamo: localClientConfig(endpoints.dynamoEndpoint), sqs: localClientConfig(endpoints.sqsEndpoint) });
}

export async function createSandbox(base: LocalEndpoints, options: SandboxOptions = {}): Promise<ChaosSandbox> {
  const clients = clientsFor(base);
  const suffix = randomUUID().slice(0, 8);
  const tables = { ledgerTable: `chaos-ledger-${suffix}`, paymentsTable: `chaos-payments-${suffix}` };
  await createTables(clients.dynamo, tables);
  const queues = await createQueues(clients.sqs, {
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
    maxReceiveCount: options.maxReceiveCount ?? 10,
    nameSuffix: `-chaos-${suffix}`,
  });
  const endpoints: LocalEndpoints = { ...base, ...tables, ...queues };
  return {
    endpoints,
    clients,
    ledger: new Ledger(clients.doc, { tableName: tables.ledgerTable }),
    queue: new RunQueue(clients.sqs, queues.runQueueUrl),
    async destroy() {
      await Promise.allSettled([
        clients.dynamo.send(new DeleteTableCommand({ TableName: tables.ledgerTable })),
        clients.dynamo.send(new DeleteTableCommand({ TableName: tables.paymentsTable })),
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queues.runQueueUrl })),
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queues.deadLetterQueueUrl })),
      ]);
      clients.dynamo.destroy();
      clients.sqs.destroy();
    },
  };
}

/**
 * A fresh DynamoDB Local answers its first few hundred calls several times slower (JIT): warm it
 * (and the local SQS) up before a drill whose facts are about timing.
 */
export async function warmUp(base: LocalEndpoints, operations = 400): Promise<void> {
  const { PutCommand, GetCommand, UpdateCommand, QueryCommand } = await import('@aws-sdk/lib-dynamodb');
  const { SendMessageCommand, ReceiveMessageCommand } = await import('@aws-sdk/client-sqs');
  const box = await createSandbox(base);
  try {
    const table = box.endpoints.ledgerTable;
    await Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        for (let i = lane; i < operations; i += 8) {
          const key = { pk: `warm-${i % 20}`, sk: String(i) };
          await box.clients.doc.send(
            new PutCommand({ TableName: table, Item: { ...key, v: i }, ConditionExpression: 'attribute_not_exists(pk)' }),
          );
          await box.clients.doc.send(
            new UpdateCommand({
              TableName: table,
              Key: key,
              UpdateExpression: 'SET v = v + :one',
              ExpressionAttributeValues: { ':one': 1 },
            }),
          );
          await box.clients.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }));
          if (i % 10 === 0)
            await box.clients.doc.send(
              new QueryCommand({ TableName: table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': key.pk } }),
            );
          if (i % 4 === 0)
            await box.clients.sqs.send(new SendMessageCommand({ QueueUrl: box.endpoints.runQueueUrl, MessageBody: 'warm-up' }));
        }
      }),
    );
    await box.clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: box.endpoints.runQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
  } finally {
    await box.destroy();
  }
}
