/**
 * Recording what happened, whatever the store does: an outcome write that fails is retried while
 * the lease holds, so a finished handler is never re-run for it; evidence, errors and checkpoints
 * are bounded; a claim or completion whose response was lost after it committed is recognised as
 * our own; a claim that throws hides its message briefly instead of for the queue's timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHECKPOINT_CHARS, MAX_ERROR_MESSAGE_CHARS, MAX_EVIDENCE_CHARS, type TruncatedEvidence } from '../../shared/core/limits.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { CheckpointTooLargeError, RetryableError, type JobHandler } from '../../shared/handler-api.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Ledger } from '../../shared/store/ledger.js';
import { faultyClient } from '../support/faults.js';
import { testJobs } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0);

/** Is this UpdateItem the outcome write (it sets the status to the outcome)? */
const isOutcome = (status: string) => (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItemCommand' &&
  String(input.UpdateExpression).includes('#status = :outcome') &&
  (input.ExpressionAttributeValues as Record<string, unknown>)[':outcome'] !== undefined &&
  JSON.stringify(input.ExpressionAttributeValues).includes(status);

const isClaim = (command: string, input: Record<string, unknown>) =>
  command === 'UpdateItemCommand' && String(input.UpdateExpression).startsWith('SET claimedFrom');

describe('outcome recording', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  function setup(handler: JobHandler, extra: Record<string, unknown> = {}) {
    const name = `out-${Math.random().toString(36).slice(2, 8)}`;
    let executions = 0;
    const counted: JobHandler = {
      run: async (ctx) => {
        executions++;
        return handler.run(ctx);
      },
    };
    const jobs = testJobs(
      [
        {
          name,
          schedule: '* * * * *',
          handler: 'h',
          startLead: 0,
          lease: '30s',
          retry: { maxAttempts: 3, backoff: { base: 0, max: 0 } },
          ...extra,
        },
      ],
      ['h'],
    );
    const lab = new Lab(box, jobs, { h: counted }, T0 + 10);
    return { name, lab, executions: () => executions };
  }

  it("an outcome write refused by throttling past the SDK's retries is retried while the lease holds: SUCCEEDED, the handler ran once", async () => {
    const { name, lab, executions } = setup({ run: async () => ({ evidence: { done: true } }) });
    await lab.create(name, T0);
    // Three refusals in a row: more than the SDK's own three attempts.
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isOutcome('SUCCEEDED'), fault: 'refused', times: 4 }], 3);
    const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
    expect(await lab.deliver(name, T0, 'w', { ledger })).toBe('ack');
    expect(faulty.injected.length).toBe(4);
    expect(await lab.run(name, T0)).toMatchObject({ status: RunStatus.SUCCEEDED, evidence: { done: true } });
    expect(executions()).toBe(1);
    expect(lab.metrics.get('OutcomeWriteRetries')).toBeGreaterThanOrEqual(1);
    faulty.destroy();
  });

  it('an outcome write the store rejects as malformed is not retried for the rest of the lease: the message comes back after the lease, nothing loops', async () => {
    const { name, lab, executions } = setup({ run: async () => undefined });
    await lab.create(name, T0);
    // A run item without its attempt history map: the outcome's history entry is an invalid
    // document path, the same ValidationException on every try (how a revived skipped slot failed).
    await box.clients.doc.send(
      new UpdateCommand({
        TableName: box.endpoints.ledgerTable,
        Key: box.ledger.runKeyOf({ job: name, slot: T0, shard: 0 }),
        UpdateExpression: 'REMOVE attempts',
      }),
    );
    expect(await lab.deliver(name, T0)).toBe('retry');
    expect(executions()).toBe(1);
    expect(lab.metrics.get('OutcomeWriteRetries') ?? 0).toBe(0);
    expect(lab.logs.filter((l) => String(l.message).startsWith('outcome write rejected as malformed'))).toHaveLength(1);
    // Hidden until the lease is over (plus the clock allowance), when the takeover reconciles.
    const run = await lab.run(name, T0);
    expect(run?.status).toBe(RunStatus.RUNNING);
    expect(lab.queue.hidden.at(-1)!.seconds).toBeGreaterThanOrEqual(Math.ceil((run!.leaseUntil! - lab.clock.now) / 1000));
  });

  it('a completion whose response was lost after it committed is recognised as ours: no lease lost, no second execution', async () => {
    const { name, lab, executions } = setup({ run: async () => undefined });
    await lab.create(name, T0);
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isOutcome('SUCCEEDED'), fault: 'lost-response' }]);
    const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
    expect(await lab.deliver(name, T0, 'w', { ledger })).toBe('ack');
    expect(faulty.injected).toEqual(['UpdateItemCommand']);
    expect(lab.metrics.get('LeaseLost')).toBe(0);
    expect(await lab.status(name, T0)).toBe(RunStatus.SUCCEEDED);
    expect(executions()).toBe(1);
    faulty.destroy();
  });

  it('a lost completion of an exclusive run still hands the lane on (the successor is dispatched)', async () => {
    // The successor's message arrives while the run runs: it waits, and says so on the lane.
    let successorArrives = async (): Promise<void> => undefined;
    const { name, lab } = setup({ run: async () => successorArrives() }, { overlap: 'forbid-queue' });
    successorArrives = async () => void expect(await lab.deliver(name, T0 + 60_000)).toBe('ack');
    await lab.create(name, T0);
    await lab.create(name, T0 + 60_000);
    lab.clock.now = T0 + 60_010;
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isOutcome('SUCCEEDED'), fault: 'lost-response' }]);
    const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
    expect(await lab.deliver(name, T0, 'w', { ledger })).toBe('ack');
    expect(lab.queue.sent.map((s) => s.message.slot)).toEqual([T0 + 60_000]);
    faulty.destroy();
  });

  it('a claim whose response was lost after it committed is recognised as ours: the handler runs at once, on attempt 1', async () => {
    const { name, lab, executions } = setup({ run: async () => undefined });
    await lab.create(name, T0);
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isClaim, fault: 'lost-response' }]);
    const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
    expect(await lab.deliver(name, T0, 'w', { ledger })).toBe('ack');
    expect(faulty.injected).toEqual(['UpdateItemCommand']);
    expect(executions()).toBe(1);
    expect(await lab.run(name, T0)).toMatchObject({ status: RunStatus.SUCCEEDED, attempt: 1 });
    expect(lab.metrics.get('ClaimConflicts')).toBe(0);
    expect(lab.queue.hidden).toEqual([]);
    faulty.destroy();
  });

  it("a claim that throws (the ledger unreachable past the SDK's retries) hides its message for seconds, not the queue's visibility timeout", async () => {
    const { name, lab, executions } = setup({ run: async () => undefined });
    await lab.create(name, T0);
    const faulty = faultyClient(box.endpoints.dynamoEndpoint, [{ when: isClaim, fault: 'refused', times: 3 }], 3);
    const ledger = new Ledger(faulty.doc, { tableName: box.endpoints.ledgerTable });
    const { processBatch } = await import('../../shared/worker/batch.js');
    const result = await processBatch(lab.deps('w', { ledger }), [lab.record(name, T0)]);
    expect(result.batchItemFailures).toHaveLength(1);
    expect(lab.metrics.get('WorkerRecordErrors')).toBe(1);
    expect(lab.queue.hidden).toHaveLength(1);
    expect(lab.queue.hidden[0]!.seconds).toBeLessThanOrEqual(60);
    expect(executions()).toBe(0);
    // The next delivery claims normally.
    expect(await lab.deliver(name, T0)).toBe('ack');
    expect(executions()).toBe(1);
    faulty.destroy();
  });

  it('evidence too large for the item is stored truncated with a marker; the run still SUCCEEDS', async () => {
    const huge = { rows: 'x'.repeat(500_000) };
    const { name, lab } = setup({ run: async () => ({ evidence: huge }) });
    await lab.create(name, T0);
    expect(await lab.deliver(name, T0)).toBe('ack');
    const run = (await lab.run(name, T0))!;
    expect(run.status).toBe(RunStatus.SUCCEEDED);
    const stored = run.evidence as TruncatedEvidence;
    expect(stored).toMatchObject({ truncated: true, chars: JSON.stringify(huge).length });
    expect(JSON.stringify(stored).length).toBeLessThan(MAX_EVIDENCE_CHARS);
  });

  it('evidence nesting 40 levels (DynamoDB refuses an item nesting more than 32) is stored as a marker with its text; the run still SUCCEEDS', async () => {
    const deep = Array.from({ length: 40 }).reduce<unknown>((inner) => [inner], 'x');
    const { name, lab } = setup({ run: async () => ({ evidence: deep }) });
    await lab.create(name, T0);
    expect(await lab.deliver(name, T0)).toBe('ack');
    const run = (await lab.run(name, T0))!;
    expect(run.status).toBe(RunStatus.SUCCEEDED);
    expect(run.evidence).toEqual({ truncated: true, chars: JSON.stringify(deep).length, head: JSON.stringify(deep) });
  });

  it('an error message too large is stored truncated; the retry budget is spent as usual', async () => {
    const { name, lab } = setup({
      run: async () => {
        throw new RetryableError('y'.repeat(300_000));
      },
    });
    await lab.create(name, T0);
    expect(await lab.deliver(name, T0)).toBe('retry');
    const run = (await lab.run(name, T0))!;
    expect(run.status).toBe(RunStatus.RETRY);
    expect(run.lastError!.message.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
    expect(run.lastError!.message).toMatch(/truncated: 300000 characters/);
  });

  it('a checkpoint too large to store is refused to the handler, which can react before its attempt ends', async () => {
    let refused: unknown;
    const { name, lab } = setup({
      run: async (ctx) => {
        try {
          await ctx.checkpoint({ blob: 'z'.repeat(MAX_CHECKPOINT_CHARS) });
        } catch (error) {
          refused = error;
        }
        await ctx.checkpoint({ at: 42 });
      },
    });
    await lab.create(name, T0);
    expect(await lab.deliver(name, T0)).toBe('ack');
    expect(refused).toBeInstanceOf(CheckpointTooLargeError);
    expect(await lab.run(name, T0)).toMatchObject({ status: RunStatus.SUCCEEDED, checkpoint: { at: 42 } });
  });

  it('a checkpoint nesting 40 levels is refused to the handler, which can react; a flat one is stored', async () => {
    let refused: unknown;
    const deep = Array.from({ length: 40 }).reduce<unknown>((inner) => [inner], 'x');
    const { name, lab } = setup({
      run: async (ctx) => {
        try {
          await ctx.checkpoint(deep);
        } catch (error) {
          refused = error;
        }
        await ctx.checkpoint({ at: 43 });
      },
    });
    await lab.create(name, T0);
    expect(await lab.deliver(name, T0)).toBe('ack');
    expect(refused).toBeInstanceOf(CheckpointTooLargeError);
    expect(await lab.run(name, T0)).toMatchObject({ status: RunStatus.SUCCEEDED, checkpoint: { at: 43 } });
  });

  it('the run keeps each attempt in its history, bounded, and a success clears the last error', async () => {
    let calls = 0;
    const { name, lab } = setup({
      run: async () => {
        calls++;
        if (calls < 3) throw new RetryableError(`failure ${calls}`, { code: 'FLAKY' });
      },
    });
    await lab.create(name, T0);
    await lab.deliver(name, T0);
    await lab.deliver(name, T0);
    await lab.deliver(name, T0);
    const run = (await lab.run(name, T0))!;
    expect(run.status).toBe(RunStatus.SUCCEEDED);
    expect(run.lastError).toBeUndefined();
    expect(run.attempts!.map((a) => [a.claim, a.outcome, a.code])).toEqual([
      [1, RunStatus.RETRY, 'FLAKY'],
      [2, RunStatus.RETRY, 'FLAKY'],
      [3, RunStatus.SUCCEEDED, undefined],
    ]);
  });
});
