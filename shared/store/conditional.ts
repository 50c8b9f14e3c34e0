/**
 * The one envelope of every conditional write the store adapters send (DESIGN §12): a Put,
 * Update or Delete, or a TransactWrite, is sent, and the answer is a value, never an exception
 * to catch at the call site:
 *
 *   ok               the write committed (with the attributes it returned, when asked)
 *   ownCommit        its condition failed on the item as this very write left it: the SDK retried
 *                    a write whose response was lost after it committed (the write id says so)
 *   conditionFailed  its condition failed on someone else's item, handed back as it was at the
 *                    check (ReturnValuesOnConditionCheckFailure: ALL_OLD), never read again
 *
 * Any other error (throttling, a malformed request, an abort) is thrown as it came.
 */
import { TransactionCanceledException, type CancellationReason } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DeleteCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { mapBounded } from '../core/concurrency.js';
import { isConditionalCheckFailure, unmarshallFailureItem } from './failure-item.js';

export type Item = Record<string, unknown>;

/** Whether the item a failed check returned is the commit of this very write (a retry after a lost response). */
export type OwnCommitCheck = (current: Item) => boolean;

/** The usual check: the item carries this write's id (`lastWrite`, see write-id.ts). */
export function wroteBy(writeId: string): OwnCommitCheck {
  return (current) => current.lastWrite === writeId;
}

export type WriteResult =
  | { readonly kind: 'ok'; readonly attributes: Item | undefined }
  | { readonly kind: 'ownCommit'; readonly current: Item }
  | { readonly kind: 'conditionFailed'; readonly current: Item | undefined; readonly cause: unknown };

export interface WriteOptions {
  /** Recognises our own earlier commit in the item a failed check returns (absent: never). */
  readonly ownCommit?: OwnCommitCheck;
  /** Aborts the SDK call (the worker's attempt ended). */
  readonly abortSignal?: AbortSignal;
}

type ConditionalCommand = PutCommand | UpdateCommand | DeleteCommand;

/** Sends one conditional Put, Update or Delete (see the module's comment for the answers). */
export async function conditionalWrite(
  doc: DynamoDBDocumentClient,
  command: ConditionalCommand,
  options: WriteOptions = {},
): Promise<WriteResult> {
  try {
    const { Attributes } = await sendWrite(doc, command, options.abortSignal);
    return { kind: 'ok', attributes: Attributes };
  } catch (error) {
    if (!isConditionalCheckFailure(error)) throw error;
    const current = error.Item ? unmarshallFailureItem(error.Item) : undefined;
    if (current && options.ownCommit?.(current)) return { kind: 'ownCommit', current };
    return { kind: 'conditionFailed', current, cause: error };
  }
}

function sendWrite(
  doc: DynamoDBDocumentClient,
  command: ConditionalCommand,
  abortSignal: AbortSignal | undefined,
): Promise<{ readonly Attributes?: Item }> {
  const options = abortSignal ? [{ abortSignal }] : [];
  if (command instanceof PutCommand) return doc.send(command, ...options);
  if (command instanceof UpdateCommand) return doc.send(command, ...options);
  return doc.send(command, ...options);
}

/**
 * The item a refused write found (its own commit, or someone else's item). A refusal that
 * returned no item (the write asked for none, or there is no item) is thrown as it came.
 */
export function foundItem(result: Exclude<WriteResult, { readonly kind: 'ok' }>): Item {
  if (result.kind === 'ownCommit') return result.current;
  if (!result.current) throw result.cause;
  return result.current;
}

/** A transaction's reason of cancellation, its item (if returned) as plain values. */
export interface Cancellation {
  readonly code: string | undefined;
  readonly item: Item | undefined;
}

export type TransactResult =
  | { readonly kind: 'ok' }
  | { readonly kind: 'ownCommit' }
  /** One reason per TransactItems entry, in order; at least one is ConditionalCheckFailed. */
  | { readonly kind: 'conditionFailed'; readonly reasons: readonly Cancellation[]; readonly cause: TransactionCanceledException };

