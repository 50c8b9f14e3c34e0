/**
 * Shards: a slot of a job with `shards: N` becomes N runs with their own leases, retries and
 * outcomes, and each handler learns which shard it is.
 */
import { describe, expect, it } from 'vitest';
import { isTerminal, RunStatus } from '../../shared/core/vocabulary.js';
import { PermanentError, type JobHandler } from '../../shared/handler-api.js';
import { LocalRuntime } from '../../tools/local-runtime.js';
import { testJobs, waitFor } from '../support/helpers.js';
import { sandbox } from '../support/stack.js';

describe('shards', () => {
  it('each slot becomes N runs with independent outcomes; the handler gets ctx.shard and ctx.shards', async () => {
    const box = await sandbox();
    const seen: { slot: number; shard: number; shards: number; runKey: string; token: number }[] = [];
    const sharded: JobHandler = {
      async run(ctx) {
        seen.push({ slot: ctx.slot, shard: ctx.shard, shards: ctx.shards, runKey: ctx.runKey, token: ctx.fencingToken });
        // Shard 2 fails for good: its siblings must not care.
        if (ctx.shard === 2) throw new PermanentError('shard 2 is broken');
      },
    };
    const jobs = testJobs([{ name: 'sharded', schedule: '*/2 * * * * *', handler: 'h', shards: 3, startLead: '1s' }], ['h']);
    const runtime = new LocalRuntime({
      endpoints: box.endpoints,
      jobs,
      handlers: { h: sharded },
      workers: 2,
      planner: { lookaheadMs: 4_000 },
    });
    runtime.start();
    await runtime.tick();
    const runs = await waitFor(
      async () => {
        const all = await box.ledger.listRuns('sharded', { ascending: true });
        return all.length > 0 && all.every((r) => isTerminal(r.status)) ? all : undefined;
      },
      20_000,
      'every shard run to finish',
    );
    await runtime.stop();
    box.destroy();

    const slots = [...new Set(runs.map((r) => r.slot))];
    expect(slots.length).toBeGreaterThanOrEqual(2);
    expect(runs).toHaveLength(slots.length * 3);
    for (const slot of slots) {
      const ofSlot = runs.filter((r) => r.slot === slot);
      expect(ofSlot.map((r) => r.shard)).toEqual([0, 1, 2]);
      expect(ofSlot.map((r) => r.status)).toEqual([RunStatus.SUCCEEDED, RunStatus.SUCCEEDED, RunStatus.DEAD]);
      expect(ofSlot.map((r) => r.runKey)).toEqual([0, 1, 2].map((s) => `sharded@${new Date(slot).toISOString()}#${s}`));
    }
    expect(seen.every((s) => s.shards === 3 && s.runKey.endsWith(`#${s.shard}`))).toBe(true);
    expect(seen).toHaveLength(runs.length);
    expect(runtime.violations).toEqual([]);
  });
});
