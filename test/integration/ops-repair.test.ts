/**
 * `ops redrive` and `ops resolve` against the local stack. Redrive revives DEAD runs (and RUNNING
 * ones that crash-looped through their last attempt), leaves SUCCEEDED runs alone, moves every DLQ
 * message back with StartMessageMoveTask, and the worker then executes the revived runs and acks
 * the succeeded one as a duplicate. Resolve refuses a live lease, an already-finished run and a
 * token that changed under it; it turns DEAD into MANUAL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { messageFor } from '../../shared/planner/planner.js';
import { processBatch } from '../../shared/worker/batch.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { OpsFailure } from '../../tools/ops/io.js';
import { resolveRun } from '../../tools/ops/resolve.js';
import { drain, testJobs, waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { workerDeps } from '../support/worker-harness.js';

const MINUTE = 60_000;

function capture(extra: Partial<OpsIo> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), ...extra };
  return { io, out, err, json: () => JSON.parse(out.join('\n')) as Record<string, unknown> };
}

function endpointsFile(box: Sandbox): string {
  const path = join(mkdtempSync(join(tmpdir(), 'ops-repair-')), 'endpoints.json');
  writeFileSync(path, JSON.stringify({ ...box.endpoints, partitions: 1 }));
  return path;
}

async function depth(box: Sandbox, url: string): Promise<number> {
  const { Attributes = {} } = await box.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible);
}

describe('ops redrive', () => {
  const JOBS = testJobs([{ name: 'rd', schedule: '* * * * *', handler: 'count', retry: { maxAttempts: 2 }, startLead: 0 }], ['count']);
  let box: Sandbox;
  let endpoints: string;
  const base = Math.floor(Date.now() / MINUTE) * MINUTE - 60 * MINUTE;
  const slot = { dead: base, succeeded: base + MINUTE, exhausted: base + 2 * MINUTE, ready: base + 3 * MINUTE, missing: base + 4 * MINUTE };
  const id = (s: number): RunId => ({ job: 'rd', slot: s, shard: 0 });
  const key = (s: number) => runKeyOf('rd', s, 0, 1);
  const before = new Map<number, Run>();

  beforeAll(async () => {
    // maxReceiveCount 1: a message received once and not deleted moves to the DLQ when it reappears.
    box = await sandbox({ maxReceiveCount: 1 });
    endpoints = endpointsFile(box);
    const create = (s: number) => box.ledger.createRun({ job: 'rd', slot: s, shard: 0, shards: 1, status: RunStatus.READY }, s);
    const claim = async (s: number, at: number) => {
      const c = await box.ledger.claim(id(s), `w-${at}`, at, 30_000, 2_000);
      if (c.kind !== 'claimed') throw new Error(`claim ${c.kind}`);
      return c.run;
    };
    for (const s of [slot.dead, slot.succeeded, slot.exhausted, slot.ready]) await create(s);
    await box.ledger.complete(
      await claim(slot.dead, slot.dead + 1_000),
      { status: RunStatus.DEAD, lastError: { code: 'E', message: 'gave up' } },
      slot.dead + 2_000,
    );
    await box.ledger.complete(await claim(slot.succeeded, slot.succeeded + 1_000), { status: RunStatus.SUCCEEDED }, slot.succeeded + 2_000);
    // Two takeovers of a worker that kept crashing: attempt 2 of 2, lease long expired.
    await claim(slot.exhausted, slot.exhausted + 1_000);
    await claim(slot.exhausted, slot.exhausted + 60_000);
    for (const s of Object.values(slot)) before.set(s, (await box.ledger.getRun(id(s)))!);

    for (const s of [slot.dead, slot.succeeded, slot.exhausted, slot.ready]) {
      await box.clients.sqs.send(
        new SendMessageCommand({
          QueueUrl: box.endpoints.runQueueUrl,
          MessageBody: JSON.stringify(messageFor({ job: 'rd', slot: s, shard: 0, runKey: key(s) })),
        }),
      );
    }
    const received = await drain(box.clients.sqs, box.endpoints.runQueueUrl, { expected: 4, visibilityTimeoutSeconds: 1 });
    expect(received).toHaveLength(4);
    // Straight to the DLQ: a message naming a run that does not exist, and a poison body.
    await box.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: box.endpoints.deadLetterQueueUrl,
        MessageBody: JSON.stringify(messageFor({ job: 'rd', slot: slot.missing, shard: 0, runKey: key(slot.missing) })),
      }),
    );
    await box.clients.sqs.send(new SendMessageCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, MessageBody: 'not json' }));
    await waitFor(
      async () => ((await depth(box, box.endpoints.deadLetterQueueUrl)) === 6 ? true : undefined),
      120_000,
      'six messages in the DLQ',
    );
  });
  afterAll(() => box.destroy());

  it('--dry-run classifies without changing a run or moving a message', async () => {
    const c = capture({ jobs: JOBS, env: { USER: 'carol' } });
    expect(await runOps(['redrive', '--dry-run', '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    expect(c.json()).toMatchObject({ messages: 6, revived: 2, skippedSucceeded: 1, open: 1, unknown: 2, dryRun: true });
    expect(c.json().taskHandle).toBeUndefined();
    expect((await box.ledger.getRun(id(slot.dead)))!.status).toBe(RunStatus.DEAD);
    // Released at once: all six visible again.
    const { Attributes = {} } = await box.clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    expect(Number(Attributes.ApproximateNumberOfMessages)).toBe(6);
  });

  it('revives DEAD and exhausted runs, skips SUCCEEDED, moves every message back; the worker runs only the revived and open ones', async () => {
    const c = capture({ jobs: JOBS, env: { USER: 'carol' } });
    expect(await runOps(['redrive', '--max-per-second', '50', '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    const report = c.json() as {
      messages: number;
      revived: number;
      skippedSucceeded: number;
      open: number;
      unknown: number;
      taskHandle?: string;
      entries: { runKey?: string; action: string }[];
    };
    expect(report).toMatchObject({ messages: 6, revived: 2, skippedSucceeded: 1, open: 1, unknown: 2 });
    expect(report.taskHandle).toEqual(expect.any(String));
    expect(
      report.entries
        .filter((e) => e.action === 'revived')
        .map((e) => e.runKey)
        .sort(),
    ).toEqual([key(slot.dead), key(slot.exhausted)].sort());

    // A DEAD run restarts READY; a crash-looped RUNNING one restarts UNKNOWN (its last result is
    // unknown: the next claim reconciles) with its fence advanced past the vanished holder's.
    const expectedAfterRevival = new Map([
      [slot.dead, { status: RunStatus.READY, fencingToken: before.get(slot.dead)!.fencingToken }],
      [slot.exhausted, { status: RunStatus.UNKNOWN, fencingToken: before.get(slot.exhausted)!.fencingToken + 1 }],
    ]);
    for (const s of [slot.dead, slot.exhausted]) {
      const revived = (await box.ledger.getRun(id(s)))!;
      expect(revived).toMatchObject({ ...expectedAfterRevival.get(s), attempt: 0 });
      expect(revived.finishedAt).toBeUndefined();
      expect(revived.expiresAt).toBeUndefined();
      expect(revived.nextAttemptAt).toBeUndefined();
    }
    const open = await box.ledger.listOpenRuns(Date.now(), 100);
    expect(open.map((r) => r.runKey)).toEqual(expect.arrayContaining([key(slot.dead), key(slot.exhausted)]));
    expect(await box.ledger.getRun(id(slot.succeeded))).toEqual(before.get(slot.succeeded));

    // The move task brings all six messages back to the run queue.
    const moved = await drain(box.clients.sqs, box.endpoints.runQueueUrl, { expected: 6, idleMs: 4_000, visibilityTimeoutSeconds: 300 });
    expect(moved).toHaveLength(6);
    expect(await depth(box, box.endpoints.deadLetterQueueUrl)).toBe(0);

    const executed: string[] = [];
    const count: JobHandler = {
      async run(ctx) {
        executed.push(ctx.runKey);
      },
    };
    const result = await processBatch(
      workerDeps(box, JOBS, { count }, 'after-redrive'),
      moved.map((m) => ({ messageId: m.MessageId!, receiptHandle: m.ReceiptHandle!, body: m.Body! })),
    );
    expect(executed.sort()).toEqual([key(slot.dead), key(slot.exhausted), key(slot.ready)].sort());
    for (const s of [slot.dead, slot.exhausted, slot.ready]) {
      const done = (await box.ledger.getRun(id(s)))!;
      expect(done.status).toBe(RunStatus.SUCCEEDED);
      // The next claim's token is larger than any the run handed out before the redrive (and, for
      // the taken-over RUNNING run, than the one the revival itself advanced to).
      expect(done.fencingToken).toBe(before.get(s)!.fencingToken + (s === slot.exhausted ? 2 : 1));
    }
    expect(await box.ledger.getRun(id(slot.succeeded))).toEqual(before.get(slot.succeeded));
    // The poison message and the one without a run stay failed (they go back to the DLQ).
    expect(result.batchItemFailures).toHaveLength(2);
  });

  it('an empty DLQ starts no move task', async () => {
    const own = await sandbox();
    const c = capture({ jobs: JOBS });
    expect(await runOps(['redrive', '--endpoints', endpointsFile(own)], c.io)).toBe(0);
    expect(c.out.join('\n')).toContain('DLQ is empty');
    own.destroy();
  });
});

describe('ops resolve', () => {
  const JOBS = testJobs([{ name: 'rs', schedule: '* * * * *', handler: 'noop' }]);
  let box: Sandbox;
  let endpoints: string;
  const base = Math.floor(Date.now() / MINUTE) * MINUTE - 30 * MINUTE;
  const id = (s: number): RunId => ({ job: 'rs', slot: s, shard: 0 });
  const key = (s: number) => runKeyOf('rs', s, 0, 1);
  beforeAll(async () => {
    box = await sandbox();
    endpoints = endpointsFile(box);
  });
  afterAll(() => box.destroy());

  async function runIn(status: 'READY' | 'DEAD' | 'SUCCEEDED' | 'RUNNING-live' | 'RUNNING-expired', s: number): Promise<Run> {
    await box.ledger.createRun({ job: 'rs', slot: s, shard: 0, shards: 1, status: RunStatus.READY }, s);
    if (status === 'READY') return (await box.ledger.getRun(id(s)))!;
    const at = status === 'RUNNING-live' ? Date.now() : s + 1_000;
    const c = await box.ledger.claim(id(s), 'w1', at, 60_000, 2_000);
    if (c.kind !== 'claimed') throw new Error(c.kind);
    if (status === 'DEAD')
      await box.ledger.complete(c.run, { status: RunStatus.DEAD, lastError: { code: 'X', message: 'broken input' } }, at + 10);
    if (status === 'SUCCEEDED') await box.ledger.complete(c.run, { status: RunStatus.SUCCEEDED }, at + 10);
    return (await box.ledger.getRun(id(s)))!;
  }

  it('refuses a RUNNING run with a live lease and an already SUCCEEDED run (exit 1, one line)', async () => {
    const live = base;
    await runIn('RUNNING-live', live);
    const c = capture({ jobs: JOBS });
    expect(await runOps(['resolve', key(live), '--as', 'succeeded', '--reason', 'done by hand', '--endpoints', endpoints], c.io)).toBe(1);
    expect(c.err).toHaveLength(1);
    expect(c.err[0]).toMatch(/RUNNING with a lease until .* not 60s past by this machine's clock/);
    expect((await box.ledger.getRun(id(live)))!.status).toBe(RunStatus.RUNNING);

    const done = base + MINUTE;
    await runIn('SUCCEEDED', done);
    const d = capture({ jobs: JOBS });
    expect(await runOps(['resolve', key(done), '--as', 'dead', '--reason', 'oops', '--endpoints', endpoints], d.io)).toBe(1);
    expect(d.err[0]).toContain('already SUCCEEDED');
  });

  it('refuses when the token changed between the read and the write', async () => {
    const s = base + 2 * MINUTE;
    await runIn('READY', s);
    // A worker claims the run right after the operator read it.
    const racingLedger = {
      getRun: async (runId: RunId, consistent?: boolean) => {
        const seen = await box.ledger.getRun(runId, consistent);
        await box.ledger.claim(runId, 'racer', Date.now(), 60_000, 2_000);
        return seen;
      },
    };
    const { LedgerOps } = await import('../../shared/store/repairs.js');
    const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
    await expect(
      resolveRun({ ledger: racingLedger, ops, clock: Date.now }, { id: id(s), as: 'dead', reason: 'stale', by: 'ops' }),
    ).rejects.toThrow(OpsFailure);
    await expect(
      resolveRun(
        {
          ledger: { getRun: async (runId: RunId) => ({ ...(await box.ledger.getRun(runId))!, status: RunStatus.READY, fencingToken: 1 }) },
          ops,
          clock: Date.now,
        },
        { id: id(s), as: 'dead', reason: 'stale', by: 'ops' },
      ),
    ).rejects.toThrow(/changed while resolving/);
    const current = (await box.ledger.getRun(id(s)))!;
    expect(current).toMatchObject({ status: RunStatus.RUNNING, owner: 'racer' });
  });

  it('DEAD → MANUAL with the resolution recorded; READY and expired RUNNING → DEAD (RESOLVED); both leave the open-runs index', async () => {
    const dead = base + 3 * MINUTE;
    const deadRun = await runIn('DEAD', dead);
    const c = capture({ jobs: JOBS, env: { USER: 'alice' } });
    expect(
      await runOps(['resolve', key(dead), '--as', 'succeeded', '--reason', 'paid by hand in the console', '--endpoints', endpoints], c.io),
    ).toBe(0);
    expect(c.out[0]).toContain('DEAD → MANUAL');
    const show = capture({ jobs: JOBS });
    expect(await runOps(['show', key(dead), '--endpoints', endpoints, '--json'], show.io)).toBe(0);
    expect(show.json()).toMatchObject({
      status: 'MANUAL',
      fencingToken: deadRun.fencingToken,
      resolution: { as: 'succeeded', reason: 'paid by hand in the console', by: 'alice', from: 'DEAD' },
    });

    const ready = base + 4 * MINUTE;
    await runIn('READY', ready);
    const expired = base + 5 * MINUTE;
    await runIn('RUNNING-expired', expired);
    for (const s of [ready, expired]) {
      const r = capture({ jobs: JOBS });
      expect(
        await runOps(
          ['resolve', key(s), '--as', 'dead', '--reason', 'input withdrawn', '--by', 'bob', '--endpoints', endpoints, '--json'],
          r.io,
        ),
      ).toBe(0);
      expect(r.json()).toMatchObject({ to: 'DEAD', by: 'bob' });
      const run = (await box.ledger.getRun(id(s)))!;
      expect(run).toMatchObject({ status: RunStatus.DEAD, lastError: { code: 'RESOLVED', message: 'input withdrawn' } });
      expect(run.leaseUntil).toBeUndefined();
    }
    const open = (await box.ledger.listOpenRuns(Date.now(), 100)).map((r) => r.runKey);
    for (const s of [dead, ready, expired]) expect(open).not.toContain(key(s));
  });

  it('usage errors name the field (exit 2)', async () => {
    const cases: [string[], string][] = [
      [['resolve', 'rs@2026-01-01T00:00:00.000Z', '--as', 'maybe', '--reason', 'x'], 'as'],
      [['resolve', 'rs@2026-01-01T00:00:00.000Z', '--as', 'dead'], 'reason'],
      [['resolve', 'not-a-key', '--as', 'dead', '--reason', 'x'], 'runKey'],
    ];
    for (const [args, field] of cases) {
      const c = capture({ jobs: JOBS });
      expect(await runOps([...args, '--endpoints', endpoints], c.io), field).toBe(2);
      expect(c.err).toHaveLength(1);
      expect(c.err[0]).toContain(`"${field}"`);
    }
  });
});
