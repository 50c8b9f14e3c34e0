/**
 * The ledger's reads and its watch-index bookkeeping, judged by what they return and what they
 * leave in the table on DynamoDB Local: the sweeper's reads (`openRunsInWindow`, `watchedPage`,
 * `getRuns`), the watch index's writes (`watch`, `unwatch`), the overlap policies' neighbours
 * (`nearestRuns`, `laneRunsAfter`) and the operators' listings (`listRuns`, `listOpenRuns`).
 *
 * The hazards are at the edges: a slot bound off by one, a shard of the boundary slot left out
 * or let in, a second page never read (DynamoDB pages at `Limit` or at 1 MB: big items make a
 * second page reachable with a few runs), a cursor that skips or repeats an entry, a limit
 * overrun, and the wrong order. Each test writes its runs in its own time range, older than
 * every earlier test's, so a read bounded above by a slot only ever sees its own test's runs.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type BatchGetCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { initialFence } from '../../shared/core/fence.js';
import { openBucketOf } from '../../shared/core/planner-state.js';
import { isTerminal, RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { idOfKey, Ledger, runFromItem, watchKeys } from '../../shared/store/ledger.js';
import { KEY_SPREAD, LedgerKeys } from '../../shared/core/resources.js';
import { CountingMiddleware } from '../support/counting.js';
import { clientWith, faultyClient } from '../support/faults.js';
import { localClients, sandbox, type Sandbox } from '../support/stack.js';

const MIN = 60_000;
const DAY = 86_400_000;
const ALL_STATUSES = Object.values(RunStatus);
const OPEN = [RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN, RunStatus.RUNNING] as readonly RunStatus[];
/** Big enough that a 1 MB page holds only a few runs: a second page with a handful of items. */
const BIG = 'x'.repeat(300_000);

let epochs = 0;
/** A time range of its own, older than every earlier one (see the file's comment). */
const freshEpoch = () => Date.UTC(2026, 5, 1) - ++epochs * DAY;
let jobs = 0;
const freshJob = (prefix: string) => `${prefix}-${++jobs}`;

/** A job name whose run (slot, shard) falls in watch-index bucket `bucket`. */
function jobInBucket(prefix: string, bucket: number, slot: number, shard = 0): string {
  for (let i = 0; ; i++) if (openBucketOf(`${prefix}-${i}`, slot, shard) === bucket) return `${prefix}-${i}`;
}

const key = (r: Pick<Run, 'job' | 'slot' | 'shard'>) => `${r.job}@${r.slot}#${r.shard}`;

