/**
 * The benchmark's planner figures come from middleware on the clients (planner-phases.ts), with
 * the planner on the product's own adapters: what it writes is what a deployed planner writes,
 * its tick id included (a retried put recognises its own run by it), and only the calls made
 * inside the timed tick count.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { Ledger } from '../../shared/store/ledger.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import { messageFor } from '../../shared/core/run-message.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { benchClients, freshResources } from '../../tools/bench/measure.js';
import { plannerThroughput } from '../../tools/bench/planner.js';
import { PlannerPhases } from '../../tools/bench/planner-phases.js';
import type { LocalEndpoints } from '../../tools/local-stack.js';
import { sharedEndpoints } from '../support/stack.js';

const MINUTE = 60_000;

async function runItems(endpoints: LocalEndpoints): Promise<Record<string, unknown>[]> {
  const clients = benchClients(endpoints);
  try {
    const { Items = [] } = await clients.doc.send(new ScanCommand({ TableName: endpoints.ledgerTable, ConsistentRead: true }));
    return Items.filter((item) => 'runKey' in item);
  } finally {
    clients.dynamo.destroy();
    clients.sqs.destroy();
  }
}

describe('the benchmark planner', () => {
  let endpoints: LocalEndpoints;
  beforeAll(async () => {
    endpoints = await freshResources(sharedEndpoints(), 'phases');
  });

  it('plans one run a job, each carrying the tick id the planner passed', async () => {
    const result = await plannerThroughput(endpoints, 5, 4);
    expect(result.created).toBe(5);
    const items = await runItems(endpoints);
    expect(items).toHaveLength(5);
    const creators = new Set(items.map((item) => item.createdBy));
    expect(creators.size).toBe(1);
    expect([...creators][0]).toEqual(expect.any(String));
  });

  it('times only the run puts and sends made inside the timed call', async () => {
    const own = await freshResources(sharedEndpoints(), 'phases-scope');
    const clients = benchClients(own);
    try {
      const phases = new PlannerPhases().attach(clients);
      const ledger = new Ledger(clients.doc, { tableName: own.ledgerTable });
      const queue = new RunQueue(clients.sqs, own.runQueueUrl);
      const now = Date.now();
      const run = (slot: number) => ({ job: 'phases', slot, shard: 0, shards: 1, status: RunStatus.READY }) as const;
      await ledger.createRun(run(now), now, 'outside');
      expect(phases.puts).toBe(0);
      await phases.time(async () => {
        const first = await ledger.createRun(run(now + MINUTE), now, 'inside');
        await ledger.createRun(run(now + 2 * MINUTE), now, 'inside');
        if (!first.created) throw new Error('setup: the run exists already');
        await queue.send([{ message: messageFor(first.run), delaySeconds: 0 }]);
      });
      expect(phases.puts).toBe(2);
      expect(phases.firstPutAt).toBeLessThanOrEqual(phases.lastPutAt!);
      expect(phases.sendMs).toBeGreaterThan(0);
      expect(phases.lastSendAt).toBeGreaterThanOrEqual(phases.lastPutAt!);
    } finally {
      clients.dynamo.destroy();
      clients.sqs.destroy();
    }
  });
});
