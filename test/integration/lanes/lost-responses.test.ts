/**
 * A lane's writes whose responses are lost after they committed (DESIGN §8 "Lanes"): each is
 * recognised as our own on the SDK's retry, so no waiting run is left to the sweeper, however far
 * back it lies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../../shared/store/ledger.js';
import { LedgerOps } from '../../../shared/store/repairs.js';
import { PermanentError } from '../../../shared/handler-api.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { LedgerKeys } from '../../../shared/core/resources.js';
import { retryRuns } from '../../../shared/operations/retry.js';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { faultyClient } from '../../support/faults.js';
import { localClientConfig } from '../../../tools/local-stack.js';
import { testJobs } from '../../support/helpers.js';
import { Lab } from '../../support/lab.js';
import { sandbox, uniqueName, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;

const isRelease = (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItemCommand' &&
  JSON.stringify(input.Key).includes(LedgerKeys.activeSk(0)) &&
  String(input.UpdateExpression).includes('REMOVE holderSk');

describe('lost responses on a lane', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it("a run revived 18 slots back waits behind the holder; the holder's release commits but its response is lost: the revived run is still handed the lane next, without the sweeper", async () => {
    const name = uniqueName('far-back');
    const m0 = Math.floor(Date.now() / MIN) * MIN - 60 * MIN;
    const [revived, holder] = [m0, m0 + 18 * MIN];
    const ran: number[] = [];
    const during: { run?: () => Promise<void> } = {};
    const failOnce = new Set([revived]);
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
    const lab = new Lab(
      box,
      jobs,
      {
        h: {
          run: async (ctx) => {
            ran.push(ctx.slot);
            if (failOnce.delete(ctx.slot)) throw new PermanentError('bad input', { code: 'BAD' });
            if (ctx.slot === holder) await during.run?.();
          },
        },
      },
      holder + 10,
    );
    for (let k = 0; k < 18; k++) {
      await lab.create(name, m0 + k * MIN);
      expect(await lab.deliver(name, m0 + k * MIN)).toBe('ack');
    }
    expect(await lab.status(name, revived)).toBe(RunStatus.DEAD);
    await lab.create(name, holder);
    // While the holder runs, the operator revives the oldest slot; its message finds the lane held.
    const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
    during.run = async () => {
      const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [
        (await lab.run(name, revived))!,
      ]);
      expect(entry).toMatchObject({ action: 'revived' });
      expect(await lab.deliverSent()).toEqual([(await lab.run(name, revived))!.runKey]);
      expect(await lab.status(name, revived)).toBe(RunStatus.READY);
    };
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isRelease, fault: 'lost-response' }]);
    try {
      expect(await lab.deliver(name, holder, 'w', { ledger: new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable }) })).toBe(
        'ack',
      );
      expect(faulty.injected).toEqual(['UpdateItemCommand']);
    } finally {
      faulty.destroy();
    }
    expect(await lab.status(name, holder)).toBe(RunStatus.SUCCEEDED);
    expect(await lab.deliverSent()).toEqual([(await lab.run(name, revived))!.runKey]);
    expect(await lab.status(name, revived)).toBe(RunStatus.SUCCEEDED);
    expect(ran.slice(-2)).toEqual([holder, revived]);
  });

  it('forbid-queue: a run giving way whose release commits but whose response is lost while an older run takes the lane, runs, ends and looks (seeing it still RUNNING) sends itself when it hands its claim back: not left to the sweeper (trail of the Spin model aligned with the code)', async () => {
    const name = uniqueName('give-way-lost');
    const m0 = Math.floor(Date.now() / MIN) * MIN - 10 * MIN;
    const [older, current] = [m0, m0 + MIN];
    const ran: number[] = [];
    let holdOlder!: () => void;
    const olderHeld = new Promise<void>((resolve) => (holdOlder = resolve));
    let olderRunning!: () => void;
    const olderStarted = new Promise<void>((resolve) => (olderRunning = resolve));
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, overlap: 'forbid-queue' }], ['h']);
    const lab = new Lab(
      box,
      jobs,
      {
        h: {
          run: async (ctx) => {
            ran.push(ctx.slot);
            if (ctx.slot === older) {
              olderRunning();
              await olderHeld;
            }
          },
        },
      },
      current + 10,
    );
    await lab.create(name, older);
    await lab.create(name, current);
    // Worker B delivers the current run: it claims, finds the older run open and gives way.
    const dynamo = new DynamoDBClient({ ...localClientConfig(box.endpoints.dynamoEndpoint), maxAttempts: 3 });
    let olderDelivery: Promise<'ack' | 'retry'> | undefined;
    let lost = false;
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as Record<string, unknown>;
        if (!lost && isRelease(context.commandName ?? '', input)) {
          lost = true;
          await next(args);
          // Committed: the lane is free. Worker A takes it for the older run, which runs; then B's
          // connection drops, and its SDK retry is refused by A's holder.
          olderDelivery = lab.deliver(name, older, 'worker-a');
          await olderStarted;
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
        }
        if (context.commandName === 'UpdateItemCommand' && String(input.UpdateExpression).includes('attempt = attempt - :one')) {
          // Before B hands its claim back, the older run ends, releases and looks: the current run is still RUNNING.
          holdOlder();
          expect(await olderDelivery).toBe('ack');
          expect(lab.queue.sent).toEqual([]);
        }
        return next(args);
      },
      { step: 'deserialize', name: 'give-way-race' },
    );
    try {
      const ledger = new Ledger(DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } }), {
        tableName: box.endpoints.ledgerTable,
      });
      expect(await lab.deliver(name, current, 'worker-b', { ledger })).toBe('ack');
    } finally {
      dynamo.destroy();
    }
    expect(lost).toBe(true);
    expect(await lab.status(name, older)).toBe(RunStatus.SUCCEEDED);
    // B looked after handing its claim back: the current run's message is out, and it runs.
    expect(await lab.deliverSent()).toEqual([(await lab.run(name, current))!.runKey]);
    expect(await lab.status(name, current)).toBe(RunStatus.SUCCEEDED);
    expect(ran).toEqual([older, current]);
  });
});
