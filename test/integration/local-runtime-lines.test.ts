/**
 * What `npm start` reports, from the local runtime against the local stack with real workers:
 * an outcome carries the error its attempt recorded; runs that end without an attempt (SKIPPED by
 * forbid-skip or a misfire, SUPERSEDED) are reported; so are takeovers and fenced-out writes; and
 * the trigger-lag figure counts first attempts of on-time slots only, so one backfilled run from
 * an hour ago does not read as a p99 of an hour (it is a late start, reported apart).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageFor } from '../../shared/core/run-message.js';
import { isTerminal, RunOrigin, RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';
import { PermanentError, type JobHandler } from '../../shared/handler-api.js';
import { Ledger } from '../../shared/store/ledger.js';
import {
  LocalRuntime,
  type FencedOutLine,
  type RunOutcomeLine,
  type RunSettledLine,
  type TakeoverLine,
} from '../../tools/local-runtime.js';
import { testJobs, waitFor } from '../support/helpers.js';
import { startedRuntime } from '../support/local-runtime.js';
import type { Sandbox } from '../support/stack.js';

const SEC = 1_000;
const MINUTE = 60_000;

const handlers: Record<string, JobHandler> = {
  noop: { run: async () => undefined },
  boom: {
    run: async () => {
      throw new PermanentError('ledger row 42 is missing', { code: 'MISSING_ROW' });
    },
  },
  cache: {
    run: async (ctx) => {
      await ctx.fenced.put({ table: ctx.tables.ledger, item: { pk: 'CACHE#lines', sk: 'CURRENT', slot: ctx.slot } });
    },
  },
};

const JOBS = testJobs(
  [
    { name: 'fails', schedule: '* * * * *', handler: 'boom', retry: { maxAttempts: 1 } },
    { name: 'fenced', schedule: '* * * * *', handler: 'cache' },
    { name: 'lonely', schedule: '* * * * *', handler: 'noop', overlap: 'forbid-skip' },
    { name: 'ghost', schedule: '* * * * *', handler: 'noop', lease: '5s' },
    { name: 'ontime', schedule: '* * * * *', handler: 'noop' },
    { name: 'late', schedule: '* * * * *', handler: 'noop' },
  ],
  Object.keys(handlers),
);

describe('npm start: what the local runtime reports', () => {
  let box: Sandbox;
  let runtime: LocalRuntime;
  const outcomes: RunOutcomeLine[] = [];
  const settled: RunSettledLine[] = [];
  const takeovers: TakeoverLine[] = [];
  const fenced: FencedOutLine[] = [];
  // Slots just before now are on time; the backfilled one is an hour old.
  const base = Math.floor(Date.now() / SEC) * SEC - 5 * SEC;

  const create = async (job: string, slot: number, origin?: RunOrigin): Promise<Run> => {
    const r = await box.ledger.createRun(
      { job, slot, shard: 0, shards: 1, status: RunStatus.READY, ...(origin ? { origin } : {}) },
      Date.now(),
    );
    if (!r.created) throw new Error('exists');
    return r.run;
  };
  const send = (run: Run) => box.queue.send([{ message: messageFor(run), delaySeconds: 0 }]);
  const ended = (job: string, slot: number) =>
    waitFor(
      async () => {
        const run = await box.ledger.getRun({ job, slot, shard: 0 });
        return run && isTerminal(run.status) ? run : undefined;
      },
      60_000,
      `${job}@${new Date(slot).toISOString()} to end`,
    );

  beforeAll(async () => {
    ({ box, runtime } = await startedRuntime({
      jobs: JOBS,
      handlers,
      workers: 2,
      onOutcome: (o) => outcomes.push(o),
      onSettled: (s) => settled.push(s),
      onTakeover: (t) => takeovers.push(t),
      onFencedOut: (f) => fenced.push(f),
    }));

    // A failing run; a takeover of a run whose worker vanished; an on-time run; a backfilled one.
    await send(await create('fails', base));
    const ghost = await create('ghost', base);
    const stale = await box.ledger.claim({ job: 'ghost', slot: base, shard: 0 }, 'vanished-worker', Date.now() - 10 * MINUTE, 1_000, 2_000);
    expect(stale.kind).toBe('claimed');
    await send(ghost);
    await send(await create('ontime', base));
    await send(await create('late', base - 60 * MINUTE, RunOrigin.BACKFILL));
    // forbid-skip: the older run holds the lane and is still open, so the newer one is skipped.
    await create('lonely', base - MINUTE);
    await box.ledger.lanes.acquire('lonely', { slot: base - MINUTE, shard: 0 }, Date.now());
    await send(await create('lonely', base));
    // A newer slot writes the cache item first; the older slot's write is then fenced out.
    const older = await create('fenced', base - MINUTE);
    await send(await create('fenced', base));
    await ended('fenced', base);
    await send(older);

    for (const [job, slot] of [
      ['fails', base],
      ['ghost', base],
      ['ontime', base],
      ['late', base - 60 * MINUTE],
      ['lonely', base],
      ['fenced', base - MINUTE],
    ] as const)
      await ended(job, slot);
    await waitFor(async () => (outcomes.length >= 6 && settled.length >= 1 ? true : undefined), 120_000, 'every line reported');
  }, 600_000);
  afterAll(async () => {
    await runtime.stop();
    box.destroy();
  });

  it('an outcome line carries the code and message of the error its attempt recorded', () => {
    const dead = outcomes.find((o) => o.job === 'fails')!;
    expect(dead).toMatchObject({ status: 'DEAD', attempt: 1, error: { code: 'MISSING_ROW', message: 'ledger row 42 is missing' } });
    expect(outcomes.find((o) => o.job === 'ontime')).toMatchObject({ status: 'SUCCEEDED' });
    expect(outcomes.find((o) => o.job === 'ontime')!.error).toBeUndefined();
  });

  it('a run ended without an attempt is reported with its reason (forbid-skip)', () => {
    expect(settled).toContainEqual({
      job: 'lonely',
      slot: base,
      runKey: runKeyOf('lonely', base, 0, 1),
      status: 'SKIPPED',
      reason: `skipped: run of ${new Date(base - MINUTE).toISOString()} still open (forbid-skip)`,
    });
    expect(runtime.summary().runsSkipped).toBe(1);
  });

  it('a takeover names the new and the previous owner; a fenced-out write its resource, and its run ends SUPERSEDED with the reason', () => {
    expect(takeovers).toEqual([
      expect.objectContaining({
        runKey: runKeyOf('ghost', base, 0, 1),
        owner: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      }),
    ]);
    expect(fenced).toEqual([
      expect.objectContaining({
        runKey: runKeyOf('fenced', base - MINUTE, 0, 1),
        resource: `${box.endpoints.ledgerTable}/CACHE#lines/CURRENT`,
      }),
    ]);
    expect(outcomes.find((o) => o.runKey === runKeyOf('fenced', base - MINUTE, 0, 1))).toMatchObject({
      status: 'SUPERSEDED',
      error: { code: 'SUPERSEDED_BY_NEWER_SLOT' },
    });
    const summary = runtime.summary();
    expect(summary).toMatchObject({ takeovers: 1, fencedOutWrites: 1, runsSuperseded: 1 });
  });

  it('trigger lag counts first attempts of on-time slots only: the hour-old backfilled run is a late start, not a p99 of an hour', () => {
    const summary = runtime.summary();
    // fails, ontime and the two fenced runs started on their first claim of a planned run; the
    // takeover and the backfill did not count.
    expect(summary.triggerLagSamples).toBe(4);
    expect(summary.triggerLagP99Ms).toBeLessThan(30 * MINUTE);
    expect(summary.lateStarts).toBe(1);
    expect(summary.lateStartLagP99Ms).toBeGreaterThanOrEqual(60 * MINUTE);
  });

  it('a SKIPPED run the planner creates (misfire skip) is reported once, when it is created', async () => {
    const seen: RunSettledLine['status'][] = [];
    const reasons: (string | undefined)[] = [];
    const ledger = new Ledger(box.clients.doc, {
      tableName: box.endpoints.ledgerTable,
      observer: { completed: () => undefined, settled: (_run, status, reason) => (seen.push(status), reasons.push(reason)) },
    });
    const run = {
      job: 'ontime',
      slot: base - 30 * MINUTE,
      shard: 0,
      shards: 1,
      status: RunStatus.SKIPPED,
      reason: 'misfired (policy skip)',
    } as const;
    expect((await ledger.createRun(run, Date.now())).created).toBe(true);
    expect((await ledger.createRun(run, Date.now())).created).toBe(false);
    expect(seen).toEqual(['SKIPPED']);
    expect(reasons).toEqual(['misfired (policy skip)']);
  });
});
