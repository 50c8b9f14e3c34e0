import { BatchGetCommand, GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mapBounded } from '../core/concurrency.js';
import { exceptionBucketOf, type PartitionCursor, type PlannerLayout } from '../core/planner-state.js';
import { KEY_SPREAD, LedgerKeys } from '../core/resources.js';
import type { PauseRecord } from '../core/pause.js';
import { isConditionalCheckFailure } from './failure-item.js';
import type { LedgerObserver } from './observer.js';
import { isCancellation } from './conditional.js';
import { layoutFromItem, notPausedAt, planFromItem, stripUndefined, type Item, type JobPlan, type TickState } from './plan-items.js';

export type { JobPlan, TickState } from './plan-items.js';

export class PlannerStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly observer?: LedgerObserver,
  ) {}

  private readonly stateKey = { pk: LedgerKeys.plannerPk, sk: LedgerKeys.plannerStateSk };

  private bucketKey(bucket: number) {
    return { pk: LedgerKeys.plannerPk, sk: LedgerKeys.exceptionsSk(bucket) };
  }

  private planKey(job: string) {
    return { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.jobPlanSk };
  }

  /** Consistent BatchGet of any keys (100 per call, 8 calls at once, unprocessed keys retried with backoff). */
  private async batchGet(keys: readonly Item[]): Promise<Item[]> {
    const chunks = Array.from({ length: Math.ceil(keys.length / 100) }, (_, i) => keys.slice(i * 100, i * 100 + 100));
    return (await mapBounded(chunks, 8, (chunk) => this.batchGetChunk(chunk))).flat();
  }

  private async batchGetChunk(keys: readonly Item[]): Promise<Item[]> {
    const out: Item[] = [];
    {
      let pending: Item[] = [...keys];
      for (let round = 0; pending.length > 0; round++) {
        const { Responses = {}, UnprocessedKeys = {} } = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } } }),
        );
        out.push(...(Responses[this.tableName] ?? []));
        pending = (UnprocessedKeys[this.tableName]?.Keys as Item[] | undefined) ?? [];
        if (pending.length > 0) await new Promise((r) => setTimeout(r, Math.min(1_000, 25 * 2 ** round)));
      }
    }
    return out;
  }

  async readTickState(): Promise<TickState> {
    const buckets = Array.from({ length: KEY_SPREAD.exceptionBuckets }, (_, b) => this.bucketKey(b));
    const items = await this.batchGet([this.stateKey, ...buckets]);
    const paused = new Set<string>();
    const behind = new Set<string>();
    let layout: PlannerLayout | undefined;
    for (const item of items) {
      if (item.sk === LedgerKeys.plannerStateSk) layout = layoutFromItem(item);
      else {
        for (const name of (item.paused as Set<string> | undefined) ?? []) paused.add(name);
        for (const name of (item.behind as Set<string> | undefined) ?? []) behind.add(name);
      }
    }
    return { layout, paused, behind };
  }

  async readLayout(): Promise<PlannerLayout | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.stateKey, ConsistentRead: true }));
    return layoutFromItem(Item);
  }

  /**
   * Writes a new layout if the stored one is still `previous` (or there is none): two planners
   * switching at once agree on one. Returns false when another planner switched first.
   */
  async writeLayout(previous: PlannerLayout | undefined, next: PlannerLayout, now: number): Promise<boolean> {
    const partitions = Object.fromEntries([...next.partitions].map(([p, c]) => [String(p), stripUndefined(c)]));
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.stateKey,
          UpdateExpression: 'SET #of = :of, gen = :gen, since = :now, #partitions = :partitions',
          ConditionExpression: previous ? 'gen = :previousGen' : 'attribute_not_exists(gen)',
          ExpressionAttributeNames: { '#of': 'of', '#partitions': 'partitions' },
          ExpressionAttributeValues: {
            ':of': next.of,
            ':gen': next.gen,
            ':now': now,
            ':partitions': partitions,
            ...(previous ? { ':previousGen': previous.gen } : {}),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /**
   * Moves partition `partition`'s watermark forward only, within layout generation `gen`.
   * Returns false when a concurrent planner already moved it further (harmless: its work is a
   * superset of ours, every run write being conditional) or the layout changed meanwhile.
   */
  async advancePartition(
    gen: number,
    partition: number,
    plannedUntil: number,
    planned?: { readonly configHash: string; readonly at: number },
  ): Promise<boolean> {
    const sameLayout = 'gen = :gen';
    const onlyForward = '(attribute_not_exists(#partitions.#p.plannedUntil) OR #partitions.#p.plannedUntil <= :until)';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.stateKey,
          // With the watermark, the config it was planned under and the tick's now (replanFromOf).
          UpdateExpression: planned
            ? 'SET #partitions.#p.plannedUntil = :until, #partitions.#p.configHash = :hash, #partitions.#p.plannedAt = :at'
            : 'SET #partitions.#p.plannedUntil = :until',
          ConditionExpression: `${sameLayout} AND ${onlyForward}`,
          ExpressionAttributeNames: { '#partitions': 'partitions', '#p': String(partition) },
          ExpressionAttributeValues: {
            ':gen': gen,
            ':until': plannedUntil,
            ...(planned ? { ':hash': planned.configHash, ':at': planned.at } : {}),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /** Records how far partition `partition` has swept (forward only, within generation `gen`). */
  async saveSweep(
    gen: number,
    partition: number,
    cursor: Required<Pick<PartitionCursor, 'sweptUntil'>> & Pick<PartitionCursor, 'watchAfter'>,
  ): Promise<boolean> {
    const sameLayout = 'gen = :gen';
    const onlyForward = '(attribute_not_exists(#partitions.#p.sweptUntil) OR #partitions.#p.sweptUntil <= :swept)';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.stateKey,
          UpdateExpression:
            cursor.watchAfter === undefined
              ? 'SET #partitions.#p.sweptUntil = :swept REMOVE #partitions.#p.watchAfter'
              : 'SET #partitions.#p.sweptUntil = :swept, #partitions.#p.watchAfter = :after',
          ConditionExpression: `${sameLayout} AND ${onlyForward}`,
          ExpressionAttributeNames: { '#partitions': 'partitions', '#p': String(partition) },
          ExpressionAttributeValues: {
            ':gen': gen,
            ':swept': cursor.sweptUntil,
            ...(cursor.watchAfter === undefined ? {} : { ':after': cursor.watchAfter }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  async readJobPlans(jobs: readonly string[]): Promise<Map<string, JobPlan>> {
    const items = await this.batchGet(jobs.map((job) => this.planKey(job)));
    return new Map(items.map((item) => [LedgerKeys.jobOfPk(item.pk as string), planFromItem(item)]));
  }

  async readJobPlan(job: string): Promise<JobPlan | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.planKey(job), ConsistentRead: true }));
    return Item ? planFromItem(Item) : undefined;
  }

  /**
   * Sets a job's catch-up cursor and edge, if it is not paused and its cursor is still `expected`
   * (undefined: none): a concurrent tick that moved it, or a pause, wins. Returns whether it moved.
   * `now` is the tick's: a pause whose `until` has come by then does not hold the job (absent: any
   * recorded pause does).
   */
  async setCatchUp(job: string, cursor: number, edge: number, expected: number | undefined, now?: number): Promise<boolean> {
    const notPaused = notPausedAt(now);
    const cursorAsRead = expected === undefined ? 'attribute_not_exists(#cursor)' : '#cursor = :expected';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.planKey(job),
          UpdateExpression: 'SET #cursor = :cursor, edge = :edge',
          ConditionExpression: `${notPaused} AND ${cursorAsRead}`,
          ExpressionAttributeNames: { '#cursor': 'cursor', ...(now === undefined ? {} : { '#until': 'until' }) },
          ExpressionAttributeValues: {
            ':cursor': cursor,
            ':edge': edge,
            ...(expected === undefined ? {} : { ':expected': expected }),
            ...(now === undefined ? {} : { ':now': now }),
          },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /** Clears a caught-up job's cursor if it is still `expected` and the job is not paused at `now` (as setCatchUp). */
  async clearCatchUp(job: string, expected: number | undefined, now?: number): Promise<boolean> {
    const notPaused = notPausedAt(now);
    const cursorAsRead = expected === undefined ? 'attribute_not_exists(#cursor)' : '#cursor = :expected';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.planKey(job),
          UpdateExpression: 'REMOVE #cursor, edge',
          ConditionExpression: `${notPaused} AND ${cursorAsRead}`,
          ExpressionAttributeNames: { '#cursor': 'cursor', ...(now === undefined ? {} : { '#until': 'until' }) },
          ExpressionAttributeValues:
            expected === undefined && now === undefined
              ? undefined
              : { ...(expected === undefined ? {} : { ':expected': expected }), ...(now === undefined ? {} : { ':now': now }) },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailure(error)) return false;
      throw error;
    }
  }

  /**
   * Adds and removes names in the exception lists' `behind` sets: one update per bucket and kind
   * of change. DynamoDB refuses an update that both ADDs to and DELETEs from the same set ("two
   * document paths overlap"), so a bucket with both gets its additions first, then its removals.
   */
  async listBehind(add: readonly string[], remove: readonly string[]): Promise<void> {
    const byBucket = new Map<number, { add: string[]; remove: string[] }>();
    const entry = (job: string) => {
      const bucket = exceptionBucketOf(job);
      let e = byBucket.get(bucket);
      if (!e) byBucket.set(bucket, (e = { add: [], remove: [] }));
      return e;
    };
    for (const job of add) entry(job).add.push(job);
    for (const job of remove) entry(job).remove.push(job);
    const change = (bucket: number, expression: string, names: readonly string[]) =>
      this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.bucketKey(bucket),
          UpdateExpression: expression,
          ExpressionAttributeValues: { ':names': new Set(names) },
        }),
      );
    await Promise.all(
      [...byBucket].map(async ([bucket, { add: adds, remove: removes }]) => {
        if (adds.length > 0) await change(bucket, 'ADD behind :names', adds);
        if (removes.length > 0) await change(bucket, 'DELETE behind :names', removes);
      }),
    );
  }

  /**
   * Pauses a job: the planner skips it from its next tick, and its plan item remembers where it
   * stopped (`plannedUntil`, unless it was already behind: its own cursor wins) and who paused it
   * and why. Dropping the edge makes the resume tick fix a new one: slots after the pause were
   * never planned. Returns false when a pause is in force at `by.at` (the first pause's note and
   * until stay); one whose `until` has come is replaced.
   */
  async pause(job: string, plannedUntil: number, by: PauseRecord): Promise<boolean> {
    const notPausedNow = notPausedAt(by.at);
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: this.planKey(job),
                UpdateExpression: 'SET pause = :pause, #cursor = if_not_exists(#cursor, :plannedUntil) REMOVE edge',
                ConditionExpression: notPausedNow,
                ExpressionAttributeNames: { '#cursor': 'cursor', '#until': 'until' },
                ExpressionAttributeValues: { ':pause': stripUndefined(by), ':plannedUntil': plannedUntil, ':now': by.at },
              },
            },
            {
              Update: {
                TableName: this.tableName,
                Key: this.bucketKey(exceptionBucketOf(job)),
                UpdateExpression: 'ADD paused :job',
                ExpressionAttributeValues: { ':job': new Set([job]) },
              },
            },
          ],
        }),
      );
      this.observer?.paused?.(job, by);
      return true;
    } catch (error) {
      if (isCancellation(error) && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /**
   * Resumes a paused job: it catches up from its cursor under its misfire policy. Clears a pause
   * whose `until` has come too (the job was planned already). False when no pause was recorded.
   */
  async resume(job: string): Promise<boolean> {
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: this.planKey(job),
                UpdateExpression: 'REMOVE pause',
                ConditionExpression: 'attribute_exists(pause)',
              },
            },
            {
              Update: {
                TableName: this.tableName,
                Key: this.bucketKey(exceptionBucketOf(job)),
                UpdateExpression: 'DELETE paused :job ADD behind :job',
                ExpressionAttributeValues: { ':job': new Set([job]) },
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (isCancellation(error) && error.CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }
}
