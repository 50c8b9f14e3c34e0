/**
 * A checkpointing job's yields through a real queue: local SQS counts every receive of a message
 * and moves it to the dead-letter queue past the queue's maxReceiveCount, as SQS does. A yield with
 * progress must not use up that count (it is sized against retry.maxAttempts, not against how many
 * invocations a long run needs): only a real poison message may reach the DLQ.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteMessageCommand, ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { messageFor } from '../../shared/core/run-message.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { processRecord } from '../../shared/worker/batch.js';
import { drain, testJobs } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MAX_RECEIVES = 3;

describe('yields through the real receive count', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox({ maxReceiveCount: MAX_RECEIVES });
  });
  afterAll(() => box.destroy());

  /** The next message of the run queue, as the event source hands it over; undefined once the queue stays empty. */
  const receive = async (): Promise<Message | undefined> => {
    for (let tries = 0; tries < 12; tries++) {
      const { Messages = [] } = await box.clients.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: box.endpoints.runQueueUrl,
          MaxNumberOfMessages: 1,
          WaitTimeSeconds: 0,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
          AttributeNames: ['All'],
        }),
      );
      if (Messages[0]) return Messages[0];
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    return undefined;
  };

  it('a run that yields with progress more times than maxReceiveCount completes, and nothing lands in the DLQ', async () => {
    const name = `yielder-${Math.random().toString(36).slice(2, 8)}`;
    const invocations = MAX_RECEIVES * 2 + 1;
    let handlerRuns = 0;
    // One checkpoint per invocation, then the invocation's time runs out (virtual): a yield with progress.
    const long: JobHandler = {
      async run(ctx) {
        handlerRuns++;
        const n = (typeof ctx.resumeFrom === 'number' ? ctx.resumeFrom : 0) + 1;
        await ctx.checkpoint(n);
        if (n >= invocations) return { evidence: { checkpoints: n } };
        // Works on until the invocation's time runs out: the worker yields.
        await new Promise<never>(() => undefined);
        return undefined;
      },
    };
    const jobs = testJobs(
      [
        {
          name,
          schedule: '* * * * *',
          handler: 'h',
          startLead: 0,
          timeout: '10m',
          checkpoints: true,
          lease: '30s',
          retry: { maxAttempts: 2, backoff: { base: 0, max: 0 } },
        },
      ],
      ['h'],
    );
    const slot = Date.UTC(2026, 11, 1, 12, 0);
    const lab = new Lab(box, jobs, { h: long }, Date.UTC(2026, 11, 1, 12, 0, 5));
    const run = await lab.create(name, slot);
    await box.queue.send([{ message: messageFor(run), delaySeconds: 0 }]);

    const receiveCounts: number[] = [];
    for (let k = 0; k < invocations * 2; k++) {
      const message = await receive();
      if (!message) break;
      receiveCounts.push(Number(message.Attributes?.ApproximateReceiveCount));
      // Each delivery is one invocation with 400 ms left; the worker yields with 200 ms left.
      const started = Date.now();
      const outcome = await processRecord(
        lab.deps(`w${k}`, { queue: box.queue, remainingTimeMs: () => 400 - (Date.now() - started), options: { yieldMarginMs: 200 } }),
        {
          messageId: message.MessageId!,
          receiptHandle: message.ReceiptHandle!,
          body: message.Body!,
          attributes: { ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount },
        },
      );
      // The event source deletes the messages the batch did not report failed.
      if (outcome === 'ack')
        await box.clients.sqs.send(
          new DeleteMessageCommand({ QueueUrl: box.endpoints.runQueueUrl, ReceiptHandle: message.ReceiptHandle! }),
        );
      if ((await lab.status(name, slot)) === RunStatus.SUCCEEDED) break;
    }

    const ended = (await lab.run(name, slot))!;
    expect(ended).toMatchObject({ status: RunStatus.SUCCEEDED, checkpoint: invocations });
    expect(handlerRuns).toBe(invocations);
    expect(lab.metrics.get('RunsYielded')).toBe(invocations - 1);
    expect(invocations - 1).toBeGreaterThan(MAX_RECEIVES);
    expect(Math.max(...receiveCounts)).toBeLessThanOrEqual(MAX_RECEIVES);
    expect(await drain(box.clients.sqs, box.endpoints.deadLetterQueueUrl, { idleMs: 1_000 })).toEqual([]);
  });
});

describe('a copy of a message waiting out a live holder', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox({ maxReceiveCount: MAX_RECEIVES });
  });
  afterAll(() => box.destroy());

  it('a copy received again while its run is leased by a live holder goes on in a fresh message, so a holder outliving maxReceiveCount leases never sends it to the DLQ', async () => {
    const name = `held-${Math.random().toString(36).slice(2, 8)}`;
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, lease: '30s' }], ['h']);
    const slot = Date.UTC(2026, 11, 1, 12, 0);
    const lab = new Lab(box, jobs, { h: { run: async () => undefined } }, Date.UTC(2026, 11, 1, 12, 0, 5));
    const run = await lab.create(name, slot);
    const held = await box.ledger.claim(run, 'holder', lab.clock.now, 30_000, 0);
    expect(held.kind).toBe('claimed');
    const copy = (receives: number) => ({ ...lab.record(name, slot), attributes: { ApproximateReceiveCount: String(receives) } });

    // The first receive of a copy hides it until the lease can end, as a takeover needs.
    expect(await processRecord(lab.deps('w1'), copy(1))).toBe('retry');
    const leaseEnd = Math.round(lab.queue.hidden[0]!.seconds); // the lease, plus the clock allowance
    expect(leaseEnd).toBeGreaterThanOrEqual(30);
    expect(lab.queue.sent).toEqual([]);
    // Received again, under the same live lease: a fresh message due at the lease's end, this one acknowledged.
    for (const receives of [2, MAX_RECEIVES, MAX_RECEIVES + 5]) {
      expect(await processRecord(lab.deps('w2'), copy(receives))).toBe('ack');
    }
    expect(lab.queue.hidden).toHaveLength(1);
    expect(lab.queue.take().map((out) => [out.message.runKey, Math.round(out.delaySeconds)])).toEqual(
      Array.from({ length: 3 }, () => [run.runKey, leaseEnd]),
    );
    expect(await lab.status(name, slot)).toBe(RunStatus.RUNNING);
  });
});
