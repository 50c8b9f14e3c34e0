/**
 * `ctx.fenced`: DynamoDB writes on business items that carry the run's fencing token (DESIGN §6).
 *
 * Each write stamps `lastFence = :fence` and a fresh write id (`lastWrite`), under the condition
 *
 *   fenceIsNew  OR  (sameFence AND notThisWrite)
 *
 * joined by AND with the caller's business condition: a lower fence is always refused, the same
 * holder may write an item again, and the SDK's retry of a write whose response was lost after it
 * committed is refused too, so an `ADD` or `x = x + 1` is never applied twice. That refusal comes
 * back with the item, whose `lastWrite` is our id: the write is reported accepted (it landed once).
 *
 * Writes of one attempt to one item are serialized here, so no other write of the same holder can
 * land between a write and its SDK retry and hide the retry's own commit.
 *
 * On a failed check the item returned with the failure tells a stale fence from a failed business
 * condition, never an extra read.
 */
import { PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { fenceRefusal } from '../core/fence.js';
import {
  ConditionFailedError,
  FencedOutError,
  type Expression,
  type FencedPut,
  type FencedStore,
  type FencedUpdate,
  type FencedWrite,
} from '../handler-api.js';
import { conditionalWrite, failedCondition, transactWrite, type Item } from './conditional.js';
import { newWriteId } from './write-id.js';

export type FencedWriteResult = 'accepted' | 'fenced-out' | 'condition-failed';

export interface FencedStoreHooks {
  /** Called once per write with where it landed; the worker counts and records it. */
  onResult?(write: FencedWrite, result: FencedWriteResult, detail: { readonly writeId: string; readonly seenFence?: number }): void;
  /**
   * Wraps every call: the worker refuses calls of an attempt that has ended, and waits for the
   * calls still in flight before recording the outcome. @default run the call as is
   */
  guard?<T>(call: (signal?: AbortSignal) => Promise<T>): Promise<T>;
}

const FENCE = ':fence__';
const WRITE = ':write__';
const fenceIsNew = `(attribute_not_exists(lastFence) OR lastFence < ${FENCE})`;
const sameFence = `lastFence = ${FENCE}`;
const notThisWrite = `(attribute_not_exists(lastWrite) OR lastWrite <> ${WRITE})`;
const fenceHolds = `(${fenceIsNew} OR (${sameFence} AND ${notThisWrite}))`;

function joinCondition(condition: Expression | undefined): string {
  return condition ? `${fenceHolds} AND (${condition.expression})` : fenceHolds;
}

function keyOf(write: FencedWrite): { pk: string; sk: string } {
  return write.kind === 'put' ? { pk: write.item.pk, sk: write.item.sk } : write.key;
}

function numberOf(raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw === 'number') return raw;
  const n = (raw as { N?: string }).N;
  return n === undefined ? undefined : Number(n);
}

function stringOf(raw: unknown): string | undefined {
  if (typeof raw === 'string') return raw;
  return (raw as { S?: string } | undefined)?.S;
}