describe("the ledger's reads and watch index on DynamoDB Local", () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  interface Spec {
    readonly job: string;
    readonly slot: number;
    readonly shard?: number;
    readonly shards?: number;
    readonly status?: RunStatus;
    readonly watched?: boolean;
    readonly big?: boolean;
  }

  /** Writes a run item as the planner and earlier writes would have left it. */
  async function put(spec: Spec): Promise<Run> {
    const { job, slot, shard = 0, shards = 1, status = RunStatus.READY, watched = false, big = false } = spec;
    const item = {
      ...box.ledger.runKeyOf({ job, slot, shard }),
      job,
      slot,
      shard,
      shards,
      runKey: runKeyOf(job, slot, shard, shards),
      status,
      fencingToken: initialFence(slot) + 1,
      attempt: 1,
      createdAt: slot,
      attempts: {},
      ...(watched ? watchKeys({ job, slot, shard }) : {}),
      ...(big ? { evidence: BIG } : {}),
    };
    await box.clients.doc.send(new PutCommand({ TableName: box.endpoints.ledgerTable, Item: item }));
    return runFromItem(item);
  }

  async function putAll(specs: readonly Spec[]): Promise<Run[]> {
    const out: Run[] = [];
    for (let i = 0; i < specs.length; i += 8) out.push(...(await Promise.all(specs.slice(i, i + 8).map(put))));
    return out;
  }

  /** The item as stored, every attribute. */
  async function raw(id: RunId): Promise<Record<string, unknown> | undefined> {
    const { Item } = await box.clients.doc.send(
      new GetCommand({ TableName: box.endpoints.ledgerTable, Key: box.ledger.runKeyOf(id), ConsistentRead: true }),
    );
    return Item;
  }

  /** The job's other items beside its runs: its planning state and a lane marker. */
  async function putJobItems(job: string, slot: number): Promise<void> {
    await box.clients.doc.send(
      new PutCommand({ TableName: box.endpoints.ledgerTable, Item: { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.jobPlanSk, cursor: 1 } }),
    );
    await box.ledger.lanes.acquire(job, { slot, shard: 0 }, slot);
  }

  /** How many pages of `job`'s runs one Query without Limit returns: the tests that need a second page check they have one. */
  async function pagesOf(job: string): Promise<number> {
    let pages = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await box.clients.doc.send(
        new QueryCommand({
          TableName: box.endpoints.ledgerTable,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': LedgerKeys.jobPk(job) },
          ExclusiveStartKey: startKey,
        }),
      );
      pages++;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return pages;
  }

  // ------------------------------------------------------------------------------------ getRuns

  describe('getRuns', () => {
    it('getRuns of more than 100 ids returns every run once, and leaves out the ids that have no run', async () => {
      const base = freshEpoch();
      const job = freshJob('many');
      const stored = await putAll(
        Array.from({ length: 230 }, (_, i) => ({ job, slot: base + i * MIN, status: ALL_STATUSES[i % ALL_STATUSES.length]! })),
      );
      const missing: RunId[] = Array.from({ length: 25 }, (_, i) => ({ job, slot: base + (1_000 + i) * MIN, shard: 0 }));
      // Missing ids between the stored ones, so that every batch of 100 has some.
      const ids: RunId[] = stored.flatMap((r, i) => (i % 10 === 0 && missing.length > 0 ? [r, missing.pop()!] : [r]));
      const runs = await box.ledger.getRuns(ids);
      expect(runs).toHaveLength(230);
      expect(new Set(runs.map(key)).size).toBe(230);
      const byKey = new Map(runs.map((r) => [key(r), r]));
      for (const r of stored) expect(byKey.get(key(r))).toEqual(r);
      expect(await box.ledger.getRuns([])).toEqual([]);
    });

    it('getRuns returns exactly the runs asked for, whatever the number of ids (batches of 100)', async () => {
      const base = freshEpoch();
      const job = freshJob('batch');
      const stored = await putAll(Array.from({ length: 205 }, (_, i) => ({ job, slot: base + i * MIN })));
      await fc.assert(
        fc.asyncProperty(fc.subarray(stored.map((_, i) => i)), async (picked) => {
          const runs = await box.ledger.getRuns(picked.map((i) => stored[i]!));
          expect(runs.map(key).sort()).toEqual(picked.map((i) => key(stored[i]!)).sort());
        }),
        {
          numRuns: 12,
          examples: [
            [[]],
            [stored.slice(0, 100).map((_, i) => i)],
            [stored.slice(0, 101).map((_, i) => i)],
            [stored.slice(0, 201).map((_, i) => i)],
          ],
        },
      );
    });

    it('getRuns asks again for the keys a throttled batch left unprocessed, backing off 25 ms, doubling, at most 1 s, and not after the last answer', async () => {
      // DynamoDB Local never throttles: a stand-in store answers one key per call and returns the rest unprocessed.
      const job = freshJob('throttled');
      const base = freshEpoch();
      const ids: RunId[] = Array.from({ length: 9 }, (_, i) => ({ job, slot: base + i * MIN, shard: 0 }));
      const items = new Map(ids.map((id) => [`${LedgerKeys.jobPk(id.job)}|${LedgerKeys.runSk(id.slot, id.shard)}`, runItem(id)]));
      const sentAt: number[] = [];
      const stub = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
      mockClient(stub)
        .on(BatchGetCommand)
        .callsFake((input: BatchGetCommandInput) => {
          sentAt.push(Date.now());
          const [first, ...rest] = input.RequestItems!.table!.Keys as Array<{ pk: string; sk: string }>;
          return {
            Responses: { table: [items.get(`${first!.pk}|${first!.sk}`)] },
            UnprocessedKeys: rest.length > 0 ? { table: { Keys: rest } } : {},
          };
        });
      vi.useFakeTimers({ toFake: ['setTimeout', 'Date'] });
      try {
        const reading = new Ledger(stub, { tableName: 'table' }).getRuns(ids);
        let done = false;
        let doneAt = 0;
        void reading.then(() => {
          done = true;
          doneAt = Date.now();
        });
        for (let i = 0; i < 2_000 && !done; i++) await vi.advanceTimersByTimeAsync(5);
        expect(done).toBe(true);
        const runs = await reading;
        expect(runs.map(key).sort()).toEqual(ids.map(key).sort());
        const gaps = sentAt.slice(1).map((t, i) => t - sentAt[i]!);
        expect(gaps).toEqual([25, 50, 100, 200, 400, 800, 1_000, 1_000].map((ms) => Math.ceil(ms / 5) * 5));
        // The last answer had nothing unprocessed: no wait before returning.
        expect(doneAt - sentAt.at(-1)!).toBeLessThan(5);
      } finally {
        vi.useRealTimers();
      }

      function runItem(id: RunId) {
        return {
          ...box.ledger.runKeyOf(id),
          job: id.job,
          slot: id.slot,
          shard: id.shard,
          shards: 1,
          runKey: runKeyOf(id.job, id.slot, id.shard, 1),
          status: RunStatus.READY,
          fencingToken: initialFence(id.slot),
          attempt: 0,
          createdAt: id.slot,
        };
      }
    });
  });

  // ------------------------------------------------------------------------------ watch, unwatch

  describe("the watch index's writes", () => {
    it('watch puts an open run in the watch index, under its own keys; an ended, missing or already watched run is left as it was', async () => {
      for (const status of ALL_STATUSES) {
        for (const watched of [false, true]) {
          const run = await put({ job: freshJob('watch'), slot: freshEpoch(), status, watched });
          const before = await raw(run);
          const result = await box.ledger.watch(run);
          const label = `${status}, watched before: ${watched}`;
          const expected = OPEN.includes(status) && !watched;
          expect(result, label).toBe(expected);
          if (expected) expect(await raw(run), label).toEqual({ ...before, ...watchKeys(run) });
          else expect(await raw(run), label).toEqual(before);
        }
      }
      const missing = { job: freshJob('watch-missing'), slot: freshEpoch(), shard: 0 };
      expect(await box.ledger.watch(missing)).toBe(false);
      expect(await raw(missing)).toBeUndefined();
    });

    it('unwatch takes an ended run out of the watch index; an open run stays watched, and a run that is missing or not watched is left as it was', async () => {
      for (const status of ALL_STATUSES) {
        for (const watched of [false, true]) {
          const run = await put({ job: freshJob('unwatch'), slot: freshEpoch(), status, watched });
          const before = await raw(run);
          await box.ledger.unwatch(run);
          const after = await raw(run);
          const label = `${status}, watched before: ${watched}`;
          if (watched && isTerminal(status)) {
            const { openPk: _pk, openSk: _sk, ...rest } = before!;
            expect(after, label).toEqual(rest);
          } else expect(after, label).toEqual(before);
        }
      }
      const missing = { job: freshJob('unwatch-missing'), slot: freshEpoch(), shard: 0 };
      await box.ledger.unwatch(missing);
      expect(await raw(missing)).toBeUndefined();
    });

    it("watch and unwatch that the store refuses (throttled past the SDK's retries) throw: a refusal is never taken for a run that ended or moved", async () => {
      const open = await put({ job: freshJob('refused'), slot: freshEpoch() });
      const ended = await put({ job: freshJob('refused'), slot: freshEpoch(), status: RunStatus.SUCCEEDED, watched: true });
      const faulty = faultyClient(
        box.endpoints.dynamoEndpoint,
        [{ when: (command) => command === 'UpdateItemCommand', fault: 'refused', times: 100 }],
        1,
      );
      try {
        const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
        await expect(ledger.watch(open)).rejects.toMatchObject({ name: 'ThrottlingException' });
        await expect(ledger.unwatch(ended)).rejects.toMatchObject({ name: 'ThrottlingException' });
      } finally {
        faulty.destroy();
      }
    });
  });

  // ------------------------------------------------------------------------------- watchedPage

  describe('watchedPage', () => {
    it("watchedPage returns a bucket's entries with slot up to and including its bound, oldest first, and resumes after the cursor without skipping or repeating one", async () => {
      const BUCKET = 5;
      const layoutArb = fc.record({
        runs: fc.uniqueArray(
          fc.record({ slot: fc.integer({ min: 0, max: 9 }), shard: fc.integer({ min: 0, max: 2 }), other: fc.boolean() }),
          {
            minLength: 1,
            maxLength: 9,
            selector: (r) => `${r.slot}/${r.shard}`,
          },
        ),
        upTo: fc.oneof(
          fc.integer({ min: -1, max: 10 }),
          fc.nat().map((n) => ({ nth: n })),
        ),
        limit: fc.integer({ min: 1, max: 4 }),
      });
      await fc.assert(
        fc.asyncProperty(layoutArb, async ({ runs, upTo: upToChoice, limit }) => {
          const base = freshEpoch();
          const slotAt = (i: number) => base + i * MIN;
          // Runs of several jobs in the bucket, and some in the next bucket (never returned).
          const specs = runs.map(({ slot, shard, other }) => ({
            job: jobInBucket(`wp${epochs}`, other ? BUCKET + 1 : BUCKET, slotAt(slot), shard),
            slot: slotAt(slot),
            shard,
            shards: 3,
            watched: true,
          }));
          await putAll(specs);
          const upTo = slotAt(typeof upToChoice === 'number' ? upToChoice : runs[upToChoice.nth % runs.length]!.slot);
          const expected = specs
            .filter((s) => watchKeys(s).openPk === LedgerKeys.openPk(BUCKET) && s.slot <= upTo)
            .map((s) => ({ ...box.ledger.runKeyOf(s), openSk: watchKeys(s).openSk }))
            .sort((a, b) => (a.openSk < b.openSk ? -1 : 1));
          const seen: Array<{ pk: string; sk: string; openSk: string }> = [];
          let after: { pk: string; sk: string; openSk: string } | undefined;
          for (let pages = 0; ; pages++) {
            expect(pages, 'pages').toBeLessThanOrEqual(expected.length + 1);
            const { entries, more } = await box.ledger.watchedPage(BUCKET, upTo, after, limit);
            expect(entries.length).toBeLessThanOrEqual(limit);
            // A page short of the limit is the last one.
            if (entries.length < limit) expect(more).toBe(false);
            seen.push(...entries);
            if (!more) break;
            after = entries.at(-1);
          }
          expect(seen).toEqual(expected);
        }),
        { numRuns: 15 },
      );
    });

    it("watchedPage reports more entries exactly when a full page stopped before the bucket's end, and the entries name their runs", async () => {
      const base = freshEpoch();
      const BUCKET = 9;
      const specs = [0, 1, 2].map((i) => ({
        job: jobInBucket(`wpm${epochs}`, BUCKET, base + i * MIN),
        slot: base + i * MIN,
        watched: true,
      }));
      await putAll(specs);
      const first = await box.ledger.watchedPage(BUCKET, base + 2 * MIN, undefined, 2);
      expect(first.more).toBe(true);
      expect(first.entries.map(idOfKey)).toEqual(specs.slice(0, 2).map((s) => ({ job: s.job, slot: s.slot, shard: 0 })));
      const rest = await box.ledger.watchedPage(BUCKET, base + 2 * MIN, first.entries[1], 2);
      expect(rest.entries.map(idOfKey)).toEqual([{ job: specs[2]!.job, slot: specs[2]!.slot, shard: 0 }]);
      expect(rest.more).toBe(false);
      const all = await box.ledger.watchedPage(BUCKET, base + 2 * MIN, undefined, 10);
      expect(all).toEqual({
        entries: specs.map((s) => ({ ...box.ledger.runKeyOf({ ...s, shard: 0 }), openSk: watchKeys({ ...s, shard: 0 }).openSk })),
        more: false,
      });
    });
  });

  // ------------------------------------------------------------------------------ listOpenRuns

  describe('listOpenRuns', () => {
    it("listOpenRuns returns the oldest open watched runs up to its slot bound, at most `limit`, oldest first, across buckets and past each bucket's first page", async () => {
      // At most 2 × limit watched entries (ended leftovers included) up to the bound: every one is read.
      const layoutArb = fc.integer({ min: 1, max: 4 }).chain((limit) =>
        fc.record({
          limit: fc.constant(limit),
          runs: fc.uniqueArray(
            fc.record({ slot: fc.integer({ min: 0, max: 19 }), bucket: fc.constantFrom(3, 12), status: fc.constantFrom(...ALL_STATUSES) }),
            {
              minLength: 1,
              maxLength: 2 * limit,
              selector: (r) => r.slot,
            },
          ),
          bound: fc.oneof(
            fc.integer({ min: -1, max: 20 }),
            fc.nat().map((n) => ({ nth: n })),
          ),
        }),
      );
      await fc.assert(
        fc.asyncProperty(layoutArb, async ({ limit, runs, bound }) => {
          const base = freshEpoch();
          const slotAt = (i: number) => base + i * MIN;
          const stored = await putAll(
            runs.map((r) => ({
              job: jobInBucket(`lo${epochs}`, r.bucket, slotAt(r.slot)),
              slot: slotAt(r.slot),
              status: r.status,
              watched: true,
            })),
          );
          // Unwatched open runs are not listed.
          await put({ job: freshJob('lo-unwatched'), slot: slotAt(0) });
          const slotBefore = slotAt(typeof bound === 'number' ? bound : runs[bound.nth % runs.length]!.slot);
          const listed = await box.ledger.listOpenRuns(slotBefore, limit);
          const expected = stored
            .filter((r) => OPEN.includes(r.status) && r.slot <= slotBefore)
            .sort((a, b) => a.slot - b.slot)
            .slice(0, limit);
          expect(listed).toEqual(expected);
        }),
        { numRuns: 20 },
      );
    });

    it('listOpenRuns reads past a first page of ended leftovers in a bucket to the open run behind them', async () => {
      const base = freshEpoch();
      const BUCKET = 7;
      const spec = (i: number, status: RunStatus) => ({
        job: jobInBucket(`left${epochs}`, BUCKET, base + i * MIN),
        slot: base + i * MIN,
        status,
        watched: true,
      });
      const [, , open] = await putAll([spec(0, RunStatus.SUCCEEDED), spec(1, RunStatus.DEAD), spec(2, RunStatus.RETRY)]);
      expect(await box.ledger.listOpenRuns(base + 2 * MIN, 2)).toEqual([open]);
    });

    it('listOpenRuns orders runs of different buckets by slot, and cuts at the limit', async () => {
      const base = freshEpoch();
      // The later slots in the lower bucket, read first.
      const stored = await putAll([
        { job: jobInBucket(`ord${epochs}`, 0, base + 5 * MIN), slot: base + 5 * MIN, watched: true },
        { job: jobInBucket(`ord${epochs}`, 0, base + 4 * MIN), slot: base + 4 * MIN, watched: true, status: RunStatus.RUNNING },
        { job: jobInBucket(`ord${epochs}`, 1, base + 3 * MIN), slot: base + 3 * MIN, watched: true, status: RunStatus.UNKNOWN },
        { job: jobInBucket(`ord${epochs}`, 15, base + 1 * MIN), slot: base + 1 * MIN, watched: true },
        { job: jobInBucket(`ord${epochs}`, 8, base + 2 * MIN), slot: base + 2 * MIN, watched: true, status: RunStatus.RETRY },
      ]);
      const bySlot = [...stored].sort((a, b) => a.slot - b.slot);
      expect(await box.ledger.listOpenRuns(base + 5 * MIN, 10)).toEqual(bySlot);
      expect(await box.ledger.listOpenRuns(base + 5 * MIN, 3)).toEqual(bySlot.slice(0, 3));
      expect(await box.ledger.listOpenRuns(base + 4 * MIN, 10)).toEqual(bySlot.slice(0, 4));
      expect(await box.ledger.listOpenRuns(base + 1 * MIN - 1, 10)).toEqual([]);
    });
    it("listOpenRuns reads the watch index a page of `limit` entries at a time, stops reading a bucket at twice the limit, and reads each bucket's last page once: its cost is bounded by its limit, not by the size of the index", async () => {
      const base = freshEpoch();
      const inSix = await putAll(
        [0, 1, 2, 3, 4, 5].map((i) => ({ job: jobInBucket(`cost${epochs}`, 6, base + i * MIN), slot: base + i * MIN, watched: true })),
      );
      const inTwo = await put({ job: jobInBucket(`cost${epochs}`, 2, base + 10 * MIN), slot: base + 10 * MIN, watched: true });
      const clients = localClients(box.endpoints);
      const counting = new CountingMiddleware();
      counting.attach(clients.doc);
      try {
        const ledger = new Ledger(clients.doc, { tableName: box.endpoints.ledgerTable });
        // Every bucket's entries fit in one page: one Query per bucket.
        expect(await ledger.listOpenRuns(base + 10 * MIN, 10)).toEqual([...inSix, inTwo]);
        expect(counting.byCommand()).toEqual({ BatchGetItemCommand: 1, QueryCommand: KEY_SPREAD.openBuckets });
        counting.reset();
        // Limit 2: bucket 6 is read two entries at a time, and no further once 4 are read.
        expect(await ledger.listOpenRuns(base + 5 * MIN, 2)).toEqual(inSix.slice(0, 2));
        expect(counting.byCommand()).toEqual({ BatchGetItemCommand: 1, QueryCommand: KEY_SPREAD.openBuckets + 1 });
      } finally {
        clients.dynamo.destroy();
        clients.sqs.destroy();
      }
    });
  });

  // --------------------------------------------------------------------------- openRunsInWindow

  describe('openRunsInWindow', () => {
    it("openRunsInWindow returns the open runs with slot in (after, until], every shard of the window's last slot and none of its first, oldest first", async () => {
      const layoutArb = fc.record({
        shards: fc.integer({ min: 1, max: 3 }),
        slots: fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 6 }),
        statuses: fc.array(fc.constantFrom(...ALL_STATUSES), { minLength: 18, maxLength: 18 }),
        after: fc.oneof(
          fc.integer({ min: -1, max: 10 }),
          fc.nat().map((n) => ({ nth: n })),
        ),
        until: fc.oneof(
          fc.integer({ min: -1, max: 10 }),
          fc.nat().map((n) => ({ nth: n })),
        ),
      });
      await fc.assert(
        fc.asyncProperty(layoutArb, async ({ shards, slots, statuses, after: afterChoice, until: untilChoice }) => {
          const base = freshEpoch();
          const job = freshJob('window');
          const slotAt = (i: number) => base + i * MIN;
          const pick = (c: number | { nth: number }) => slotAt(typeof c === 'number' ? c : slots[c.nth % slots.length]!);
          const [after, until] = [pick(afterChoice), pick(untilChoice)];
          // The sweeper asks only for a window that is not empty (until > after): an empty one is a ValidationException (lower bound above the upper).
          if (until <= after) return;
          let k = 0;
          const stored = await putAll(
            slots.flatMap((i) =>
              Array.from({ length: shards }, (_, shard) => ({ job, slot: slotAt(i), shard, shards, status: statuses[k++]! })),
            ),
          );
          await putJobItems(job, slotAt(slots[0]!));
          const found = await box.ledger.openRunsInWindow(job, after, until);
          expect(found).toEqual(
            stored
              .filter((r) => OPEN.includes(r.status) && r.slot > after && r.slot <= until)
              .sort((a, b) => a.slot - b.slot || a.shard - b.shard),
          );
        }),
        { numRuns: 20 },
      );
    });

    it('openRunsInWindow reads every page: big runs past the first 1 MB are returned', async () => {
      const base = freshEpoch();
      const job = freshJob('window-big');
      const stored = await putAll(
        Array.from({ length: 8 }, (_, i) => ({ job, slot: base + (i + 1) * MIN, status: OPEN[i % OPEN.length]!, big: true })),
      );
      expect(await pagesOf(job)).toBeGreaterThan(1);
      expect(await box.ledger.openRunsInWindow(job, base, base + 8 * MIN)).toEqual(stored);
    });
  });

  // ----------------------------------------------------------------- laneRunsAfter, nearestRuns

  describe("the overlap policies' neighbours", () => {
    it('laneRunsAfter reads every page: big runs past the first 1 MB are returned; an empty window reads nothing', async () => {
      const base = freshEpoch();
      const job = freshJob('lane-big');
      const stored = await putAll(
        Array.from({ length: 8 }, (_, i) => ({ job, slot: base + (i + 1) * MIN, status: RunStatus.READY, big: true })),
      );
      expect(await pagesOf(job)).toBeGreaterThan(1);
      expect(await box.ledger.laneRunsAfter(job, 0, base, base + 8 * MIN)).toEqual(stored);
      // An empty window, (t, t] or (t, earlier], holds no slot: nothing to read, and nothing read.
      const clients = localClients(box.endpoints);
      const counting = new CountingMiddleware();
      counting.attach(clients.doc);
      try {
        const ledger = new Ledger(clients.doc, { tableName: box.endpoints.ledgerTable });
        expect(await ledger.laneRunsAfter(job, 0, base + 3 * MIN, base + 3 * MIN)).toEqual([]);
        expect(await ledger.laneRunsAfter(job, 0, base + 3 * MIN, base + 2 * MIN)).toEqual([]);
        expect(counting.byCommand()).toEqual({});
      } finally {
        clients.dynamo.destroy();
        clients.sqs.destroy();
      }
    });

    it("nearestRuns after a slot returns the later runs nearest first, never a shard of the slot itself, and only the lane's with a lane", async () => {
      const base = freshEpoch();
      const job = freshJob('near-after');
      const slotAt = (i: number) => base + i * MIN;
      const stored = await putAll([0, 1, 2, 3, 4].flatMap((i) => [0, 1, 2].map((shard) => ({ job, slot: slotAt(i), shard, shards: 3 }))));
      await putJobItems(job, slotAt(0));
      const at = (i: number, shard: number) => stored.find((r) => r.slot === slotAt(i) && r.shard === shard)!;
      expect(await box.ledger.nearestRuns(job, slotAt(2), 'after', 2, { shard: 1, shards: 3 })).toEqual([at(3, 1), at(4, 1)]);
      expect(await box.ledger.nearestRuns(job, slotAt(2), 'after', 2)).toEqual([at(3, 0), at(3, 1)]);
      // Before, without a lane: the `limit` items below the slot's shard 0, which takes one place.
      expect(await box.ledger.nearestRuns(job, slotAt(2), 'before', 3)).toEqual([at(1, 2), at(1, 1)]);
      expect(await box.ledger.nearestRuns(job, slotAt(4), 'after', 2, { shard: 0, shards: 3 })).toEqual([]);
      expect(await box.ledger.nearestRuns(job, slotAt(0), 'before', 2, { shard: 0, shards: 3 })).toEqual([]);
    });

    it('nearestRuns reads past a 1 MB page to its limit, and no further', async () => {
      const base = freshEpoch();
      const job = freshJob('near-big');
      const slotAt = (i: number) => base + i * MIN;
      const stored = await putAll(Array.from({ length: 12 }, (_, i) => ({ job, slot: slotAt(i), big: true })));
      expect(await pagesOf(job)).toBeGreaterThan(2);
      expect(await box.ledger.nearestRuns(job, slotAt(11), 'before', 7)).toEqual(stored.slice(5, 11).reverse());
      expect(await box.ledger.nearestRuns(job, slotAt(0), 'after', 7)).toEqual(stored.slice(1, 8));
    });
  });

  // ---------------------------------------------------------------------------------- listRuns

  describe('listRuns', () => {
    it("listRuns returns a job's runs newest first unless ascending, from `sinceSlot` (every shard of it) on, at most `limit`, and none of the job's other items", async () => {
      const layoutArb = fc.record({
        shards: fc.integer({ min: 1, max: 3 }),
        slots: fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 6 }),
        since: fc.option(
          fc.oneof(
            fc.integer({ min: -1, max: 10 }),
            fc.nat().map((n) => ({ nth: n })),
          ),
          { nil: undefined },
        ),
        limit: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
        ascending: fc.option(fc.boolean(), { nil: undefined }),
      });
      await fc.assert(
        fc.asyncProperty(layoutArb, async ({ shards, slots, since, limit, ascending }) => {
          const base = freshEpoch();
          const job = freshJob('list');
          const slotAt = (i: number) => base + i * MIN;
          const stored = await putAll(
            slots.flatMap((i) => Array.from({ length: shards }, (_, shard) => ({ job, slot: slotAt(i), shard, shards }))),
          );
          await putJobItems(job, slotAt(slots[0]!));
          const sinceSlot = since === undefined ? undefined : slotAt(typeof since === 'number' ? since : slots[since.nth % slots.length]!);
          const listed = await box.ledger.listRuns(job, {
            ...(limit !== undefined ? { limit } : {}),
            ...(ascending !== undefined ? { ascending } : {}),
            ...(sinceSlot !== undefined ? { sinceSlot } : {}),
          });
          const order = (a: Run, b: Run) => (ascending ? a.slot - b.slot || a.shard - b.shard : b.slot - a.slot || b.shard - a.shard);
          expect(listed).toEqual(
            stored
              .filter((r) => sinceSlot === undefined || r.slot >= sinceSlot)
              .sort(order)
              .slice(0, limit ?? Infinity),
          );
        }),
        { numRuns: 25 },
      );
    });

    it('listRuns reads past a 1 MB page: every run without a limit, exactly `limit` with one', async () => {
      const base = freshEpoch();
      const job = freshJob('list-big');
      const stored = await putAll(Array.from({ length: 10 }, (_, i) => ({ job, slot: base + i * MIN, big: true })));
      expect(await pagesOf(job)).toBeGreaterThan(2);
      const newest = [...stored].reverse();
      expect(await box.ledger.listRuns(job)).toEqual(newest);
      expect(await box.ledger.listRuns(job, { limit: 5 })).toEqual(newest.slice(0, 5));
      expect(await box.ledger.listRuns(job, { limit: 5, ascending: true })).toEqual(stored.slice(0, 5));
    });

    it("listRuns with a limit reads only the page that fills it, not the job's whole history", async () => {
      const base = freshEpoch();
      const job = freshJob('list-cost');
      const stored = await putAll(Array.from({ length: 12 }, (_, i) => ({ job, slot: base + i * MIN })));
      const clients = localClients(box.endpoints);
      const counting = new CountingMiddleware();
      counting.attach(clients.doc);
      try {
        const ledger = new Ledger(clients.doc, { tableName: box.endpoints.ledgerTable });
        expect(await ledger.listRuns(job, { limit: 3 })).toEqual(stored.slice(9).reverse());
        expect(counting.byCommand()).toEqual({ QueryCommand: 1 });
      } finally {
        clients.dynamo.destroy();
        clients.sqs.destroy();
      }
    });
  });

  // ------------------------------------------------------------------------- consistent reads

  it('the reads the worker, the sweeper and the overlap policies decide from see a run written just before, even where a replica lags (strongly consistent reads)', async () => {
    // DynamoDB Local answers every read from the one copy it has. In DynamoDB an eventually
    // consistent read may miss a write made just before: this client answers such a read as a
    // lagging replica would (nothing yet), and passes a consistent read (and a read of the watch
    // index, which is eventually consistent by nature) to the table.
    const lagging = clientWith(box.endpoints.dynamoEndpoint, async (command, input, next) => {
      const consistent = input.ConsistentRead === true;
      if (command === 'GetItemCommand' && !consistent) return { output: {} };
      if (command === 'QueryCommand' && input.IndexName === undefined && !consistent) return { output: { Items: [], Count: 0 } };
      if (command === 'BatchGetItemCommand') {
        const [table, request] = Object.entries(input.RequestItems as Record<string, { ConsistentRead?: boolean }>)[0]!;
        if (request.ConsistentRead !== true) return { output: { Responses: { [table]: [] }, UnprocessedKeys: {} } };
      }
      return next();
    });
    const ledger = new Ledger(lagging.doc, { tableName: box.endpoints.ledgerTable });
    const base = freshEpoch();
    const job = jobInBucket(`consistent${epochs}`, 4, base + MIN);
    const [first, second, third] = await putAll([
      { job, slot: base },
      { job, slot: base + MIN, watched: true },
      { job, slot: base + 2 * MIN },
    ]);
    expect(await ledger.getRun(second!)).toEqual(second);
    expect(await ledger.getRuns([first!, second!, third!])).toHaveLength(3);
    expect(await ledger.nearestRuns(job, base + MIN, 'before', 2)).toEqual([first]);
    expect(await ledger.nearestRuns(job, base + MIN, 'after', 1)).toEqual([third]);
    expect(await ledger.laneRunsAfter(job, 0, base, base + 2 * MIN)).toEqual([second, third]);
    expect(await ledger.openRunsInWindow(job, base, base + 2 * MIN)).toEqual([second, third]);
    expect(await ledger.listRuns(job)).toEqual([third, second, first]);
    expect(await ledger.listOpenRuns(base + MIN, 10)).toEqual([second]);
    // The lane marker the sweeper and the forbid-queue order check read before they dispatch.
    expect(await box.ledger.lanes.acquire(job, { slot: base + MIN, shard: 0 }, base + MIN)).toMatchObject({ kind: 'acquired' });
    expect(await ledger.lanes.read(job, 0)).toMatchObject({ holderSlot: base + MIN });
    lagging.destroy();
  });

  // ----------------------------------------------------------------------- keys and empty pages

  it("idOfKey gives back the run id of a run's table keys, for any job, slot and shard", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !s.includes('#')),
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }),
        fc.integer({ min: 0, max: 999 }),
        (job, slot, shard) => {
          expect(idOfKey({ pk: LedgerKeys.jobPk(job), sk: LedgerKeys.runSk(slot, shard) })).toEqual({ job, slot, shard });
        },
      ),
    );
  });

  it('a read whose answer holds no items (a page of nothing) returns no runs, never a made-up one', async () => {
    const empty = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
    mockClient(empty).onAnyCommand().resolves({});
    const ledger = new Ledger(empty, { tableName: 'table' });
    const base = freshEpoch();
    expect(await ledger.getRuns([{ job: 'j', slot: base, shard: 0 }])).toEqual([]);
    expect(await ledger.watchedPage(0, base, undefined, 10)).toEqual({ entries: [], more: false });
    expect(await ledger.nearestRuns('j', base, 'before', 3)).toEqual([]);
    expect(await ledger.laneRunsAfter('j', 0, base, base + MIN)).toEqual([]);
    expect(await ledger.openRunsInWindow('j', base, base + MIN)).toEqual([]);
    expect(await ledger.listRuns('j')).toEqual([]);
    expect(await ledger.listOpenRuns(base, 10)).toEqual([]);
  });
});
