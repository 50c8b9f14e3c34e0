/**
 * The planner's own ledger items (shared/store/planner-state.ts) on DynamoDB Local: the layout
 * and its watermarks, the exception buckets of paused and catching-up jobs, and each job's plan
 * item. Every test asserts on what the store returns and on what is read back afterwards, never
 * on request text. Faults a local server cannot produce (unprocessed keys, lost responses,
 * throttles, an error from another copy of the SDK) are injected as middleware on a real client:
 * the request still reaches DynamoDB Local.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mapBounded } from '../../shared/core/concurrency.js';
import { exceptionBucketOf, type PartitionCursor, type PlannerLayout } from '../../shared/core/planner-state.js';
import { PlannerStore, type JobPlan } from '../../shared/store/planner-state.js';
import { jobPlanning } from '../../shared/store/job-planning.js';
import { KEY_SPREAD, LedgerKeys } from '../../shared/core/resources.js';
import { clientWith, faultyClient } from '../support/faults.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const BASE = Date.UTC(2026, 5, 1, 0, 0);
const NOW = BASE + 3_600_000;

let nextName = 0;
const freshJob = (prefix = 'job') => `${prefix}-${++nextName}`;

/** One job name per exception bucket, every bucket covered. */
function namesInEveryBucket(prefix: string): string[] {
  const byBucket = new Map<number, string>();
  for (let i = 0; byBucket.size < KEY_SPREAD.exceptionBuckets; i++) {
    const name = `${prefix}-${i}`;
    if (!byBucket.has(exceptionBucketOf(name))) byBucket.set(exceptionBucketOf(name), name);
  }
  return [...byBucket.values()];
}

/** The pauses (ms) the planner store itself waits, by the timers it sets (the SDK's own timers are left out). */
function storePauses(): { pauses: number[]; restore(): void } {
  const pauses: number[] = [];
  const original = globalThis.setTimeout;
  const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((callback: () => void, ms?: number) => {
    // Who set the timer: the first frame outside this file and the spy.
    const caller =
      (new Error().stack ?? '')
        .split('\n')
        .slice(1)
        .find((frame) => !/planner-store\.test\.ts|tinyspy|@vitest|vitest\/dist/.test(frame)) ?? '';
    // The store's batch read lives in the shared envelope (shared/store/conditional.ts).
    if (/shared\/store\/conditional\.ts/.test(caller)) pauses.push(ms ?? 0);
    return original(callback, ms);
  }) as typeof setTimeout);
  return { pauses, restore: () => spy.mockRestore() };
}

/** A cursor as stored: the fields that are set. */
const stored = (cursor: PartitionCursor) => Object.fromEntries(Object.entries(cursor).filter(([, v]) => v !== undefined));
const layoutAsStored = (layout: PlannerLayout) => ({
  of: layout.of,
  gen: layout.gen,
  partitions: new Map([...layout.partitions].map(([p, c]) => [p, stored(c)])),
});

const cursorArb: fc.Arbitrary<PartitionCursor> = fc.record(
  {
    plannedUntil: fc.integer({ min: BASE, max: NOW }),
    sweptUntil: fc.integer({ min: BASE, max: NOW }),
    watchAfter: fc.string({ minLength: 1, maxLength: 8 }),
  },
  { requiredKeys: [] },
);
const layoutArb = (gen: number): fc.Arbitrary<PlannerLayout> =>
  fc
    .integer({ min: 1, max: 12 })
    .chain((of) =>
      fc
        .array(cursorArb, { minLength: of, maxLength: of })
        .map((cursors) => ({ of, gen, partitions: new Map(cursors.map((c, p) => [p, c])) })),
    );

