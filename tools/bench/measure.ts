/**
 * Measuring seams for the benchmark: SDK middleware that counts what the scheduler really sends
 * (requests by command, consumed capacity, refused conditional writes, empty vs non-empty
 * receives), fresh per-phase resources on one local stack, and small statistics helpers.
 * Nothing here estimates: every count comes from a request the SDK actually sent.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createClients, type Clients } from '../../shared/runtime/clients.js';
import { createQueues, createTables, localClientConfig, startLocalStack, type LocalEndpoints, type LocalStack } from '../local-stack.js';

/** The two servers of a local stack; every phase makes its own tables and queues on them. */
export interface StackBase extends Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint'> {
  /** DynamoDB Local's process id when the bench started it (for CPU accounting). */
  readonly dynamoPid?: number;
}

/**
 * Runs `fn` on a fresh local stack (a new DynamoDB Local JVM with no data), or on `shared` when
 * given (the smoke test reuses the test run's stack; rates then mean nothing, which smoke ignores).
 * DynamoDB Local gets slower as stream data accumulates across tables, so phases must not inherit
 * each other's data.
 */
export async function onFreshStack<T>(shared: StackBase | undefined, fn: (base: StackBase) => Promise<T>): Promise<T> {
  if (shared) return fn(shared);
  const stack = await startTrackedStack();
  try {
    return await fn({ dynamoEndpoint: stack.dynamoEndpoint, sqsEndpoint: stack.sqsEndpoint, dynamoPid: stack.dynamoPid });
  } finally {
    await stopTrackedStack(stack);
  }
}

const runningStacks = new Set<LocalStack>();

/** A local stack the bench remembers until it is stopped, so an interrupted bench can stop it (stopAllStacks). */
export async function startTrackedStack(): Promise<LocalStack> {
  const stack = await startLocalStack();
  runningStacks.add(stack);
  return stack;
}

export async function stopTrackedStack(stack: LocalStack): Promise<void> {
  runningStacks.delete(stack);
  await stack.stop();
}

/** Stops every stack the bench started and has not stopped yet (SIGINT/SIGTERM in the CLI). */
export async function stopAllStacks(): Promise<void> {
  const stacks = [...runningStacks];
  runningStacks.clear();
  await Promise.all(stacks.map((stack) => stack.stop().catch(() => undefined)));
}

/** DynamoDB commands that write (a TransactWriteItems or BatchWriteItem is one request). */
export const DYNAMO_WRITE_COMMANDS = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);
export const DYNAMO_READ_COMMANDS = new Set([
  'GetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetItemCommand',
  'TransactGetItemsCommand',
]);

interface CapacityEntry {
  readonly CapacityUnits?: number;
  readonly WriteCapacityUnits?: number;
  readonly ReadCapacityUnits?: number;
}

function capacityOf(consumed: unknown): number {
  const entries = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) as CapacityEntry[];
  return entries.reduce((sum, entry) => sum + (entry.CapacityUnits ?? (entry.WriteCapacityUnits ?? 0) + (entry.ReadCapacityUnits ?? 0)), 0);
}

/**
 * Counts DynamoDB commands by name and asks DynamoDB for the capacity each one consumed
 * (ReturnConsumedCapacity: 'INDEXES': the total, table plus indexes, is summed into write and read
 * units; key-load.ts reads the split).
 * Conditional writes DynamoDB refused are counted apart: the SDK error carries no capacity.
 */
export class DynamoMeter {
  private counts = new Map<string, number>();
  /** Wall time from send to answer, summed per command (SDK + network + DynamoDB Local). */
  private wallMs = new Map<string, number>();
  writeUnits = 0;
  readUnits = 0;
  /** Items written, counting each item of a transaction or batch. */
  writeItems = 0;
  refusedConditionalWrites = 0;
  errors = 0;

