/**
 * Splits a planner tick into its phases from inside the SDK clients (middleware, as the meters in
 * measure.ts count): when the first run put was sent and the last one answered, and the time spent
 * in the run queue's send calls. The planner runs on the product's own Ledger and RunQueue, with
 * every argument it passes (its tick id among them).
 *
 * Only calls made inside `time(...)` count (AsyncLocalStorage): in the end-to-end benchmark the
 * workers share the clients, and their own puts and lane hand-on sends are not the planner's.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** A put of a run item (createRun; the document client's middleware sees the low-level command): the planner's other writes are not run puts. */
function isRunPut(commandName: string | undefined, input: unknown): boolean {
  if (commandName !== 'PutItemCommand' || typeof input !== 'object' || input === null || !('Item' in input)) return false;
  const item = input.Item;
  return typeof item === 'object' && item !== null && 'runKey' in item;
}

export class PlannerPhases {
  private readonly scope = new AsyncLocalStorage<true>();
  /** When the first run put was sent and the last one answered (performance.now()). */
  firstPutAt: number | undefined;
  lastPutAt: number | undefined;
  puts = 0;
  /** Time spent in send calls, summed (they run beside the puts and beside each other). */
  sendMs = 0;
  lastSendAt: number | undefined;

  attach(clients: {
    readonly doc: Pick<DynamoDBDocumentClient, 'middlewareStack'>;
    readonly sqs: Pick<SQSClient, 'middlewareStack'>;
  }): this {
    clients.doc.middlewareStack.add(
      (next, context) => async (args) => {
        if (!this.scope.getStore() || !isRunPut(context.commandName, args.input)) return next(args);
        this.firstPutAt ??= performance.now();
        try {
          return await next(args);
        } finally {
          this.puts++;
          this.lastPutAt = performance.now();
        }
      },
      { step: 'initialize', name: `bench-planner-puts-${randomUUID()}` },
    );
    clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (!this.scope.getStore() || context.commandName !== 'SendMessageBatchCommand') return next(args);
        const start = performance.now();
        try {
          return await next(args);
        } finally {
          this.lastSendAt = performance.now();
          this.sendMs += this.lastSendAt - start;
        }
      },
      { step: 'initialize', name: `bench-planner-sends-${randomUUID()}` },
    );
    return this;
  }

  /** Runs `tick`, counting the calls it makes. */
  time<T>(tick: () => Promise<T>): Promise<T> {
    return this.scope.run(true, tick);
  }

  /** Forgets what was timed (before the measured tick of several). */
  reset(): void {
    this.firstPutAt = undefined;
    this.lastPutAt = undefined;
    this.puts = 0;
    this.sendMs = 0;
    this.lastSendAt = undefined;
  }
}