export class DynamoFencedStore implements FencedStore {
  /** Per item (`table/pk/sk`): the tail of this attempt's writes to it. */
  private readonly tails = new Map<string, Promise<unknown>>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly fence: number,
    private readonly hooks: FencedStoreHooks = {},
  ) {}

  private params(write: FencedWrite, writeId: string) {
    const names = { ...write.condition?.names, ...(write.kind === 'update' ? write.set.names : {}) };
    const values = {
      [FENCE]: this.fence,
      [WRITE]: writeId,
      ...write.condition?.values,
      ...(write.kind === 'update' ? write.set.values : {}),
    };
    const base = {
      TableName: write.table,
      ConditionExpression: joinCondition(write.condition),
      ExpressionAttributeNames: Object.keys(names).length > 0 ? names : undefined,
      ExpressionAttributeValues: values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    if (write.kind === 'put')
      return { kind: 'put' as const, input: { ...base, Item: { ...write.item, lastFence: this.fence, lastWrite: writeId } } };
    return {
      kind: 'update' as const,
      input: { ...base, Key: write.key, UpdateExpression: `SET lastFence = ${FENCE}, lastWrite = ${WRITE}, ${write.set.expression}` },
    };
  }

  /** The item as the failed check saw it is our own earlier commit of this very write. */
  private isOwnCommit(current: Item | undefined, writeId: string): boolean {
    return numberOf(current?.lastFence) === this.fence && stringOf(current?.lastWrite) === writeId;
  }

  private rejection(write: FencedWrite, current: Item | undefined, writeId: string, cause: unknown): Error {
    const seen = numberOf(current?.lastFence);
    if (seen !== undefined && seen > this.fence) {
      this.hooks.onResult?.(write, 'fenced-out', { writeId, seenFence: seen });
      return new FencedOutError(write.table, keyOf(write), this.fence, seen, fenceRefusal(this.fence, seen), { cause });
    }
    this.hooks.onResult?.(write, 'condition-failed', { writeId, seenFence: seen });
    return new ConditionFailedError(write.table, keyOf(write), current, { cause });
  }

  /** Runs `call` after every earlier write of this store to any of `keys`, and before any later one. */
  private serialized<T>(writes: readonly FencedWrite[], call: () => Promise<T>): Promise<T> {
    const keys = [...new Set(writes.map((w) => `${w.table}/${keyOf(w).pk}/${keyOf(w).sk}`))];
    const before = Promise.all(keys.map((k) => this.tails.get(k)));
    const run = before.then(call, call);
    const tail = run.catch(() => undefined);
    for (const k of keys) this.tails.set(k, tail);
    void tail.then(() => {
      for (const k of keys) if (this.tails.get(k) === tail) this.tails.delete(k);
    });
    return run;
  }

  /** Runs `call` through the worker's guard; `signal` (when given) aborts its SDK calls once the attempt's lease is over. */
  private guarded<T>(call: (signal?: AbortSignal) => Promise<T>): Promise<T> {
    return this.hooks.guard ? this.hooks.guard(call) : call(undefined);
  }

  private single(write: FencedWrite): Promise<void> {
    return this.guarded((signal) =>
      this.serialized([write], async () => {
        const writeId = newWriteId();
        const built = this.params(write, writeId);
        const command = built.kind === 'put' ? new PutCommand(built.input) : new UpdateCommand(built.input);
        const result = await conditionalWrite(this.doc, command, {
          ownCommit: (current) => this.isOwnCommit(current, writeId),
          abortSignal: signal,
        });
        if (result.kind === 'conditionFailed') throw this.rejection(write, result.current, writeId, result.cause);
        this.hooks.onResult?.(write, 'accepted', { writeId });
      }),
    );
  }

  put(write: Omit<FencedPut, 'kind'>): Promise<void> {
    return this.single({ kind: 'put', ...write });
  }

  update(write: Omit<FencedUpdate, 'kind'>): Promise<void> {
    return this.single({ kind: 'update', ...write });
  }

  transact(writes: readonly FencedWrite[]): Promise<void> {
    return this.guarded((signal) =>
      this.serialized(writes, async () => {
        // One id for the whole transaction: it commits all or nothing, so any item carrying the id
        // proves the whole transaction landed. It is also the idempotency token AWS honours for
        // ten minutes on an identical retry.
        const writeId = newWriteId();
        const built = writes.map((write) => this.params(write, writeId));
        const result = await transactWrite(
          this.doc,
          new TransactWriteCommand({
            ClientRequestToken: `fence-${this.fence}-${writeId}`,
            TransactItems: built.map((b) => (b.kind === 'put' ? { Put: b.input } : { Update: b.input })),
          }),
          { ownCommit: (current) => this.isOwnCommit(current, writeId), abortSignal: signal },
        );
        if (result.kind === 'conditionFailed') {
          const reasons = result.reasons;
          // A fence refusal anywhere in the transaction outranks a business condition elsewhere.
          const fenced = reasons.findIndex((r) => failedCondition(r) && (numberOf(r.item?.lastFence) ?? -Infinity) > this.fence);
          const index = fenced >= 0 ? fenced : reasons.findIndex(failedCondition);
          throw this.rejection(writes[index]!, reasons[index]!.item, writeId, result.cause);
        }
        for (const write of writes) this.hooks.onResult?.(write, 'accepted', { writeId });
      }),
    );
  }
}
