/**
 * A lane's writes whose responses are lost after they committed (DESIGN §8 "Lanes"): each is
 * recognised as our own on the SDK's retry, so no waiting run is left to the sweeper, however far
 * back it lies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../../shared/adapters/ledger.js';
import { LedgerOps } from '../../../shared/adapters/ledger-ops.js';
import { PermanentError } from '../../../shared/handler-api.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { LedgerKeys } from '../../../shared/resources.js';
import { retryRuns } from '../../../tools/ops/retry.js';
import { faultyClient } from '../../support/faults.js';
import { testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { sandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;

const isRelease = (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItemCommand' && JSON.stringify(input.Key).includes(LedgerKeys.activeSk(0)) && String(input.UpdateExpression).includes('REMOVE holderSk');

describe('lost responses on a lane', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('a run revived 18 slots back waits behind the holder; the holder\'s release commits but its response is lost: the revived run is still handed the lane next, without the sweeper', async () => {
    const name = uniqueName('far-back');
    const m0 = Math.floor(Date.now() / MIN) * MIN - 60 * MIN;
    const [revived, holder] = [m0, m0 + 18 * MIN];
    const ran: number[] = [];
    const during: { run?: () => Promise<void> } = {};
    const failOnce = new Set([revived]);
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
    const lab = new Lab(box, jobs, {
      h: {
        run: async (ctx) => {
          ran.push(ctx.slot);
          if (failOnce.delete(ctx.slot)) throw new PermanentError('bad input', { code: 'BAD' });
          if (ctx.slot === holder) await during.run?.();
        },
      },
    }, holder + 10);
    for (let k = 0; k < 18; k++) {
      await lab.create(name, m0 + k * MIN);
      expect(await lab.deliver(name, m0 + k * MIN)).toBe('ack');
    }
    expect(await lab.status(name, revived)).toBe(RunStatus.DEAD);
    await lab.create(name, holder);
    // While the holder runs, the operator revives the oldest slot; its message finds the lane held.
    const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
    during.run = async () => {
      const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [(await lab.run(name, revived))!]);
      expect(entry).toMatchObject({ action: 'revived' });
      expect(await lab.deliverSent()).toEqual([(await lab.run(name, revived))!.runKey]);
      expect(await lab.status(name, revived)).toBe(RunStatus.READY);
    };
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isRelease, fault: 'lost-response' }]);
    try {
      expect(await lab.deliver(name, holder, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) })).toBe('ack');
      expect(faulty.injected).toEqual(['UpdateItemCommand']);
    } finally {
      faulty.destroy();
    }
    expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
    expect(await lab.deliverSent()).toEqual([(await lab.run(name, revived))!.runKey]);
    expect(await lab.status(name, revived)).toBe(RunStatus.SUCCEEDED);
    expect(ran.slice(-2)).toEqual([holder, revived]);
  });
});
