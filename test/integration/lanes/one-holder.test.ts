/**
 * The lane decisions of shared/worker/lanes.ts through the worker (processRecord), against
 * DynamoDB Local, under a manual clock (test/support/lab.ts: what the worker sends is kept, not
 * delivered): a lane taken for a run that turns out ended or missing is given back; `replace`
 * ends the lane's older holder and runs, and an older run gives way to a newer holder; when a run
 * ends, forbid-skip hands nothing on, forbid-queue dispatches the next due run, coalesce and
 * replace the newest one (superseding those in between), delayed to its fire time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus, type Run } from '../../../shared/core/vocabulary.js';
import type { JobHandler } from '../../../shared/handler-api.js';
import type { JobInput } from '../../../shared/schedule/job-schema.js';
import { testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { faultyClient } from '../../support/faults.js';
import { triggerRun } from '../../../shared/operations/trigger.js';
import { Ledger } from '../../../shared/store/ledger.js';
import { sandbox, uniqueName as unique, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('worker lanes', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  function setup(overlap: 'forbid-skip' | 'forbid-queue' | 'coalesce' | 'replace', extra: Partial<JobInput> = {}) {
    const name = unique(`lane-${overlap}`);
    const ran: number[] = [];
    const during: { run?: () => void | Promise<void> } = {};
    const handler: JobHandler = {
      run: async (ctx) => {
        ran.push(ctx.slot);
        await during.run?.();
      },
    };
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, lease: '30s', overlap, ...extra }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, T0 + 10);
    return { name, lab, ran, during };
  }

  /** Runs at T0 − 1 min and T0; the older one holds the lane and runs on another worker. */
  async function olderHolderRunning(lab: Lab, name: string) {
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    await box.ledger.lanes.acquire(name, { slot: T0 - MIN, shard: 0 }, lab.clock.now);
    const claim = await box.ledger.claim(lab.id(name, T0 - MIN), 'old-worker', lab.clock.now, 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error('setup');
    return claim;
  }

  /** Claims and completes a run directly in the ledger (as another worker did), without touching its lane. */
  async function ended(
    lab: Lab,
    name: string,
    slot: number,
    status: typeof RunStatus.SUCCEEDED | typeof RunStatus.DEAD = RunStatus.SUCCEEDED,
  ): Promise<Run> {
    const claim = await lab.box.ledger.claim(lab.id(name, slot), 'elsewhere', lab.clock.now, 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error(`setup: claim ${claim.kind}`);
    const transition = status === RunStatus.SUCCEEDED ? { status } : { status, lastError: { code: 'X', message: 'x' } };
    if (!(await lab.box.ledger.complete(claim.run, transition, lab.clock.now)).ok) throw new Error('setup: complete refused');
    return (await lab.run(name, slot))!;
  }

  it.each([
    // A message for a missing run comes back (the run may yet be created).
    ['already ended', true, 'ack'],
    ['never created', false, 'retry'],
  ] as const)(
    'a message for a run %s takes its free lane only for the instant of the claim: no marker is left behind, nothing runs, nothing is handed on',
    async (_what, exists, answer) => {
      const { name, lab, ran } = setup('forbid-queue');
      if (exists) {
        await lab.create(name, T0);
        await ended(lab, name, T0);
      }
      expect(await lab.deliver(name, T0)).toBe(answer);
      expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
      expect(ran).toEqual([]);
      expect(lab.queue.sent).toEqual([]);
    },
  );

  it('a marker left by an ended holder, taken over for a run that turns out ended too, is given back (no marker left behind)', async () => {
    const { name, lab, ran } = setup('forbid-queue');
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    // The older run ended without releasing its marker (a crash between outcome and release).
    await box.ledger.lanes.acquire(name, { slot: T0 - MIN, shard: 0 }, lab.clock.now);
    await ended(lab, name, T0 - MIN);
    // The newer one was closed meanwhile (another worker, an operator): its duplicate message arrives.
    await ended(lab, name, T0, RunStatus.DEAD);
    expect(await lab.deliver(name, T0)).toBe('ack');
    expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
    expect(ran).toEqual([]);
  });

  it('an exclusive run holds its lane while its handler runs, and frees it when it ends', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    const name = unique('lane-hold');
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, lease: '30s', overlap: 'forbid-skip' }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async () => (running(), await held) } }, T0 + 10);
    await lab.create(name, T0);
    const delivered = lab.deliver(name, T0);
    await started;
    expect(await box.ledger.lanes.read(name, 0)).toMatchObject({ holderSlot: T0 });
    release();
    expect(await delivered).toBe('ack');
    expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
  });

  it('forbid-skip hands nothing on when its run ends: a due run after it is left to its own message', async () => {
    const { name, lab, ran } = setup('forbid-skip');
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    expect(await lab.deliver(name, T0 - MIN)).toBe('ack');
    expect(ran).toEqual([T0 - MIN]);
    expect(lab.queue.sent).toEqual([]);
    expect(await lab.status(name, T0)).toBe(RunStatus.READY);
  });

  it.each([
    ['forbid-queue', 'the next due run', [RunStatus.READY, RunStatus.READY], 0],
    ['coalesce', 'the newest due run, superseding the one in between', [RunStatus.SUPERSEDED, RunStatus.READY], 1],
    ['replace', 'the newest due run, superseding the one in between', [RunStatus.SUPERSEDED, RunStatus.READY], 1],
  ] as const)('%s: a run that ends dispatches %s', async (overlap, _what, after, superseded) => {
    const { name, lab, during } = setup(overlap);
    await lab.create(name, T0 - 2 * MIN);
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    // The oldest run is delivered while it alone is due; two more fall due while it runs. Under
    // forbid-queue and coalesce the newest one's message arrives meanwhile: it waits behind it and
    // flags the lane (the other's message is still on its way, or lost). Replace looks ahead
    // unasked (a newer run there would have replaced the holder).
    lab.clock.now = T0 - 2 * MIN + 10;
    during.run = async () => {
      lab.clock.now = T0 + 10;
      if (overlap !== 'replace') expect(await lab.deliver(name, T0)).toBe('ack');
    };
    expect(await lab.deliver(name, T0 - 2 * MIN)).toBe('ack');
    expect(await lab.status(name, T0 - 2 * MIN)).toBe(RunStatus.SUCCEEDED);
    const next = overlap === 'forbid-queue' ? T0 - MIN : T0;
    expect(lab.queue.sent.map((s) => ({ slot: s.message.slot, delaySeconds: s.delaySeconds }))).toEqual([{ slot: next, delaySeconds: 0 }]);
    expect([await lab.status(name, T0 - MIN), await lab.status(name, T0)]).toEqual(after);
    expect(lab.metrics.get('RunsSuperseded')).toBe(superseded);
  });

  it('a waiting run is handed on only at its fire time (within the clock allowance), in a message delayed to its start; before, its own message brings it', async () => {
    const START_LEAD = 5_000;
    const { name, lab, during } = setup('forbid-queue', { startLead: START_LEAD });
    await lab.create(name, T0 - MIN);
    await box.ledger.createRun({ job: name, slot: T0, shard: 0, shards: 1, status: RunStatus.READY, fireAt: T0 + 30_000 }, lab.clock.now);
    lab.clock.now = T0 + 1_000;
    // A copy of the jittered run's message comes early (a redrive): it waits behind the holder.
    during.run = async () => void expect(await lab.deliver(name, T0)).toBe('ack');
    expect(await lab.deliver(name, T0 - MIN)).toBe('ack');
    // The holder ended 29 s before the fire time: nothing is sent (the planned message comes at
    // fire time − start lead).
    expect(lab.queue.sent).toEqual([]);
    // A holder ending within the clock allowance of the fire time sends it, delayed to its start.
    await lab.create(name, T0 - 2 * MIN);
    lab.clock.now = T0 + 28_500;
    expect(await lab.deliver(name, T0 - 2 * MIN)).toBe('ack');
    expect(lab.queue.sent.map((s) => ({ slot: s.message.slot, delaySeconds: s.delaySeconds }))).toEqual([{ slot: T0, delaySeconds: 0 }]);
  });

  it("replace: a newer due run ends the lane's older RUNNING holder through the fence, takes the lane and runs", async () => {
    const { name, lab, ran } = setup('replace');
    // The older run holds the lane and runs on another worker.
    await olderHolderRunning(lab, name);
    expect(await lab.deliver(name, T0)).toBe('ack');
    expect(await lab.run(name, T0 - MIN)).toMatchObject({ status: RunStatus.SUPERSEDED, lastError: { code: 'REPLACED' } });
    expect(await lab.status(name, T0)).toBe(RunStatus.SUCCEEDED);
    expect(ran).toEqual([T0]);
    expect(lab.metrics.get('RunsReplaced')).toBe(1);
    expect(lab.metrics.get('RunsSuperseded')).toBe(1);
    expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
  });

  it('coalesce: a manual run with --overlap parallel takes no lane: it supersedes no scheduled run, and the hand-on skips it (the newest scheduled due run is dispatched, nothing superseded)', async () => {
    // Before: the parallel manual run, READY, newer and due, superseded the lane's run before its
    // claim; and at a hand-on it was taken for the lane's newest due run: dispatched as the lane's
    // next, the scheduled runs before it superseded although nothing ran in their place.
    const { name, lab, ran, during } = setup('coalesce');
    lab.clock.now = T0 - MIN + 10;
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    const [manual] = await triggerRun(
      { ledger: box.ledger, queue: lab.queue, clock: lab.clock.read },
      { job: lab.job(name), overlap: 'parallel', by: 'op' },
    );
    lab.queue.take();
    // While the lane's run runs, the next scheduled slot comes due; its message finds the lane held.
    during.run = async () => {
      lab.clock.now = T0 + 10;
      expect(await lab.deliver(name, T0)).toBe('ack');
    };
    expect(await lab.deliver(name, T0 - MIN)).toBe('ack');
    expect(ran).toEqual([T0 - MIN]);
    expect(lab.queue.take().map((s) => s.message.slot)).toEqual([T0]);
    expect({ scheduled: await lab.status(name, T0), manual: await lab.status(name, manual!.slot) }).toEqual({
      scheduled: RunStatus.READY,
      manual: RunStatus.READY,
    });
  });

  it('replace: a newer run whose replacement loses a race with the older holder (it ended between the read and the write) reads the lane again in the same delivery and runs, instead of giving way to it or waiting for its message to come back', async () => {
    // Before: claimInLane reported the lane blocked by the older holder and onBlocked superseded
    // the newer run (replace gives way to a newer holder), so the newest slot ended SUPERSEDED by
    // an older run that had already ended: nobody ran it.
    const { name, lab, ran } = setup('replace');
    const claim = await olderHolderRunning(lab, name);
    const racing = faultyClient(box.endpoints.dynamoEndpoint, []);
    racing.dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'UpdateItemCommand' && JSON.stringify(args.input).includes('REPLACED')) {
          // The older holder finishes just before the newer run's replacement lands.
          if (!(await box.ledger.complete(claim.run, { status: RunStatus.SUCCEEDED }, lab.clock.now)).ok)
            throw new Error('setup: complete refused');
        }
        return next(args);
      },
      { step: 'initialize', name: 'holder-finishes' },
    );
    try {
      // In the same delivery it reads the lane again: the holder has ended, it takes the lane over and runs.
      expect(await lab.deliver(name, T0, 'w', { ledger: new Ledger(racing.doc, { tableName: box.endpoints.ledgerTable }) })).toBe('ack');
    } finally {
      racing.destroy();
    }
    expect({ older: await lab.status(name, T0 - MIN), newer: await lab.status(name, T0) }).toEqual({
      older: RunStatus.SUCCEEDED,
      newer: RunStatus.SUCCEEDED,
    });
    expect(ran).toEqual([T0]);
  });

  it('replace: the older holder moves to RETRY with a 4-minute backoff just before the replace: the newer due run supersedes it and takes the lane in the same delivery (it is neither left waiting nor hidden for the visibility timeout)', async () => {
    const { name, lab, ran } = setup('replace');
    const claim = await olderHolderRunning(lab, name);
    const racing = faultyClient(box.endpoints.dynamoEndpoint, []);
    let raced = false;
    racing.dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (!raced && context.commandName === 'UpdateItemCommand' && JSON.stringify(args.input).includes('REPLACED')) {
          raced = true;
          const retry = {
            status: RunStatus.RETRY,
            nextAttemptAt: lab.clock.now + 4 * MIN,
            lastError: { code: 'BUSY', message: 'downstream busy' },
          } as const;
          if (!(await box.ledger.complete(claim.run, retry, lab.clock.now)).ok) throw new Error('setup: complete refused');
        }
        return next(args);
      },
      { step: 'initialize', name: 'holder-retries' },
    );
    try {
      expect(await lab.deliver(name, T0, 'w', { ledger: new Ledger(racing.doc, { tableName: box.endpoints.ledgerTable }) })).toBe('ack');
    } finally {
      racing.destroy();
    }
    expect(raced).toBe(true);
    expect({ older: await lab.status(name, T0 - MIN), newer: await lab.status(name, T0) }).toEqual({
      older: RunStatus.SUPERSEDED,
      newer: RunStatus.SUCCEEDED,
    });
    expect(ran).toEqual([T0]);
  });

  it('replace: an older run that finds a newer run holding the lane is superseded, the holder runs on', async () => {
    const { name, lab, ran } = setup('replace');
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    await box.ledger.lanes.acquire(name, { slot: T0, shard: 0 }, lab.clock.now);
    const claim = await box.ledger.claim(lab.id(name, T0), 'new-worker', lab.clock.now, 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error('setup');
    // Its clock before the newer slot: it does not see the newer run as due, so it reaches the lane.
    expect(await lab.deliver(name, T0 - MIN, 'w', { clock: () => T0 - MIN + 10 })).toBe('ack');
    expect(await lab.status(name, T0 - MIN)).toBe(RunStatus.SUPERSEDED);
    expect(await lab.run(name, T0)).toMatchObject({ status: RunStatus.RUNNING, owner: 'new-worker', fencingToken: claim.run.fencingToken });
    expect(ran).toEqual([]);
    expect(lab.metrics.get('RunsReplaced')).toBe(0);
  });
});
