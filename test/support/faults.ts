/**
 * Faults a local server cannot produce, as middleware on a real client: the request reaches
 * DynamoDB Local and commits, then the caller sees the connection drop (the SDK's retry strategy
 * decides whether to send it again), or the call is refused before it is sent.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { localClientConfig } from '../../tools/local-stack.js';

export interface FaultRule {
  /** Which calls: the low-level command name (PutItemCommand, UpdateItemCommand, TransactWriteItemsCommand…) and its input. */
  readonly when: (command: string, input: Record<string, unknown>) => boolean;
  /** `lost-response`: commit, then fail; `refused`: fail before sending (a throttle past the SDK's retries). */
  readonly fault: 'lost-response' | 'refused';
  /** How many matching calls get the fault. @default 1 */
  times?: number;
}

export interface FaultyClient {
  readonly doc: DynamoDBDocumentClient;
  readonly dynamo: DynamoDBClient;
  /** Calls that got a fault, by command name. */
  readonly injected: string[];
  /** Every call that matched a rule's `when`, faulted or not (an SDK retry counts again). */
  readonly matched: string[];
  destroy(): void;
}

/** A document client on `endpoint` that injects `rules`; the SDK retries up to `maxAttempts`. */
export function faultyClient(endpoint: string, rules: FaultRule[], maxAttempts = 3): FaultyClient {
  const dynamo = new DynamoDBClient({ ...localClientConfig(endpoint), maxAttempts });
  const injected: string[] = [];
  const matched: string[] = [];
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? '';
      const input = args.input as Record<string, unknown>;
      const rule = rules.find((r) => r.when(command, input));
      if (!rule) return next(args);
      matched.push(command);
      if ((rule.times ?? 1) <= 0) return next(args);
      rule.times = (rule.times ?? 1) - 1;
      injected.push(command);
      if (rule.fault === 'refused') {
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
          name: 'ThrottlingException',
          $metadata: { httpStatusCode: 400 },
          $retryable: { throttling: true },
        });
      }
      await next(args);
      // The write is committed; the caller only sees the connection go away.
      throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
    },
    // Inside the retry loop: the SDK's retry strategy sees the error and sends the request again.
    { step: 'deserialize', name: `fault-${Math.random()}` },
  );
  const doc = DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } });
  return { doc, dynamo, injected, matched, destroy: () => dynamo.destroy() };
}

/** Sees one call (its low-level command name and input) and answers it itself or calls `next`. */
export type Middleware = (
  command: string,
  input: Record<string, unknown>,
  next: () => Promise<{ output: Record<string, unknown> }>,
) => Promise<{ output: Record<string, unknown> }>;

/**
 * A document client on DynamoDB Local with `middleware` on its low-level client (outermost step, no
 * SDK retries): a lagging replica, an unprocessed key, a refusal, or the call passed on as it is.
 */
export function clientWith(endpoint: string, middleware: Middleware, marshall = true): { doc: DynamoDBDocumentClient; destroy(): void } {
  const dynamo = new DynamoDBClient({ ...localClientConfig(endpoint), maxAttempts: 1 });
  dynamo.middlewareStack.add(
    (next, context) => async (args) =>
      (await middleware(context.commandName ?? '', args.input as Record<string, unknown>, async () => {
        const result = await next(args);
        return { ...result, output: { ...result.output } };
      })) as never,
    { step: 'initialize', name: `test-${Math.random()}` },
  );
  const doc = marshall
    ? DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } })
    : DynamoDBDocumentClient.from(dynamo);
  return { doc, destroy: () => dynamo.destroy() };
}