describe('the planner layout', () => {
  it("there is no layout before the first; each layout written from the one read reads back whole (count, generation, every partition's cursor) through both reads", async () => {
    const own = await sandbox();
    try {
      const planning = own.ledger.planning;
      expect(await planning.readLayout()).toBeUndefined();
      expect((await planning.readTickState()).layout).toBeUndefined();
      let gen = 0;
      await fc.assert(
        fc.asyncProperty(layoutArb(1), async (generated) => {
          const previous = await planning.readLayout();
          const next = { ...generated, gen: ++gen };
          expect(await planning.writeLayout(previous, next, NOW)).toBe(true);
          expect(await planning.readLayout()).toEqual(layoutAsStored(next));
          expect((await planning.readTickState()).layout).toEqual(layoutAsStored(next));
        }),
        { numRuns: 15 },
      );
    } finally {
      own.destroy();
    }
  });

  it('a planner holding a stale layout generation (or none) cannot replace the current one, and its refused write changes nothing', async () => {
    const own = await sandbox();
    try {
      const planning = own.ledger.planning;
      const first: PlannerLayout = { of: 1, gen: 1, partitions: new Map([[0, { plannedUntil: BASE }]]) };
      const second: PlannerLayout = {
        of: 2,
        gen: 2,
        partitions: new Map([
          [0, { plannedUntil: BASE + 1 }],
          [1, { plannedUntil: BASE + 2 }],
        ]),
      };
      expect(await planning.writeLayout(undefined, first, NOW)).toBe(true);
      expect(await planning.writeLayout(first, second, NOW)).toBe(true);
      const third: PlannerLayout = { of: 4, gen: 3, partitions: new Map() };
      expect(await planning.writeLayout(first, third, NOW)).toBe(false);
      expect(await planning.writeLayout(undefined, third, NOW)).toBe(false);
      expect(await planning.readLayout()).toEqual(layoutAsStored(second));
      // And a watermark written under the stale generation is refused as well.
      expect(await planning.advancePartition(1, 0, BASE + 9)).toBe(false);
      expect(await planning.saveSweep(1, 0, { sweptUntil: BASE + 9 })).toBe(false);
      expect(await planning.readLayout()).toEqual(layoutAsStored(second));
    } finally {
      own.destroy();
    }
  });

  it('a state item without a partition count is no layout; one without partitions has none', async () => {
    const own = await sandbox();
    try {
      const put = (item: Record<string, unknown>) =>
        own.clients.doc.send(
          new PutCommand({
            TableName: own.endpoints.ledgerTable,
            Item: { pk: LedgerKeys.plannerPk, sk: LedgerKeys.plannerStateSk, ...item },
          }),
        );
      await put({ gen: 1 });
      expect(await own.ledger.planning.readLayout()).toBeUndefined();
      expect((await own.ledger.planning.readTickState()).layout).toBeUndefined();
      await put({ of: 3, gen: 2 });
      expect(await own.ledger.planning.readLayout()).toEqual({ of: 3, gen: 2, partitions: new Map() });
    } finally {
      own.destroy();
    }
  });
});

describe('the partition watermarks', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
    const layout: PlannerLayout = {
      of: 4,
      gen: 7,
      partitions: new Map([0, 1, 2, 3].map((p) => [p, { plannedUntil: BASE, sweptUntil: BASE }])),
    };
    expect(await box.ledger.planning.writeLayout(undefined, layout, NOW)).toBe(true);
  });
  afterAll(() => box.destroy());

  it("each partition's watermarks move on their own, forward only, and each call reports whether it moved", async () => {
    const planning = box.ledger.planning;
    const op = fc.record({
      partition: fc.integer({ min: 0, max: 3 }),
      kind: fc.constantFrom('planned' as const, 'swept' as const),
      to: fc.integer({ min: 0, max: 30 }),
      gen: fc.constantFrom(7, 7, 7, 6, 8),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 10 }), async (ops) => {
        const model = new Map((await planning.readLayout())!.partitions as ReadonlyMap<number, PartitionCursor>);
        for (const { partition, kind, to, gen } of ops) {
          const before = model.get(partition)!;
          const current = kind === 'planned' ? before.plannedUntil! : before.sweptUntil!;
          const until = current + to - 10;
          const moved =
            kind === 'planned'
              ? await planning.advancePartition(gen, partition, until)
              : await planning.saveSweep(gen, partition, { sweptUntil: until });
          const expected = gen === 7 && until >= current;
          expect(moved).toBe(expected);
          if (expected) model.set(partition, { ...before, ...(kind === 'planned' ? { plannedUntil: until } : { sweptUntil: until }) });
        }
        const after = (await planning.readLayout())!;
        expect(after.gen).toBe(7);
        for (const [p, cursor] of model)
          expect(after.partitions.get(p)).toMatchObject({ plannedUntil: cursor.plannedUntil, sweptUntil: cursor.sweptUntil });
      }),
      { numRuns: 25 },
    );
  });

  it('a sweep saves where the watch sweep resumes with its watermark, and a sweep that finished every bucket drops it', async () => {
    const planning = box.ledger.planning;
    const swept = (await planning.readLayout())!.partitions.get(2)!.sweptUntil!;
    expect(await planning.saveSweep(7, 2, { sweptUntil: swept + 1, watchAfter: 'bucket-9' })).toBe(true);
    expect((await planning.readLayout())!.partitions.get(2)).toMatchObject({ sweptUntil: swept + 1, watchAfter: 'bucket-9' });
    // A refused sweep (behind the watermark) leaves the resume point as it was.
    expect(await planning.saveSweep(7, 2, { sweptUntil: swept, watchAfter: 'bucket-1' })).toBe(false);
    expect((await planning.readLayout())!.partitions.get(2)?.watchAfter).toBe('bucket-9');
    expect(await planning.saveSweep(7, 2, { sweptUntil: swept + 2 })).toBe(true);
    const cursor = (await planning.readLayout())!.partitions.get(2)!;
    expect(cursor.sweptUntil).toBe(swept + 2);
    expect(cursor.watchAfter).toBeUndefined();
    expect('watchAfter' in cursor).toBe(false);
  });
});

