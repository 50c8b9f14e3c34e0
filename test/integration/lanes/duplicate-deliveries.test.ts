/**
 * Review (adversarial): two copies of one run's message in flight at once (SQS delivers a message
 * twice, even concurrently). Both copies take the free lane before either claims: the first gets
 * `acquired`, the second `held` (already ours). The `held` copy claims and runs; the `acquired`
 * copy's claim is refused as `leased`, and claimInLane takes `acquired` + `leased` for "another
 * copy is giving the lane way" and releases the lane while the other copy's handler runs. The
 * lane is then free under a live holder: the next run takes it and runs alongside.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { gatedLedger, isClaim, laneLab, OverlapWatch } from '../../support/lanes.js';
import { sandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('review: duplicate copies of one run', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it.each(['forbid-skip', 'coalesce'] as const)(
    '%s: two copies of one message take the free lane before either claims; the copy whose claim is refused (leased) must not free the lane under the copy that runs: the next run must not run alongside it',
    async (overlap) => {
      const name = uniqueName(`review-dup-${overlap}`);
      const W = T0 - MIN;
      const X = T0;
      const watch = new OverlapWatch();
      const { ran, during } = watch;
      const lab = laneLab(
        box,
        name,
        overlap,
        watch.handler(async (ctx) => {
          if (ctx.slot === W) await during.run?.();
        }),
        W + 10,
      );
      await lab.create(name, W);
      await lab.create(name, X);

      // Copy A: its claim of W waits until copy B has claimed W and its handler is running.
      const paused = gatedLedger(box, isClaim);
      try {
        const copyA = lab.deliver(name, W, 'copy-a', { ledger: paused.ledger });
        await paused.reached; // copy A has taken the free lane ('acquired') and is about to claim
        during.run = async () => {
          during.run = undefined;
          // Copy B runs W's handler. Copy A now claims: refused (leased by copy B).
          paused.open();
          expect(await copyA).toBe('retry');
          // W is still running (copy B). The next run's message arrives at its fire time.
          lab.clock.now = X + 10;
          await lab.deliver(name, X, 'next-worker');
        };
        // Copy B: acquire finds the lane ours already ('held'), claims, runs.
        expect(await lab.deliver(name, W, 'copy-b')).toBe('ack');
      } finally {
        paused.destroy();
      }
      const { maxActive } = watch;
      expect(ran[0]).toBe(W);
      // One live holder per lane: X must not have run while W's handler was running.
      expect({ maxActive, ran }).toEqual({ maxActive: 1, ran: [W] });
      expect(await lab.status(name, X)).toBe(overlap === 'forbid-skip' ? RunStatus.SKIPPED : RunStatus.READY);
    },
  );

  it('forbid-queue: the same lane freed under the running copy lets a run revived meanwhile (ops retry, backfill: older, so no order check makes it wait) run alongside it', async () => {
    const name = uniqueName('review-dup-fq');
    const W = T0 - MIN;
    const O = T0 - 10 * MIN;
    const watch = new OverlapWatch();
    const { ran, during } = watch;
    const lab = laneLab(
      box,
      name,
      'forbid-queue',
      watch.handler(async (ctx) => {
        if (ctx.slot === W) await during.run?.();
      }),
      W + 10,
    );
    await lab.create(name, W);
    const paused = gatedLedger(box, isClaim);
    try {
      const copyA = lab.deliver(name, W, 'copy-a', { ledger: paused.ledger });
      await paused.reached;
      during.run = async () => {
        during.run = undefined;
        paused.open();
        expect(await copyA).toBe('retry');
        // While W runs (copy B), an older slot is created (backfill; ops retry revives likewise)
        // and its message arrives.
        await lab.create(name, O);
        await lab.deliver(name, O, 'other-worker');
      };
      expect(await lab.deliver(name, W, 'copy-b')).toBe('ack');
    } finally {
      paused.destroy();
    }
    const { maxActive } = watch;
    expect({ maxActive, first: ran[0] }).toEqual({ maxActive: 1, first: W });
  });
});
