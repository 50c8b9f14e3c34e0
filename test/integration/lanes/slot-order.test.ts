/**
 * Exclusive lanes (DESIGN §11.6, every lane makes progress; README forbid-queue
 * "wait, in slot order") at the edges: many shards, a manual run that overrides the job's policy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import type { JobHandler } from '../../../shared/handler-api.js';
import { MetricName } from '../../../shared/runtime/observability.js';
import { runPlannerTick } from '../../../shared/planner/planner.js';
import { triggerRun } from '../../../shared/operations/trigger.js';
import { backfill } from '../../../shared/operations/backfill.js';
import { LedgerOps } from '../../../shared/store/repairs.js';
import { messageFor } from '../../../shared/core/run-message.js';
import type { RunMessage } from '../../../shared/core/vocabulary.js';
import { RetryableError, PermanentError } from '../../../shared/handler-api.js';
import { processRecord } from '../../../shared/worker/batch.js';
import { runEnded } from '../../../shared/worker/run-ended.js';
import { retryRuns } from '../../../shared/operations/retry.js';
import { silentLogger, testJobs } from '../../support/helpers.js';
import { CountingMiddleware } from '../../support/counting.js';
import { faultyClient } from '../../support/faults.js';
import { Ledger } from '../../../shared/store/ledger.js';
import { LedgerKeys } from '../../../shared/core/resources.js';
import { Lab } from '../../support/lab.js';
import { sandbox, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

/** The run queue as SQS behaves: an acked message is gone, one left for retry comes back, every sent one arrives. */
function sqsModel(lab: Lab) {
  const live: RunMessage[] = [];
  let seq = 0;
  return {
    live,
    add: (message: RunMessage) => live.push(message),
    async deliverAll(owner: string): Promise<void> {
      live.push(...lab.queue.take().map((o) => o.message));
      for (const message of live.splice(0)) {
        const id = `q${++seq}`;
        if ((await processRecord(lab.deps(owner), { messageId: id, receiptHandle: `r-${id}`, body: JSON.stringify(message) })) === 'retry')
          live.push(message);
      }
      live.push(...lab.queue.take().map((o) => o.message));
    },
  };
}

/** The run queue with SQS's timing: a message is received once its delay or visibility has passed. */
function timedQueue(lab: Lab) {
  const pending: { message: RunMessage; at: number }[] = [];
  let seq = 0;
  const collect = () => {
    for (const out of lab.queue.take()) pending.push({ message: out.message, at: lab.clock.now + out.delaySeconds * 1000 });
  };
  return {
    async deliverDue(owner: string): Promise<void> {
      collect();
      for (;;) {
        pending.sort((a, b) => a.at - b.at);
        if (pending.length === 0 || pending[0]!.at > lab.clock.now) return;
        const { message } = pending.shift()!;
        const id = `t${++seq}`;
        const receipt = `r-${id}`;
        const outcome = await processRecord(lab.deps(owner), { messageId: id, receiptHandle: receipt, body: JSON.stringify(message) });
        if (outcome === 'retry') {
          // Visible again when the worker last hid it, else after the queue's visibility timeout (30 s here).
          const hidden = lab.queue.hidden.filter((h) => h.receiptHandle === receipt).at(-1);
          pending.push({ message, at: lab.clock.now + (hidden ? hidden.seconds * 1000 : 30_000) });
        }
        collect();
      }
    },
  };
}

