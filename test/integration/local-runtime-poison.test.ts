/**
 * What `npm start` reports of the states that wait for a person, from the local runtime against
 * the local stack with real workers: a poison message (one no worker can run, on its way to the
 * DLQ) gets one line however often SQS delivers it again, and the summary counts it; a job that
 * pauseOnFailure paused gets a line naming the pause note, and the summary counts it.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageFor } from '../../shared/core/run-message.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { PermanentError, type JobHandler } from '../../shared/handler-api.js';
import { LocalRuntime, type PausedLine, type PoisonLine } from '../../tools/local-runtime.js';
import { testJobs, waitFor } from '../support/helpers.js';
import { startedRuntime } from '../support/local-runtime.js';
import type { Sandbox } from '../support/stack.js';

const handlers: Record<string, JobHandler> = {
  boom: {
    run: async () => {
      throw new PermanentError('the ledger row is missing', { code: 'MISSING_ROW' });
    },
  },
};
const JOBS = testJobs(
  [{ name: 'flaky', schedule: '* * * * *', handler: 'boom', retry: { maxAttempts: 1 }, pauseOnFailure: 1 }],
  Object.keys(handlers),
);

describe('npm start: poison messages and jobs paused by failure', () => {
  let box: Sandbox;
  let runtime: LocalRuntime;
  const poison: PoisonLine[] = [];
  const paused: PausedLine[] = [];

  beforeAll(async () => {
    ({ box, runtime } = await startedRuntime({
      jobs: JOBS,
      handlers,
      workers: 1,
      onPoison: (p) => poison.push(p),
      onPaused: (p) => paused.push(p),
    }));
  });
  afterAll(async () => {
    await runtime.stop();
    box.destroy();
  });

  it('a poison message has one line with its id, code and reason, however often it is delivered again, and the summary counts it once', async () => {
    const { MessageId } = await box.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: box.endpoints.runQueueUrl, MessageBody: 'not a run message' }),
    );
    // The worker hides it for a short backoff per receive: wait for its second delivery.
    await waitFor(
      async () => (runtime.events.filter((e) => e.type === 'poison' && e.messageId === MessageId).length >= 2 ? true : undefined),
      120_000,
      'the poison message delivered twice',
    );
    expect(poison).toEqual([{ messageId: MessageId, runKey: '', code: 'MALFORMED', reason: 'body is not JSON' }]);
    expect(runtime.summary().poisonMessages).toBe(1);
  }, 300_000);

  it('a message of a job the runtime does not run is poison, and its line names the job', async () => {
    const created = await box.ledger.createRun(
      { job: 'removed-job', slot: Date.now() - 5_000, shard: 0, shards: 1, status: RunStatus.READY },
      Date.now(),
    );
    if (!created.created) throw new Error('run exists');
    const { MessageId } = await box.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: box.endpoints.runQueueUrl, MessageBody: JSON.stringify(messageFor(created.run)) }),
    );
    await waitFor(async () => (poison.some((p) => p.messageId === MessageId) ? true : undefined), 120_000, 'the line of the unknown job');
    expect(poison.find((p) => p.messageId === MessageId)).toEqual({
      messageId: MessageId,
      job: 'removed-job',
      runKey: '',
      code: 'UNKNOWN_JOB',
      reason: 'job "removed-job" is not configured',
    });
    expect(runtime.summary().poisonMessages).toBe(2);
  }, 300_000);

  it('a job paused by pauseOnFailure has a line with its pause note, and the summary counts it', async () => {
    const created = await box.ledger.createRun(
      { job: 'flaky', slot: Math.floor(Date.now() / 1_000) * 1_000 - 5_000, shard: 0, shards: 1, status: RunStatus.READY },
      Date.now(),
    );
    if (!created.created) throw new Error('run exists');
    await box.queue.send([{ message: messageFor(created.run), delaySeconds: 0 }]);
    await waitFor(async () => (paused.length > 0 ? true : undefined), 120_000, 'the paused line');
    expect(paused).toEqual([{ job: 'flaky', note: `paused after 1 consecutive DEAD run(s); last ${created.run.runKey}: MISSING_ROW` }]);
    expect(runtime.summary()).toMatchObject({ jobsPausedByFailure: 1, runsFailed: 1 });
  }, 300_000);
});
