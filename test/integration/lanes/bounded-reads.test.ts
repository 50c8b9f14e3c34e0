/**
 * What a run of an exclusive lane reads does not grow with the lane's history (DESIGN §8
 * "Lanes"): two queries per forbid-queue or coalesce run, and a forbid-queue look reads from a
 * floor that rises behind the ended runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { FLOOR_ADVANCE_AFTER } from '../../../shared/core/lanes.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { LedgerKeys } from '../../../shared/core/resources.js';
import { testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { sandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;

/** Counts Query requests and the items they read, and writes to lane markers. */
function queryMeter(doc: Pick<DynamoDBDocumentClient, 'middlewareStack'>) {
  const meter = { queries: 0, items: 0, markerWrites: 0 };
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'QueryCommand') {
        meter.queries++;
        meter.items += (result.output as { ScannedCount?: number }).ScannedCount ?? 0;
      }
      if (
        context.commandName !== 'GetItemCommand' &&
        JSON.stringify((args.input as { Key?: unknown }).Key ?? '').includes(LedgerKeys.activeSk(0))
      )
        meter.markerWrites++;
      return result;
    },
    { step: 'initialize', name: `query-meter-${Math.random()}` },
  );
  return meter;
}

describe('lane reads do not grow with history', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  for (const overlap of ['forbid-queue', 'coalesce'] as const) {
    it(`${overlap}: after one queued hand-on, each of 40 later runs nobody waits for makes 2 queries, reads a bounded number of items and writes its marker three times (the waiting flag that never cleared made it 3 queries from the first slot on, and a flag write more)`, async () => {
      const own = await sandbox();
      try {
        const name = uniqueName(`reads-${overlap}`);
        const m0 = Math.floor(Date.now() / MIN) * MIN - 120 * MIN;
        const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap }], ['h']);
        const during: { run?: () => Promise<void> } = {};
        const lab = new Lab(own, jobs, { h: { run: async () => void (await during.run?.()) } }, m0 + 10);
        // One queued hand-on: the second run comes while the first runs, waits, and is handed the lane.
        await lab.create(name, m0);
        await lab.create(name, m0 + MIN);
        during.run = async () => {
          during.run = undefined;
          lab.clock.now = m0 + MIN + 10;
          expect(await lab.deliver(name, m0 + MIN)).toBe('ack');
        };
        expect(await lab.deliver(name, m0)).toBe('ack');
        expect(await lab.deliverSent()).toEqual([(await lab.run(name, m0 + MIN))!.runKey]);
        expect(await lab.status(name, m0 + MIN)).toBe(RunStatus.SUCCEEDED);
        const meter = queryMeter(own.clients.doc);
        const perRun: { queries: number; items: number; markerWrites: number }[] = [];
        for (let k = 2; k < 42; k++) {
          const slot = m0 + k * MIN;
          lab.clock.now = slot + 10;
          await lab.create(name, slot);
          const before = { ...meter };
          expect(await lab.deliver(name, slot)).toBe('ack');
          expect(await lab.status(name, slot)).toBe(RunStatus.SUCCEEDED);
          perRun.push({
            queries: meter.queries - before.queries,
            items: meter.items - before.items,
            markerWrites: meter.markerWrites - before.markerWrites,
          });
        }
        expect(perRun.map((r) => r.queries)).toEqual(perRun.map(() => 2));
        // The lane's marker is written three times, taken, taken again under the claim and released
        // (no flag kept on it), and a forbid-queue floor is raised once every FLOOR_ADVANCE_AFTER
        // runs at most.
        const raises = overlap === 'forbid-queue' ? Math.ceil(perRun.length / FLOOR_ADVANCE_AFTER) : 0;
        expect(perRun.every((r) => r.markerWrites >= 3 && r.markerWrites <= 4)).toBe(true);
        expect(perRun.reduce((sum, r) => sum + r.markerWrites, 0)).toBeLessThanOrEqual(3 * perRun.length + raises);
        // The items read stay bounded: the last ten runs read no more than the first ten.
        const most = (runs: typeof perRun) => Math.max(...runs.map((r) => r.items));
        expect(most(perRun.slice(-10))).toBeLessThanOrEqual(Math.max(most(perRun.slice(0, 10)), 12));
        expect(lab.queue.sent).toEqual([]);
      } finally {
        own.destroy();
      }
    });
  }
});
