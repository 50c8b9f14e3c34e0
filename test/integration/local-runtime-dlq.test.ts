/**
 * `npm start` prints a line when SQS moves a message to the run queue's dead-letter queue, and the
 * summary counts it: the local SQS runs in the runtime's process, and the stack reports each move
 * (LocalStack.onDeadLetter). A message sent to the DLQ directly is not a move and has no line.
 * On a stack of its own (the hook is in-process), with maxReceiveCount 1 so a poison message
 * lands in the DLQ at its first redelivery.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointsOf, startLocalStack, type LocalStack } from '../../tools/local-stack.js';
import { LocalRuntime, type DeadLetterLine, type PoisonLine } from '../../tools/local-runtime.js';
import { testJobs, waitFor } from '../support/helpers.js';

describe('npm start: a message moved to the dead-letter queue', () => {
  let stack: LocalStack;
  let runtime: LocalRuntime;
  const dead: DeadLetterLine[] = [];
  const poison: PoisonLine[] = [];

  beforeAll(async () => {
    stack = await startLocalStack({ maxReceiveCount: 1, visibilityTimeoutSeconds: 30 });
    runtime = new LocalRuntime({
      endpoints: endpointsOf(stack),
      jobs: testJobs([{ name: 'noop-job', schedule: '* * * * *', handler: 'noop' }], ['noop']),
      handlers: { noop: { run: async () => undefined } },
      workers: 1,
      onDeadLetter: (d) => dead.push(d),
      onPoison: (p) => poison.push(p),
    });
    stack.onDeadLetter((message) => runtime.deadLetter(message));
    runtime.start();
  }, 300_000);
  afterAll(async () => {
    await runtime?.stop();
    await stack?.stop();
  });

  it('has one line naming the message and the run its body names, and the summary counts it; a send to the DLQ has none', async () => {
    const sqs = runtime.clients.sqs;
    await sqs.send(new SendMessageCommand({ QueueUrl: stack.deadLetterQueueUrl, MessageBody: 'sent to the DLQ by hand' }));
    const body = JSON.stringify({ v: 1, job: 'removed-job', slot: Date.now() - 5_000, shard: 0, runKey: 'removed-job@x' });
    const { MessageId } = await sqs.send(new SendMessageCommand({ QueueUrl: stack.runQueueUrl, MessageBody: body }));

    await waitFor(async () => (dead.length > 0 ? true : undefined), 120_000, 'the DLQ line');
    expect(poison.map((p) => p.messageId)).toEqual([MessageId]);
    expect(dead).toEqual([{ messageId: MessageId, job: 'removed-job', runKey: 'removed-job@x' }]);
    expect(runtime.summary()).toMatchObject({ poisonMessages: 1, deadLettered: 1 });
  }, 300_000);
});