describe('batch reads of plan items', () => {
  let box: Sandbox;
  const JOBS = 260;
  const jobs = Array.from({ length: JOBS }, (_, i) => `batch-${i}`);
  beforeAll(async () => {
    box = await sandbox();
    // Job i's plan item records cursor i (so it identifies the item).
    await mapBounded(jobs, 16, (job, i) => box.ledger.planning.setCatchUp(job, BASE + i, BASE + i + 1, undefined));
  });
  afterAll(() => box.destroy());

  const expectPlans = (plans: ReadonlyMap<string, JobPlan>, wanted: readonly string[]) => {
    const present = wanted.filter((job) => job.startsWith('batch-'));
    expect([...plans.keys()].sort()).toEqual([...new Set(present)].sort());
    for (const job of present)
      expect(plans.get(job)).toEqual({ job, cursor: BASE + jobs.indexOf(job), edge: BASE + jobs.indexOf(job) + 1 });
  };

  it('reads every plan item asked for, whatever the count (more than 100 keys go in several requests), and nothing for a job without one', async () => {
    const count = fc.oneof(fc.constantFrom(0, 1, 99, 100, 101, 199, 200, 201, JOBS), fc.integer({ min: 0, max: JOBS }));
    await fc.assert(
      fc.asyncProperty(count, fc.integer({ min: 0, max: JOBS }), fc.integer({ min: 0, max: 5 }), async (n, offset, missing) => {
        const wanted = [
          ...Array.from({ length: n }, (_, i) => jobs[(offset + i) % JOBS]!),
          ...Array.from({ length: missing }, () => freshJob('no-plan')),
        ];
        expectPlans(await box.ledger.planning.readJobPlans(wanted), wanted);
      }),
      { numRuns: 20 },
    );
  });

  it('keys the server leaves unprocessed are asked for again, with a growing pause capped at one second, until every item is read', async () => {
    // The server reads the batch but hands back some keys unprocessed: of each response, every
    // other item (or, in the rounds given, all of them, with no response list for the table).
    const table = box.endpoints.ledgerTable;
    let rounds = 0;
    const allUnprocessedIn = new Set([1, 3, 4, 5, 6]);
    const client = clientWith(box.endpoints.dynamoEndpoint, async (command, _input, next) => {
      const result = await next();
      if (command !== 'BatchGetItemCommand' || rounds >= 8) return result;
      const round = rounds++;
      const responses = (result.output.Responses as Record<string, Record<string, unknown>[]>)[table] ?? [];
      const withheld = allUnprocessedIn.has(round) ? responses : responses.filter((_, i) => i % 2 === 0);
      const kept = responses.filter((item) => !withheld.includes(item));
      const keys = withheld.map((item) => ({ pk: item.pk, sk: item.sk }));
      const output = {
        ...result.output,
        Responses: allUnprocessedIn.has(round) ? {} : { [table]: kept },
        UnprocessedKeys: keys.length > 0 ? { [table]: { Keys: keys, ConsistentRead: true } } : {},
      };
      return { ...result, output };
    });
    const timers = storePauses();
    try {
      const wanted = jobs.slice(0, 60);
      const plans = await new PlannerStore(client.doc, table).readJobPlans(wanted);
      expectPlans(plans, wanted);
      expect(rounds).toBe(8);
      expect(timers.pauses).toEqual([25, 50, 100, 200, 400, 800, 1_000, 1_000]);
    } finally {
      timers.restore();
      client.destroy();
    }
  });

  it('a batch read the server answers whole does not pause', async () => {
    const timers = storePauses();
    try {
      expectPlans(await box.ledger.planning.readJobPlans(jobs.slice(0, 150)), jobs.slice(0, 150));
      expect(timers.pauses).toEqual([]);
    } finally {
      timers.restore();
    }
  });
});