  attach(client: Pick<DynamoDBDocumentClient, 'middlewareStack'>): this {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? 'unknown';
        this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
        const input = args.input as Record<string, unknown>;
        const isWrite = DYNAMO_WRITE_COMMANDS.has(name);
        const isRead = DYNAMO_READ_COMMANDS.has(name);
        if (isWrite || isRead) input.ReturnConsumedCapacity = 'INDEXES';
        if (isWrite) this.writeItems += itemsIn(name, input);
        const sentAt = performance.now();
        const took = () => this.wallMs.set(name, (this.wallMs.get(name) ?? 0) + performance.now() - sentAt);
        try {
          const result = await next(args);
          took();
          const units = capacityOf((result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity);
          if (isWrite) this.writeUnits += units;
          else if (isRead) this.readUnits += units;
          return result;
        } catch (error) {
          took();
          const errorName = (error as { name?: string }).name;
          if (errorName === 'ConditionalCheckFailedException' || errorName === 'TransactionCanceledException')
            this.refusedConditionalWrites++;
          else this.errors++;
          throw error;
        }
      },
      { step: 'initialize', name: `bench-dynamo-meter-${randomUUID()}` },
    );
    return this;
  }

  byCommand(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort());
  }

  /** Mean ms from send to answer per command. */
  meanLatencyMs(): Record<string, number> {
    return Object.fromEntries(
      [...this.wallMs.entries()].sort().map(([name, ms]) => [name, round(ms / Math.max(1, this.counts.get(name) ?? 1), 2)]),
    );
  }

  get writes(): number {
    return sum([...this.counts].filter(([name]) => DYNAMO_WRITE_COMMANDS.has(name)).map(([, n]) => n));
  }

  get reads(): number {
    return sum([...this.counts].filter(([name]) => DYNAMO_READ_COMMANDS.has(name)).map(([, n]) => n));
  }

  get requests(): number {
    return sum([...this.counts.values()]);
  }

  snapshot(): DynamoSnapshot {
    return {
      byCommand: this.byCommand(),
      meanLatencyMs: this.meanLatencyMs(),
      requests: this.requests,
      writes: this.writes,
      reads: this.reads,
      writeItems: this.writeItems,
      writeUnits: this.writeUnits,
      readUnits: this.readUnits,
      refusedConditionalWrites: this.refusedConditionalWrites,
      errors: this.errors,
    };
  }

  reset(): void {
    this.counts = new Map();
    this.wallMs = new Map();
    this.writeUnits = this.readUnits = this.writeItems = this.refusedConditionalWrites = this.errors = 0;
  }
}

export interface DynamoSnapshot {
  readonly byCommand: Record<string, number>;
  readonly meanLatencyMs: Record<string, number>;
  readonly requests: number;
  readonly writes: number;
  readonly reads: number;
  readonly writeItems: number;
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly refusedConditionalWrites: number;
  readonly errors: number;
}

function itemsIn(name: string, input: Record<string, unknown>): number {
  if (name === 'TransactWriteItemsCommand') return (input.TransactItems as unknown[] | undefined)?.length ?? 1;
  if (name === 'BatchWriteItemCommand') {
    return sum(Object.values((input.RequestItems as Record<string, unknown[]> | undefined) ?? {}).map((list) => list.length));
  }
  return 1;
}

/** The scheduler's own SQS calls; the poller's Receive/Delete belong to the event source mapping. */
export const SCHEDULER_SQS_COMMANDS = new Set([
  'SendMessageCommand',
  'SendMessageBatchCommand',
  'ChangeMessageVisibilityCommand',
  'ChangeMessageVisibilityBatchCommand',
]);

/** Counts SQS commands by name; a ReceiveMessage that returned nothing is counted apart. */
export class SqsMeter {
  private counts = new Map<string, number>();
  emptyReceives = 0;
  messagesSent = 0;

