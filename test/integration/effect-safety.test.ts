/**
 * Effects land once: fences across slots reject a paused worker's writes, checkpoints let a long
 * job yield before the Lambda timeout and resume without redoing work, and the sweeper recovers
 * lost messages without ever producing a second execution.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';
import { ConditionFailedError, FencedOutError, type JobHandler, type RunContext } from '../../shared/handler-api.js';
import { runPlannerTick } from '../../shared/planner/planner.js';
import { processBatch, processRecord } from '../../shared/worker/batch.js';
import { DynamoItemReader } from '../../shared/store/item-reader.js';
import { FROZEN_TIMERS, ManualClock, silentLogger, testJobs, VirtualTime, waitFor } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { WorkerHarness } from '../support/worker-harness.js';

const CURSOR = { pk: 'CURSOR#fenced', sk: 'CURRENT' };

describe('effect safety', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox({ visibilityTimeoutSeconds: 5 });
  });
  afterAll(() => box.destroy());

  it('a worker paused past its lease is fenced out everywhere after a takeover and a later slot wrote', async () => {
    const slot1201 = Date.UTC(2026, 10, 29, 12, 1);
    const slot1202 = Date.UTC(2026, 10, 29, 12, 2);
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => (releaseA = r));
    let contextA: RunContext | undefined;
    const rejectionsOfA: string[] = [];
    const writeAll = async (ctx: RunContext) => {
      const table = ctx.tables.ledger;
      await ctx.fenced.put({ table, item: { ...CURSOR, position: ctx.runKey, token: ctx.fencingToken } });
      await ctx.fenced.update({ table, key: CURSOR, set: { expression: 'touchedBy = :me', values: { ':me': ctx.runKey } } });
      await ctx.fenced.transact([
        {
          kind: 'update',
          table,
          key: CURSOR,
          set: { expression: '#position = :p', names: { '#position': 'position' }, values: { ':p': `${ctx.runKey}/tx` } },
        },
        { kind: 'put', table, item: { pk: 'OUTBOX#fenced', sk: ctx.runKey, eventKey: ctx.runKey } },
      ]);
    };
    const handler: JobHandler = {
      async run(ctx) {
        if (ctx.attempt === 1 && ctx.slot === slot1201) {
          contextA = ctx;
          // "Paused": ignores its signal, as a stopped process would, then resumes and writes.
          await gateA;
          for (const attempt of [
            () => ctx.fenced.put({ table: ctx.tables.ledger, item: { ...CURSOR, position: 'stale A' } }),
            () =>
              ctx.fenced.update({
                table: ctx.tables.ledger,
                key: CURSOR,
                set: { expression: '#position = :p', names: { '#position': 'position' }, values: { ':p': 'stale A' } },
              }),
            () =>
              ctx.fenced.transact([
                {
                  kind: 'update',
                  table: ctx.tables.ledger,
                  key: CURSOR,
                  set: { expression: '#position = :p', names: { '#position': 'position' }, values: { ':p': 'stale A' } },
                },
                { kind: 'put', table: ctx.tables.ledger, item: { pk: 'OUTBOX#fenced', sk: 'stale A', eventKey: 'stale A' } },
              ]),
          ]) {
            try {
              await attempt();
              rejectionsOfA.push('accepted');
            } catch (error) {
              rejectionsOfA.push(error instanceof FencedOutError ? 'fenced-out' : String(error));
            }
          }
          return;
        }
        await writeAll(ctx);
      },
    };
    const jobs = testJobs(
      [{ name: 'fenced', schedule: '* * * * *', handler: 'h', lease: 1_000, heartbeatEvery: 250, startLead: 0 }],
      ['h'],
    );
    const harness = new WorkerHarness(box, jobs, { h: handler });
    for (const slot of [slot1201, slot1202])
      await box.ledger.createRun({ job: 'fenced', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot);

    // A is frozen (a paused process, a Lambda frozen between invocations): its heartbeats and
    // watchdog never run, so it never notices it lost the lease. Only the fence can stop its writes.
    const workerA = processRecord(harness.deps('A', { timers: FROZEN_TIMERS }), harness.record('fenced', slot1201));
    await waitFor(async () => contextA, 120_000, 'A to start');
    const tokenA = contextA!.fencingToken;
    // B's clock runs ahead: A's lease looks expired to it, so B takes 12:01 over and writes.
    const ahead = () => Date.now() + 5_000;
    const b = await processRecord(harness.deps('B', { clock: ahead }), harness.record('fenced', slot1201, 'm-b'));
    if (b !== 'ack') console.log(harness.logs);
    expect(b).toBe('ack');
    // The 12:02 worker writes too.
    expect(await processRecord(harness.deps('C'), harness.record('fenced', slot1202, 'm-c'))).toBe('ack');
    // A thaws and tries its writes: every one is fenced out; its outcome is refused, it records nothing.
    releaseA();
    await waitFor(async () => (rejectionsOfA.length === 3 ? true : undefined), 120_000, 'A to try its writes');
    expect(rejectionsOfA).toEqual(['fenced-out', 'fenced-out', 'fenced-out']);
    expect(await workerA).toBe('retry');
    const staleRun: Run = {
      ...(await box.ledger.getRun({ job: 'fenced', slot: slot1201, shard: 0 }))!,
      owner: 'A',
      fencingToken: tokenA,
      status: RunStatus.RUNNING,
    };
    expect((await box.ledger.complete(staleRun, { status: RunStatus.SUCCEEDED }, Date.now())).ok).toBe(false);

    const reader = new DynamoItemReader(box.clients.doc);
    const cursor = await reader.get(box.endpoints.ledgerTable, CURSOR);
    expect(cursor?.position).toBe(`${runKeyOf('fenced', slot1202, 0, 1)}/tx`);
    expect(cursor?.lastFence).toBeGreaterThan(tokenA);
    expect(await reader.get(box.endpoints.ledgerTable, { pk: 'OUTBOX#fenced', sk: 'stale A' })).toBeUndefined();
    const run1201 = await box.ledger.getRun({ job: 'fenced', slot: slot1201, shard: 0 });
    expect(run1201).toMatchObject({ status: RunStatus.SUCCEEDED, owner: 'B' });
    expect(harness.metrics.get('FencingRejections')).toBeGreaterThanOrEqual(3);
    expect(harness.metrics.get('LeaseLost')).toBe(1);
    expect(harness.monitor.violations).toEqual([]);
  });

  it('a long job yields before the time limit three times and resumes from its checkpoint; each item is processed once', async () => {
    // Virtual time: how many items fit an invocation, and whether the lease holds, depend on the
    // work done, never on how fast a loaded machine does it.
    const time = new VirtualTime(Date.UTC(2026, 11, 1, 12, 0, 5));
    const ITEMS = 16;
    const processed: number[] = [];
    const handler: JobHandler = {
      async run(ctx) {
        let next = typeof ctx.resumeFrom === 'number' ? ctx.resumeFrom : 0;
        while (next < ITEMS) {
          if (ctx.signal.aborted) return;
          try {
            // Business condition: an item is processed once, whoever tries again.
            await ctx.fenced.put({
              table: ctx.tables.ledger,
              item: { pk: 'ITEM#yield', sk: String(next), by: ctx.runKey },
              condition: { expression: 'attribute_not_exists(pk)' },
            });
            processed.push(next);
          } catch (error) {
            if (!(error instanceof ConditionFailedError)) throw error;
          }
          next++;
          await ctx.checkpoint(next);
          time.advance(150);
        }
        return { evidence: { items: ITEMS } };
      },
    };
    const jobs = testJobs(
      [{ name: 'long', schedule: '* * * * *', handler: 'h', lease: 2_000, heartbeatEvery: 50, startLead: 0, checkpoints: true }],
      ['h'],
    );
    const lab = new Lab(box, jobs, { h: handler }, time.now);
    const slot = Date.UTC(2026, 11, 1, 12, 0);
    await lab.create('long', slot);
    // Each delivery is one invocation with 1.2 s left; the worker yields with 0.6 s left (~4 items each).
    const invocation = () => {
      const started = time.now;
      return { clock: time.read, timers: time.port, remainingTimeMs: () => 1_200 - (time.now - started), options: { yieldMarginMs: 600 } };
    };
    for (let k = 0; k < 10 && (await lab.status('long', slot)) !== RunStatus.SUCCEEDED; k++)
      await lab.deliver('long', slot, `w${k}`, invocation());
    const run = (await lab.run('long', slot))!;
    expect(run.status).toBe(RunStatus.SUCCEEDED);
    expect([...processed].sort((a, b) => a - b)).toEqual(Array.from({ length: ITEMS }, (_, i) => i));
    // 150 ms an item, four items an invocation: yields after items 4, 8 and 12.
    expect(lab.metrics.get('RunsYielded')).toBe(3);
    // Yields with progress give the attempt back: only the claims that ended otherwise count.
    expect(run.attempt).toBe(1);
    expect(lab.events.filter((e) => e.type === 'outcome' && e.accepted && e.status === RunStatus.SUCCEEDED)).toHaveLength(1);
    expect(lab.monitor.violations).toEqual([]);
  });

  describe('sweeper', () => {
    it.each([
      ['a RUNNING run whose lease expired long ago, with no message in flight', 'running'],
      ['a READY run overdue with no message', 'ready'],
      ['a RETRY run overdue with no message', 'retry'],
    ] as const)('re-dispatches %s, and a late original message causes no second execution', async (_label, kind) => {
      const own = await sandbox({ visibilityTimeoutSeconds: 5 });
      let executions = 0;
      const h: JobHandler = { run: async () => void executions++ };
      const job = `swept-${kind}`;
      const jobs = testJobs([{ name: job, schedule: '0 0 1 1 *', handler: 'h', startLead: 0 }], ['h']);
      const harness = new WorkerHarness(own, jobs, { h });
      const now = Date.now();
      const slot = now - 10 * 60_000;
      const id = { job, slot, shard: 0 };
      // Created late (a catch-up or backfill): watched from the start.
      await own.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY, watch: true }, slot);
      if (kind !== 'ready') {
        const claim = await own.ledger.claim(id, 'ghost', now - 5 * 60_000, 30_000, 2_000);
        if (claim.kind !== 'claimed') throw new Error('expected claim');
        if (kind === 'retry') {
          await own.ledger.complete(
            claim.run,
            { status: RunStatus.RETRY, nextAttemptAt: now - 4 * 60_000, lastError: { code: 'X', message: 'x' } },
            now - 5 * 60_000,
          );
        }
      }
      const clock = new ManualClock(now);
      const report = await runPlannerTick(
        {
          ledger: own.ledger,
          queue: own.queue,
          jobs,
          clock: clock.read,
          logger: silentLogger(),
          metrics: harness.metrics,
          options: { sweepGraceMs: 120_000 },
        },
        { partition: 0, of: 1 },
      );
      expect(report.swept).toBe(1);
      const poller = harness.poller('w');
      poller.start();
      await waitFor(
        async () => ((await own.ledger.getRun(id))?.status === RunStatus.SUCCEEDED ? true : undefined),
        120_000,
        'the swept run to succeed',
      );
      await poller.stop();
      // The original message finally shows up: acknowledged as a duplicate, not run again.
      const late = await processBatch(harness.deps('late'), [harness.record(job, slot, 'late-original')]);
      expect(late.batchItemFailures).toEqual([]);
      expect(executions).toBe(1);
      expect(harness.metrics.get('DuplicateDeliveries')).toBe(1);
      if (kind === 'running') expect(harness.metrics.get('Takeovers')).toBe(1);
      own.destroy();
    });
  });
});
