/**
 * Operators reviving and closing runs: a revival of a run whose last result is unknown reconciles
 * before running again (redrive and retry alike); ops judge a lease by a safe margin, not by their
 * own clock, and taking over a RUNNING run advances its fence so a live holder is stopped; a DEAD
 * run runs again with `ops retry` once its cause is fixed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { LedgerOps } from '../../shared/store/repairs.js';
import { messageFor } from '../../shared/core/run-message.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { AttemptEndedError, ReconcileOutcome, ResultUnknownError, RetryableError, type JobHandler } from '../../shared/handler-api.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { redrive } from '../../shared/operations/redrive.js';
import { laneHandOn } from '../../shared/operations/resolve.js';
import { resolveRun } from '../../tools/ops/resolve.js';
import { retryRuns } from '../../shared/operations/retry.js';
import { testJobs, waitFor } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { opsSandbox, type Sandbox } from '../support/stack.js';

const MIN = 60_000;

describe('ops revival and takeover', () => {
  let box: Sandbox;
  let ops: LedgerOps;
  beforeAll(async () => {
    ({ box, ops } = await opsSandbox());
  });
  afterAll(() => box.destroy());

  /** A job whose effect lands and then reports the result unknown; reconcile says it happened. */
  function unknownThenReconciled(extra: Record<string, unknown> = {}) {
    const name = `unk-${Math.random().toString(36).slice(2, 8)}`;
    const calls = { run: 0, reconcile: 0 };
    const handler: JobHandler = {
      async run() {
        calls.run++;
        throw new ResultUnknownError('the charge call timed out after it was sent', { code: 'CHARGE_TIMEOUT' });
      },
      async reconcile() {
        calls.reconcile++;
        return { outcome: ReconcileOutcome.ALREADY_DONE, evidence: { charge: 'ch_1' } };
      },
    };
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, retry: { maxAttempts: 1 }, ...extra }], ['h']);
    const now = Math.floor(Date.now() / MIN) * MIN;
    return { name, calls, lab: new Lab(box, jobs, { h: handler }, now), slot: now - MIN };
  }

  it('ops retry of a run that went DEAD after a result-unknown attempt revives it UNKNOWN: the next claim reconciles and does not run it again', async () => {
    const { name, calls, lab, slot } = unknownThenReconciled();
    await lab.create(name, slot);
    await lab.deliver(name, slot);
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.DEAD, resultUnknown: true });
    const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [
      (await lab.run(name, slot))!,
    ]);
    expect(entry).toMatchObject({ action: 'revived', to: RunStatus.UNKNOWN });
    await lab.deliverSent();
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.SUCCEEDED, evidence: { charge: 'ch_1' } });
    expect(calls).toEqual({ run: 1, reconcile: 1 });
  });

  it('ops redrive of such a run from the DLQ reconciles first too', async () => {
    const { name, calls, lab, slot } = unknownThenReconciled();
    await lab.create(name, slot);
    await lab.deliver(name, slot);
    expect(await lab.status(name, slot)).toBe(RunStatus.DEAD);
    // Its message ended in the DLQ (say, a crash loop before it went DEAD).
    const run = (await lab.run(name, slot))!;
    await box.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, MessageBody: JSON.stringify(messageFor(run)) }),
    );
    const arn = async (url: string) =>
      (await box.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
    const report = await redrive(
      {
        sqs: box.clients.sqs,
        ledger: box.ledger,
        ops,
        jobs: lab.jobs,
        deadLetterQueueUrl: box.endpoints.deadLetterQueueUrl,
        deadLetterQueueArn: () => arn(box.endpoints.deadLetterQueueUrl),
        runQueueArn: () => arn(box.endpoints.runQueueUrl),
        clock: lab.clock.read,
      },
      { maxPerSecond: 50 },
    );
    expect(report.revived).toBe(1);
    expect(await lab.status(name, slot)).toBe(RunStatus.UNKNOWN);
    await lab.deliver(name, slot);
    expect(await lab.status(name, slot)).toBe(RunStatus.SUCCEEDED);
    expect(calls).toEqual({ run: 1, reconcile: 1 });
  });

  it('a crash-looped RUNNING run revived by an operator restarts UNKNOWN with its fence advanced: the vanished holder cannot finish it', async () => {
    const { name, calls, lab, slot } = unknownThenReconciled({ retry: { maxAttempts: 2 } });
    await lab.create(name, slot);
    const claim = await box.ledger.claim(lab.id(name, slot), 'vanished', lab.clock.now - 5 * MIN, 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    const revived = await ops.reviveRun((await lab.run(name, slot))!, { now: lab.clock.now });
    expect(revived.ok && revived.run).toMatchObject({ status: RunStatus.UNKNOWN, fencingToken: claim.run.fencingToken + 1 });
    expect((await box.ledger.complete(claim.run, { status: RunStatus.SUCCEEDED }, lab.clock.now)).ok).toBe(false);
    await lab.deliver(name, slot);
    expect(await lab.status(name, slot)).toBe(RunStatus.SUCCEEDED);
    expect(calls).toEqual({ run: 0, reconcile: 1 });
  });

  it("resolve judges a lease by a margin, not by the operator's clock: a laptop 25 s fast cannot close a run with 20 s of lease left", async () => {
    const name = `live-${Math.random().toString(36).slice(2, 8)}`;
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0 }], ['h']);
    const lab = new Lab(box, jobs, { h: { run: async () => undefined } }, Date.now());
    await lab.create(name, lab.clock.now - MIN);
    const claim = await box.ledger.claim(lab.id(name, lab.clock.now - MIN), 'live', lab.clock.now, 20_000, 2_000);
    expect(claim.kind).toBe('claimed');
    const laptop = () => lab.clock.now + 25_000;
    await expect(
      resolveRun(
        { ledger: box.ledger, ops, clock: laptop },
        { id: lab.id(name, lab.clock.now - MIN), as: 'dead', reason: 'stuck?', by: 'op' },
      ),
    ).rejects.toThrow(/not 60s past by this machine's clock/);
    expect(await lab.status(name, lab.clock.now - MIN)).toBe(RunStatus.RUNNING);
  });

  it('resolve --force takes over a live holder: its fence advances, its next heartbeat is refused, its handler is stopped and its later writes are refused', async () => {
    const name = `force-${Math.random().toString(36).slice(2, 8)}`;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const late: string[] = [];
    let started = false;
    const handler: JobHandler = {
      async run(ctx) {
        started = true;
        await held;
        try {
          await ctx.fenced.put({ table: ctx.tables.ledger, item: { pk: `FORCE#${name}`, sk: 'W' } });
          late.push('landed');
        } catch (error) {
          late.push(error instanceof AttemptEndedError ? 'refused' : String(error));
        }
      },
    };
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, lease: '1500ms', heartbeatEvery: '300ms' }], ['h']);
    const lab = new Lab(box, jobs, { h: handler }, Date.now());
    const slot = Math.floor(Date.now() / 1000) * 1000 - MIN;
    await lab.create(name, slot);
    const holder = lab.deliver(name, slot, 'holder', { clock: Date.now });
    await waitFor(async () => (started ? true : undefined), 120_000, 'the holder to start');
    await resolveRun(
      { ledger: box.ledger, ops, clock: Date.now, handOn: laneHandOn(box.ledger, lab.queue, jobs, Date.now) },
      { id: lab.id(name, slot), as: 'succeeded', reason: 'done by hand', by: 'op', force: true },
    );
    // The holder's next heartbeat is refused: the signal aborts, the attempt ends.
    await waitFor(async () => (lab.events.some((e) => e.type === 'heartbeat' && !e.ok) ? true : undefined), 120_000, 'a refused heartbeat');
    expect(await holder).toBe('retry');
    // The handler was left behind (it ignores its signal); when it wakes, its write is refused.
    release();
    await waitFor(async () => (late.length > 0 ? true : undefined), 120_000, 'the stale write');
    expect(late).toEqual(['refused']);
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.MANUAL });
  });

  it('ops retry of a slot the planner created SKIPPED (terminal from the start, with no attempt history) runs it and records its outcome', async () => {
    const name = `ended-${Math.random().toString(36).slice(2, 8)}`;
    let runs = 0;
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, retry: { maxAttempts: 2 } }], ['h']);
    const now = Math.floor(Date.now() / MIN) * MIN;
    const lab = new Lab(box, jobs, { h: { run: async () => void runs++ } }, now);
    const ended = [
      { slot: now - 3 * MIN, status: RunStatus.SKIPPED, reason: 'forbid-skip' },
      { slot: now - 2 * MIN, status: RunStatus.SKIPPED, reason: 'misfire skip' },
    ] as const;
    for (const e of ended) {
      const created = await box.ledger.createRun({ job: name, slot: e.slot, shard: 0, shards: 1, status: e.status, reason: e.reason }, now);
      expect(created.created).toBe(true);
      const [entry] = await retryRuns(
        { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
        lab.job(name),
        [(await lab.run(name, e.slot))!],
        { states: [e.status] },
      );
      expect(entry).toMatchObject({ action: 'revived', to: RunStatus.READY });
    }
    // Without a history map every outcome write of these runs was rejected (an invalid document path).
    expect(await lab.deliverSent()).toHaveLength(2);
    for (const e of ended) {
      const run = await lab.run(name, e.slot);
      expect(run).toMatchObject({ status: RunStatus.SUCCEEDED, revivals: 1 });
      expect(run?.attempts?.map((a) => a.outcome)).toEqual([RunStatus.SUCCEEDED]);
    }
    expect(runs).toBe(2);
    expect(lab.logs.filter((l) => l.level === 'error')).toEqual([]);
  });

  /**
   * A job whose handler charges (its own item per run) and then writes a shared item every slot
   * writes; reconcile says the run is done when its charge is there.
   */
  function chargeThenShared(overlap: 'parallel' | 'replace' = 'parallel') {
    const name = `sup-${Math.random().toString(36).slice(2, 8)}`;
    const calls = { run: 0, reconcile: 0 };
    const charge = (runKey: string) => ({ pk: `CHARGE#${name}`, sk: runKey });
    const handler: JobHandler = {
      async run(ctx) {
        calls.run++;
        await ctx.fenced.put({ table: ctx.tables.ledger, item: { ...charge(ctx.runKey), charged: true } });
        await ctx.fenced.put({ table: ctx.tables.ledger, item: { pk: `SHARED#${name}`, sk: 'CURRENT', slot: ctx.slot } });
      },
      async reconcile(ctx) {
        calls.reconcile++;
        const done = await ctx.reader.get(ctx.tables.ledger, charge(ctx.runKey));
        return done ? { outcome: ReconcileOutcome.ALREADY_DONE, evidence: { charged: true } } : { outcome: ReconcileOutcome.NOT_DONE };
      },
    };
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', overlap, startLead: 0, retry: { maxAttempts: 2 } }], ['h']);
    const now = Math.floor(Date.now() / MIN) * MIN;
    return { name, calls, lab: new Lab(box, jobs, { h: handler }, now), now };
  }

  it('ops retry of a run a newer slot fenced out mid-attempt revives it UNKNOWN: its charge had landed, so the next claim reconciles and does not charge again', async () => {
    const { name, calls, lab, now } = chargeThenShared();
    const [older, newer] = [now - 2 * MIN, now - MIN];
    await lab.create(name, older);
    await lab.create(name, newer);
    await lab.deliver(name, newer);
    // The older slot comes late: its charge lands, then the shared item refuses it.
    await lab.deliver(name, older);
    expect(await lab.run(name, older)).toMatchObject({
      status: RunStatus.SUPERSEDED,
      resultUnknown: true,
      lastError: { code: 'SUPERSEDED_BY_NEWER_SLOT' },
    });
    const [entry] = await retryRuns(
      { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
      lab.job(name),
      [(await lab.run(name, older))!],
      { states: [RunStatus.SUPERSEDED] },
    );
    expect(entry).toMatchObject({ action: 'revived', to: RunStatus.UNKNOWN });
    await lab.deliverSent();
    expect(await lab.run(name, older)).toMatchObject({ status: RunStatus.SUCCEEDED, evidence: { charged: true } });
    expect(calls).toEqual({ run: 2, reconcile: 1 });
  });

  it('ops retry of a run replaced while RUNNING (overlap replace) revives it UNKNOWN: the replaced attempt may have had its effect', async () => {
    const { name, calls, lab, now } = chargeThenShared('replace');
    const slot = now - MIN;
    await lab.create(name, slot);
    const claim = await box.ledger.claim(lab.id(name, slot), 'replaced-worker', lab.clock.now, 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    expect(await box.ledger.replaceRunning(claim.run, `${name}@later`, lab.clock.now)).toBe(true);
    expect(await lab.run(name, slot)).toMatchObject({ status: RunStatus.SUPERSEDED, resultUnknown: true, lastError: { code: 'REPLACED' } });
    const [entry] = await retryRuns(
      { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
      lab.job(name),
      [(await lab.run(name, slot))!],
      { states: [RunStatus.SUPERSEDED] },
    );
    expect(entry).toMatchObject({ action: 'revived', to: RunStatus.UNKNOWN });
    await lab.deliverSent();
    // Nothing was charged (the replaced worker here did nothing): reconcile says so, and it runs.
    expect(await lab.status(name, slot)).toBe(RunStatus.SUCCEEDED);
    expect(calls).toEqual({ run: 1, reconcile: 1 });
  });

  it('ops retry of a run whose slot is still ahead delays its message to the fire time instead of sending it now (the handler would start early)', async () => {
    const name = `ahead-${Math.random().toString(36).slice(2, 8)}`;
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: '2s', overlap: 'forbid-skip' }], ['h']);
    const now = Math.floor(Date.now() / MIN) * MIN + 15_000;
    // No message is delivered here: only what retry sends, and when, is looked at.
    const lab = new Lab(box, jobs, { h: { run: async () => undefined } }, now);
    // A slot the overlap policy skipped before it came, 45 s ahead.
    const slot = now + 45_000;
    await box.ledger.createRun(
      { job: name, slot, shard: 0, shards: 1, status: RunStatus.SKIPPED, reason: 'skipped: run still open (forbid-skip)' },
      now - 20_000,
    );
    const [entry] = await retryRuns(
      { ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read },
      lab.job(name),
      [(await lab.run(name, slot))!],
      { states: [RunStatus.SKIPPED] },
    );
    expect(entry).toMatchObject({
      action: 'revived',
      to: RunStatus.READY,
      detail: `waits for its fire time ${new Date(slot).toISOString()}`,
    });
    // Visible startLead before the fire time, as the planner would send it: 45 s - 2 s.
    expect(lab.queue.sent.map((m) => [m.message.runKey, m.delaySeconds])).toEqual([[`${name}@${new Date(slot).toISOString()}`, 43]]);
    // A run whose slot has come is sent now.
    const past = now - MIN;
    await box.ledger.createRun({ job: name, slot: past, shard: 0, shards: 1, status: RunStatus.SKIPPED, reason: 'skipped' }, past);
    lab.queue.take();
    await retryRuns({ ledger: box.ledger, ops, queue: lab.queue, clock: lab.clock.read }, lab.job(name), [(await lab.run(name, past))!], {
      states: [RunStatus.SKIPPED],
    });
    expect(lab.queue.sent.map((m) => m.delaySeconds)).toEqual([0]);
  });

  it('ops retry runs a DEAD run again once its cause is fixed (the CLI, by run key and by job)', async () => {
    const name = `fix-${Math.random().toString(36).slice(2, 8)}`;
    let broken = true;
    const handler: JobHandler = {
      async run() {
        if (broken) throw new RetryableError('downstream is down', { code: 'DOWN' });
      },
    };
    const jobs = testJobs([{ name, schedule: '* * * * *', handler: 'h', startLead: 0, retry: { maxAttempts: 1 } }], ['h']);
    const now = Math.floor(Date.now() / MIN) * MIN;
    const lab = new Lab(box, jobs, { h: handler }, now);
    const [a, b] = [now - 2 * MIN, now - MIN];
    for (const s of [a, b]) {
      await lab.create(name, s);
      await lab.deliver(name, s);
      expect(await lab.status(name, s)).toBe(RunStatus.DEAD);
    }
    broken = false;
    const endpoints = join(mkdtempSync(join(tmpdir(), 'ops-retry-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify(box.endpoints));
    const out: string[] = [];
    const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => out.push(l), now: () => now, jobs, env: { USER: 'op' } };
    expect(await runOps(['retry', `${name}@${new Date(a).toISOString()}`, '--endpoints', endpoints, '--json'], io)).toBe(0);
    expect(await runOps(['retry', '--job', name, '--state', 'DEAD', '--endpoints', endpoints, '--json'], io)).toBe(0);
    // Both revived READY with a fresh budget; their messages are on the run queue.
    for (const s of [a, b]) expect(await lab.run(name, s)).toMatchObject({ status: RunStatus.READY, attempt: 0 });
    for (const s of [a, b]) await lab.deliver(name, s);
    for (const s of [a, b]) expect(await lab.status(name, s)).toBe(RunStatus.SUCCEEDED);
    // A SUCCEEDED run is not retried: exit 1, one line.
    const refused: string[] = [];
    expect(
      await runOps(['retry', `${name}@${new Date(a).toISOString()}`, '--endpoints', endpoints], { ...io, stdout: (l) => refused.push(l) }),
    ).toBe(1);
    expect(refused.join('\n')).toMatch(/SUCCEEDED: only DEAD, SKIPPED, SUPERSEDED runs are retried here \(it succeeded\)/);
  });
});