describe('forbid-queue liveness', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('forbid-queue runs in slot order per lane for any number of shards: no shard runs a slot while the previous slot of its lane is open', async () => {
    const violations: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 9 }), fc.nat(), async (shards, pick) => {
        const shard = pick % shards;
        const name = `fq-${Math.random().toString(36).slice(2, 8)}`;
        const started: string[] = [];
        const handler: JobHandler = { run: async (ctx) => void started.push(ctx.runKey) };
        const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue', shards }], ['h']);
        const now = Math.floor(Date.now() / MIN) * MIN;
        const lab = new Lab(box, jobs, { h: handler }, now);
        const [older, newer] = [now - 2 * MIN, now - MIN];
        // The planner creates every shard of both slots; the older slot's message for this shard is late.
        for (const slot of [older, newer]) for (let s = 0; s < shards; s++) await lab.create(name, slot, { shard: s });
        await lab.deliver(name, newer, 'worker', {}, shard);
        if (started.length > 0 || (await lab.status(name, newer, shard)) !== RunStatus.READY) {
          violations.push(`shards=${shards} shard=${shard}: ${name}@newer ran while @older#${shard} was READY`);
        }
      }),
      { numRuns: 25, seed: 7 },
    );
    expect(violations).toEqual([]);
  });

  it('forbid-queue finds the previous slot of its lane past a full 1 MB page: large items of the other shards (history, evidence) do not hide it', async () => {
    const shards = 16;
    const name = `fq-big-${Math.random().toString(36).slice(2, 8)}`;
    const started: string[] = [];
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue', shards }], ['h']);
    const now = Math.floor(Date.now() / MIN) * MIN;
    const lab = new Lab(box, jobs, { h: { run: async (ctx) => void started.push(ctx.runKey) } }, now);
    const [older, newer] = [now - 2 * MIN, now - MIN];
    for (const slot of [older, newer]) for (let s = 0; s < shards; s++) await lab.create(name, slot, { shard: s });
    // The older slot's items of shards 1..15 grow to ~100 KB each (a long attempt history or evidence
    // would): read newest first, they fill more than one 1 MB page before shard 0's item.
    const pad = 'x'.repeat(100_000);
    for (let s = 1; s < shards; s++) {
      await box.clients.doc.send(
        new UpdateCommand({
          TableName: box.endpoints.ledgerTable,
          Key: box.ledger.runKeyOf({ job: name, slot: older, shard: s }),
          UpdateExpression: 'SET padding = :pad',
          ExpressionAttributeValues: { ':pad': pad },
        }),
      );
    }
    await lab.deliver(name, newer, 'worker', {}, 0);
    expect({ started, status: await lab.status(name, newer, 0) }).toEqual({ started: [], status: RunStatus.READY });
  });

  for (const holderKind of ['manual-parallel', 'scheduled'] as const) {
    it(`forbid-queue behind a 40-minute ${holderKind === 'scheduled' ? 'lane holder: the waiting run is not re-sent behind a live holder, never counted stuck, and runs once the holder ends (even one that never handed the lane on)' : 'manual run with --overlap parallel: it takes no lane, so the next scheduled run does not wait for it'}`, async () => {
      const name = `mp-${Math.random().toString(36).slice(2, 8)}`;
      const started: string[] = [];
      const handler: JobHandler = { run: async (ctx) => void started.push(ctx.runKey) };
      // A yearly schedule: the planner plans nothing else while the test runs; only the sweeper acts.
      const jobs = testJobs([{ name, schedule: '0 0 1 1 *', handler: 'h', startLead: 0, overlap: 'forbid-queue', lease: '30s' }], ['h']);
      const t0 = Math.floor(Date.now() / MIN) * MIN;
      const lab = new Lab(box, jobs, { h: handler }, t0);
      const tick = () =>
        runPlannerTick(
          { ledger: box.ledger, queue: lab.queue, jobs, clock: lab.clock.read, logger: silentLogger(), metrics: lab.metrics },
          { partition: 0, of: 1 },
        );
      let holderSlot: number;
      if (holderKind === 'manual-parallel') {
        // An operator triggers a long manual run that may overlap the schedule.
        const [manual] = await triggerRun(
          { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read },
          { job: lab.job(name), overlap: 'parallel', by: 'op' },
        );
        lab.queue.take();
        holderSlot = manual!.slot;
      } else {
        // A scheduled run holding the lane (its marker taken as a worker's claim takes it).
        holderSlot = t0 - MIN;
        await lab.create(name, holderSlot);
        await box.ledger.lanes.acquire(name, { slot: holderSlot, shard: 0 }, lab.clock.now);
      }
      const held = await box.ledger.claim(lab.id(name, holderSlot), 'long-holder', lab.clock.now, 30_000, 2_000);
      if (held.kind !== 'claimed') throw new Error(held.kind);
      let holder = held.run;
      // The next scheduled run (here created by hand: the schedule is yearly).
      lab.clock.advance(MIN);
      const next = lab.clock.now;
      await lab.create(name, next);
      await lab.deliver(name, next);
      expect(await lab.status(name, next)).toBe(holderKind === 'scheduled' ? RunStatus.READY : RunStatus.SUCCEEDED);
      // The holder goes on for 40 minutes, heartbeating; the planner ticks (and sweeps) every 3.
      for (let i = 0; i < 14; i++) {
        lab.clock.advance(3 * MIN);
        const beat = await box.ledger.heartbeat(holder, lab.clock.now + 30_000);
        expect(beat.ok).toBe(true);
        holder = { ...holder, leaseUntil: lab.clock.now + 30_000 };
        await tick();
        await lab.deliverSent();
      }
      expect(lab.metrics.get(MetricName.RunsStuck) ?? 0).toBe(0);
      // The holder ends without handing the lane on (as if its worker died right after its outcome).
      expect((await box.ledger.complete(holder, { status: RunStatus.SUCCEEDED }, lab.clock.now)).ok).toBe(true);
      for (let i = 0; i < 5; i++) {
        lab.clock.advance(3 * MIN);
        await tick();
        await lab.deliverSent();
      }
      const stuck = lab.metrics.get(MetricName.RunsStuck) ?? 0;
      expect({
        status: await lab.status(name, next),
        started: started.filter((k) => k.startsWith(`${name}@${new Date(next).toISOString()}`)).length,
        stuck,
      }).toEqual({ status: RunStatus.SUCCEEDED, started: 1, stuck: 0 });
    });
  }

  for (const opener of ['ops backfill', 'ops retry'] as const) {
    it(`forbid-queue: ${opener} of an older slot while the lane's holder is between attempts (RETRY) deadlocks nothing: the holder runs on, the older run gets the lane next`, async () => {
      const name = `dl-${Math.random().toString(36).slice(2, 8)}`;
      const started: string[] = [];
      let failures = opener === 'ops retry' ? 2 : 1;
      const handler: JobHandler = {
        async run(ctx) {
          started.push(ctx.runKey);
          if (failures-- > 0)
            throw opener === 'ops retry' && failures === 1
              ? new PermanentError('bad input', { code: 'BAD' })
              : new RetryableError('downstream busy', { code: 'BUSY' });
        },
      };
      const jobs = testJobs(
        [
          {
            name,
            schedule: '0 * * * *',
            handler: 'h',
            startLead: 0,
            overlap: 'forbid-queue',
            retry: { maxAttempts: 3, backoff: { base: '1s', max: '2s' } },
          },
        ],
        ['h'],
      );
      const hour = Math.floor(Date.now() / HOUR) * HOUR;
      const lab = new Lab(box, jobs, { h: handler }, hour + 5 * MIN);
      const queue = sqsModel(lab);
      const tick = () =>
        runPlannerTick(
          { ledger: box.ledger, queue: lab.queue, jobs, clock: lab.clock.read, logger: silentLogger(), metrics: lab.metrics },
          { partition: 0, of: 1 },
        );
      const [older, current] = [hour - HOUR, hour];
      if (opener === 'ops retry') {
        // The older slot failed for good earlier (its lane was released when it went DEAD).
        await lab.create(name, older);
        await lab.deliver(name, older);
        expect(await lab.status(name, older)).toBe(RunStatus.DEAD);
      }
      // The current slot's run fails once: RETRY, which keeps the lane until its next attempt.
      const run = await lab.create(name, current);
      queue.add(messageFor(run));
      await queue.deliverAll('w1');
      expect(await lab.status(name, current)).toBe(RunStatus.RETRY);
      // The operator opens the older slot.
      if (opener === 'ops backfill') {
        await backfill(
          { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read, sleep: async () => undefined },
          { job: lab.job(name), from: older, to: current },
        );
      } else {
        const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
        await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [
          (await lab.run(name, older))!,
        ]);
      }
      // Half an hour of SQS redelivery, planner ticks and sweeps.
      for (let round = 0; round < 10; round++) {
        lab.clock.advance(3 * MIN);
        await tick();
        await queue.deliverAll(`w-round${round}`);
      }
      expect({ older: await lab.status(name, older), current: await lab.status(name, current) }).toEqual({
        older: RunStatus.SUCCEEDED,
        current: RunStatus.SUCCEEDED,
      });
    });
  }

  for (const releaseLost of [false, true]) {
    it(`forbid-queue hands on without the sweeper: an older run that found the lane held by a holder between attempts gets it before the holder's next attempt${releaseLost ? ', also when the response to the release that gives way was lost (it recognises its own release)' : ''}; a run nobody waits for reads twice (its order check and its look)`, async () => {
      const name = `lb-${Math.random().toString(36).slice(2, 8)}`;
      const hour = Math.floor(Date.now() / HOUR) * HOUR;
      const [first, older, current] = [hour - 3 * HOUR, hour - HOUR, hour];
      let failCurrent = true;
      const handler: JobHandler = {
        async run(ctx) {
          if (ctx.slot === current && failCurrent) {
            failCurrent = false;
            throw new RetryableError('downstream busy', { code: 'BUSY' });
          }
        },
      };
      const jobs = testJobs(
        [
          {
            name,
            schedule: '0 * * * *',
            handler: 'h',
            startLead: 0,
            overlap: 'forbid-queue',
            retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s' } },
          },
        ],
        ['h'],
      );
      // Its own ledger and client: the query count is this job's alone.
      const own = await sandbox();
      try {
        const lab = new Lab(own, jobs, { h: handler }, hour + 5 * MIN);
        const counter = new CountingMiddleware();
        counter.attach(own.clients.doc);
        // A run with nothing older open and nobody waiting behind it: its order check and its look.
        await lab.create(name, first);
        counter.reset();
        expect(await lab.deliver(name, first)).toBe('ack');
        expect(await lab.status(name, first)).toBe(RunStatus.SUCCEEDED);
        expect(counter.byCommand().QueryCommand).toBe(2);
        // The current slot fails once: RETRY, holding the lane until its next attempt.
        await lab.create(name, current);
        await lab.deliver(name, current);
        expect(await lab.status(name, current)).toBe(RunStatus.RETRY);
        // An older slot opens behind its back (a backfill) and finds the lane held: it waits.
        await lab.create(name, older);
        expect(await lab.deliver(name, older)).toBe('ack');
        expect(await lab.status(name, older)).toBe(RunStatus.READY);
        // The holder's next attempt takes its own lane again, finds the older run open and gives way to it.
        lab.clock.advance(2_000);
        lab.queue.take();
        const isRelease = (command: string, input: Record<string, unknown>) =>
          command === 'UpdateItemCommand' &&
          JSON.stringify(input.Key).includes(LedgerKeys.activeSk(0)) &&
          String(input.UpdateExpression).includes('REMOVE holderSk');
        const faulty = faultyClient(own.endpoints.dynamoEndpoint, releaseLost ? [{ when: isRelease, fault: 'lost-response' }] : []);
        try {
          expect(await lab.deliver(name, current, 'w', { ledger: new Ledger(faulty.doc, { tableName: own.endpoints.ledgerTable }) })).toBe(
            'ack',
          );
          expect(faulty.injected).toEqual(releaseLost ? ['UpdateItemCommand'] : []);
        } finally {
          faulty.destroy();
        }
        expect(await lab.status(name, current)).toBe(RunStatus.RETRY);
        expect(await lab.deliverSent()).toEqual([(await lab.run(name, older))!.runKey]);
        expect(await lab.status(name, older)).toBe(RunStatus.SUCCEEDED);
        // The older run's look hands the lane back to the holder, which runs its next attempt.
        expect(await lab.deliverSent()).toEqual([(await lab.run(name, current))!.runKey]);
        expect(await lab.status(name, current)).toBe(RunStatus.SUCCEEDED);
      } finally {
        own.destroy();
      }
    });
  }

  it("forbid-queue: a run revived by ops retry further behind the lane's holder than any bounded look-back reads is handed the lane before the holder's next attempt and the run queued after the holder, however far back (no sweep needed: a busy lane never idles for one)", async () => {
    // Seed 20261204 of the model: the holder read only the 5 nearest slots before its own, so a
    // revived run 13 slots back waited while every hand-on went to the next run of the catch-up.
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20 }), async (gap) => {
        const name = `rv-${Math.random().toString(36).slice(2, 8)}`;
        const m0 = Math.floor(Date.now() / MIN) * MIN - 60 * MIN;
        const [revived, holder, after] = [m0, m0 + gap * MIN, m0 + (gap + 1) * MIN];
        const failures = new Map([
          [revived, new PermanentError('bad input', { code: 'BAD' })],
          [holder, new RetryableError('downstream busy', { code: 'BUSY' })],
        ]);
        const handler: JobHandler = {
          async run(ctx) {
            const failure = failures.get(ctx.slot);
            failures.delete(ctx.slot);
            if (failure) throw failure;
          },
        };
        const jobs = testJobs(
          [
            {
              name,
              schedule: '* * * * *',
              handler: 'h',
              startLead: 0,
              overlap: 'forbid-queue',
              retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s' } },
            },
          ],
          ['h'],
        );
        const lab = new Lab(box, jobs, { h: handler }, after + MIN);
        // The oldest slot failed for good; the ones after it succeeded, in order.
        for (let k = 0; k < gap; k++) {
          await lab.create(name, m0 + k * MIN);
          await lab.deliver(name, m0 + k * MIN);
        }
        expect(await lab.status(name, revived)).toBe(RunStatus.DEAD);
        // The holder fails once (RETRY keeps the lane); the next slot queues behind it.
        await lab.create(name, holder);
        await lab.deliver(name, holder);
        await lab.create(name, after);
        expect(await lab.deliver(name, after)).toBe('ack');
        expect({ holder: await lab.status(name, holder), after: await lab.status(name, after) }).toEqual({
          holder: RunStatus.RETRY,
          after: RunStatus.READY,
        });
        // The operator revives the oldest slot (the lane's floor goes below it): it finds the lane held and waits.
        const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
        await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [
          (await lab.run(name, revived))!,
        ]);
        expect(await lab.deliverSent()).toEqual([(await lab.run(name, revived))!.runKey]);
        expect(await lab.status(name, revived)).toBe(RunStatus.READY);
        // The holder's next attempt finds the revived run older and gives way to it; then slot order.
        lab.clock.advance(2_000);
        await lab.deliver(name, holder);
        expect(await lab.status(name, holder)).toBe(RunStatus.RETRY);
        expect(await lab.deliverSent()).toEqual([(await lab.run(name, revived))!.runKey]);
        expect(await lab.deliverSent()).toEqual([(await lab.run(name, holder))!.runKey]);
        expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
        expect(await lab.deliverSent()).toEqual([(await lab.run(name, after))!.runKey]);
        expect({ revived: await lab.status(name, revived), after: await lab.status(name, after) }).toEqual({
          revived: RunStatus.SUCCEEDED,
          after: RunStatus.SUCCEEDED,
        });
      }),
      { numRuns: 4, examples: [[13], [6]] },
    );
  });

  /** A ledger whose first call matching `when` first lets `race` run to its end: the race, made certain. */
  function racingLedger(
    when: (command: string, input: Record<string, unknown>) => boolean,
    race: () => Promise<unknown>,
  ): { ledger: Ledger; destroy(): void } {
    const racing = faultyClient(box.endpoints.dynamoEndpoint, []);
    let raced = false;
    racing.dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (!raced && when(context.commandName as string, args.input as Record<string, unknown>)) {
          raced = true;
          await race();
        }
        return next(args);
      },
      { step: 'initialize', name: 'race' },
    );
    return { ledger: new Ledger(racing.doc, { tableName: box.endpoints.ledgerTable }), destroy: () => racing.destroy() };
  }
  const isWatch = (command: string, input: Record<string, unknown>) =>
    command === 'UpdateItemCommand' && String(input.UpdateExpression).startsWith('SET openPk');

  for (const overlap of ['forbid-queue', 'coalesce'] as const) {
    it(`${overlap}: a run that loses a lane race (the holder ends and hands on between the run's look at the lane and its wait) is handed on at once, in the same worker path, without waiting out its message's visibility timeout or the sweeper`, async () => {
      const name = `race-${overlap}-${Math.random().toString(36).slice(2, 8)}`;
      const hour = Math.floor(Date.now() / HOUR) * HOUR;
      const [holder, waiter] = [hour - HOUR, hour];
      const ran: number[] = [];
      const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap }], ['h']);
      const lab = new Lab(box, jobs, { h: { run: async (ctx) => void ran.push(ctx.slot) } }, hour + 5 * MIN);
      await lab.create(name, holder);
      await lab.create(name, waiter);
      // The holder runs on another worker.
      expect(await box.ledger.lanes.acquire(name, { slot: holder, shard: 0 }, lab.clock.now)).toEqual({ kind: 'acquired' });
      const claim = await box.ledger.claim(lab.id(name, holder), 'elsewhere', lab.clock.now, 30_000, 2_000);
      if (claim.kind !== 'claimed') throw new Error('setup');
      // The waiter finds the lane held; before it settles into waiting, the holder ends and hands on.
      const racing = racingLedger(isWatch, async () => {
        expect((await box.ledger.complete(claim.run, { status: RunStatus.SUCCEEDED }, lab.clock.now)).ok).toBe(true);
        await runEnded({ ledger: box.ledger, queue: lab.queue, clock: lab.clock.read, metrics: lab.metrics }, lab.job(name), claim.run);
      });
      try {
        expect(await lab.deliver(name, waiter, 'w', { ledger: racing.ledger })).toBe('ack');
      } finally {
        racing.destroy();
      }
      // The holder's look found the waiter (its item is open: no flag to miss) and sent it.
      expect(await lab.deliverSent()).toEqual([(await lab.run(name, waiter))!.runKey]);
      expect(await lab.status(name, waiter)).toBe(RunStatus.SUCCEEDED);
      expect(ran).toEqual([waiter]);
    });
  }

  it('forbid-queue: a run that gives way to an earlier open run whose message arrives meanwhile (it runs and ends while the later run hands its claim back) is handed the lane back: neither waits for the sweeper', async () => {
    const name = `gw-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const [earlier, current] = [hour - HOUR, hour];
    const ran: number[] = [];
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async (ctx) => void ran.push(ctx.slot) } }, hour + 5 * MIN);
    await lab.create(name, earlier);
    await lab.create(name, current);
    // The current run claims, finds the earlier run open and gives way: as its claim is handed
    // back, the earlier run's own message arrives: it takes the freed lane, runs and ends.
    const isGiveBack = (command: string, input: Record<string, unknown>) =>
      command === 'UpdateItemCommand' && String(input.UpdateExpression).includes('attempt = attempt - :one');
    const racing = racingLedger(isGiveBack, () => lab.deliver(name, earlier, 'other'));
    try {
      expect(await lab.deliver(name, current, 'w', { ledger: racing.ledger })).toBe('ack');
    } finally {
      racing.destroy();
    }
    expect(await lab.status(name, earlier)).toBe(RunStatus.SUCCEEDED);
    // The giving-way run looks last: it finds itself first in the lane and sends itself.
    for (let i = 0; i < 3 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    expect(ran).toEqual([earlier, current]);
    expect(await lab.run(name, current)).toMatchObject({ status: RunStatus.SUCCEEDED, attempt: 1 });
    expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
  });

  it('forbid-queue after a planner outage: a catch-up slot planned on a later tick, older than the run holding the lane between attempts, deadlocks nothing: every slot runs', async () => {
    const name = `cu-${Math.random().toString(36).slice(2, 8)}`;
    const m0 = Math.floor(Date.now() / MIN) * MIN;
    const failing = m0 + 5 * MIN;
    const started: number[] = [];
    const handler: JobHandler = {
      async run(ctx) {
        started.push(ctx.slot);
        // One transient failure of the first on-time run after the outage.
        if (ctx.slot === failing && ctx.attempt === 1) throw new RetryableError('downstream busy', { code: 'BUSY' });
      },
    };
    const jobs = testJobs(
      [
        {
          name,
          schedule: '* * * * *',
          handler: 'h',
          startLead: 0,
          overlap: 'forbid-queue',
          misfire: { after: '1m', policy: 'all', maxPerTick: 1 },
          retry: { maxAttempts: 3, backoff: { base: '3m', max: '3m' } },
        },
      ],
      ['h'],
    );
    // Its own ledger: the planner's watermark of a shared one is wherever other tests' clocks left it.
    const own = await sandbox();
    const lab = new Lab(own, jobs, { h: handler }, m0 + 10_000);
    const queue = timedQueue(lab);
    const tick = () =>
      runPlannerTick(
        { ledger: own.ledger, queue: lab.queue, jobs, clock: lab.clock.read, logger: silentLogger(), metrics: lab.metrics },
        { partition: 0, of: 1 },
      );
    await tick();
    // The planner is down for five minutes; what it had queued runs.
    for (let t = 0; t < 31; t++) {
      lab.clock.advance(10_000);
      await queue.deliverDue('before');
    }
    // It is back: one tick a minute, for fifteen minutes; SQS delivers what is due every 10 s.
    for (let t = 0; t < 90; t++) {
      if (t % 6 === 0) await tick();
      await queue.deliverDue(`after${t}`);
      lab.clock.advance(10_000);
    }
    const statuses = await Promise.all([2, 3, 4, 5, 6].map(async (k) => `${k}:${await lab.status(name, m0 + k * MIN)}`));
    own.destroy();
    expect(statuses).toEqual(['2:SUCCEEDED', '3:SUCCEEDED', '4:SUCCEEDED', '5:SUCCEEDED', '6:SUCCEEDED']);
  });
});
