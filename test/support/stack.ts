/**
 * Per-test access to the shared local stack: clients, adapters, and fresh queues/job names so
 * tests running side by side never see each other's runs or messages.
 */
import { inject } from 'vitest';
import { randomUUID } from 'node:crypto';
import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { Ledger } from '../../shared/adapters/ledger.js';
import { RunQueue } from '../../shared/adapters/run-queue.js';
import { createClients, type Clients } from '../../shared/runtime.js';
import { createQueues, localClientConfig, type LocalEndpoints } from '../../tools/local-stack.js';

export function endpoints(): LocalEndpoints {
  return inject('localStack');
}

export function localClients(): Clients {
  const e = endpoints();
  return createClients({ dynamo: localClientConfig(e.dynamoEndpoint), sqs: localClientConfig(e.sqsEndpoint) });
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export interface TestQueues {
  readonly runQueueUrl: string;
  readonly deadLetterQueueUrl: string;
}

/** A fresh run queue + DLQ pair (redrive policy as deployed), isolated from other tests. */
export function freshQueues(clients: Clients, options: { visibilityTimeoutSeconds?: number; maxReceiveCount?: number } = {}): Promise<TestQueues> {
  return createQueues(clients.sqs, { visibilityTimeoutSeconds: 30, ...options, nameSuffix: `-${randomUUID().slice(0, 8)}` });
}

export function ledgerFor(clients: Clients): Ledger {
  return new Ledger(clients.doc, { tableName: endpoints().ledgerTable });
}

export function queueFor(clients: Clients, url: string): RunQueue {
  return new RunQueue(clients.sqs, url);
}

export async function purge(clients: Clients, url: string): Promise<void> {
  await clients.sqs.send(new PurgeQueueCommand({ QueueUrl: url }));
}

