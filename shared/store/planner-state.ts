import { GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { exceptionBucketOf, type PartitionCursor, type PlannerLayout } from '../core/planner-state.js';
import { KEY_SPREAD, LedgerKeys } from '../core/resources.js';
import type { PauseRecord } from '../core/pause.js';
import type { LedgerObserver } from './observer.js';
import { batchGetAll, conditionalWrite, transactWrite } from './conditional.js';
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

  async readTickState(): Promise<TickState> {
    const buckets = Array.from({ length: KEY_SPREAD.exceptionBuckets }, (_, b) => this.bucketKey(b));
    const items = await batchGetAll(this.doc, this.tableName, [this.stateKey, ...buckets]);
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
    const result = await conditionalWrite(
      this.doc,
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
    return result.kind === 'ok';
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
    const result = await conditionalWrite(
      this.doc,
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
    return result.kind === 'ok';
  }

  /** Records how far partition `partition` has swept (forward only, within generation `gen`). */
  async saveSweep(
    gen: number,
    partition: number,
    cursor: Required<Pick<PartitionCursor, 'sweptUntil'>> & Pick<PartitionCursor, 'watchAfter'>,
  ): Promise<boolean> {
    const sameLayout = 'gen = :gen';
    const onlyForward = '(attribute_not_exists(#partitions.#p.sweptUntil) OR #partitions.#p.sweptUntil <= :swept)';
    const result = await conditionalWrite(
      this.doc,
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
    return result.kind === 'ok';
  }

  async readJobPlans(jobs: readonly string[]): Promise<Map<string, JobPlan>> {
    const items = await batchGetAll(
      this.doc,
      this.tableName,
      jobs.map((job) => this.planKey(job)),
    );
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
  setCatchUp(job: string, cursor: number, edge: number, expected: number | undefined, now?: number): Promise<boolean> {
    return this.moveCatchUp(job, 'SET #cursor = :cursor, edge = :edge', { ':cursor': cursor, ':edge': edge }, expected, now);
  }

  /** Clears a caught-up job's cursor if it is still `expected` and the job is not paused at `now` (as setCatchUp). */
  clearCatchUp(job: string, expected: number | undefined, now?: number): Promise<boolean> {
    return this.moveCatchUp(job, 'REMOVE #cursor, edge', {}, expected, now);
  }

  /** A change of a job's catch-up cursor, under the condition both share: not paused, cursor as read. */
  private async moveCatchUp(
    job: string,
    update: string,
    values: Item,
    expected: number | undefined,
    now: number | undefined,
  ): Promise<boolean> {
    const notPaused = notPausedAt(now);
    const cursorAsRead = expected === undefined ? 'attribute_not_exists(#cursor)' : '#cursor = :expected';
    const allValues = {
      ...values,
      ...(expected === undefined ? {} : { ':expected': expected }),
      ...(now === undefined ? {} : { ':now': now }),
    };
    const result = await conditionalWrite(
      this.doc,
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.planKey(job),
        UpdateExpression: update,
        ConditionExpression: `${notPaused} AND ${cursorAsRead}`,
        ExpressionAttributeNames: { '#cursor': 'cursor', ...(now === undefined ? {} : { '#until': 'until' }) },
        // DynamoDB refuses an empty map of values: a clear with neither bound sends none.
        ExpressionAttributeValues: Object.keys(allValues).length > 0 ? allValues : undefined,
      }),
    );
    return result.kind === 'ok';
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
    const switched = await this.switchPause(job, {
      plan: {
        UpdateExpression: 'SET pause = :pause, #cursor = if_not_exists(#cursor, :plannedUntil) REMOVE edge',
        ConditionExpression: notPausedAt(by.at),
        ExpressionAttributeNames: { '#cursor': 'cursor', '#until': 'until' },
        ExpressionAttributeValues: { ':pause': stripUndefined(by), ':plannedUntil': plannedUntil, ':now': by.at },
      },
      exceptions: 'ADD paused :job',
    });
    if (switched) this.observer?.paused?.(job, by);
    return switched;
  }

  /**
   * Resumes a paused job: it catches up from its cursor under its misfire policy. Clears a pause
   * whose `until` has come too (the job was planned already). False when no pause was recorded.
   */
  resume(job: string): Promise<boolean> {
    return this.switchPause(job, {
      plan: { UpdateExpression: 'REMOVE pause', ConditionExpression: 'attribute_exists(pause)' },
      exceptions: 'DELETE paused :job ADD behind :job',
    });
  }

  /**
   * Pause and resume are one transaction: the plan item's conditional change and the job's entry
   * in its exception bucket move together, so a tick never sees one without the other. False
   * when the plan item's condition refused the change.
   */
  private async switchPause(job: string, change: PauseSwitch): Promise<boolean> {
    const result = await transactWrite(
      this.doc,
      new TransactWriteCommand({
        TransactItems: [
          { Update: { TableName: this.tableName, Key: this.planKey(job), ...change.plan } },
          {
            Update: {
              TableName: this.tableName,
              Key: this.bucketKey(exceptionBucketOf(job)),
              UpdateExpression: change.exceptions,
              ExpressionAttributeValues: { ':job': new Set([job]) },
            },
          },
        ],
      }),
    );
    return result.kind === 'ok';
  }
}

/** What a pause or a resume changes: the plan item (under its condition) and the exception bucket's sets. */
interface PauseSwitch {
  readonly plan: {
    readonly UpdateExpression: string;
    readonly ConditionExpression: string;
    readonly ExpressionAttributeNames?: Record<string, string>;
    readonly ExpressionAttributeValues?: Record<string, unknown>;
  };
  readonly exceptions: string;
}