describe('the exception buckets', () => {
  it('a tick reads every paused and every catching-up job, whichever of the buckets lists it, with the layout in the same read', async () => {
    const own = await sandbox();
    try {
      const planning = own.ledger.planning;
      const layout: PlannerLayout = {
        of: 2,
        gen: 1,
        partitions: new Map([
          [0, { plannedUntil: BASE }],
          [1, { plannedUntil: BASE + 1 }],
        ]),
      };
      expect(await planning.writeLayout(undefined, layout, NOW)).toBe(true);
      const pausedJobs = namesInEveryBucket('paused');
      const behindJobs = namesInEveryBucket('behind');
      // Some buckets list only paused jobs, some only behind ones, the rest both.
      const paused = pausedJobs.filter((_, i) => i % 3 !== 0);
      const behind = behindJobs.filter((_, i) => i % 3 !== 1);
      await mapBounded(paused, 8, (job) => planning.pause(job, BASE, { by: 'op', at: NOW }));
      await planning.listBehind(behind, []);
      const state = await planning.readTickState();
      expect([...state.paused].sort()).toEqual([...paused].sort());
      expect([...state.behind].sort()).toEqual([...behind].sort());
      expect(state.layout).toEqual(layoutAsStored(layout));
    } finally {
      own.destroy();
    }
  });

  it('the behind lists hold exactly the names added and not since removed, one call adding and removing in the same or other buckets', async () => {
    const own = await sandbox();
    try {
      const planning = own.ledger.planning;
      // A small pool with several names per bucket, so calls add and remove within one bucket.
      const pool = namesInEveryBucket('pool')
        .slice(0, 3)
        .flatMap((first) => {
          const bucket = exceptionBucketOf(first);
          const mates = [first];
          for (let i = 0; mates.length < 3; i++) if (exceptionBucketOf(`mate-${i}`) === bucket) mates.push(`mate-${i}`);
          return mates;
        });
      const model = new Set<string>();
      const names = fc.uniqueArray(fc.constantFrom(...pool), { maxLength: 5 });
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(names, names), { minLength: 1, maxLength: 6 }), async (calls) => {
          for (const [add, remove] of calls) {
            await planning.listBehind(add, remove);
            for (const job of add) model.add(job);
            for (const job of remove) model.delete(job);
            expect([...(await planning.readTickState()).behind].sort()).toEqual([...model].sort());
          }
        }),
        { numRuns: 15 },
      );
    } finally {
      own.destroy();
    }
  });
});

