/**
 * End to end on the local stack: the example jobs from shared/jobs.ts through planner → ledger →
 * SQS → pollers → worker. The runtime's clock is shifted so a minute boundary comes up within
 * seconds; SQS delays are relative, so the whole pipeline runs on that shifted time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configuredJobDefinitions, loadJobs } from '../../shared/config.js';
import { handlers } from '../../shared/handlers/index.js';
import { CURSOR_KEY, PAYMENTS_PK } from '../../shared/handlers/payments-reconcile.js';
import { CACHE_KEY } from '../../shared/handlers/cache-refresh.js';
import { isTerminal, RunStatus } from '../../shared/core/vocabulary.js';
import { LocalRuntime, seedPayments } from '../../tools/local-runtime.js';
import { DynamoItemReader } from '../../shared/store/item-reader.js';
import { waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

describe('end to end with the example jobs', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('every slot of the example jobs over several ticks reaches SUCCEEDED exactly once', async () => {
    const jobs = loadJobs(configuredJobDefinitions({ exampleJobs: true }));
    const realStart = Date.now();
    // Shifted time: 4 s before the next whole minute.
    const shiftedStart = Math.ceil((realStart + 4_000) / 60_000) * 60_000 - 4_000;
    const offset = shiftedStart - realStart;
    const clock = () => Date.now() + offset;
    // A short lookahead keeps the test short: every planned run is due within ~15 s of the last tick.
    const runtime = new LocalRuntime({ endpoints: box.endpoints, jobs, handlers, workers: 2, clock, planner: { lookaheadMs: 15_000 } });
    await seedPayments(runtime.clients, box.endpoints.paymentsTable, 12);

    runtime.start();
    await runtime.tick();
    await new Promise((r) => setTimeout(r, 10_000));
    await runtime.tick();
    const wanted = async () => {
      const all = [...(await box.ledger.listRuns('payments-reconcile')), ...(await box.ledger.listRuns('cache-refresh'))];
      return all.every((r) => isTerminal(r.status)) ? all : undefined;
    };
    const runs = await waitFor(wanted, 120_000, 'every planned run to finish');
    await runtime.stop();

    const bySlot = (job: string) =>
      runs
        .filter((r) => r.job === job)
        .map((r) => r.slot)
        .sort();
    // Ticks at t and t + 10 s with 15 s lookahead: cache-refresh slots over 25 s, payments at the minute.
    expect(bySlot('cache-refresh').length).toBeGreaterThanOrEqual(2);
    expect(bySlot('payments-reconcile')).toContain(shiftedStart + 4_000);
    expect(runs.every((r) => r.status === RunStatus.SUCCEEDED)).toBe(true);
    // Exactly once: one accepted SUCCEEDED per run key, and no invariant broken.
    expect(runtime.violations).toEqual([]);
    const successes = runtime.events
      .filter((e) => e.type === 'outcome' && e.accepted && e.status === RunStatus.SUCCEEDED)
      .map((e) => e.runKey);
    expect(new Set(successes).size).toBe(successes.length);
    expect(new Set(successes)).toEqual(new Set(runs.map((r) => r.runKey)));

    // The business effect: 5 payments settled by the one minute run, each once, cursor moved.
    const reader = new DynamoItemReader(box.clients.doc);
    const payments = await reader.query(box.endpoints.paymentsTable, PAYMENTS_PK);
    const settled = payments.filter((p) => p.status === 'SETTLED');
    expect(settled.length).toBe(5 * bySlot('payments-reconcile').length);
    expect((await reader.get(box.endpoints.ledgerTable, CURSOR_KEY))?.position).toBe(settled.at(-1)?.sk);
    const cache = await reader.get(box.endpoints.ledgerTable, CACHE_KEY);
    expect(cache?.slot).toBe(Math.max(...bySlot('cache-refresh')));
  });
});
