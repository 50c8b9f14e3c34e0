/**
 * Hazards of the lane's waiting flag (`runsWaiting`: a waiting run says so on its lane's marker,
 * and a holder looks for the next run only when its release returns the flag), found by a review
 * of its first version, where each of these failed: a flag consumed by a holder whose look-ahead
 * cannot see the waiter (it is older than the holder); a hand-on lost after the release consumed
 * the flag, after which the sweeper re-sent one run per sweep; markers taken before the flag
 * existed (their waiting runs never flagged); and a flag on a free lane that the code from before
 * the flag could not read (it crashed on a marker without a holder; now a vacant marker names a
 * holder slot no run has, which that code takes over as a vanished holder's).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { RetryableError, type JobHandler } from '../../../shared/handler-api.js';
import { silentLogger, testJobs } from '../../support/helpers.js';
import { runPlannerTick } from '../../../shared/planner.js';
import { Ledger } from '../../../shared/adapters/ledger.js';
import { LedgerKeys } from '../../../shared/resources.js';
import { clientWith, faultyClient } from '../../support/faults.js';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { VACANT_SLOT } from '../../../shared/adapters/lane-store.js';
import { sweep } from '../../../shared/sweeper.js';
import { jobsByName } from '../../../shared/config.js';
import { InMemoryMetrics } from '../../../shared/observability.js';
import { Lab } from '../../support/lab.js';
import { sandbox, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

describe('lane waiting-flag hazards', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('forbid-queue: two slots opened behind a newer holder (backfill / ops retry --job), the later one delivered first, are both handed on without the sweeper', async () => {
    const name = `f1-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const [earlier, waiter, holder] = [hour - 3 * HOUR, hour - 2 * HOUR, hour];
    const ran: number[] = [];
    let failHolder = true;
    const handler: JobHandler = {
      async run(ctx) {
        ran.push(ctx.slot);
        if (ctx.slot === holder && failHolder) {
          failHolder = false;
          throw new RetryableError('downstream busy', { code: 'BUSY' });
        }
      },
    };
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue', retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s' } } }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, hour + 5 * MIN);
    // The current slot fails once: RETRY, holding the lane until its next attempt.
    await lab.create(name, holder);
    await lab.deliver(name, holder);
    expect(await lab.status(name, holder)).toBe(RunStatus.RETRY);
    // Two older slots open behind its back (a backfill, or `ops retry --job` of two DEAD runs).
    await lab.create(name, earlier);
    await lab.create(name, waiter);
    // SQS delivers the later one first: it waits for the earlier one (flagging the holder's marker).
    expect(await lab.deliver(name, waiter)).toBe('ack');
    expect(await lab.status(name, waiter)).toBe(RunStatus.READY);
    // The holder's next attempt succeeds; its release consumes the flag and looks ahead of itself: nobody.
    lab.clock.advance(2_000);
    expect(await lab.deliver(name, holder)).toBe('ack');
    expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
    // The earlier slot's own message now arrives: the lane is free, it runs and ends.
    expect(await lab.deliver(name, earlier)).toBe('ack');
    expect(await lab.status(name, earlier)).toBe(RunStatus.SUCCEEDED);
    // Whatever the hand-ons sent is delivered; no sweeper runs. The old code looked ahead on every end.
    for (let i = 0; i < 5 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    expect(await lab.status(name, waiter)).toBe(RunStatus.SUCCEEDED);
    expect(ran).toEqual([holder, holder, earlier, waiter]);
  });

  it('forbid-queue: after a hand-on lost between the release and the look-ahead (throttled query, or the worker died), the sweeper re-sends the lane head, and that run hands on to the next waiting run when it ends (no second sweep)', async () => {
    const name = `f2-${Math.random().toString(36).slice(2, 8)}`;
    const ran: number[] = [];
    let failHolder = true;
    const t0 = Math.floor(Date.now() / MIN) * MIN;
    const [holder, w1, w2] = [t0 - 3 * MIN, t0 - 2 * MIN, t0 - MIN];
    const handler: JobHandler = {
      async run(ctx) {
        ran.push(ctx.slot);
        if (ctx.slot === holder && failHolder) {
          failHolder = false;
          throw new RetryableError('downstream busy', { code: 'BUSY' });
        }
      },
    };
    // A yearly schedule: the planner plans nothing while the test runs; only its sweep acts.
    const jobs = testJobs([{ name, schedule: '0 0 1 1 *', handler: 'h', startLead: 0, overlap: 'forbid-queue', lease: '30s', retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s' } } }], ['h']);
    const own = await sandbox();
    try {
      const lab = new Lab(own, jobs, { h: handler }, t0);
      const tick = () => runPlannerTick({ ledger: own.ledger, queue: lab.queue, jobs, clock: lab.clock.read, logger: silentLogger(), metrics: lab.metrics }, { partition: 0, of: 1 });
      await tick();
      // The holder fails once (RETRY keeps the lane); two later slots queue behind it.
      await lab.create(name, holder);
      await lab.deliver(name, holder);
      expect(await lab.status(name, holder)).toBe(RunStatus.RETRY);
      await lab.create(name, w1);
      await lab.create(name, w2);
      expect(await lab.deliver(name, w1)).toBe('ack');
      expect(await lab.deliver(name, w2)).toBe('ack');
      // The holder's next attempt succeeds; its release commits, then its look-ahead query is throttled
      // (past the SDK's retries): "could not hand the lane on".
      lab.clock.advance(2_000);
      let released = false;
      const faulty = clientWith(own.endpoints.dynamoEndpoint, async (command, input, next) => {
        if (command === 'DeleteItemCommand' && JSON.stringify(input.Key).includes(LedgerKeys.activeSk(0))) released = true;
        else if (released && command === 'QueryCommand') throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
        return next();
      });
      try {
        expect(await lab.deliver(name, holder, 'w', { ledger: new Ledger(faulty.doc, { tableName: own.endpoints.ledgerTable }) })).toBe('ack');
      } finally {
        faulty.destroy();
      }
      expect(released).toBe(true);
      expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
      expect(lab.queue.take()).toEqual([]);
      // The sweeper finds the two lost runs on an idle lane and re-sends the lane's head.
      for (let i = 0; i < 3 && lab.queue.sent.length === 0; i++) {
        lab.clock.advance(MIN);
        await tick();
      }
      expect(await lab.deliverSent()).toEqual([(await lab.run(name, w1))!.runKey]);
      expect(await lab.status(name, w1)).toBe(RunStatus.SUCCEEDED);
      // w1 ended: the hand-on alone must carry on to w2 (the old code looked ahead on every end).
      const handed = await lab.deliverSent();
      expect({ handed, w2: await lab.status(name, w2) }).toEqual({ handed: [(await lab.run(name, w2))!.runKey], w2: RunStatus.SUCCEEDED });
    } finally {
      own.destroy();
    }
  });

  it('a marker taken before waiting runs flagged it (a deployment of the code from before the flag): its release looks for the next run as before, and the run that queued behind it is handed on', async () => {
    const name = `f3-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const [holder, waiter] = [hour - HOUR, hour];
    const ran: number[] = [];
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async (ctx) => void ran.push(ctx.slot) } }, hour + 5 * MIN);
    await lab.create(name, holder);
    // The holder took the lane as the earlier code did (its fields only, no flagsWaiting); the
    // waiter queued behind it then, without a flag.
    await box.clients.doc.send(
      new UpdateCommand({
        TableName: box.endpoints.ledgerTable,
        Key: { pk: LedgerKeys.jobPk(name), sk: LedgerKeys.activeSk(0) },
        UpdateExpression: 'SET holderSk = :holderSk, holderSlot = :holderSlot, since = :since, lastWrite = :lastWrite',
        ExpressionAttributeValues: { ':holderSk': LedgerKeys.runSk(holder, 0), ':holderSlot': holder, ':since': lab.clock.now, ':lastWrite': 'earlier-code' },
      }),
    );
    await lab.create(name, waiter, { watch: true });
    // The holder's message comes back after the deployment: it takes its own lane again, runs, hands on.
    expect(await lab.deliver(name, holder)).toBe('ack');
    expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
    expect(await lab.deliverSent()).toEqual([(await lab.run(name, waiter))!.runKey]);
    expect(ran).toEqual([holder, waiter]);
  });

  it('a flag on a free lane leaves a vacant marker: the lane stays free to the worker and the sweeper, and the code from before the flag takes it over as a vanished holder\'s', async () => {
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const slot = hour - HOUR;
    const vacant = async () => {
      const name = `f4-${Math.random().toString(36).slice(2, 8)}`;
      const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
      const lab = new Lab(box, jobs, { h: { run: async () => undefined } }, hour + 5 * MIN);
      expect(await box.ledger.lanes.markWaiting(name, 0, undefined, slot)).toBe(true);
      await lab.create(name, slot, { watch: true });
      return { name, jobs, lab };
    };
    // What the marker holds: a holder slot no run has.
    const stored = await vacant();
    const { Item } = await box.clients.doc.send(new GetCommand({ TableName: box.endpoints.ledgerTable, Key: { pk: LedgerKeys.jobPk(stored.name), sk: LedgerKeys.activeSk(0) }, ConsistentRead: true }));
    expect(Item).toMatchObject({ holderSlot: VACANT_SLOT, holderSk: LedgerKeys.runSk(VACANT_SLOT, 0), runsWaiting: true });
    expect((await box.ledger.lanes.read(stored.name, 0))?.holderSlot).toBeUndefined();
    // The earlier code's acquire is refused by it (its free lane was no item at all) and, finding
    // no run at the holder's slot, takes the marker over: the same takeFromEnded as now.
    expect(await box.ledger.lanes.takeFromEnded(stored.name, { slot, shard: 0 }, { slot: VACANT_SLOT, shard: 0 }, stored.lab.clock.now)).toBe(true);
    expect(await box.ledger.lanes.read(stored.name, 0)).toMatchObject({ holderSlot: slot });
    // The worker takes the free lane (keeping the flag) and runs.
    const worked = await vacant();
    expect({ outcome: await worked.lab.deliver(worked.name, slot), status: await worked.lab.status(worked.name, slot) }).toEqual({ outcome: 'ack', status: RunStatus.SUCCEEDED });
    // The sweeper sees an idle lane and re-sends its lost run.
    const swept = await vacant();
    swept.lab.clock.advance(10 * MIN);
    await sweep(
      { ledger: box.ledger, queue: swept.lab.queue, clock: swept.lab.clock.read, logger: silentLogger(), metrics: new InMemoryMetrics() },
      { partition: 0, of: 1, gen: 0, jobs: swept.jobs, configured: jobsByName(swept.jobs), cursor: {} },
    );
    expect(swept.lab.queue.take().map((o) => o.message.runKey)).toEqual([(await swept.lab.run(swept.name, slot))!.runKey]);
  });
});

describe('lane waiting-flag hazards, second review', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('forbid-queue: a flag left on a free lane (vacant marker) is consumed by a newer holder that never saw the waiter; the earlier run then ends without a look-ahead', async () => {
    const name = `r1-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const ran: number[] = [];
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async (ctx) => void ran.push(ctx.slot) } }, hour + 5 * MIN);
    // Five ordinary hourly runs before the current one, all done.
    for (let i = 5; i >= 1; i--) {
      await lab.create(name, hour - i * HOUR);
      expect(await lab.deliver(name, hour - i * HOUR)).toBe('ack');
    }
    // A backfill of two slots a day back (more than ORDER_NEIGHBOURS runs before the current slot).
    const [earlier, waiter] = [hour - 24 * HOUR, hour - 23 * HOUR];
    await lab.create(name, earlier, { watch: true });
    await lab.create(name, waiter, { watch: true });
    // SQS delivers the later backfilled slot first: it waits for the earlier one, flagging the free lane (vacant marker).
    expect(await lab.deliver(name, waiter)).toBe('ack');
    expect(await lab.status(name, waiter)).toBe(RunStatus.READY);
    // The current slot runs: its nearest five neighbours are all done, so it takes the (vacant) lane, and its flag.
    await lab.create(name, hour);
    expect(await lab.deliver(name, hour)).toBe('ack');
    expect(await lab.status(name, hour)).toBe(RunStatus.SUCCEEDED);
    // The earlier backfilled slot's message now arrives: it runs on the free lane and ends.
    expect(await lab.deliver(name, earlier)).toBe('ack');
    expect(await lab.status(name, earlier)).toBe(RunStatus.SUCCEEDED);
    for (let i = 0; i < 5 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    // The code before the flag looked ahead at every end: the earlier run handed the lane to the waiter.
    expect(await lab.status(name, waiter)).toBe(RunStatus.SUCCEEDED);
  });

  it('a marker from before the flag: the holder re-takes it (acquire writes flagsWaiting), then its markWaiting fails (throttled / worker dies); on redelivery the marker reads as flagged-and-empty and the unflagged waiter is never handed on', async () => {
    const name = `r2-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const [holder, waiter] = [hour - HOUR, hour];
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async () => undefined } }, hour + 5 * MIN);
    await lab.create(name, holder);
    // The holder took the lane under the code from before the flag; the waiter queued behind it, unflagged.
    await box.clients.doc.send(
      new UpdateCommand({
        TableName: box.endpoints.ledgerTable,
        Key: { pk: LedgerKeys.jobPk(name), sk: LedgerKeys.activeSk(0) },
        UpdateExpression: 'SET holderSk = :holderSk, holderSlot = :holderSlot, since = :since, lastWrite = :lastWrite',
        ExpressionAttributeValues: { ':holderSk': LedgerKeys.runSk(holder, 0), ':holderSlot': holder, ':since': lab.clock.now, ':lastWrite': 'earlier-code' },
      }),
    );
    await lab.create(name, waiter, { watch: true });
    // The holder's message comes back after the deployment; its flag write (right after its acquire) is throttled past the SDK's retries.
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
      { when: (command, input) => command === 'UpdateItemCommand' && input.UpdateExpression === 'SET runsWaiting = :yes', fault: 'refused', times: 10 },
    ]);
    try {
      // (the code before the flag has no such write: there this delivery just runs and hands on)
      await lab.deliver(name, holder, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) }).catch(() => 'threw');
    } finally {
      faulty.destroy();
    }
    // SQS redelivers it: it runs and ends.
    expect(await lab.deliver(name, holder)).toBe('ack');
    expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
    for (let i = 0; i < 5 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    expect(await lab.status(name, waiter)).toBe(RunStatus.SUCCEEDED);
  });

  it('forbid-queue: a backfill queue handed on run by run; the current slot takes the lane between a hand-on and the dispatched run (the vacant flag), and the rest of the queue is stranded', async () => {
    const name = `r1b-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const [e1, e2, e3] = [hour - 26 * HOUR, hour - 25 * HOUR, hour - 24 * HOUR];
    let failFirst = true;
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue', retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s' } } }], ['h']);
    const lab = new Lab(box, jobs, {
      h: {
        run: async (ctx) => {
          if (ctx.slot === e1 && failFirst) {
            failFirst = false;
            throw new RetryableError('busy', { code: 'BUSY' });
          }
        },
      },
    }, hour + 5 * MIN);
    for (let i = 5; i >= 1; i--) {
      await lab.create(name, hour - i * HOUR);
      expect(await lab.deliver(name, hour - i * HOUR)).toBe('ack');
    }
    // A backfill of three slots a day back, delivered in order; the first fails once (RETRY keeps the lane).
    for (const slot of [e1, e2, e3]) await lab.create(name, slot, { watch: true });
    expect(await lab.deliver(name, e1)).toBe('retry');
    expect(await lab.deliver(name, e2)).toBe('ack');
    expect(await lab.deliver(name, e3)).toBe('ack');
    lab.clock.advance(2_000);
    expect(await lab.deliver(name, e1)).toBe('ack');
    expect(await lab.status(name, e1)).toBe(RunStatus.SUCCEEDED);
    // e1 handed on to e2 (flagging the now free lane). Before that message is processed, the current slot runs.
    const handOn = lab.queue.take();
    expect(handOn.map((o) => o.message.runKey)).toEqual([(await lab.run(name, e2))!.runKey]);
    await lab.create(name, hour);
    expect(await lab.deliver(name, hour)).toBe('ack');
    expect(await lab.status(name, hour)).toBe(RunStatus.SUCCEEDED);
    lab.queue.sent.push(...handOn);
    for (let i = 0; i < 5 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    expect({ e2: await lab.status(name, e2), e3: await lab.status(name, e3) }).toEqual({ e2: RunStatus.SUCCEEDED, e3: RunStatus.SUCCEEDED });
  });

  it('sweeper: a throttled lane flag write (new, before the send) fails the whole sweep: no lost run of any job is re-sent, though each was marked re-dispatched', async () => {
    const q = `r3q-${Math.random().toString(36).slice(2, 8)}`;
    const p = `r3p-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const slot = hour - HOUR;
    const jobs = testJobs([
      { name: q, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' },
      { name: p, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'parallel' },
    ], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async () => undefined } }, hour + 10 * MIN);
    const lostQ = await lab.create(q, slot, { watch: true });
    const lostP = await lab.create(p, slot, { watch: true });
    lab.clock.advance(10 * MIN);
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
      { when: (command, input) => command === 'UpdateItemCommand' && String(input.UpdateExpression).startsWith('SET runsWaiting'), fault: 'refused', times: 10 },
    ]);
    try {
      await sweep(
        { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }), queue: lab.queue, clock: lab.clock.read, logger: silentLogger(), metrics: new InMemoryMetrics() },
        { partition: 0, of: 1, gen: 0, jobs, configured: jobsByName(jobs), cursor: {} },
      ).catch(() => undefined);
    } finally {
      faulty.destroy();
    }
    expect(lab.queue.take().map((o) => o.message.runKey).sort()).toEqual([lostQ.runKey, lostP.runKey].sort());
  });
});
