/**
 * Counterexample trails Spin printed for the lane model (models/lanes.pml), replayed against
 * DynamoDB Local through the worker. Each was a way to two live holders in a protocol version
 * before the one in the code; each must hold one holder now.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LedgerOps } from '../../../shared/store/repairs.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { PermanentError } from '../../../shared/handler-api.js';
import { retryRuns } from '../../../shared/operations/retry.js';
import { gatedLedger, isClaim, laneLab, OverlapWatch } from '../../support/lanes.js';
import { sandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

describe('Spin trails replayed', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  // (Under coalesce and forbid-skip, the revival in this trail is refused: test/integration/lanes/ops-revival.test.ts.)
  for (const overlap of ['forbid-queue'] as const) {
    it(`${overlap}: a delivery paused between its take of the lane and its claim, while its run ran elsewhere, was revived by ops retry and the lane moved on to the next run, does not run it beside the lane's holder (model trail ASWRITTEN_CLAIM)`, async () => {
      const name = uniqueName(`trail-claim-${overlap}`);
      const [r1, r2] = [T0 - MIN, T0];
      const watch = new OverlapWatch();
      const { ran, during } = watch;
      const lab = laneLab(
        box,
        name,
        overlap,
        watch.handler(async (ctx) => {
          if (ctx.slot === r2) await during.run?.();
          if (ctx.slot === r1 && ran.filter((slot) => slot === r1).length === 1) throw new PermanentError('bad input', { code: 'BAD' });
        }),
        r1 + 10,
      );
      await lab.create(name, r1);
      // W1 takes the free lane for run 1, then stops before its claim.
      const w1Client = gatedLedger(box, isClaim);
      try {
        const w1 = lab.deliver(name, r1, 'w1', { ledger: w1Client.ledger });
        await w1Client.reached;
        // Meanwhile W2 runs run 1 to its end, DEAD (the lane held by run 1 is W2's too: 'held').
        expect(await lab.deliver(name, r1, 'w2')).toBe('ack');
        expect(await lab.status(name, r1)).toBe(RunStatus.DEAD);
        // Run 2 comes due and holds the lane; while its handler runs, the operator revives run 1
        // (it is reported revived: nothing newer has run yet under coalesce) and W1 wakes up.
        lab.clock.now = r2 + 10;
        await lab.create(name, r2);
        const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
        during.run = async () => {
          during.run = undefined;
          const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [
            (await lab.run(name, r1))!,
          ]);
          expect(entry).toMatchObject({ action: 'revived' });
          lab.queue.take();
          w1Client.open();
          await w1;
        };
        expect(await lab.deliver(name, r2, 'w3')).toBe('ack');
      } finally {
        w1Client.destroy();
      }
      const { maxActive } = watch;
      expect(maxActive).toBe(1);
      // Run 1 runs again after run 2, on its own message: once.
      expect(ran).toEqual([r1, r2]);
      expect(await lab.status(name, r1)).toBe(RunStatus.READY);
    });
  }

  // The operator profile's trail (models/lanes.pml, HAZARD_UNTOKENED_RELEASE): a release names the
  // run; without the claim's token on the marker it freed the lane under a later incarnation.
  // Under forbid-queue the next run's order check sees the revived run open and gives way; under
  // forbid-skip and coalesce nothing else stands between the two.
  for (const overlap of ['forbid-skip', 'coalesce'] as const) {
    it(`${overlap}: the release of a run that ended, landing after ops retry revived it and a new claim holds the lane, does not free the lane under that claim (model trail HAZARD_UNTOKENED_RELEASE)`, async () => {
      const name = uniqueName(`trail-incarnation-${overlap}`);
      const [r1, r2] = [T0 - MIN, T0];
      const watch = new OverlapWatch();
      const { ran, during } = watch;
      const lab = laneLab(
        box,
        name,
        overlap,
        watch.handler(async (ctx) => {
          if (ctx.slot === r1 && ran.filter((slot) => slot === r1).length === 1) throw new PermanentError('bad input', { code: 'BAD' });
          if (ctx.slot === r1) await during.run?.();
        }),
        r1 + 10,
      );
      await lab.create(name, r1);
      // W1 runs run 1 to DEAD, then stops before its release of the lane lands.
      const w1Client = gatedLedger(
        box,
        (command, input) => command === 'UpdateItemCommand' && String(input.UpdateExpression).includes('REMOVE holderSk'),
      );
      try {
        const w1 = lab.deliver(name, r1, 'w1', { ledger: w1Client.ledger });
        await w1Client.reached;
        expect(await lab.status(name, r1)).toBe(RunStatus.DEAD);
        // The operator revives run 1 (the lane still names it: nothing refuses the revival).
        const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
        const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [
          (await lab.run(name, r1))!,
        ]);
        expect(entry).toMatchObject({ action: 'revived' });
        lab.queue.take();
        // W2 takes the lane ('held': it names run 1), claims and runs run 1. Meanwhile W1's
        // release lands, and run 2 comes due and is delivered to W3.
        let r2Outcome: string | undefined;
        during.run = async () => {
          during.run = undefined;
          w1Client.open();
          await w1;
          lab.clock.now = r2 + 10;
          await lab.create(name, r2);
          r2Outcome = await lab.deliver(name, r2, 'w3');
        };
        expect(await lab.deliver(name, r1, 'w2')).toBe('ack');
        expect(r2Outcome).toBe('ack');
      } finally {
        w1Client.destroy();
      }
      const { maxActive } = watch;
      expect(maxActive).toBe(1);
      expect(await lab.status(name, r1)).toBe(RunStatus.SUCCEEDED);
      if (overlap === 'forbid-skip') {
        expect(ran).toEqual([r1, r1]);
        expect(await lab.status(name, r2)).toBe(RunStatus.SKIPPED);
      } else {
        // coalesce: run 2 waited for run 1's end, which handed the lane on to it.
        expect(await lab.status(name, r2)).toBe(RunStatus.READY);
        expect(lab.queue.take().map((m) => m.message.slot)).toEqual([r2]);
      }
    });
  }
});
