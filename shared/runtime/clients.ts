/**
 * Wiring shared by the Lambda entry points and the local runtime: clients, adapters and the
 * planner/worker dependencies built from the environment (names in shared/core/resources.ts).
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { Ledger } from '../store/ledger.js';
import { RunQueue } from '../messaging/run-queue.js';
import { ENV } from '../core/resources.js';

export interface Clients {
  readonly dynamo: DynamoDBClient;
  readonly doc: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
}

export interface ClientOptions {
  readonly dynamo?: DynamoDBClientConfig;
  readonly sqs?: SQSClientConfig;
}

export function createClients(options: ClientOptions = {}): Clients {
  const dynamo = new DynamoDBClient(options.dynamo ?? {});
  const doc = DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } });
  return { dynamo, doc, sqs: new SQSClient(options.sqs ?? {}) };
}

/** Reads a required environment variable, naming it when it is missing. */
export function requireEnv(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (!value) throw new Error(`environment variable ${name} is not set`);
  return value;
}

/** An optional numeric environment variable; a value that is not a positive number is refused, naming it. */
function positiveNumberEnv(name: string, env: NodeJS.ProcessEnv): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`environment variable ${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

export interface Resources {
  readonly ledgerTable: string;
  readonly paymentsTable: string;
  readonly runQueueUrl: string;
  readonly retentionDays: number;
  /** Days outbox rows are kept (the worker's handlers stamp it on each row). */
  readonly outboxRetentionDays?: number;
}

export function resourcesFromEnv(env: NodeJS.ProcessEnv = process.env): Resources {
  return {
    ledgerTable: requireEnv(ENV.ledgerTable, env),
    paymentsTable: env[ENV.paymentsTable] ?? '',
    runQueueUrl: requireEnv(ENV.runQueueUrl, env),
    retentionDays: Number(env[ENV.runRetentionDays] ?? '30'),
    outboxRetentionDays: positiveNumberEnv(ENV.outboxRetentionDays, env),
  };
}

export function createAdapters(clients: Clients, resources: Resources): { ledger: Ledger; queue: RunQueue } {
  return {
    ledger: new Ledger(clients.doc, { tableName: resources.ledgerTable, retentionDays: resources.retentionDays }),
    queue: new RunQueue(clients.sqs, resources.runQueueUrl),
  };
}
