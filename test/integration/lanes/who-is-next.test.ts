/**
 * Lane hand-on corners of shared/worker/lanes.ts through the worker, against DynamoDB Local under
 * a manual clock (test/support/lab.ts): a holder whose marker is already gone when it ends still
 * dispatches the next due run; a run older than the holder that appeared behind its back without
 * flagging the marker is not handed the lane ahead of slot order (forbid-queue) nor instead of
 * the newest due run (coalesce); a replace run claimed before that gives way with nothing due
 * after it is acknowledged, not retried; runs superseded in between name the run that superseded them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobInput } from '../../../shared/schedule/job-schema.js';
import { RunStatus, runKeyOf } from '../../../shared/core/vocabulary.js';
import type { JobHandler } from '../../../shared/handler-api.js';
import { testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { sandbox, uniqueName as unique, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('worker lane hand-on', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  function setup(overlap: 'forbid-queue' | 'coalesce' | 'replace', extra: Partial<JobInput> = {}) {
    const name = unique(`handon-${overlap}`);
    const during: { run?: () => Promise<void> } = {};
    const handler: JobHandler = { run: async () => void (await during.run?.()) };
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, lease: '30s', overlap, ...extra }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, T0 + 10);
    return { name, lab, during };
  }

  it('forbid-queue: a holder whose marker is already gone when it ends (it cannot tell who freed it) looks back, finds no older run waiting, and dispatches the next due run', async () => {
    const { name, lab, during } = setup('forbid-queue');
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    during.run = async () => void (await box.ledger.lanes.release(name, { slot: T0 - MIN, shard: 0 }));
    expect(await lab.deliver(name, T0 - MIN)).toBe('ack');
    expect(await lab.status(name, T0 - MIN)).toBe(RunStatus.SUCCEEDED);
    expect(lab.queue.sent.map((s) => s.message.slot)).toEqual([T0]);
  });

  it.each([
    ['forbid-queue', T0 - 3 * MIN],
    ['coalesce', T0],
  ] as const)(
    '%s: a run older than the holder that opened behind its back (a backfill while it ran) gets the lane next under forbid-queue (slot order), never under coalesce (the newest due run goes)',
    async (overlap, next) => {
      const { name, lab, during } = setup(overlap);
      await lab.create(name, T0 - 2 * MIN);
      await lab.create(name, T0 - MIN);
      await lab.create(name, T0);
      lab.clock.now = T0 - 2 * MIN + 10;
      // While the holder runs: an older slot is backfilled (its message not yet delivered), and the
      // newer slots fall due; the newest one's message arrives and waits.
      during.run = async () => {
        await box.ledger.createRun(
          { job: name, slot: T0 - 3 * MIN, shard: 0, shards: 1, status: RunStatus.READY, laneOverlap: overlap },
          lab.clock.now,
        );
        lab.clock.now = T0 + 10;
        expect(await lab.deliver(name, T0)).toBe('ack');
      };
      expect(await lab.deliver(name, T0 - 2 * MIN)).toBe('ack');
      expect(lab.queue.sent.map((s) => s.message.slot)).toEqual([next]);
    },
  );

  it('coalesce: a run superseded in between is closed naming the run that superseded it', async () => {
    const { name, lab, during } = setup('coalesce');
    await lab.create(name, T0 - 2 * MIN);
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    lab.clock.now = T0 - 2 * MIN + 10;
    during.run = async () => {
      lab.clock.now = T0 + 10;
      // The newest slot's message arrives while the holder runs: it waits and flags the lane.
      expect(await lab.deliver(name, T0)).toBe('ack');
    };
    expect(await lab.deliver(name, T0 - 2 * MIN)).toBe('ack');
    expect(await lab.run(name, T0 - MIN)).toMatchObject({
      status: RunStatus.SUPERSEDED,
      lastError: expect.objectContaining({ message: `superseded by ${runKeyOf(name, T0, 0, 1)} (coalesce)` }),
    });
  });

  it('replace: a run claimed before (between attempts) that finds a newer run holding the lane gives way and is acknowledged, with nothing due after it to hand on', async () => {
    const { name, lab } = setup('replace');
    await lab.create(name, T0 - MIN);
    await lab.create(name, T0);
    // The older run ran once on another worker and waits for its retry.
    const first = await box.ledger.claim(lab.id(name, T0 - MIN), 'elsewhere', T0 - MIN + 10, 30_000, 2_000);
    if (first.kind !== 'claimed') throw new Error('setup');
    await box.ledger.complete(
      first.run,
      { status: RunStatus.RETRY, nextAttemptAt: T0 - MIN + 10, lastError: { code: 'X', message: 'x' } },
      T0 - MIN + 10,
    );
    // The newer run holds the lane and runs.
    await box.ledger.lanes.acquire(name, { slot: T0, shard: 0 }, lab.clock.now);
    const holder = await box.ledger.claim(lab.id(name, T0), 'new-worker', lab.clock.now, 30_000, 2_000);
    if (holder.kind !== 'claimed') throw new Error('setup');
    // The older run's retry arrives at a worker whose clock is before the newer slot.
    expect(await lab.deliver(name, T0 - MIN, 'w', { clock: () => T0 - MIN + 20 })).toBe('ack');
    expect(await lab.status(name, T0 - MIN)).toBe(RunStatus.SUPERSEDED);
    expect(await lab.run(name, T0)).toMatchObject({ status: RunStatus.RUNNING, owner: 'new-worker' });
    expect(lab.queue.sent).toEqual([]);
  });
});