describe("a job's plan item: pause, resume and catch-up", () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  type Op =
    | { kind: 'pause'; until: number; by: string; note?: string }
    | { kind: 'resume' }
    | { kind: 'set'; cursor: number; edge: number; expected: 'as-read' | 'none' | 'other' }
    | { kind: 'clear'; expected: 'as-read' | 'none' | 'other' };
  const expectedArb = fc.constantFrom('as-read' as const, 'as-read' as const, 'none' as const, 'other' as const);
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record(
      {
        kind: fc.constant('pause' as const),
        until: fc.integer({ min: BASE, max: NOW }),
        by: fc.constantFrom('op', 'pauseOnFailure'),
        note: fc.string({ minLength: 1, maxLength: 12 }),
      },
      { requiredKeys: ['kind', 'until', 'by'] },
    ),
    fc.record({ kind: fc.constant('resume' as const) }),
    fc.record({
      kind: fc.constant('set' as const),
      cursor: fc.integer({ min: BASE, max: NOW }),
      edge: fc.integer({ min: BASE, max: NOW }),
      expected: expectedArb,
    }),
    fc.record({ kind: fc.constant('clear' as const), expected: expectedArb }),
  );

  it("pause, resume and the catch-up cursor follow their rules: a pause keeps who, why and when and the cursor it found, a paused job's cursor never moves, a resumed job is listed behind", async () => {
    const planning = box.ledger.planning;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 1_000 }), async (ops, at) => {
        const job = freshJob('pr');
        let model: { pause?: { at: number; by: string; note?: string }; cursor?: number; edge?: number } = {};
        let listedPaused = false;
        let listedBehind = false;
        for (const op of ops) {
          const expectedOf = (e: 'as-read' | 'none' | 'other') =>
            e === 'none' ? undefined : e === 'other' ? (model.cursor ?? BASE) + 1 : model.cursor;
          switch (op.kind) {
            case 'pause': {
              const by = { by: op.by, at: at + BASE, ...(op.note === undefined ? {} : { note: op.note }) };
              const lands = model.pause === undefined;
              expect(await planning.pause(job, op.until, by)).toBe(lands);
              if (lands) {
                model = { pause: by, cursor: model.cursor ?? op.until };
                listedPaused = true;
              }
              break;
            }
            case 'resume': {
              const lands = model.pause !== undefined;
              expect(await planning.resume(job)).toBe(lands);
              if (lands) {
                const { pause: _, ...rest } = model;
                model = rest;
                listedPaused = false;
                listedBehind = true;
              }
              break;
            }
            case 'set': {
              const expected = expectedOf(op.expected);
              const lands = model.pause === undefined && expected === model.cursor;
              expect(await planning.setCatchUp(job, op.cursor, op.edge, expected)).toBe(lands);
              if (lands) model = { ...model, cursor: op.cursor, edge: op.edge };
              break;
            }
            case 'clear': {
              const expected = expectedOf(op.expected);
              const lands = model.pause === undefined && expected === model.cursor;
              expect(await planning.clearCatchUp(job, expected)).toBe(lands);
              if (lands) model = { pause: model.pause };
              break;
            }
          }
          const plan = await planning.readJobPlan(job);
          expect(plan ?? { job }).toEqual(JSON.parse(JSON.stringify({ job, ...model })));
          const state = await planning.readTickState();
          expect([state.paused.has(job), state.behind.has(job)]).toEqual([listedPaused, listedBehind]);
        }
      }),
      { numRuns: 30 },
    );
  });

  it('a pause drops the catch-up edge (the resume tick fixes a new one) and keeps the cursor of a job already behind', async () => {
    const planning = box.ledger.planning;
    const job = freshJob('edge');
    expect(await planning.setCatchUp(job, BASE + 3, BASE + 20, undefined)).toBe(true);
    expect(await planning.pause(job, BASE + 10, { by: 'op', at: NOW, note: 'maintenance' })).toBe(true);
    expect(await planning.readJobPlan(job)).toEqual({ job, cursor: BASE + 3, pause: { by: 'op', at: NOW, note: 'maintenance' } });
    expect(await planning.resume(job)).toBe(true);
    expect(await planning.readJobPlan(job)).toEqual({ job, cursor: BASE + 3 });
  });

  it('a job without a plan item reads as none, alone or in a batch', async () => {
    const job = freshJob('none');
    expect(await box.ledger.planning.readJobPlan(job)).toBeUndefined();
    expect((await box.ledger.planning.readJobPlans([job])).size).toBe(0);
  });

  it('a bound written by earlier code reads back as written, slot 0 included, its +∞ (stored -1) as +∞; a count reads back as its number', async () => {
    const planning = box.ledger.planning;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: NOW }),
        fc.oneof(fc.constantFrom(0, 1, Number.POSITIVE_INFINITY), fc.integer({ min: 0, max: NOW })),
        async (first, last) => {
          const job = freshJob('bound');
          await box.clients.doc.send(
            new UpdateCommand({
              TableName: box.endpoints.ledgerTable,
              Key: { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.jobPlanSk },
              UpdateExpression: 'SET firstSlot = :first, lastSlot = :last',
              ExpressionAttributeValues: { ':first': first, ':last': Number.isFinite(last) ? last : -1 },
            }),
          );
          expect(await planning.readJobPlan(job)).toEqual({ job, firstSlot: first, lastSlot: last });
          expect((await planning.readJobPlans([job])).get(job)).toEqual({ job, firstSlot: first, lastSlot: last });
        },
      ),
      { numRuns: 15 },
    );
    const counted = freshJob('counted');
    await box.ledger.createCountedRun({ job: counted, slot: BASE, shard: 0, shards: 1, status: 'READY' }, NOW, 'tick', {
      maxRuns: 3,
      start: 0,
    });
    expect(await planning.readJobPlan(counted)).toEqual({ job: counted, planned: 1 });
  });

  it('on a document client that keeps undefined values (no removeUndefinedValues), a pause without a note and a cursor without watchAfter are still written', async () => {
    const client = clientWith(box.endpoints.dynamoEndpoint, (_c, _i, next) => next(), false);
    try {
      const plain = new PlannerStore(client.doc, box.endpoints.ledgerTable);
      const job = freshJob('plain');
      expect(await plain.pause(job, BASE + 1, { by: 'op', at: NOW, note: undefined })).toBe(true);
      expect(await plain.readJobPlan(job)).toEqual({ job, cursor: BASE + 1, pause: { by: 'op', at: NOW } });
      // A tick that read no cursor sets one, and one that read none clears nothing.
      const behind = freshJob('plain');
      expect(await plain.setCatchUp(behind, BASE + 2, BASE + 8, undefined)).toBe(true);
      expect(await plain.clearCatchUp(behind, undefined)).toBe(false);
      expect(await plain.readJobPlan(behind)).toEqual({ job: behind, cursor: BASE + 2, edge: BASE + 8 });
      expect(await plain.clearCatchUp(behind, BASE + 2)).toBe(true);
      expect(await plain.clearCatchUp(behind, undefined)).toBe(true);
      expect(await plain.readJobPlan(behind)).toEqual({ job: behind });
      const own = await sandbox();
      try {
        const store = new PlannerStore(client.doc, own.endpoints.ledgerTable);
        const layout: PlannerLayout = {
          of: 1,
          gen: 1,
          partitions: new Map([[0, { plannedUntil: BASE, sweptUntil: undefined, watchAfter: undefined }]]),
        };
        expect(await store.writeLayout(undefined, layout, NOW)).toBe(true);
        expect(await store.readLayout()).toEqual({ of: 1, gen: 1, partitions: new Map([[0, { plannedUntil: BASE }]]) });
        expect(await store.saveSweep(1, 0, { sweptUntil: BASE + 1, watchAfter: undefined })).toBe(true);
        expect(await store.readLayout()).toEqual({
          of: 1,
          gen: 1,
          partitions: new Map([[0, { plannedUntil: BASE, sweptUntil: BASE + 1 }]]),
        });
      } finally {
        own.destroy();
      }
    } finally {
      client.destroy();
    }
  });
});

