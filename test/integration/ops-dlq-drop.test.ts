/**
 * `ops redrive --drop <messageId>` against the local stack. The hazard: a junk message in the DLQ
 * (not a run message) that `redrive` can only move back, so it fails again and returns, and the
 * `dlq-not-empty` alarm never clears; the runbook's "delete it in the console" is no command. The
 * drop deletes exactly the message named, says what it held, leaves the others visible, and
 * refuses (exit 1, nothing deleted) an id that is not in the DLQ.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageFor } from '../../shared/core/run-message.js';
import { runKeyOf } from '../../shared/core/vocabulary.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { testJobs, waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const JOBS = testJobs([{ name: 'rd', schedule: '* * * * *', handler: 'noop' }]);
const SLOT = Date.UTC(2026, 5, 15, 12, 0);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), jobs: JOBS, env: { USER: 'carol' } };
  return { io, out, err, json: <T>() => JSON.parse(out.join('\n')) as T };
}

describe('ops redrive --drop', () => {
  let box: Sandbox;
  let endpoints: string;
  let junkId: string;
  let runMessageId: string;

  async function visible(): Promise<number> {
    const { Attributes = {} } = await box.clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    return Number(Attributes.ApproximateNumberOfMessages);
  }

  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-drop-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    const send = async (body: string) =>
      (await box.clients.sqs.send(new SendMessageCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, MessageBody: body }))).MessageId!;
    junkId = await send('{"hello":"world"}');
    runMessageId = await send(JSON.stringify(messageFor({ job: 'rd', slot: SLOT, shard: 0, runKey: runKeyOf('rd', SLOT, 0, 1) })));
    await waitFor(async () => ((await visible()) === 2 ? true : undefined), 30_000, 'two messages in the DLQ');
  });
  afterAll(() => box.destroy());

  it('--dry-run names the message it would delete and deletes nothing', async () => {
    const c = capture();
    expect(await runOps(['redrive', '--drop', junkId, '--dry-run', '--endpoints', endpoints], c.io)).toBe(0);
    expect(c.out).toEqual([
      expect.stringMatching(
        new RegExp(
          `^dry run: would delete DLQ message ${junkId}: not a run message \\(.+\\)(, received \\d+ time\\(s\\))?; body: \\{"hello":"world"\\}$`,
        ),
      ),
    ]);
    expect(await visible()).toBe(2);
  });

  it('deletes the junk message named, says what it held, and leaves the other message visible in the DLQ', async () => {
    const c = capture();
    expect(await runOps(['redrive', '--drop', junkId, '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    expect(c.json()).toMatchObject({ messageId: junkId, deleted: true, body: '{"hello":"world"}', notARun: expect.any(String) });
    expect(c.json<{ runKey?: string }>().runKey).toBeUndefined();
    // The other message was released at once, not hidden for the receive's visibility timeout.
    expect(await visible()).toBe(1);
    const { Messages = [] } = await box.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: box.endpoints.deadLetterQueueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 0,
      }),
    );
    // Visibility 0: the one message may come back more than once within the poll.
    expect([...new Set(Messages.map((m) => m.MessageId))]).toEqual([runMessageId]);
  });

  it('an id no longer (or never) in the DLQ is exit 1 with one line, and nothing is deleted', async () => {
    const c = capture();
    expect(await runOps(['redrive', '--drop', junkId, '--endpoints', endpoints], c.io)).toBe(1);
    expect(c.err).toEqual([
      expect.stringMatching(new RegExp(`^ops redrive: no message ${junkId} in the DLQ \\(1 message\\(s\\) seen\\): nothing deleted`)),
    ]);
    expect(await visible()).toBe(1);
  });

  it('a run message can be dropped too: the output names its run, which stays as it is', async () => {
    const c = capture();
    expect(await runOps(['redrive', '--drop', runMessageId, '--endpoints', endpoints], c.io)).toBe(0);
    expect(c.out[0]).toMatch(
      new RegExp(
        `^deleted DLQ message ${runMessageId}: run message of rd@2026-06-15T12:00:00\\.000Z(, received \\d+ time\\(s\\))?; body: `,
      ),
    );
    expect(c.out[1]).toContain('the run itself is unchanged');
    expect(await visible()).toBe(0);
  });

  it('--drop refuses the options of a redrive (exit 2 naming the field)', async () => {
    const c = capture();
    expect(await runOps(['redrive', '--drop', 'x', '--max-per-second', '5', '--endpoints', endpoints], c.io)).toBe(2);
    expect(c.err).toEqual([expect.stringContaining('field "max-per-second"')]);
  });
});
