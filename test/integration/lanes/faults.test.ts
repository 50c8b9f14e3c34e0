/**
 * The lane's waiting flag under faults (a third review's findings): a release whose response was
 * lost, a hand-on that fails after its release consumed the flag, a flag write that fails before a
 * hand-on's send. Each left a waiting run to the sweeper where the code before the flag handed on;
 * now the ending holder puts the flag back on the free lane before it looks, and a hand-on's flag
 * is best effort.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { testJobs } from '../../support/helpers.js';
import { RetryableError } from '../../../shared/handler-api.js';
import { Ledger } from '../../../shared/adapters/ledger.js';
import { LedgerKeys } from '../../../shared/resources.js';
import { clientWith, faultyClient } from '../../support/faults.js';
import { Lab } from '../../support/lab.js';
import { sandbox, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

describe('lane waiting flag under faults', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  /** r1's setup: five done hourly runs, a backfill of two slots a day back, the later one waiting (flag on the free lane). */
  async function backfillWaiting(prefix: string) {
    const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const ran: number[] = [];
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async (ctx) => void ran.push(ctx.slot) } }, hour + 5 * MIN);
    for (let i = 5; i >= 1; i--) {
      await lab.create(name, hour - i * HOUR);
      expect(await lab.deliver(name, hour - i * HOUR)).toBe('ack');
    }
    const [earlier, waiter] = [hour - 24 * HOUR, hour - 23 * HOUR];
    await lab.create(name, earlier, { watch: true });
    await lab.create(name, waiter, { watch: true });
    expect(await lab.deliver(name, waiter)).toBe('ack');
    expect(await lab.status(name, waiter)).toBe(RunStatus.READY);
    await lab.create(name, hour);
    return { name, hour, earlier, waiter, lab, ran };
  }

  it('forbid-queue: the release that takes the free-lane flag loses its response (SDK retry refused): the recorded slot is lost, and the earlier run ends without a look-ahead', async () => {
    const { name, hour, earlier, waiter, lab } = await backfillWaiting('q1');
    // The current slot takes the vacant lane (and its flag); its release commits, the response is lost, the SDK's retry is refused.
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
      { when: (command, input) => command === 'DeleteItemCommand' && JSON.stringify(input.Key).includes(LedgerKeys.activeSk(0)), fault: 'lost-response' },
    ]);
    try {
      expect(await lab.deliver(name, hour, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) })).toBe('ack');
      expect(faulty.injected).toEqual(['DeleteItemCommand']);
    } finally {
      faulty.destroy();
    }
    expect(await lab.status(name, hour)).toBe(RunStatus.SUCCEEDED);
    // The earlier backfilled slot's message arrives: the lane is free, it runs and ends.
    expect(await lab.deliver(name, earlier)).toBe('ack');
    expect(await lab.status(name, earlier)).toBe(RunStatus.SUCCEEDED);
    for (let i = 0; i < 5 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    // The code before the flag looked ahead at every end: the earlier run handed the lane to the waiter.
    expect(await lab.status(name, waiter)).toBe(RunStatus.SUCCEEDED);
  });

  it('forbid-queue: the hand-on after the release that took the free-lane flag fails (throttled look-back): the earlier run later ends without a look-ahead', async () => {
    const { name, hour, earlier, waiter, lab } = await backfillWaiting('q2');
    let released = false;
    const faulty = clientWith(box.endpoints.dynamoEndpoint, async (command, input, next) => {
      if (command === 'DeleteItemCommand' && JSON.stringify(input.Key).includes(LedgerKeys.activeSk(0))) released = true;
      else if (released && command === 'QueryCommand') throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
      return next();
    });
    try {
      expect(await lab.deliver(name, hour, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) })).toBe('ack');
    } finally {
      faulty.destroy();
    }
    expect(released).toBe(true);
    expect(await lab.status(name, hour)).toBe(RunStatus.SUCCEEDED);
    expect(await lab.deliver(name, earlier)).toBe('ack');
    expect(await lab.status(name, earlier)).toBe(RunStatus.SUCCEEDED);
    for (let i = 0; i < 5 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    expect(await lab.status(name, waiter)).toBe(RunStatus.SUCCEEDED);
  });
  it('forbid-queue: f1 (two slots opened behind a RETRY holder, the later waiting) with the holder\'s look-back throttled after its release: the earlier run then runs on its own message and ends without a look-ahead', async () => {
    const name = `q3-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const [earlier, waiter, holder] = [hour - 3 * HOUR, hour - 2 * HOUR, hour];
    let failHolder = true;
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue', retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s' } } }], ['h']);
    const lab = new Lab(box, jobs, {
      h: {
        run: async (ctx) => {
          if (ctx.slot === holder && failHolder) {
            failHolder = false;
            throw new RetryableError('downstream busy', { code: 'BUSY' });
          }
        },
      },
    }, hour + 5 * MIN);
    await lab.create(name, holder);
    await lab.deliver(name, holder);
    expect(await lab.status(name, holder)).toBe(RunStatus.RETRY);
    await lab.create(name, earlier, { watch: true });
    await lab.create(name, waiter, { watch: true });
    expect(await lab.deliver(name, waiter)).toBe('ack');
    expect(await lab.status(name, waiter)).toBe(RunStatus.READY);
    lab.clock.advance(2_000);
    // The holder's next attempt succeeds; its release commits (consuming olderWaiting), its look-back query is throttled.
    let released = false;
    const faulty = clientWith(box.endpoints.dynamoEndpoint, async (command, input, next) => {
      if (command === 'DeleteItemCommand' && JSON.stringify(input.Key).includes(LedgerKeys.activeSk(0))) released = true;
      else if (released && command === 'QueryCommand') throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
      return next();
    });
    try {
      expect(await lab.deliver(name, holder, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) })).toBe('ack');
    } finally {
      faulty.destroy();
    }
    expect(released).toBe(true);
    expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
    // The earlier slot's own message arrives: the lane is free, it runs and ends.
    expect(await lab.deliver(name, earlier)).toBe('ack');
    expect(await lab.status(name, earlier)).toBe(RunStatus.SUCCEEDED);
    for (let i = 0; i < 5 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
    // The code before the flag looked ahead at every end: the earlier run handed the lane to the waiter.
    expect(await lab.status(name, waiter)).toBe(RunStatus.SUCCEEDED);
  });
  it('forbid-queue: a hand-on whose new flag write (dispatch\'s markWaiting, before the send) is throttled past the SDK\'s retries sends nothing: the waiting run is left to the sweeper', async () => {
    const name = `q4-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const [holder, waiter] = [hour - HOUR, hour];
    let failHolder = true;
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue', retry: { maxAttempts: 3, backoff: { base: '1s', max: '1s' } } }], ['h']);
    const lab = new Lab(box, jobs, {
      h: {
        run: async (ctx) => {
          if (ctx.slot === holder && failHolder) {
            failHolder = false;
            throw new RetryableError('downstream busy', { code: 'BUSY' });
          }
        },
      },
    }, hour + 5 * MIN);
    await lab.create(name, holder);
    await lab.deliver(name, holder);
    expect(await lab.status(name, holder)).toBe(RunStatus.RETRY);
    await lab.create(name, waiter, { watch: true });
    expect(await lab.deliver(name, waiter)).toBe('ack');
    expect(await lab.status(name, waiter)).toBe(RunStatus.READY);
    lab.clock.advance(2_000);
    // The holder's next attempt succeeds and hands on; the flag write that now precedes the send is throttled.
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [
      { when: (command, input) => command === 'UpdateItemCommand' && String(input.UpdateExpression).startsWith('SET runsWaiting'), fault: 'refused', times: 10 },
    ]);
    try {
      expect(await lab.deliver(name, holder, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) })).toBe('ack');
    } finally {
      faulty.destroy();
    }
    expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
    // The code before the flag sent the hand-on (its only write).
    expect(lab.queue.sent.map((o) => o.message.runKey)).toEqual([(await lab.run(name, waiter))!.runKey]);
  });
});
