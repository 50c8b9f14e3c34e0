/**
 * Bounded parallelism and the timer port (shared/core/concurrency.ts). The hazards: more calls in
 * flight than the bound allows (a throttled table, a starved Lambda), results out of order (a
 * batch read mapped to the wrong runs), a sleep that outlives the attempt that aborted it.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mapBounded, sleep, type Timers } from '../../shared/core/concurrency.js';

describe('mapBounded', () => {
  it('keeps the input order and never has more than `limit` calls in flight, whatever order they finish in', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat({ max: 5 }), { maxLength: 20 }), fc.integer({ min: -1, max: 6 }), async (delays, limit) => {
        let inFlight = 0;
        let most = 0;
        const results = await mapBounded(delays, limit, async (delay, index) => {
          inFlight++;
          most = Math.max(most, inFlight);
          for (let i = 0; i <= delay; i++) await Promise.resolve();
          inFlight--;
          return `${index}:${delay}`;
        });
        expect(results).toEqual(delays.map((d, i) => `${i}:${d}`));
        expect(most).toBeLessThanOrEqual(Math.max(1, limit));
        // Up to the bound, the calls do run side by side.
        if (delays.length > 0) expect(most).toBe(Math.min(Math.max(1, limit), delays.length));
      }),
    );
  });

  it('a failing call fails the whole map', async () => {
    await expect(mapBounded([1, 2, 3], 2, async (n) => (n === 2 ? Promise.reject(new Error('no')) : n))).rejects.toThrow('no');
  });
});

/** A timer wheel the test moves by hand. */
function manualTimers() {
  let now = 0;
  let id = 0;
  const pending = new Map<number, { at: number; fn: () => void }>();
  const timers: Timers = {
    setTimeout: (fn, ms) => (pending.set(++id, { at: now + ms, fn }), id),
    clearTimeout: (handle) => void pending.delete(handle as number),
    setInterval: () => {
      throw new Error('not used');
    },
    clearInterval: () => undefined,
  };
  const advance = (ms: number) => {
    now += ms;
    for (const [key, t] of [...pending]) if (t.at <= now) pending.delete(key), t.fn();
  };
  return { timers, advance, pending };
}

describe('sleep', () => {
  it('resolves once its time has passed, not before; a negative time is no time', async () => {
    const { timers, advance } = manualTimers();
    let done = false;
    const slept = sleep(1_000, undefined, timers).then(() => (done = true));
    advance(999);
    await Promise.resolve();
    expect(done).toBe(false);
    advance(1);
    await slept;
    expect(done).toBe(true);
    const { timers: t2, advance: a2 } = manualTimers();
    const negative = sleep(-5, undefined, t2);
    a2(0);
    await expect(negative).resolves.toBeUndefined();
  });

  it("an abort ends it at once with the signal's reason and clears its timer; an aborted signal never starts one", async () => {
    const { timers, pending } = manualTimers();
    const controller = new AbortController();
    const slept = sleep(60_000, controller.signal, timers);
    expect(pending.size).toBe(1);
    const reason = new Error('attempt ended');
    controller.abort(reason);
    await expect(slept).rejects.toBe(reason);
    expect(pending.size).toBe(0);
    await expect(sleep(1, controller.signal, timers)).rejects.toBe(reason);
    expect(pending.size).toBe(0);
  });

  it('a sleep that ended on time no longer listens to the signal', async () => {
    const { timers, advance } = manualTimers();
    const controller = new AbortController();
    const slept = sleep(10, controller.signal, timers);
    advance(10);
    await slept;
    // Aborting afterwards must not reach the finished sleep (no late rejection, nothing pending).
    const listeners: string[] = [];
    controller.signal.addEventListener('abort', () => listeners.push('other'));
    controller.abort(new Error('late'));
    expect(listeners).toEqual(['other']);
  });
});
