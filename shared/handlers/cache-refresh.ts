/**
 * Example job: every 10 seconds, recompute a cached value and store it with the run's fence, so
 * a worker that paused past its lease can never overwrite a fresher value with a stale one.
 */
import type { JobHandler } from '../handler-api.js';

export const CACHE_KEY = { pk: 'CACHE#exchange-rates', sk: 'CURRENT' } as const;

export const cacheRefresh: JobHandler = {
  async run(ctx) {
    // Deterministic per slot so a re-execution computes the same value.
    const value = { eurUsd: 1 + ((ctx.slot / 10_000) % 100) / 1000 };
    await ctx.fenced.put({
      table: ctx.tables.ledger,
      item: { ...CACHE_KEY, value, slot: ctx.slot, runKey: ctx.runKey },
    });
    return { evidence: { slot: new Date(ctx.slot).toISOString() } };
  },
};
