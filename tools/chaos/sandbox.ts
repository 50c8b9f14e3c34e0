/**
 * A drill iteration's own resources on shared local servers: a fresh ledger + payments table and
 * a fresh run queue + DLQ (same definitions as deployed), so iterations never see each other's
 * watermarks, runs or stray messages. `destroy` deletes them to keep DynamoDB Local small.
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteQueueCommand } from '@aws-sdk/client-sqs';
import { Ledger } from '../../shared/adapters/ledger.js';
import { RunQueue } from '../../shared/adapters/run-queue.js';
import { createClients, type Clients } from '../../shared/runtime.js';
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