  attach(client: Pick<SQSClient, 'middlewareStack'>): this {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? 'unknown';
        const input = args.input as { Entries?: unknown[] };
        const result = await next(args);
        this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
        if (name === 'SendMessageBatchCommand') this.messagesSent += input.Entries?.length ?? 0;
        if (name === 'SendMessageCommand') this.messagesSent += 1;
        if (name === 'ReceiveMessageCommand' && ((result.output as { Messages?: unknown[] }).Messages ?? []).length === 0)
          this.emptyReceives++;
        return result;
      },
      { step: 'initialize', name: `bench-sqs-meter-${randomUUID()}` },
    );
    return this;
  }

  byCommand(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort());
  }

  get schedulerCalls(): number {
    return sum([...this.counts].filter(([name]) => SCHEDULER_SQS_COMMANDS.has(name)).map(([, n]) => n));
  }

  /** Receives that returned messages plus deletes: what the event source mapping spends per run. */
  get eventSourceCalls(): number {
    return (
      (this.counts.get('ReceiveMessageCommand') ?? 0) -
      this.emptyReceives +
      (this.counts.get('DeleteMessageBatchCommand') ?? 0) +
      (this.counts.get('DeleteMessageCommand') ?? 0)
    );
  }

  reset(): void {
    this.counts = new Map();
    this.emptyReceives = 0;
    this.messagesSent = 0;
  }
}

/** Fresh ledger/payments tables and run/DLQ queues on a running local stack, so phases never interfere. */
export async function freshResources(
  base: StackBase,
  label: string,
  options: { visibilityTimeoutSeconds?: number; maxReceiveCount?: number } = {},
): Promise<LocalEndpoints> {
  const clients = benchClients(base);
  try {
    const suffix = `${label}-${randomUUID().slice(0, 8)}`;
    const tables = { ledgerTable: `bench-ledger-${suffix}`, paymentsTable: `bench-payments-${suffix}` };
    await createTables(clients.dynamo, tables);
    const queues = await createQueues(clients.sqs, { ...options, nameSuffix: `-${suffix}` });
    return { dynamoEndpoint: base.dynamoEndpoint, sqsEndpoint: base.sqsEndpoint, ...tables, ...queues };
  } finally {
    clients.dynamo.destroy();
    clients.sqs.destroy();
  }
}

/** Clients with exactly the settings the local runtime and worker processes use. */
export function benchClients(endpoints: StackBase): Clients {
  return createClients({ dynamo: localClientConfig(endpoints.dynamoEndpoint), sqs: localClientConfig(endpoints.sqsEndpoint) });
}

export function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : sum(values) / values.length;
}

export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns a value or `timeoutMs` passes (then throws naming `what`). */
export async function until<T>(probe: () => T | undefined, timeoutMs: number, what: string, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`bench: timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleepMs(everyMs);
  }
}

/** CPU used over an interval by this process (the bench, local SQS, pollers, workers) and by DynamoDB Local. */
export interface CpuUse {
  readonly wallMs: number;
  /** This Node process: SDK marshalling, planner/worker code, the in-process local SQS server. */
  readonly nodeCpuMs: number;
  /** DynamoDB Local's JVM (from /proc; undefined when its pid is unknown or /proc is absent). */
  readonly dynamoCpuMs: number | undefined;
}

function procCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of /proc/PID/stat, in clock ticks (USER_HZ = 100 on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

export function cpuProbe(dynamoPid: number | undefined): () => CpuUse {
  const wall = performance.now();
  const node = process.cpuUsage();
  const dynamo = procCpuMs(dynamoPid);
  return () => {
    const used = process.cpuUsage(node);
    const dynamoNow = procCpuMs(dynamoPid);
    return {
      wallMs: performance.now() - wall,
      nodeCpuMs: (used.user + used.system) / 1000,
      dynamoCpuMs: dynamo !== undefined && dynamoNow !== undefined ? dynamoNow - dynamo : undefined,
    };
  };
}