describe('failures are not refusals', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
    expect(
      await box.ledger.planning.writeLayout(
        undefined,
        { of: 1, gen: 1, partitions: new Map([[0, { plannedUntil: BASE, sweptUntil: BASE }]]) },
        NOW,
      ),
    ).toBe(true);
  });
  afterAll(() => box.destroy());

  it('a throttled write is an error, never "another planner won": every conditional write rethrows it and changes nothing', async () => {
    const job = freshJob('throttled');
    expect(await box.ledger.planning.setCatchUp(job, BASE, BASE + 1, undefined)).toBe(true);
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: () => true, fault: 'refused', times: 100 }], 1);
    try {
      const store = new PlannerStore(faulty.doc, box.endpoints.ledgerTable);
      const throttled = { name: 'ThrottlingException' };
      await expect(store.writeLayout(undefined, { of: 2, gen: 2, partitions: new Map() }, NOW)).rejects.toMatchObject(throttled);
      await expect(store.advancePartition(1, 0, BASE + 5)).rejects.toMatchObject(throttled);
      await expect(store.saveSweep(1, 0, { sweptUntil: BASE + 5 })).rejects.toMatchObject(throttled);
      await expect(store.setCatchUp(job, BASE + 1, BASE + 2, BASE)).rejects.toMatchObject(throttled);
      await expect(store.clearCatchUp(job, BASE)).rejects.toMatchObject(throttled);
      await expect(store.pause(job, BASE, { by: 'op', at: NOW })).rejects.toMatchObject(throttled);
      await expect(store.resume(job)).rejects.toMatchObject(throttled);
    } finally {
      faulty.destroy();
    }
    expect(await box.ledger.planning.readLayout()).toEqual({
      of: 1,
      gen: 1,
      partitions: new Map([[0, { plannedUntil: BASE, sweptUntil: BASE }]]),
    });
    expect(await box.ledger.planning.readJobPlan(job)).toEqual({ job, cursor: BASE, edge: BASE + 1 });
  });

  it('a pause or resume whose exception-bucket update the server refuses is an error, and nothing of it is applied', async () => {
    // Its own tables: the corrupted bucket must not be one another test's job falls in.
    const own = await sandbox();
    try {
      const job = freshJob('cancelled');
      // The job's bucket holds a `paused` that is not a set: the transaction's bucket update fails.
      await own.clients.doc.send(
        new UpdateCommand({
          TableName: own.endpoints.ledgerTable,
          Key: { pk: LedgerKeys.plannerPk, sk: LedgerKeys.exceptionsSk(exceptionBucketOf(job)) },
          UpdateExpression: 'SET paused = :s, behind = :s',
          ExpressionAttributeValues: { ':s': 'not-a-set' },
        }),
      );
      await expect(own.ledger.planning.pause(job, BASE, { by: 'op', at: NOW })).rejects.toMatchObject({ name: 'ValidationException' });
      expect(await own.ledger.planning.readJobPlan(job)).toBeUndefined();
      // Paused by hand (plan item only), the resume's bucket update fails the same way.
      await own.clients.doc.send(
        new UpdateCommand({
          TableName: own.endpoints.ledgerTable,
          Key: { pk: LedgerKeys.jobPk(job), sk: LedgerKeys.jobPlanSk },
          UpdateExpression: 'SET pause = :p',
          ExpressionAttributeValues: { ':p': { by: 'op', at: NOW } },
        }),
      );
      await expect(own.ledger.planning.resume(job)).rejects.toMatchObject({ name: 'ValidationException' });
      expect(await own.ledger.planning.readJobPlan(job)).toEqual({ job, pause: { by: 'op', at: NOW } });
    } finally {
      own.destroy();
    }
  });

  it('a cancellation that reaches the store as a plain error (another copy of the SDK) is still recognised as "already paused / not paused"; one without reasons, or cancelled by a conflict, is rethrown', async () => {
    const job = freshJob('foreign');
    expect(await box.ledger.planning.pause(job, BASE, { by: 'op', at: NOW })).toBe(true);
    let reasons: 'as-sent' | 'none' | 'empty' | 'conflict' = 'as-sent';
    const client = clientWith(box.endpoints.dynamoEndpoint, async (command, _input, next) => {
      try {
        return await next();
      } catch (error) {
        const { name, message, CancellationReasons } = error as { name: string; message: string; CancellationReasons?: unknown[] };
        const plain = Object.assign(new Error(message), { name });
        if (reasons === 'as-sent') Object.assign(plain, { CancellationReasons });
        if (reasons === 'empty') Object.assign(plain, { CancellationReasons: [] });
        // Cancelled by a concurrent transaction on the plan item, not by its condition.
        if (reasons === 'conflict') Object.assign(plain, { CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }] });
        throw plain;
      }
    });
    try {
      const store = new PlannerStore(client.doc, box.endpoints.ledgerTable);
      expect(await store.pause(job, BASE, { by: 'other', at: NOW })).toBe(false);
      expect(await store.resume(freshJob('never-paused'))).toBe(false);
      reasons = 'none';
      await expect(store.pause(job, BASE, { by: 'other', at: NOW })).rejects.toMatchObject({ name: 'TransactionCanceledException' });
      await expect(store.resume(freshJob('never-paused'))).rejects.toMatchObject({ name: 'TransactionCanceledException' });
      reasons = 'empty';
      await expect(store.pause(job, BASE, { by: 'other', at: NOW })).rejects.toMatchObject({ name: 'TransactionCanceledException' });
      await expect(store.resume(freshJob('never-paused'))).rejects.toMatchObject({ name: 'TransactionCanceledException' });
      reasons = 'conflict';
      await expect(store.pause(job, BASE, { by: 'other', at: NOW })).rejects.toMatchObject({ name: 'TransactionCanceledException' });
      await expect(store.resume(freshJob('never-paused'))).rejects.toMatchObject({ name: 'TransactionCanceledException' });
    } finally {
      client.destroy();
    }
    expect((await box.ledger.planning.readJobPlan(job))?.pause).toEqual({ by: 'op', at: NOW });
  });

  it('every read sees the writes before it, even where a replica lags (reads not marked consistent are answered from one that saw nothing yet)', async () => {
    const job = freshJob('lagging');
    expect(await box.ledger.planning.pause(job, BASE + 1, { by: 'op', at: NOW })).toBe(true);
    // DynamoDB Local is always consistent: the lag is modelled here. An eventually consistent
    // read may be served by a replica behind the last write; this one has seen none of them.
    const client = clientWith(box.endpoints.dynamoEndpoint, async (command, input, next) => {
      const result = await next();
      if (command === 'GetItemCommand' && input.ConsistentRead !== true)
        return { ...result, output: { ...result.output, Item: undefined } };
      if (
        command === 'BatchGetItemCommand' &&
        Object.values(input.RequestItems as Record<string, { ConsistentRead?: boolean }>).some((r) => r.ConsistentRead !== true)
      ) {
        return { ...result, output: { ...result.output, Responses: {}, UnprocessedKeys: {} } };
      }
      return result;
    });
    try {
      const store = new PlannerStore(client.doc, box.endpoints.ledgerTable);
      expect(await store.readLayout()).toEqual({ of: 1, gen: 1, partitions: new Map([[0, expect.anything()]]) });
      expect((await store.readTickState()).paused.has(job)).toBe(true);
      expect(await store.readJobPlan(job)).toEqual({ job, cursor: BASE + 1, pause: { by: 'op', at: NOW } });
      expect((await store.readJobPlans([job])).get(job)).toEqual({ job, cursor: BASE + 1, pause: { by: 'op', at: NOW } });
    } finally {
      client.destroy();
    }
  });

  it('a write committed whose response was lost and that the SDK sends again: watermarks report they advanced, a pause and a resume take effect once', async () => {
    const job = freshJob('lost');
    /** `fn` on a client whose first request commits and loses its response; the SDK sends it again. */
    const again = <T>(fn: (store: PlannerStore) => Promise<T>) => {
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: () => true, fault: 'lost-response', times: 1 }], 3);
      return fn(new PlannerStore(faulty.doc, box.endpoints.ledgerTable)).finally(() => {
        expect(faulty.injected).toHaveLength(1);
        faulty.destroy();
      });
    };
    expect(await again((s) => s.advancePartition(1, 0, BASE + 3))).toBe(true);
    expect(await again((s) => s.saveSweep(1, 0, { sweptUntil: BASE + 4, watchAfter: 'w' }))).toBe(true);
    expect((await box.ledger.planning.readLayout())!.partitions.get(0)).toEqual({
      plannedUntil: BASE + 3,
      sweptUntil: BASE + 4,
      watchAfter: 'w',
    });
    expect(await again((s) => s.pause(job, BASE + 2, { by: 'op', at: NOW, note: 'lost' }))).toBe(true);
    expect(await box.ledger.planning.readJobPlan(job)).toEqual({ job, cursor: BASE + 2, pause: { by: 'op', at: NOW, note: 'lost' } });
    expect((await box.ledger.planning.readTickState()).paused.has(job)).toBe(true);
    expect(await again((s) => s.resume(job))).toBe(true);
    expect(await box.ledger.planning.readJobPlan(job)).toEqual({ job, cursor: BASE + 2 });
    const state = await box.ledger.planning.readTickState();
    expect([state.paused.has(job), state.behind.has(job)]).toEqual([false, true]);
  });
});