/**
 * Sends one TransactWrite. A cancellation with no failed condition among its reasons (a conflict
 * with another transaction, throttling) is thrown as it came: its caller decides whether to try
 * again. `ownCommit` is asked of each item a failed condition returned.
 */
export async function transactWrite(
  doc: DynamoDBDocumentClient,
  command: TransactWriteCommand,
  options: WriteOptions = {},
): Promise<TransactResult> {
  try {
    await doc.send(command, ...(options.abortSignal ? [{ abortSignal: options.abortSignal }] : []));
    return { kind: 'ok' };
  } catch (error) {
    if (!isCancellation(error)) throw error;
    const reasons = (error.CancellationReasons ?? []).map(cancellationOf);
    if (!reasons.some(failedCondition)) throw error;
    const own = options.ownCommit;
    if (own && reasons.some((r) => failedCondition(r) && r.item !== undefined && own(r.item))) return { kind: 'ownCommit' };
    return { kind: 'conditionFailed', reasons, cause: error };
  }
}

function cancellationOf(reason: CancellationReason): Cancellation {
  return { code: reason.Code, item: reason.Item ? unmarshallFailureItem(reason.Item) : undefined };
}

/** The reason is a failed condition (not a conflict, not "None" for an entry that passed). */
export function failedCondition(reason: Cancellation | undefined): boolean {
  return reason?.code === 'ConditionalCheckFailed';
}

export function isCancellation(error: unknown): error is TransactionCanceledException {
  return error instanceof TransactionCanceledException || (error as { name?: string })?.name === 'TransactionCanceledException';
}

/** A transaction cancelled only because a concurrent one touched the same items: worth trying again. */
export function isTransactionConflict(error: unknown): boolean {
  return isCancellation(error) && (error.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict');
}

/**
 * Consistent BatchGet of any keys of one table: 100 keys per call, 8 calls at once, unprocessed
 * keys (throttling) asked again after a backoff. Missing items are left out; the order is the
 * store's.
 */
export async function batchGetAll(doc: DynamoDBDocumentClient, tableName: string, keys: readonly Item[]): Promise<Item[]> {
  const chunks = Array.from({ length: Math.ceil(keys.length / 100) }, (_, i) => keys.slice(i * 100, i * 100 + 100));
  return (await mapBounded(chunks, 8, (chunk) => batchGetChunk(doc, tableName, chunk))).flat();
}

async function batchGetChunk(doc: DynamoDBDocumentClient, tableName: string, keys: readonly Item[]): Promise<Item[]> {
  const out: Item[] = [];
  let pending: Item[] = [...keys];
  for (let round = 0; pending.length > 0; round++) {
    const { Responses = {}, UnprocessedKeys = {} } = await doc.send(
      new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } } }),
    );
    out.push(...(Responses[tableName] ?? []));
    pending = (UnprocessedKeys[tableName]?.Keys as Item[] | undefined) ?? [];
    if (pending.length > 0) await new Promise((r) => setTimeout(r, Math.min(1_000, 25 * 2 ** round)));
  }
  return out;
}

/**
 * The pages of one Query of a table (not an index), in order. A page is sent only when the loop
 * over them asks for the next one: a reader that has what it needs leaves its `for await` loop
 * and no further request goes out. `pageLimit`, when given, is asked before each page is sent
 * (a reader that wants N items asks for the ones still missing).
 */
export async function* queryPages(
  doc: DynamoDBDocumentClient,
  query: Omit<QueryCommandInput, 'IndexName' | 'Limit' | 'ExclusiveStartKey'>,
  pageLimit?: () => number | undefined,
): AsyncGenerator<Item[]> {
  let startKey: Item | undefined;
  do {
    const page = await doc.send(new QueryCommand({ ...query, Limit: pageLimit?.(), ExclusiveStartKey: startKey }));
    yield page.Items ?? [];
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}
