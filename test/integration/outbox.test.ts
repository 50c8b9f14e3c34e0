/**
 * The outbox: payments settled by the example job publish one PaymentSettled event each, through
 * DynamoDB Streams on DynamoDB Local, under stable event keys; replaying the stream (a relay
 * retry) yields the same keys, never new ones. Rows carry a TTL; their deletion (a REMOVE in the
 * stream, as a TTL expiry is) publishes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryCommand, DeleteCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { configuredJobDefinitions, loadJobs } from '../../shared/config.js';
import { handlers } from '../../shared/handlers/index.js';
import { isTerminal } from '../../shared/core/vocabulary.js';
import {
  OUTBOX_DEFAULT_RETENTION_DAYS,
  OUTBOX_PK_PREFIX,
  outboxEventsFrom,
  outboxExpiresAt,
  outboxPut,
  type OutboxEvent,
  type OutboxRunContext,
} from '../../shared/core/outbox.js';
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
    const jobs = loadJobs(configuredJobDefinitions({ exampleJobs: true })).filter((job) => job.name === 'payments-reconcile');
    // Shifted clock: the next minute slot is 3 s away.
    const realStart = Date.now();
    const offset = Math.ceil((realStart + 3_000) / 60_000) * 60_000 - 3_000 - realStart;
    const runtime = new LocalRuntime({
      endpoints: box.endpoints,
      jobs,
      handlers,
      clock: () => Date.now() + offset,
      planner: { lookaheadMs: 10_000 },
    });
    await seedPayments(runtime.clients, box.endpoints.paymentsTable, 8);
    await runtime.startRelay();
    runtime.start();
    await runtime.tick();
    const runs = await waitFor(
      async () => {
        const all = await box.ledger.listRuns('payments-reconcile');
        return all.length > 0 && all.every((r) => isTerminal(r.status)) ? all : undefined;
      },
      20_000,
      'the payments run',
    );
    expect(runs.map((r) => [r.status, r.lastError])).toEqual([['SUCCEEDED', undefined]]);
    await waitFor(async () => (runtime.outboxEvents.length >= 5 ? true : undefined), 120_000, 'outbox events');
    await runtime.stop();

    const keys = runtime.outboxEvents.map((e) => e.eventKey);
    expect(keys).toHaveLength(5);
    expect(new Set(keys).size).toBe(5);
    expect(runtime.outboxEvents.every((e) => e.detailType === 'PaymentSettled')).toBe(true);

    // A relay that starts over from the beginning of the stream: the same keys, nothing new.
    const replayed: OutboxEvent[] = [];
    const relay = new LocalOutboxRelay(
      box.clients.dynamo,
      box.endpoints.dynamoEndpoint,
      box.endpoints.ledgerTable,
      (e) => void replayed.push(e),
    );
    await relay.start('start');
    await relay.stop();
    expect(new Set(replayed.map((e) => e.eventKey))).toEqual(new Set(keys));

    // Each row expires OUTBOX_DEFAULT_RETENTION_DAYS after the run wrote it.
    const { Items: rows = [] } = await box.clients.doc.send(
      new QueryCommand({
        TableName: box.endpoints.ledgerTable,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `${OUTBOX_PK_PREFIX}payments-reconcile` },
      }),
    );
    expect(rows).toHaveLength(5);
    const finishedAt = Math.max(...runs.map((r) => r.finishedAt ?? 0));
    for (const row of rows) {
      const expiresAt = row.expiresAt as number;
      // Written during the run (clock shifted by `offset`), so within the run's span of `finishedAt + retention`.
      expect(expiresAt).toBeLessThanOrEqual(Math.floor(finishedAt / 1000) + OUTBOX_DEFAULT_RETENTION_DAYS * 86_400);
      expect(expiresAt).toBeGreaterThan(Math.floor(finishedAt / 1000) + OUTBOX_DEFAULT_RETENTION_DAYS * 86_400 - 60);
    }

    // Expiry: the rows go (DynamoDB Local does not run TTL, so they are deleted as TTL would).
    // A relay reading the stream from its start sees each INSERT and each REMOVE, and publishes
    // the INSERTs only: the same keys as before, nothing for the deletes.
    for (const row of rows)
      await box.clients.doc.send(new DeleteCommand({ TableName: box.endpoints.ledgerTable, Key: { pk: row.pk, sk: row.sk } }));
    const afterExpiry: OutboxEvent[] = [];
    const again = new LocalOutboxRelay(
      box.clients.dynamo,
      box.endpoints.dynamoEndpoint,
      box.endpoints.ledgerTable,
      (e) => void afterExpiry.push(e),
    );
    await again.start('start');
    await again.stop();
    expect(afterExpiry.map((e) => e.eventKey).sort()).toEqual([...keys].sort());
  });

  const NOW = Date.UTC(2026, 0, 1, 0, 0, 30);
  const ctx = (retentionDays = 14): OutboxRunContext => ({
    job: loadJobs(configuredJobDefinitions({ exampleJobs: true }))[0]!,
    runKey: 'payments-reconcile@2026-01-01T00:00:00.000Z',
    tables: { ledger: 'ledger', payments: 'payments' },
    now: () => NOW,
    outboxRetentionDays: retentionDays,
  });

  it('a MODIFY of an outbox row (a re-execution rewriting the same key) is not published again, nor a REMOVE (its TTL expiry)', () => {
    const image = outboxPut(ctx(), { name: 'p-1', detailType: 'X', detail: {} }).item;
    const events = outboxEventsFrom([
      { eventName: 'INSERT', newImage: image },
      { eventName: 'MODIFY', newImage: { ...image, detail: { again: true } } },
      { eventName: 'INSERT', newImage: { pk: 'JOB#j', sk: 'CURSOR' } },
      // A TTL delete: REMOVE, by the DynamoDB service, with no new image (NEW_IMAGE stream).
      { eventName: 'REMOVE', sequenceNumber: '9' },
      // A REMOVE that somehow carries an image is still not an event.
      { eventName: 'REMOVE', newImage: image },
    ]);
    expect(events.map((e) => e.event.eventKey)).toEqual(['payments-reconcile@2026-01-01T00:00:00.000Z#p-1']);
  });

  it("puts the row in the ledger with expiresAt = write time + retention, in epoch seconds (the ledger's TTL attribute)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 14, max: 3650 }), fc.integer({ min: 0, max: 4_102_444_800_000 }), (days, now) => {
        const put = outboxPut({ ...ctx(days), now: () => now }, { name: 'p-1', detailType: 'X', detail: {} });
        expect(put.table).toBe('ledger');
        expect(put.item.expiresAt).toBe(Math.floor(now / 1000) + days * 86_400);
        expect(outboxExpiresAt(now, days)).toBe(put.item.expiresAt);
      }),
    );
  });
});
