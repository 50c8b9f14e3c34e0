/**
 * Fences and effects: an older slot fenced out by a newer slot's write ends SUPERSEDED at once
 * (never retried into the newer state, never looping to DEAD); a write whose response was lost
 * after it committed is applied once (increments included); nothing of an ended attempt lands.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoItemReader } from '../../shared/store/item-reader.js';
import { DynamoFencedStore } from '../../shared/store/fenced-store.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import {
  AttemptAbortedError,
  AttemptEndedError,
  ConditionFailedError,
  FencedOutError,
  type JobHandler,
  type RunContext,
} from '../../shared/handler-api.js';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { localClientConfig } from '../../tools/local-stack.js';
import { faultyClient } from '../support/faults.js';
import { FROZEN_TIMERS, testJobs, waitFor } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('fenced effects', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  describe('a refusal by a newer slot supersedes the run; one by a newer claim of the same slot is a lost lease', () => {
    const item = (name: string) => ({ pk: `CACHE#${name}`, sk: 'CURRENT' });
    function cacheLab(overlap: 'parallel' | 'forbid-queue' = 'parallel') {
      const name = `cache-${Math.random().toString(36).slice(2, 8)}`;
      const refusals: string[] = [];
      const handler: JobHandler = {
        async run(ctx) {
          try {
            await ctx.fenced.put({ table: ctx.tables.ledger, item: { ...item(name), slot: ctx.slot } });
          } catch (error) {
            if (error instanceof FencedOutError) refusals.push(error.refusal);
            throw error;
          }
        },
      };
      const jobs = testJobs(
        [
          {
            name,
            schedule: '*/10 * * * * *',
            handler: 'h',
            overlap,
            startLead: 0,
            retry: { maxAttempts: 3, backoff: { base: 0, max: 0 } },
          },
        ],
        ['h'],
      );
      return { name, refusals, lab: new Lab(box, jobs, { h: handler }, T0) };
    }

    it('an older slot whose item a newer slot already wrote ends SUPERSEDED on its first attempt, naming the item and the newer fence', async () => {
      const { name, refusals, lab } = cacheLab();
      const [older, newer] = [T0, T0 + 10 * SEC];
      await lab.create(name, older);
      await lab.create(name, newer);
      lab.clock.now = newer + 50;
      expect(await lab.deliver(name, newer)).toBe('ack');
      // The older slot comes late (a retry, a takeover, a catch-up, a backfill, a redrive).
      expect(await lab.deliver(name, older)).toBe('ack');
      const run = (await lab.run(name, older))!;
      expect(run).toMatchObject({ status: RunStatus.SUPERSEDED, attempt: 1, lastError: { code: 'SUPERSEDED_BY_NEWER_SLOT' } });
      expect(run.lastError!.message).toContain(`CACHE#${name}/CURRENT`);
      expect(run.lastError!.message).toContain(new Date(newer).toISOString());
      expect(refusals).toEqual(['newer-slot']);
      expect(lab.metrics.get('RunsSupersededByFence')).toBe(1);
      // The newer state stands.
      expect((await new DynamoItemReader(box.clients.doc).get(box.endpoints.ledgerTable, item(name)))?.slot).toBe(newer);
      // A later message of the superseded run is a duplicate: no claim, no loop.
      expect(await lab.deliver(name, older)).toBe('ack');
      expect(lab.events.filter((e) => e.type === 'claimed' && e.runKey === run.runKey)).toHaveLength(1);
    });

    it('a superseded run of an exclusive job frees its lane: the next run executes', async () => {
      const { name, lab } = cacheLab('forbid-queue');
      const [s1, s2, s3] = [T0, T0 + 10 * SEC, T0 + 20 * SEC];
      for (const s of [s1, s2, s3]) await lab.create(name, s);
      // s3 wrote the item already (out of order: e.g. it was backfilled later).
      await new DynamoFencedStore(box.clients.doc, s3 * 1000 + 1).put({
        table: box.endpoints.ledgerTable,
        item: { ...item(name), slot: s3 },
      });
      lab.clock.now = s3 + 50;
      // s2's and s3's messages came first: each waits for the older runs, and flags the lane.
      expect(await lab.deliver(name, s2)).toBe('ack');
      expect(await lab.deliver(name, s3)).toBe('ack');
      await lab.deliver(name, s1);
      expect(await lab.status(name, s1)).toBe(RunStatus.SUPERSEDED);
      await lab.deliverSent();
      // s2 is superseded in turn (s3's write is newer still); the lane moves on each time.
      expect(await lab.status(name, s2)).toBe(RunStatus.SUPERSEDED);
      expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
    });

    it('a newer claim of the same slot wrote the item: the stale holder lost its lease and records nothing', async () => {
      const { name, refusals, lab } = cacheLab();
      const slot = T0;
      await lab.create(name, slot);
      lab.clock.now = slot + 50;
      // A is frozen right after its claim (no heartbeats): B takes over after the lease and writes.
      let releaseA!: () => void;
      const hold = new Promise<void>((r) => (releaseA = r));
      const frozen: JobHandler = {
        async run(ctx) {
          await hold;
          try {
            await ctx.fenced.put({ table: ctx.tables.ledger, item: { ...item(name), slot: ctx.slot, by: 'A' } });
          } catch (error) {
            if (error instanceof FencedOutError) refusals.push(error.refusal);
            throw error;
          }
        },
      };
      const a = lab.deliver(name, slot, 'A', { timers: FROZEN_TIMERS, handlers: { h: frozen } });
      await waitFor(async () => (lab.events.some((e) => e.type === 'handler-started') ? true : undefined), 120_000, 'A to start');
      lab.clock.now = slot + 50 + 30 * SEC + 3 * SEC;
      expect(await lab.deliver(name, slot, 'B')).toBe('ack');
      releaseA();
      expect(await a).toBe('retry');
      expect(refusals).toEqual(['newer-claim']);
      expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.SUCCEEDED, owner: 'B' });
      expect(lab.metrics.get('RunsSupersededByFence')).toBe(0);
    });
  });

  describe('the fence on DynamoDB Local: a lower fence is refused, the same holder may write again, a business condition is judged with it', () => {
    const FENCE = T0 * 1000 + 5;
    let n = 0;
    const key = () => ({ pk: `FENCE#${++n}-${Math.random().toString(36).slice(2, 8)}`, sk: 'ITEM' });
    /** The item as a holder of `lastFence` left it, or no item. */
    async function seed(k: { pk: string; sk: string }, lastFence: number | undefined) {
      if (lastFence !== undefined)
        await new DynamoFencedStore(box.clients.doc, lastFence).put({
          table: box.endpoints.ledgerTable,
          item: { ...k, status: 'PROCESSING', by: lastFence },
        });
    }
    const read = (k: { pk: string; sk: string }) => new DynamoItemReader(box.clients.doc).get(box.endpoints.ledgerTable, k);
    const stored = ['none', 'lower', 'equal', 'higher'] as const;
    const fenceOf = (s: (typeof stored)[number]) =>
      s === 'none' ? undefined : s === 'lower' ? FENCE - 1 : s === 'equal' ? FENCE : FENCE + 1;

    it.each(['put', 'update', 'transact put', 'transact update'] as const)(
      '%s: lands over no fence, a lower one or its own; a higher fence refuses it (FencedOutError) and keeps the item',
      async (kind) => {
        for (const s of stored) {
          const k = key();
          await seed(k, fenceOf(s));
          const store = new DynamoFencedStore(box.clients.doc, FENCE);
          // A set and a condition that name attributes: the names of both reach DynamoDB.
          const update = {
            table: box.endpoints.ledgerTable,
            key: k,
            set: { expression: '#by = :by', names: { '#by': 'by' }, values: { ':by': FENCE } },
          };
          const put = { table: box.endpoints.ledgerTable, item: { ...k, status: 'PROCESSING', by: FENCE } };
          const write =
            kind === 'put'
              ? store.put(put)
              : kind === 'update'
                ? store.update(update)
                : kind === 'transact put'
                  ? store.transact([{ kind: 'put', ...put }])
                  : store.transact([{ kind: 'update', ...update }]);
          const error = await write.then(
            () => undefined,
            (e: unknown) => e,
          );
          const label = `${kind} over ${s}`;
          if (s === 'higher') {
            expect(error, label).toBeInstanceOf(FencedOutError);
            expect(error, label).toMatchObject({
              fence: FENCE,
              seenFence: FENCE + 1,
              key: k,
              cause: { name: kind.startsWith('transact') ? 'TransactionCanceledException' : 'ConditionalCheckFailedException' },
            });
            expect(await read(k), label).toMatchObject({ by: FENCE + 1, lastFence: FENCE + 1 });
          } else {
            expect(error, label).toBeUndefined();
            expect(await read(k), label).toMatchObject({ by: FENCE, lastFence: FENCE });
          }
        }
      },
    );

    it('a business condition that fails is told apart from a fence: ConditionFailedError with the item as it is, for a single write and in a transaction', async () => {
      for (const s of ['none', 'lower', 'equal'] as const) {
        const k = key();
        await seed(k, fenceOf(s));
        const store = new DynamoFencedStore(box.clients.doc, FENCE);
        const settle = {
          table: box.endpoints.ledgerTable,
          key: k,
          set: { expression: '#status = :settled', names: { '#status': 'status' }, values: { ':settled': 'SETTLED' } },
          condition: { expression: '#status = :settled', names: { '#status': 'status' }, values: { ':settled': 'SETTLED' } },
        };
        const single = await store.update(settle).then(
          () => undefined,
          (e: unknown) => e,
        );
        const label = `over ${s}`;
        expect(single, label).toBeInstanceOf(ConditionFailedError);
        expect(single, label).not.toBeInstanceOf(FencedOutError);
        expect((single as ConditionFailedError).current, label).toEqual(
          s === 'none' ? undefined : { ...k, status: 'PROCESSING', by: fenceOf(s), lastFence: fenceOf(s), lastWrite: expect.any(String) },
        );
        expect((single as Error).cause, label).toMatchObject({ name: 'ConditionalCheckFailedException' });
        // In a transaction, beside a write that would land: nothing lands.
        const other = key();
        const inTransaction = await store
          .transact([
            { kind: 'put', table: box.endpoints.ledgerTable, item: { ...other, by: FENCE } },
            { kind: 'update', ...settle },
          ])
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(inTransaction, label).toBeInstanceOf(ConditionFailedError);
        expect(inTransaction, label).toMatchObject({ key: k });
        expect(await read(other), label).toBeUndefined();
      }
    });

    it('in a transaction where business conditions fail on two items, neither fenced out, ConditionFailedError names the first of them (an item this holder wrote before is not a fence refusal)', async () => {
      // The first item was written under a lower fence, the second under this holder's own: an
      // equal fence is not a newer one, so nothing outranks the first failing item.
      const [first, second] = [key(), key()];
      await seed(first, FENCE - 1);
      await seed(second, FENCE);
      const store = new DynamoFencedStore(box.clients.doc, FENCE);
      const refused = (k: { pk: string; sk: string }) => ({
        kind: 'update' as const,
        table: box.endpoints.ledgerTable,
        key: k,
        set: { expression: 'settled = :t', values: { ':t': true } },
        condition: { expression: 'attribute_not_exists(pk)' },
      });
      const error = await store.transact([refused(first), refused(second)]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConditionFailedError);
      expect(error).not.toBeInstanceOf(FencedOutError);
      expect(error).toMatchObject({ key: first, current: { lastFence: FENCE - 1 } });
    });

    it('in a transaction, a fence refusal of one item outranks a business condition failing on another: the holder is stale, FencedOutError names the fenced item', async () => {
      const [fenced, business] = [key(), key()];
      await seed(fenced, FENCE + 1);
      await seed(business, FENCE - 1);
      const store = new DynamoFencedStore(box.clients.doc, FENCE);
      const error = await store
        .transact([
          {
            kind: 'update',
            table: box.endpoints.ledgerTable,
            key: business,
            set: { expression: 'settled = :t', values: { ':t': true } },
            condition: { expression: 'attribute_not_exists(pk)' },
          },
          { kind: 'put', table: box.endpoints.ledgerTable, item: { ...fenced, by: FENCE } },
        ])
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(FencedOutError);
      expect(error).toMatchObject({ key: fenced, seenFence: FENCE + 1 });
    });
  });

  describe('a write whose response was lost after it committed is applied once', () => {
    const COUNTER = { pk: 'COUNTER#credits', sk: 'TOTAL' };

    async function readCounter(key = COUNTER) {
      return new DynamoItemReader(box.clients.doc).get(box.endpoints.ledgerTable, key);
    }

    it.each([
      ['update', 'UpdateItemCommand'],
      ['transact', 'TransactWriteItemsCommand'],
    ] as const)('an increment by %s, retried by the SDK after a lost response, counts once', async (kind, command) => {
      const key = { pk: `COUNTER#${kind}`, sk: 'TOTAL' };
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: (c) => c === command, fault: 'lost-response' }]);
      const store = new DynamoFencedStore(faulty.doc, T0 * 1000 + 1);
      const increment = {
        table: box.endpoints.ledgerTable,
        key,
        set: { expression: 'credits = if_not_exists(credits, :zero) + :one', values: { ':zero': 0, ':one': 1 } },
      };
      if (kind === 'update') await store.update(increment);
      else await store.transact([{ kind: 'update', ...increment }]);
      expect(faulty.injected).toEqual([command]);
      expect(faulty.matched.length).toBeGreaterThanOrEqual(2);
      expect((await readCounter(key))?.credits).toBe(1);
      // The same holder's next increment is a new write: it counts.
      await store.update(increment);
      expect((await readCounter(key))?.credits).toBe(2);
      faulty.destroy();
    });

    it('a put under a business condition whose commit response was lost is reported accepted, not ConditionFailedError', async () => {
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: (c) => c === 'PutItemCommand', fault: 'lost-response' }]);
      const store = new DynamoFencedStore(faulty.doc, T0 * 1000 + 1);
      const charge = {
        table: box.endpoints.ledgerTable,
        item: { pk: 'CHARGE#inv-1', sk: 'ONCE', amount: 5 },
        condition: { expression: 'attribute_not_exists(pk)' },
      };
      await expect(store.put(charge)).resolves.toBeUndefined();
      expect(faulty.injected).toEqual(['PutItemCommand']);
      // A second holder (a re-execution) is refused by the business condition, as it should be.
      await expect(new DynamoFencedStore(box.clients.doc, T0 * 1000 + 2).put(charge)).rejects.toBeInstanceOf(ConditionFailedError);
      faulty.destroy();
    });

    it("the worker path: a handler's counter increment with a lost response still counts once", async () => {
      const name = `counter-${Math.random().toString(36).slice(2, 8)}`;
      const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
        {
          when: (c, input) => c === 'UpdateItemCommand' && JSON.stringify(input.Key ?? {}).includes('COUNTER#credits'),
          fault: 'lost-response',
        },
      ]);
      const handler: JobHandler = {
        async run(ctx) {
          await ctx.fenced.update({
            table: ctx.tables.ledger,
            key: COUNTER,
            set: { expression: 'credits = if_not_exists(credits, :zero) + :one', values: { ':zero': 0, ':one': 1 } },
          });
        },
      };
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0 }], ['h']);
      const lab = new Lab(box, jobs, { h: handler }, T0 + 10);
      await lab.create(name, T0);
      expect(await lab.deliver(name, T0, 'w', { doc: faulty.doc })).toBe('ack');
      expect(faulty.injected).toEqual(['UpdateItemCommand']);
      expect((await readCounter())?.credits).toBe(1);
      expect(lab.events.filter((e) => e.type === 'effect' && e.result === 'accepted')).toHaveLength(1);
      faulty.destroy();
    });
  });

  describe("one attempt's writes to one item are serialized: no write of the same holder lands between a write and its SDK retry", () => {
    // The fence's `notThisWrite` clause recognises a retried write by its write id, which only
    // works if the item still carries that id when the retry arrives. A second write of the same
    // holder landing in between would replace the id, and the retry of an increment would then
    // apply again. The hold below opens that window as wide as it can: the first write commits,
    // its response is "lost", and its retry waits until another write of the store committed (or
    // two seconds passed: with the store serializing, none can, and the wait changes nothing).
    const GAP_MS = 2_000;
    function racingClient() {
      const dynamo = new DynamoDBClient({ ...localClientConfig(box.endpoints.dynamoEndpoint), maxAttempts: 3 });
      /** Every tagged call as it came back: `A ok` (committed) or `A refused` (its condition failed). */
      const log: string[] = [];
      const waiters: Array<() => void> = [];
      const record = (entry: string) => {
        log.push(entry);
        for (const w of waiters.splice(0)) w();
      };
      const commits = () => log.filter((e) => e.endsWith(' ok'));
      const until = (done: () => boolean) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, GAP_MS);
          const check = () => (done() ? (clearTimeout(timer), resolve()) : waiters.push(check));
          check();
        });
      const rules = { lostOnce: new Set<string>(), sendAfter: new Map<string, string>() };
      dynamo.middlewareStack.add(
        (next, context) => async (args) => {
          const tag = /tag__":\{"S":"(\w+)"\}/.exec(JSON.stringify(args.input))?.[1];
          if (!tag) return next(args);
          const after = rules.sendAfter.get(tag);
          if (after) await until(() => commits().includes(`${after} ok`));
          // Below the deserializer: a refused condition comes back here as an HTTP 400, not an error.
          const result = await next(args);
          if ((result.response as { statusCode?: number }).statusCode !== 200) {
            record(`${tag} refused`);
            return result;
          }
          const seen = commits().length;
          record(`${tag} ok`);
          if (!rules.lostOnce.delete(tag)) return result;
          await until(() => commits().length > seen + 1);
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
        },
        { step: 'deserialize', name: 'racing-writes' },
      );
      const doc = DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } });
      return { doc, log, rules, destroy: () => dynamo.destroy() };
    }
    const add = (key: { pk: string; sk: string }, by: number, tag: string) => ({
      table: box.endpoints.ledgerTable,
      key,
      set: {
        expression: 'credits = if_not_exists(credits, :zero) + :by, lastTag = :tag__',
        values: { ':zero': 0, ':by': by, ':tag__': tag },
      },
    });
    const credits = async (key: { pk: string; sk: string }) =>
      (await new DynamoItemReader(box.clients.doc).get(box.endpoints.ledgerTable, key))?.credits;

    it.each(['update', 'transact'] as const)(
      "two writes by %s, the first's response lost: the second waits for the first's retry, each applied once",
      async (kind) => {
        const key = { pk: `COUNTER#serial-${kind}-${Math.random().toString(36).slice(2, 8)}`, sk: 'TOTAL' };
        const client = racingClient();
        client.rules.lostOnce.add('A');
        client.rules.sendAfter.set('B', 'A');
        const store = new DynamoFencedStore(client.doc, T0 * 1000 + 1);
        const write = (by: number, tag: string) =>
          kind === 'update' ? store.update(add(key, by, tag)) : store.transact([{ kind: 'update', ...add(key, by, tag) }]);
        await Promise.all([write(1, 'A'), write(10, 'B')]);
        // A, its retry, then B. The retry of an update is refused by its own write id (recognised
        // as its own commit); that of a transaction is answered by its ClientRequestToken without
        // being applied again. Unserialized: A, B, and A's retry applied again (12).
        expect(await credits(key)).toBe(11);
        expect(client.log).toEqual(['A ok', kind === 'update' ? 'A refused' : 'A ok', 'B ok']);
        client.destroy();
      },
    );

    it('a write issued after an earlier one settled still waits for the one in flight behind it', async () => {
      const key = { pk: `COUNTER#serial-tail-${Math.random().toString(36).slice(2, 8)}`, sk: 'TOTAL' };
      const client = racingClient();
      client.rules.lostOnce.add('B');
      client.rules.sendAfter.set('D', 'B');
      const store = new DynamoFencedStore(client.doc, T0 * 1000 + 1);
      const a = store.update(add(key, 1, 'A'));
      const b = store.update(add(key, 10, 'B'));
      await a;
      // Let A's write settle all the way (its bookkeeping runs a few promise turns after the
      // caller hears back): B is in flight now, and D must queue behind B, not run beside it.
      await new Promise((resolve) => setImmediate(resolve));
      const d = store.update(add(key, 100, 'D'));
      await Promise.all([b, d]);
      expect(await credits(key)).toBe(111);
      expect(client.log).toEqual(['A ok', 'B ok', 'B refused', 'D ok']);
      client.destroy();
    });

    it('writes to different items are not held behind each other', async () => {
      const [k1, k2] = ['X', 'Y'].map((s) => ({ pk: `COUNTER#serial-apart-${s}-${Math.random().toString(36).slice(2, 8)}`, sk: 'TOTAL' }));
      const client = racingClient();
      // A's retry waits for another commit: B, on another item, must be free to make it.
      client.rules.lostOnce.add('A');
      client.rules.sendAfter.set('B', 'A');
      const store = new DynamoFencedStore(client.doc, T0 * 1000 + 1);
      await Promise.all([store.update(add(k1!, 1, 'A')), store.update(add(k2!, 10, 'B'))]);
      // Held behind A, B would come after A's retry: ['A ok', 'A refused', 'B ok'], two seconds late.
      expect(client.log).toEqual(['A ok', 'B ok', 'A refused']);
      expect([await credits(k1!), await credits(k2!)]).toEqual([1, 10]);
      client.destroy();
    });
  });

  describe('nothing of an ended attempt lands', () => {
    it('a handler that ignores its timeout keeps going: every later ctx call is refused, none of its writes lands, and ctx.signal says why', async () => {
      const name = `zombie-${Math.random().toString(36).slice(2, 8)}`;
      const late: string[] = [];
      let context: RunContext | undefined;
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      const zombie: JobHandler = {
        async run(ctx) {
          context = ctx;
          // Ignores ctx.signal: waits past its timeout, then tries to write, read and checkpoint.
          await new Promise((r) => setTimeout(r, 600));
          for (const call of [
            () => ctx.fenced.put({ table: ctx.tables.ledger, item: { pk: `ZOMBIE#${name}`, sk: 'W' } }),
            () => ctx.fenced.transact([{ kind: 'put', table: ctx.tables.ledger, item: { pk: `ZOMBIE#${name}`, sk: 'T' } }]),
            () => ctx.reader.get(ctx.tables.ledger, { pk: `ZOMBIE#${name}`, sk: 'W' }),
            () => ctx.checkpoint({ at: 'late' }),
          ]) {
            try {
              await call();
              late.push('landed');
            } catch (error) {
              late.push(error instanceof AttemptEndedError ? 'refused' : String(error));
            }
          }
          done();
        },
      };
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, timeout: 200, lease: '30s' }], ['h']);
      const lab = new Lab(box, jobs, { h: zombie }, T0 + 10);
      await lab.create(name, T0);
      expect(await lab.deliver(name, T0)).toBe('retry');
      expect(await lab.run(name, T0)).toMatchObject({ status: RunStatus.UNKNOWN, lastError: { code: 'TIMEOUT' } });
      await finished;
      expect(late).toEqual(['refused', 'refused', 'refused', 'refused']);
      const reason = context!.signal.reason as unknown;
      expect(reason).toBeInstanceOf(AttemptAbortedError);
      expect((reason as AttemptAbortedError).why).toBe('timeout');
      const reader = new DynamoItemReader(box.clients.doc);
      expect(await reader.get(box.endpoints.ledgerTable, { pk: `ZOMBIE#${name}`, sk: 'W' })).toBeUndefined();
      expect(await reader.get(box.endpoints.ledgerTable, { pk: `ZOMBIE#${name}`, sk: 'T' })).toBeUndefined();
      expect((await lab.run(name, T0))!.checkpoint).toBeUndefined();
    });

    it('a write in flight when the attempt ends lands before the outcome is recorded, never after it', async () => {
      const name = `inflight-${Math.random().toString(36).slice(2, 8)}`;
      // The handler's write is slow (latency at the store); the timeout fires while it is in flight.
      const slow = faultyClient(box.endpoints.dynamoEndpoint, []);
      slow.dynamo.middlewareStack.add(
        (next) => async (args) => {
          await new Promise((r) => setTimeout(r, 400));
          return next(args);
        },
        { step: 'finalizeRequest', name: 'latency' },
      );
      const handler: JobHandler = {
        async run(ctx) {
          await ctx.fenced.put({ table: ctx.tables.ledger, item: { pk: `INFLIGHT#${name}`, sk: 'W' } });
        },
      };
      const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, timeout: 100, lease: '30s' }], ['h']);
      const lab = new Lab(box, jobs, { h: handler }, T0 + 10);
      await lab.create(name, T0);
      await lab.deliver(name, T0, 'w', { doc: slow.doc });
      const order = lab.events.filter((e) => (e.type === 'effect' || e.type === 'outcome') && e.runKey.startsWith(name)).map((e) => e.type);
      expect(order).toEqual(['effect', 'outcome']);
      slow.destroy();
    });
  });
});