describe('jobPlanning: how ops and the worker see a job', () => {
  it('reports per job its partition, pause (who, why, when), whether it is behind, how far it is planned and its maxRuns count', async () => {
    const own = await sandbox();
    try {
      const planning = own.ledger.planning;
      const partitionOf = (job: string, of: number) => Number(job.split('-')[1]) % of;
      const jobs = ['j-0', 'j-1', 'j-2', 'j-3', 'j-4'];
      // No layout yet: no partition, no count, planned to nowhere.
      const before = await jobPlanning(planning, jobs, partitionOf, Date.now());
      expect(before.get('j-0')).toEqual({
        job: 'j-0',
        partition: undefined,
        of: undefined,
        pause: undefined,
        behind: false,
        plannedUntil: undefined,
        planned: undefined,
      });
      expect(
        await planning.writeLayout(
          undefined,
          {
            of: 2,
            gen: 1,
            partitions: new Map([
              [0, { plannedUntil: BASE + 100 }],
              [1, { plannedUntil: BASE + 200 }],
            ]),
          },
          NOW,
        ),
      ).toBe(true);
      expect(await planning.setCatchUp('j-1', BASE + 50, BASE + 90, undefined)).toBe(true);
      expect(await planning.setCatchUp('j-2', BASE + 60, BASE + 90, undefined)).toBe(true);
      expect(await planning.pause('j-2', BASE + 70, { by: 'op', at: NOW, note: 'hold' })).toBe(true);
      expect(
        await own.ledger.createCountedRun({ job: 'j-3', slot: BASE, shard: 0, shards: 1, status: 'READY' }, NOW, 'tick', {
          maxRuns: 3,
          start: 0,
        }),
      ).toMatchObject({ created: true });
      // Listed paused with no plan item (written by hand): still paused, by someone unknown.
      await own.clients.doc.send(
        new UpdateCommand({
          TableName: own.endpoints.ledgerTable,
          Key: { pk: LedgerKeys.plannerPk, sk: LedgerKeys.exceptionsSk(exceptionBucketOf('j-4')) },
          UpdateExpression: 'ADD paused :j',
          ExpressionAttributeValues: { ':j': new Set(['j-4']) },
        }),
      );
      const view = await jobPlanning(planning, jobs, partitionOf, Date.now());
      expect(view.get('j-0')).toEqual({
        job: 'j-0',
        partition: 0,
        of: 2,
        pause: undefined,
        behind: false,
        plannedUntil: BASE + 100,
        planned: undefined,
      });
      expect(view.get('j-1')).toEqual({
        job: 'j-1',
        partition: 1,
        of: 2,
        pause: undefined,
        behind: true,
        plannedUntil: BASE + 50,
        planned: undefined,
      });
      expect(view.get('j-2')).toEqual({
        job: 'j-2',
        partition: 0,
        of: 2,
        pause: { by: 'op', at: NOW, note: 'hold' },
        behind: false,
        plannedUntil: BASE + 60,
        planned: undefined,
      });
      expect(view.get('j-3')).toEqual({
        job: 'j-3',
        partition: 1,
        of: 2,
        pause: undefined,
        behind: false,
        plannedUntil: BASE + 200,
        planned: 1,
      });
      expect(view.get('j-4')).toEqual({
        job: 'j-4',
        partition: 0,
        of: 2,
        pause: { at: 0, by: '?' },
        behind: false,
        plannedUntil: BASE + 100,
        planned: undefined,
      });
      expect((await jobPlanning(planning, [], partitionOf, Date.now())).size).toBe(0);
      // A layout that lists no cursor for a job's partition: planned to nowhere, not an error.
      const current = await planning.readLayout();
      expect(await planning.writeLayout(current, { of: 3, gen: 2, partitions: new Map([[0, { plannedUntil: BASE + 300 }]]) }, NOW)).toBe(
        true,
      );
      const relaid = await jobPlanning(planning, ['j-5', 'j-3'], partitionOf, Date.now());
      expect(relaid.get('j-5')).toEqual({
        job: 'j-5',
        partition: 2,
        of: 3,
        pause: undefined,
        behind: false,
        plannedUntil: undefined,
        planned: undefined,
      });
      expect(relaid.get('j-3')).toEqual({
        job: 'j-3',
        partition: 0,
        of: 3,
        pause: undefined,
        behind: false,
        plannedUntil: BASE + 300,
        planned: 1,
      });
    } finally {
      own.destroy();
    }
  });
});
