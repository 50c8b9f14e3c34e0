/**
 * A lane's hand-on under faults: a release whose response was lost, a look that fails after its
 * release. The waiting runs' items stay open, so the next run of the lane that ends finds them:
 * none is left to the sweeper for good.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { testJobs } from '../../support/helpers.js';
import { RetryableError } from '../../../shared/handler-api.js';
import { Ledger } from '../../../shared/store/ledger.js';
import { LedgerKeys } from '../../../shared/core/resources.js';
import { clientWith, faultyClient } from '../../support/faults.js';
import { Lab } from '../../support/lab.js';
import { sandbox, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
/** The lane's release: the holder's conditional update that removes it from the marker. */
const isRelease = (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItemCommand' &&
  JSON.stringify(input.Key).includes(LedgerKeys.activeSk(0)) &&
  String(input.UpdateExpression).includes('REMOVE holderSk');
const HOUR = 60 * MIN;

const throttled = () =>
  Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ThrottlingException',
    $metadata: { httpStatusCode: 400 },
  });

describe('lane hand-on under faults', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  /** Five done hourly runs, two slots a day back backfilled (the later one delivered: it gives way to the earlier), the current slot created. */
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
    ran.length = 0;
    return { name, hour, earlier, waiter, lab, ran };
  }

  /** SQS alone from here: every message a worker sent is delivered, until none is left. */
  async function drain(lab: Lab): Promise<void> {
    for (let i = 0; i < 10 && lab.queue.sent.length > 0; i++) await lab.deliverSent();
  }

  it("forbid-queue: the release of a run that gives way loses its response (the SDK's retry is refused): it recognises its own release and looks, and the lane drains in slot order without the sweeper", async () => {
    const { name, hour, earlier, waiter, lab, ran } = await backfillWaiting('q1');
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isRelease, fault: 'lost-response' }]);
    try {
      expect(await lab.deliver(name, hour, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) })).toBe('ack');
      expect(faulty.injected).toEqual(['UpdateItemCommand']);
    } finally {
      faulty.destroy();
    }
    await drain(lab);
    expect(ran).toEqual([earlier, waiter, hour]);
    expect([await lab.status(name, earlier), await lab.status(name, waiter), await lab.status(name, hour)]).toEqual([
      RunStatus.SUCCEEDED,
      RunStatus.SUCCEEDED,
      RunStatus.SUCCEEDED,
    ]);
  });

  it("forbid-queue: the look after a committed claim is throttled past the SDK's retries: the claim is handed back, and the message's next delivery runs the run at once, not after the lease and a takeover", async () => {
    const name = `q0-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const ran: number[] = [];
    const jobs = testJobs([{ name, schedule: '0 * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue', lease: '60s' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async (ctx) => void ran.push(ctx.slot) } }, hour + 5 * MIN);
    await lab.create(name, hour);
    let claimed = false;
    const faulty = clientWith(box.endpoints.dynamoEndpoint, async (command, input, next) => {
      if (command === 'UpdateItemCommand' && JSON.stringify(input.Key).includes('RUN#')) claimed = true;
      else if (claimed && command === 'QueryCommand') throw throttled();
      return next();
    });
    try {
      await expect(
        lab.deliver(name, hour, 'w1', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) }),
      ).rejects.toMatchObject({ name: 'ThrottlingException' });
    } finally {
      faulty.destroy();
    }
    expect(claimed).toBe(true);
    expect(await lab.status(name, hour)).toBe(RunStatus.READY);
    // The same clock: no lease has run out, so only a handed-back claim lets this delivery run it.
    expect(await lab.deliver(name, hour, 'w2')).toBe('ack');
    expect(ran).toEqual([hour]);
    expect(await lab.status(name, hour)).toBe(RunStatus.SUCCEEDED);
  });

  it("forbid-queue: the look after a release is throttled past the SDK's retries: the waiting runs stay open above the floor, and the next run of the lane that ends finds them (no sweep)", async () => {
    const { name, hour, earlier, waiter, lab, ran } = await backfillWaiting('q2');
    lab.queue.take();
    const look = throttledLookAfterRelease(box);
    const { faulty } = look;
    try {
      // The current slot gives way to the backfilled runs; its look fails (the record is reported
      // failed and comes back later; not here).
      await expect(
        lab.deliver(name, hour, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) }),
      ).rejects.toMatchObject({ name: 'ThrottlingException' });
    } finally {
      faulty.destroy();
    }
    const released = look.released();
    expect(released).toBe(true);
    // The earlier slot's own message arrives: it runs, and its look hands the lane on from there.
    expect(await lab.deliver(name, earlier)).toBe('ack');
    await drain(lab);
    expect(ran).toEqual([earlier, waiter, hour]);
    expect(await lab.status(name, hour)).toBe(RunStatus.SUCCEEDED);
  });

  it("forbid-queue: two slots opened behind a RETRY holder; the holder's next attempt gives way and its look is throttled: the earlier slot's own message starts the chain, and every run settles in slot order", async () => {
    const name = `q3-${Math.random().toString(36).slice(2, 8)}`;
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const [earlier, waiter, holder] = [hour - 3 * HOUR, hour - 2 * HOUR, hour];
    let failHolder = true;
    const ran: number[] = [];
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
    const lab = new Lab(
      box,
      jobs,
      {
        h: {
          run: async (ctx) => {
            ran.push(ctx.slot);
            if (ctx.slot === holder && failHolder) {
              failHolder = false;
              throw new RetryableError('downstream busy', { code: 'BUSY' });
            }
          },
        },
      },
      hour + 5 * MIN,
    );
    await lab.create(name, holder);
    await lab.deliver(name, holder);
    expect(await lab.status(name, holder)).toBe(RunStatus.RETRY);
    await lab.create(name, earlier, { watch: true });
    await lab.create(name, waiter, { watch: true });
    expect(await lab.deliver(name, waiter)).toBe('ack');
    expect(await lab.status(name, waiter)).toBe(RunStatus.READY);
    lab.clock.advance(2_000);
    const look = throttledLookAfterRelease(box);
    const { faulty } = look;
    try {
      await expect(
        lab.deliver(name, holder, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) }),
      ).rejects.toMatchObject({ name: 'ThrottlingException' });
    } finally {
      faulty.destroy();
    }
    const released = look.released();
    expect(released).toBe(true);
    expect(await lab.status(name, holder)).toBe(RunStatus.RETRY);
    expect(await lab.deliver(name, earlier)).toBe('ack');
    await drain(lab);
    expect(ran).toEqual([holder, earlier, waiter, holder]);
    expect([await lab.status(name, earlier), await lab.status(name, waiter), await lab.status(name, holder)]).toEqual([
      RunStatus.SUCCEEDED,
      RunStatus.SUCCEEDED,
      RunStatus.SUCCEEDED,
    ]);
  });
});

/** A client whose queries after the lane's release are throttled past the SDK's retries (the release's look fails). */
function throttledLookAfterRelease(box: Sandbox) {
  let released = false;
  const faulty = clientWith(box.endpoints.dynamoEndpoint, async (command, input, next) => {
    if (isRelease(command, input)) released = true;
    else if (released && command === 'QueryCommand') throw throttled();
    return next();
  });
  return { faulty, released: () => released };
}
