/**
 * The outbox: payments settled by the example job publish one PaymentSettled event each, through
 * DynamoDB Streams on DynamoDB Local, under stable event keys; replaying the stream (a relay
 * retry) yields the same keys, never new ones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadJobs } from '../../shared/config.js';
import { handlers } from '../../shared/handlers/index.js';
import { isTerminal } from '../../shared/core/vocabulary.js';
import { outboxEventsFrom, outboxPut, type OutboxEvent } from '../../shared/core/outbox.js';
import { LocalRuntime, seedPayments } from '../../tools/local-runtime.js';
import { LocalOutboxRelay } from '../../tools/local-outbox-relay.js';
import { waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

describe('outbox relay', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('publishes one event per settled payment, and a relay replay republishes the same keys only', async () => {
    const jobs = loadJobs().filter((job) => job.name === 'payments-reconcile');
    // Shifted clock: the next minute slot is 3 s away.
    const realStart = Date.now();
    const offset = Math.ceil((realStart + 3_000) / 60_000) * 60_000 - 3_000 - realStart;
    const runtime = new LocalRuntime({ endpoints: box.endpoints, jobs, handlers, clock: () => Date.now() + offset, planner: { lookaheadMs: 10_000 } });
    await seedPayments(runtime.clients, box.endpoints.paymentsTable, 8);
    await runtime.startRelay();
    runtime.start();
    await runtime.tick();
    const runs = await waitFor(async () => {
      const all = await box.ledger.listRuns('payments-reconcile');
      return all.length > 0 && all.every((r) => isTerminal(r.status)) ? all : undefined;
    }, 20_000, 'the payments run');
    expect(runs.map((r) => [r.status, r.lastError])).toEqual([['SUCCEEDED', undefined]]);
    await waitFor(async () => (runtime.outboxEvents.length >= 5 ? true : undefined), 10_000, 'outbox events');
    await runtime.stop();

    const keys = runtime.outboxEvents.map((e) => e.eventKey);
    expect(keys).toHaveLength(5);
    expect(new Set(keys).size).toBe(5);
    expect(runtime.outboxEvents.every((e) => e.detailType === 'PaymentSettled')).toBe(true);

    // A relay that starts over from the beginning of the stream: the same keys, nothing new.
    const replayed: OutboxEvent[] = [];
    const relay = new LocalOutboxRelay(box.clients.dynamo, box.endpoints.dynamoEndpoint, box.endpoints.ledgerTable, (e) => void replayed.push(e));
    await relay.start('start');
    await relay.stop();
    expect(new Set(replayed.map((e) => e.eventKey))).toEqual(new Set(keys));
  });

  it('a MODIFY of an outbox row (a re-execution rewriting the same key) is not published again', () => {
    const put = outboxPut({ table: 't', job: 'j', runKey: 'j@2026-01-01T00:00:00.000Z', name: 'p-1', detailType: 'X', detail: {} });
    const image = put.item;
    const events = outboxEventsFrom([
      { eventName: 'INSERT', newImage: image },
      { eventName: 'MODIFY', newImage: { ...image, detail: { again: true } } },
      { eventName: 'INSERT', newImage: { pk: 'JOB#j', sk: 'CURSOR' } },
    ]);
    expect(events.map((e) => e.event.eventKey)).toEqual(['j@2026-01-01T00:00:00.000Z#p-1']);
  });
});
