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
import { RunStatus } from '../../shared/core/vocabulary.js';
import { RetryableError, type JobHandler } from '../../shared/handler-api.js';
import { silentLogger, testJobs } from '../support/helpers.js';
import { runPlannerTick } from '../../shared/planner.js';
import { Ledger } from '../../shared/adapters/ledger.js';
import { LedgerKeys } from '../../shared/resources.js';
import { clientWith } from '../support/faults.js';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { VACANT_SLOT } from '../../shared/adapters/lane-store.js';
import { sweep } from '../../shared/sweeper.js';
import { jobsByName } from '../../shared/config.js';
import { InMemoryMetrics } from '../../shared/observability.js';
import { Lab } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

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
      expect(await box.ledger.lanes.markWaiting(name, 0)).toBe(true);
      await lab.create(name, slot, { watch: true });
      return { name, jobs, lab };
    };
    // What the marker holds: a holder slot no run has.
    const stored = await vacant();
    const { Item } = await box.clients.doc.send(new GetCommand({ TableName: box.endpoints.ledgerTable, Key: { pk: LedgerKeys.jobPk(stored.name), sk: LedgerKeys.activeSk(0) }, ConsistentRead: true }));
    expect(Item).toMatchObject({ holderSlot: VACANT_SLOT, holderSk: LedgerKeys.runSk(VACANT_SLOT, 0), runsWaiting: true });
    expect(await box.ledger.lanes.read(stored.name, 0)).toBeUndefined();
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
