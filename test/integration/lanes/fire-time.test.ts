/**
 * Every overlap decision is taken at the run's fire time, not when its message arrives (SQS hands
 * a planned message over `startLead` early): DESIGN §8 "Lanes".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL_TIMERS, type Timers } from '../../../shared/core/concurrency.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { sandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;

describe('lane decisions at the fire time', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('forbid-skip with startLead 1500 ms: a run whose message comes 1.2 s before its slot, while the previous run still holds the lane and ends 0.5 s before the slot, runs (it is not SKIPPED for a holder gone by its fire time)', async () => {
    const name = uniqueName('fs-lead');
    const slot = Math.floor(Date.now() / MIN) * MIN + 5 * MIN;
    const ran: number[] = [];
    const jobs = testJobs(
      [{ name, schedule: '* * * * *', handler: 'h', startLead: '1500ms', overlap: 'forbid-skip', lease: '30s' }],
      ['h'],
    );
    const lab = new Lab(box, jobs, { h: { run: async (ctx) => void ran.push(ctx.slot) } }, slot - 1_200);
    await lab.create(name, slot - MIN);
    await lab.create(name, slot);
    // The previous run holds the lane (it runs on another worker).
    expect(await box.ledger.lanes.acquire(name, { slot: slot - MIN, shard: 0 }, lab.clock.now)).toEqual({ kind: 'acquired' });
    const claim = await box.ledger.claim(lab.id(name, slot - MIN), 'elsewhere', lab.clock.now, 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error('setup');
    // The worker's first wait is the one until the fire time: while it lasts, the previous run ends
    // (0.5 s before the slot) and the clock reaches the slot. Every later timer is a real one.
    let waited = 0;
    const timers: Timers = {
      ...REAL_TIMERS,
      setTimeout: (fn, ms) => {
        if (waited++ > 0) return REAL_TIMERS.setTimeout(fn, ms);
        void (async () => {
          lab.clock.now = slot - 500;
          expect((await box.ledger.complete(claim.run, { status: RunStatus.SUCCEEDED }, lab.clock.now)).ok).toBe(true);
          expect((await box.ledger.lanes.release(name, { slot: slot - MIN, shard: 0 })).freed).toBe(true);
          lab.clock.now = slot;
          fn();
        })();
        return 0;
      },
    };
    expect(await lab.deliver(name, slot, 'w', { timers })).toBe('ack');
    expect(waited).toBeGreaterThan(0);
    expect(await lab.status(name, slot)).toBe(RunStatus.SUCCEEDED);
    expect(ran).toEqual([slot]);
  });
});
