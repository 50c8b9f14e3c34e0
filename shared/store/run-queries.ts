/**
 * Reads of run items (DESIGN §5, §8): one run, many runs, and the range queries the overlap
 * policies, the window sweep, the watch sweep and ops need. Reads are consistent unless said.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { KEY_SPREAD, LedgerKeys } from '../core/resources.js';
import { OPEN_STATUSES, RunStatus, type Run, type RunId } from '../core/vocabulary.js';
import { batchGetAll, queryPages, type Item } from './conditional.js';
import { idOfKey, openStatusValues, RunTable, runFromItem, WAITING, type LedgerOptions } from './run-items.js';
import type { WatchCursor, WatchIndex } from './watch-index.js';

export class RunQueries extends RunTable {
  constructor(
    doc: DynamoDBDocumentClient,
    options: LedgerOptions,
    /** The watch index listOpenRuns pages through. */
    private readonly watching: WatchIndex,
  ) {
    super(doc, options);
  }

  async getRun(id: RunId, consistent = true): Promise<Run | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: this.runKeyOf(id), ConsistentRead: consistent }));
    return Item ? runFromItem(Item) : undefined;
  }

  /** Consistent reads of many runs (BatchGetItem, 100 keys per call, 8 at once); missing runs are left out. */
  async getRuns(ids: readonly RunId[]): Promise<Run[]> {
    return (
      await batchGetAll(
        this.doc,
        this.tableName,
        ids.map((id) => this.runKeyOf(id)),
      )
    ).map(runFromItem);
  }

  /**
   * The runs of one job nearest to a slot on one side, nearest first (the slot itself excluded),
   * reading at most `limit` slots' worth of items: the overlap policies only ever need the nearest
   * neighbours. With `lane` only that shard's runs are returned: the read covers `limit` slots of
   * all `lane.shards` shards (the items of one slot sit together, one per shard), so a job with
   * many shards still sees its lane's `limit` nearest slots, not the other shards of one slot.
   */
  async nearestRuns(
    job: string,
    slot: number,
    side: 'before' | 'after',
    limit: number,
    lane?: { readonly shard: number; readonly shards: number },
  ): Promise<Run[]> {
    const before = side === 'before';
    const shard = lane?.shard;
    const mine = LedgerKeys.runSk(slot, 0);
    const want = limit * Math.max(1, lane?.shards ?? 1);
    const items: Item[] = [];
    const pages = queryPages(
      this.doc,
      {
        TableName: this.tableName,
        KeyConditionExpression: before ? 'pk = :pk AND sk BETWEEN :low AND :mine' : 'pk = :pk AND sk > :mine',
        ExpressionAttributeValues: {
          ':pk': LedgerKeys.jobPk(job),
          // After: past every shard of our slot; before: below shard 000 of our slot.
          ':mine': before ? mine : LedgerKeys.runSkAfterSlot(slot),
          ...(before ? { ':low': LedgerKeys.runSkPrefix } : {}),
        },
        ScanIndexForward: !before,
        ConsistentRead: true,
      },
      () => want - items.length,
    );
    // Paged: a page stops at 1 MB, and a job's items (attempt history, evidence, checkpoints) can
    // be large enough that one page holds fewer than `want` of them.
    for await (const page of pages) {
      items.push(...page);
      if (items.length >= want) break;
    }
    return items
      .filter(
        (item) =>
          (item.sk as string).startsWith(LedgerKeys.runSkPrefix) && item.slot !== slot && (shard === undefined || item.shard === shard),
      )
      .map(runFromItem);
  }

  /**
   * Runs of one lane (job, shard) with slot in (after, until] and one of `statuses`, oldest
   * first, every page. The overlap policies read the runs just after a run's slot.
   * `firstPageWithAny`: stop at the first page that holds a match (forbid-queue needs only the
   * oldest, and the range after a revived old run can span a long history of ended runs).
   */
  async laneRunsAfter(
    job: string,
    shard: number,
    after: number,
    until: number,
    statuses: readonly RunStatus[] = WAITING,
    options: { readonly firstPageWithAny?: boolean } = {},
  ): Promise<Run[]> {
    const out: Run[] = [];
    if (until <= after) return out;
    const statusValues = Object.fromEntries(statuses.map((status, i) => [`:s${i}`, status]));
    const pages = queryPages(this.doc, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
      FilterExpression: `#status IN (${Object.keys(statusValues).join(', ')}) AND #shard = :shard`,
      ExpressionAttributeNames: { '#status': 'status', '#shard': 'shard' },
      ExpressionAttributeValues: {
        ':pk': LedgerKeys.jobPk(job),
        // Past every shard of `after`'s slot, up to every shard of `until`'s.
        ':low': LedgerKeys.runSkAfterSlot(after),
        ':high': LedgerKeys.runSkAfterSlot(until),
        ':shard': shard,
        ...statusValues,
      },
      ConsistentRead: true,
    });
    for await (const page of pages) {
      for (const item of page) out.push(runFromItem(item));
      if (options.firstPageWithAny && out.length > 0) break;
    }
    return out;
  }

  /**
   * A forbid-queue lane read from its floor (`from`, inclusive; undefined: its first run) up to
   * its first open run, oldest first: `first` is that run (of the lane's shard, in the lane),
   * `passed` how many items the read went over before it (ended runs, other shards' runs) and
   * `lastSlot` the last slot read. Pages of a few items: a floor kept current finds the first open
   * run within the first page, and a stale one is raised by the caller after this read.
   */
  async laneFromFloor(
    job: string,
    shard: number,
    from: number | undefined,
    isOpenInLane: (run: Run) => boolean,
  ): Promise<{ first?: Run; passed: number; lastSlot?: number }> {
    let passed = 0;
    let lastSlot: number | undefined;
    const pages = queryPages(
      this.doc,
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
        ExpressionAttributeValues: {
          ':pk': LedgerKeys.jobPk(job),
          ':low': from !== undefined ? LedgerKeys.runSk(from, 0) : LedgerKeys.runSkPrefix,
          ':high': LedgerKeys.runSkEnd,
        },
        ConsistentRead: true,
      },
      () => 16,
    );
    for await (const page of pages) {
      for (const item of page) {
        const run = runFromItem(item);
        lastSlot = run.slot;
        if (run.shard === shard && isOpenInLane(run)) return { first: run, passed, lastSlot };
        passed++;
      }
    }
    return { passed, ...(lastSlot !== undefined ? { lastSlot } : {}) };
  }

  /** Open runs of one job with slot in (after, until], every page (the window sweep). */
  async openRunsInWindow(job: string, after: number, until: number): Promise<Run[]> {
    const out: Run[] = [];
    const pages = queryPages(this.doc, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
      FilterExpression: '#status IN (:ready, :retry, :unknown, :running)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':pk': LedgerKeys.jobPk(job),
        ':low': LedgerKeys.runSk(after + 1, 0),
        ':high': LedgerKeys.runSkAfterSlot(until),
        ...openStatusValues(),
      },
      ConsistentRead: true,
    });
    for await (const page of pages) for (const item of page) out.push(runFromItem(item));
    return out;
  }

  /** Runs of one job, newest first unless `ascending`. */
  async listRuns(job: string, options: { limit?: number; ascending?: boolean; sinceSlot?: number } = {}): Promise<Run[]> {
    const out: Run[] = [];
    const pages = queryPages(
      this.doc,
      {
        TableName: this.tableName,
        KeyConditionExpression: `pk = :pk AND sk BETWEEN :low AND :high`,
        ExpressionAttributeValues: {
          ':pk': LedgerKeys.jobPk(job),
          ':low': options.sinceSlot !== undefined ? LedgerKeys.runSk(options.sinceSlot, 0) : LedgerKeys.runSkPrefix,
          ':high': LedgerKeys.runSkEnd,
        },
        ScanIndexForward: options.ascending ?? false,
        ConsistentRead: true,
      },
      () => options.limit,
    );
    for await (const page of pages) {
      for (const item of page) out.push(runFromItem(item));
      if (options.limit !== undefined && out.length >= options.limit) break;
    }
    return options.limit !== undefined ? out.slice(0, options.limit) : out;
  }

  /** Watched open runs (every bucket) with slot at or before `slotBefore`, oldest first, read consistently. */
  async listOpenRuns(slotBefore: number, limit: number): Promise<Run[]> {
    const keys: RunId[] = [];
    for (let bucket = 0; bucket < KEY_SPREAD.openBuckets; bucket++) {
      let after: WatchCursor | undefined;
      for (;;) {
        const { entries, more } = await this.watching.watchedPage(bucket, slotBefore, after, Math.min(1_000, limit));
        for (const e of entries) keys.push(idOfKey(e));
        if (!more || entries.length === 0 || keys.length >= limit * 2) break;
        after = entries[entries.length - 1];
      }
    }
    const runs = (await this.getRuns(keys)).filter((run) => (OPEN_STATUSES as readonly string[]).includes(run.status));
    return runs.sort((a, b) => a.slot - b.slot).slice(0, limit);
  }
}
