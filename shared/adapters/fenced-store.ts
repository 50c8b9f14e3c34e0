/**
 * `ctx.fenced`: DynamoDB writes on business items that carry the run's fencing token (DESIGN §6).
 * Each write sets `lastFence` and is conditional on `lastFence <= :fence` joined with the caller's
 * business condition. On a failed check it tells a stale fence from a failed business condition
 * using the item returned with the failure, never an extra read.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  ConditionFailedError,
  FencedOutError,
  type Expression,
  type FencedPut,
  type FencedStore,
  type FencedUpdate,
  type FencedWrite,
} from '../handler-api.js';
import { isConditionalCheckFailure, unmarshallFailureItem } from './failure-item.js';

export type FencedWriteResult = 'accepted' | 'fenced-out' | 'condition-failed';

export interface FencedStoreHooks {
  /** Called once per write attempt with where it landed; the worker counts and records it. */
  onResult?(write: FencedWrite, result: FencedWriteResult): void;
}

const FENCE = ':fence__';
/** The same holder may write an item several times; any lower token is refused. */
const fenceHolds = `(attribute_not_exists(lastFence) OR lastFence <= ${FENCE})`;

function joinCondition(condition: Expression | undefined): string {
  return condition ? `${fenceHolds} AND (${condition.expression})` : fenceHolds;
}

function keyOf(write: FencedWrite): { pk: string; sk: string } {
  return write.kind === 'put' ? { pk: write.item.pk, sk: write.item.sk } : write.key;
}

function lastFenceOf(item: Record<string, unknown> | undefined): number | undefined {
  const raw = item?.lastFence;
  if (raw === undefined) return undefined;
  if (typeof raw === 'number') return raw;
  const n = (raw as { N?: string }).N;
  return n === undefined ? undefined : Number(n);
}

export class DynamoFencedStore implements FencedStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly fence: number,
    private readonly hooks: FencedStoreHooks = {},
  ) {}

  private params(write: FencedWrite) {
    const names = { ...write.condition?.names, ...(write.kind === 'update' ? write.set.names : {}) };
    const values = { [FENCE]: this.fence, ...write.condition?.values, ...(write.kind === 'update' ? write.set.values : {}) };
    const base = {
      TableName: write.table,
      ConditionExpression: joinCondition(write.condition),
      ExpressionAttributeNames: Object.keys(names).length > 0 ? names : undefined,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    if (write.kind === 'put') return { kind: 'put' as const, input: { ...base, Item: { ...write.item, lastFence: this.fence } } };
    return {
      kind: 'update' as const,
      input: { ...base, Key: write.key, UpdateExpression: `SET lastFence = ${FENCE}, ${write.set.expression}` },
    };
  }

  private rejection(write: FencedWrite, current: Record<string, unknown> | undefined, cause: unknown): Error {
    const seen = lastFenceOf(current);
    if (seen !== undefined && seen > this.fence) {
      this.hooks.onResult?.(write, 'fenced-out');
      return new FencedOutError(write.table, keyOf(write), this.fence, seen, { cause });
    }
    this.hooks.onResult?.(write, 'condition-failed');
    return new ConditionFailedError(write.table, keyOf(write), current === undefined ? undefined : unmarshallFailureItem(current), { cause });
  }

  private async single(write: FencedWrite): Promise<void> {
    const built = this.params(write);
    try {
      if (built.kind === 'put') await this.doc.send(new PutCommand(built.input));
      else await this.doc.send(new UpdateCommand(built.input));
      this.hooks.onResult?.(write, 'accepted');
    } catch (error) {
      if (isConditionalCheckFailure(error)) {
        throw this.rejection(write, error.Item, error);
      }
      throw error;
    }
  }

  put(write: Omit<FencedPut, 'kind'>): Promise<void> {
    return this.single({ kind: 'put', ...write });
  }

  update(write: Omit<FencedUpdate, 'kind'>): Promise<void> {
    return this.single({ kind: 'update', ...write });
  }

  async transact(writes: readonly FencedWrite[]): Promise<void> {
    const built = writes.map((write) => this.params(write));
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: built.map((b) => (b.kind === 'put' ? { Put: b.input } : { Update: b.input })),
        }),
      );
      for (const write of writes) this.hooks.onResult?.(write, 'accepted');
    } catch (error) {
      if (error instanceof TransactionCanceledException || (error as { name?: string }).name === 'TransactionCanceledException') {
        const reasons = (error as TransactionCanceledException).CancellationReasons ?? [];
        const failedAt = reasons.findIndex((reason) => reason.Code === 'ConditionalCheckFailed');
        if (failedAt >= 0) {
          // A fence refusal anywhere in the transaction outranks a business condition elsewhere.
          const fenced = reasons.findIndex((r) => r.Code === 'ConditionalCheckFailed' && (lastFenceOf(r.Item) ?? -Infinity) > this.fence);
          const index = fenced >= 0 ? fenced : failedAt;
          throw this.rejection(writes[index]!, reasons[index]!.Item as Record<string, unknown> | undefined, error);
        }
      }
      throw error;
    }
  }
}
