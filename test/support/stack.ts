/**
 * Per-test access to the shared local stack (started once by global-setup.ts): clients, and a
 * fresh table pair and queue pair per test file so files running side by side never share a
 * watermark, a run or a message.
 */
import { inject } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Ledger } from '../../shared/store/ledger.js';
import { LedgerOps } from '../../shared/store/repairs.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import { createClients, type Clients } from '../../shared/runtime/clients.js';
import { createQueues, createTables, localClientConfig, type LocalEndpoints } from '../../tools/local-stack.js';

export function sharedEndpoints(): LocalEndpoints {
  return inject('localStack');
}

export function localClients(endpoints: LocalEndpoints = sharedEndpoints()): Clients {
  return createClients({ dynamo: localClientConfig(endpoints.dynamoEndpoint), sqs: localClientConfig(endpoints.sqsEndpoint) });
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export interface Sandbox {
  readonly endpoints: LocalEndpoints;
  readonly clients: Clients;
  readonly ledger: Ledger;
  readonly queue: RunQueue;
  destroy(): void;
}

/** Fresh tables and queues (same definitions as deployed) on the shared local servers. */
export async function sandbox(options: { visibilityTimeoutSeconds?: number; maxReceiveCount?: number } = {}): Promise<Sandbox> {
  const shared = sharedEndpoints();
  const clients = localClients(shared);
  const suffix = randomUUID().slice(0, 8);
  const tables = { ledgerTable: `ledger-${suffix}`, paymentsTable: `payments-${suffix}` };
  // Tests run on fixed dates long past their runs' retention: no TTL sweep may delete them.
  await createTables(clients.dynamo, tables, { timeToLive: false });
  const queues = await createQueues(clients.sqs, { visibilityTimeoutSeconds: 30, ...options, nameSuffix: `-${suffix}` });
  const endpoints: LocalEndpoints = { ...shared, ...tables, ...queues };
  return {
    endpoints,
    clients,
    ledger: new Ledger(clients.doc, { tableName: tables.ledgerTable }),
    queue: new RunQueue(clients.sqs, queues.runQueueUrl),
    destroy: () => {
      clients.dynamo.destroy();
      clients.sqs.destroy();
    },
  };
}

/** A sandbox and the operators' store on its ledger: what the files driving operator commands set up alike. */
export async function opsSandbox(): Promise<{ readonly box: Sandbox; readonly ops: LedgerOps }> {
  const box = await sandbox();
  return { box, ops: new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable }) };
}
