/**
 * The console's bulk actions and the detail the pages add, in Chromium against the shared local
 * stack: the backfill dialog (range in the job's zone, the dry run's count and warnings before
 * confirming, the runs created), the dead-letter queue's messages and redrive, retry all DEAD
 * runs (per run what happened), each refused without the CSRF token and in read-only mode; a
 * pause until a time of day (its next occurrence on the job's clock); the
 * Run page's reconcile column and outbox events, the Job page's lane holder, the System page's
 * sweeper cursor.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReconcileAnswer } from '../../shared/core/attempt-notes.js';
import { messageFor } from '../../shared/core/run-message.js';
import { RunOrigin, RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import type { Sandbox } from '../support/stack.js';
import { testJobs } from '../support/helpers.js';
import { consoleBench, type ConsoleBench } from '../support/console-browser.js';

const SEC = 1_000;
const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 11, 1, 12, 0, 30);
const JOBS = testJobs([
  { name: 'report', schedule: '0 * * * *', handler: 'noop', timezone: 'America/New_York', overlap: 'forbid-skip' },
  { name: 'sync', schedule: '*/5 * * * *', handler: 'noop', overlap: 'parallel' },
  { name: 'cache', schedule: '*/10 * * * *', handler: 'noop', overlap: 'parallel', effects: 'latest-wins' },
]);
const LEASE = 10 * SEC;
const SKEW = 2 * SEC;
const S_DLQ = NOW - 6 * HOUR - 30 * SEC;
const S_DEAD = NOW - 5 * HOUR - 30 * SEC;
const S_RECONCILED = NOW - 4 * HOUR - 30 * SEC;
const S_LANE = NOW - HOUR - 30 * SEC;
const S_SYNC_DEAD = NOW - 2 * HOUR - 30 * SEC;
const id = (job: string, slot: number): RunId => ({ job, slot, shard: 0 });
const key = (slot: number, job = 'report') => runKeyOf(job, slot, 0, 1);
/** The sweeper's cursor on partition 0: bucket 3 resumes after the S_DLQ run. */
const CURSOR = JSON.stringify([[3, `OPEN#${S_DLQ}`, 'JOB#report', `RUN#${new Date(S_DLQ).toISOString()}#0`]]);

async function claim(box: Sandbox, job: string, slot: number, owner: string, at: number): Promise<Run> {
  const c = await box.ledger.claim(id(job, slot), owner, at, LEASE, SKEW);
  if (c.kind !== 'claimed') throw new Error(`claim by ${owner}: ${c.kind}`);
  return c.run;
}

async function dead(box: Sandbox, job: string, slot: number): Promise<Run> {
  await box.ledger.createRun({ job, slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
  const run = await claim(box, job, slot, `worker-${job}`, slot + 100);
  await box.ledger.complete(run, { status: RunStatus.DEAD, lastError: { code: 'BANK_DOWN', message: 'bank API refused' } }, slot + 900, {
    from: RunStatus.READY,
  });
  return run;
}

async function seed(box: Sandbox): Promise<void> {
  const inDlq = await dead(box, 'sync', S_DLQ);
  await dead(box, 'report', S_DEAD);
  await dead(box, 'sync', S_SYNC_DEAD);
  // A run whose first attempt's result is unknown; the second claim reconciles first, then succeeds.
  await box.ledger.createRun({ job: 'report', slot: S_RECONCILED, shard: 0, shards: 1, status: RunStatus.READY }, S_RECONCILED - SEC);
  const first = await claim(box, 'report', S_RECONCILED, 'worker-a', S_RECONCILED + 100);
  await box.ledger.complete(
    first,
    { status: RunStatus.UNKNOWN, nextAttemptAt: S_RECONCILED + 2 * SEC, lastError: { code: 'TIMEOUT', message: 'attempt timed out' } },
    S_RECONCILED + 900,
    { from: RunStatus.READY },
  );
  const second = await claim(box, 'report', S_RECONCILED, 'worker-b', S_RECONCILED + 3 * SEC);
  // What its reconcile answered, as the worker records it with the outcome.
  await box.ledger.complete(second, { status: RunStatus.SUCCEEDED, evidence: { settled: 2 } }, S_RECONCILED + 4 * SEC, {
    from: RunStatus.UNKNOWN,
    reconcile: { answer: ReconcileAnswer.NOT_DONE, at: S_RECONCILED + 3 * SEC + 200 },
  });
  await box.clients.doc.send(
    new PutCommand({
      TableName: box.ledger.tableName,
      Item: {
        pk: 'OUTBOX#report',
        sk: `${key(S_RECONCILED)}#settled`,
        eventKey: `${key(S_RECONCILED)}#settled`,
        job: 'report',
        runKey: key(S_RECONCILED),
        detailType: 'PaymentSettled',
        detail: { paymentId: 'pay-7' },
        expiresAt: Math.floor(NOW / 1000) + 86_400,
      },
    }),
  );
  // The lane of the forbid-skip job, held by a RUNNING run.
  await box.ledger.createRun({ job: 'report', slot: S_LANE, shard: 0, shards: 1, status: RunStatus.READY }, S_LANE - SEC);
  const holder = await claim(box, 'report', S_LANE, 'worker-l', NOW - 5 * SEC);
  await box.ledger.lanes.acquire('report', { slot: S_LANE, shard: 0 }, NOW - 5 * SEC, undefined, holder.fencingToken);
  // Two messages in the dead-letter queue: a DEAD run's, and one that is no run message.
  await box.clients.sqs.send(
    new SendMessageCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, MessageBody: JSON.stringify(messageFor(inDlq)) }),
  );
  await box.clients.sqs.send(new SendMessageCommand({ QueueUrl: box.endpoints.deadLetterQueueUrl, MessageBody: 'not json' }));
  await box.ledger.planning.writeLayout(
    undefined,
    { of: 1, gen: 1, partitions: new Map([[0, { plannedUntil: NOW - 60 * SEC, sweptUntil: NOW - 120 * SEC, watchAfter: CURSOR }]]) },
    NOW,
  );
}

describe("the console's bulk actions and run detail in Chromium", () => {
  let c: ConsoleBench;
  const text = (selector: string) => c.page.locator(selector).innerText();

  beforeAll(async () => {
    c = await consoleBench(JOBS, NOW, seed);
  }, 120_000);

  afterAll(async () => {
    await c?.close();
  });

  it("refuses each bulk action without the session's CSRF token and in read-only mode", async () => {
    const forms: Record<string, Record<string, string>> = {
      backfill: { job: 'report', from: '2026-11-30T07:00', to: '2026-11-30T10:00' },
      redrive: { dlq: 'dlq' },
      'retry-all': { jobs: '*' },
    };
    await c.open('/');
    for (const [action, form] of Object.entries(forms)) {
      expect(await c.postFromPage(`/actions/${action}`, form), action).toBe(403);
      expect(await c.postFromPage(`/actions/${action}`, { ...form, csrf: 'x'.repeat(43) }), action).toBe(403);
    }
    await c.open('/attention', c.readOnly);
    expect(await c.page.locator('a[data-action]').count()).toBe(0);
    await c.open('/jobs/report', c.readOnly);
    expect(await c.page.locator('a[data-action]').count()).toBe(0);
    for (const [action, form] of Object.entries(forms)) {
      const subject = Object.entries(form)[0]!;
      const confirm = await c.page.goto(new URL(`/confirm/${action}?${subject[0]}=${encodeURIComponent(subject[1])}`, c.readOnly.url).href);
      expect(confirm!.status(), action).toBe(403);
      expect(await c.postFromPage(`/actions/${action}`, form), action).toBe(403);
    }
    expect((await c.box.ledger.listRuns('report')).filter((r) => r.origin === RunOrigin.BACKFILL)).toHaveLength(0);
    expect((await c.box.ledger.getRun(id('report', S_DEAD)))!.status).toBe(RunStatus.DEAD);
  });

  it("backfill: the range is typed in the job's zone, the dry run counts it first, confirming creates the runs and says how many", async () => {
    await c.open('/jobs/report');
    await c.page.click('a[data-action="backfill"]');
    expect(await text('form.preview')).toContain('America/New_York');
    // 07:00 to 10:00 in New York (UTC-5): the slots 12:00, 13:00 and 14:00 UTC.
    await c.page.fill('input[name=from]', '2026-11-30T07:00');
    await c.page.fill('input[name=to]', '2026-11-30T10:00');
    await c.page.click('#preview');
    const dry = await text('#dry-run');
    expect(dry).toContain('report has 3 slot(s) (3 run(s)) in [2026-11-30T12:00:00.000Z, 2026-11-30T15:00:00.000Z)');
    expect(dry).toContain('0 already in the ledger: 3 would be created.');
    const backfilled = async () => (await c.box.ledger.listRuns('report')).filter((r) => r.origin === RunOrigin.BACKFILL);
    expect(await backfilled()).toHaveLength(0);
    await c.page.click('#confirm');
    expect(await text('#result')).toContain(
      'Created 3 run(s) of report in [2026-11-30T12:00:00.000Z, 2026-11-30T15:00:00.000Z); 0 already existed; 3 dispatched.',
    );
    expect((await backfilled()).map((r) => r.slot).sort()).toEqual([12, 13, 14].map((h) => Date.UTC(2026, 10, 30, h)));
  });

  it("pause until a time of day: the dialog offers it, and 06:00, already past on the job's clock, is tomorrow's 06:00 in its zone", async () => {
    await c.open('/jobs/report');
    await c.page.click('a[data-action="pause"]');
    expect(await text('main')).toContain('a time of day such as 14:00');
    await c.page.fill('input[name=note]', 'nightly vendor window');
    // Now is 07:00:30 in New York: its 06:00 has passed today.
    await c.page.fill('input[name=until]', '06:00');
    await c.page.click('#confirm');
    const until = Date.UTC(2026, 11, 2, 11, 0);
    expect(await text('#result')).toContain(
      'Paused report (note: nightly vendor window), by alice at 2026-12-01T12:00:30.000Z, until 2026-12-02T11:00:00.000Z, when it resumes by itself',
    );
    expect((await c.box.ledger.planning.readJobPlan('report'))?.pause).toMatchObject({ by: 'alice', until });
    await c.open('/');
    expect(await text('tr[data-job="report"] .badge.paused')).toContain(
      'until 2026-12-02T11:00:00Z (2026-12-02 06:00:00 -05:00 America/New_York)',
    );
    // The other tests act on report unpaused.
    await c.open('/jobs/report');
    await c.page.click('a[data-action="resume"]');
    await c.page.click('#confirm');
    expect((await c.box.ledger.planning.readJobPlan('report'))?.pause).toBeUndefined();
  });

  it('backfill: the dry run shows the latest-wins warning, and a range in the future is refused before anything is offered', async () => {
    await c.open('/confirm/backfill?job=cache&from=2026-12-01T10:00&to=2026-12-01T11:00');
    expect(await text('#dry-run')).toContain('cache has 6 slot(s)');
    expect(await text('#warnings')).toContain('SUPERSEDED_BY_NEWER_SLOT');
    await c.open('/confirm/backfill?job=report&from=2026-12-01T07:00&to=2026-12-01T09:00');
    expect(await text('#dry-run')).toContain('is in the future');
    expect(await c.page.locator('#confirm').count()).toBe(0);
  });

  it('Needs a person: the DLQ depth and a peek at its messages; redrive shows its dry run, then revives the DEAD run', async () => {
    await c.open('/attention');
    expect(await text('#dlq')).toContain('Dead-letter queue: 2 visible');
    await c.page.click('#dlq a[href="/attention/dlq"]');
    const rows = c.page.locator('table.dlq tbody tr');
    expect(await rows.count()).toBe(2);
    expect(await text('table.dlq')).toContain(key(S_DLQ, 'sync'));
    expect(await text('table.dlq')).toContain('not a run message');
    await c.page.click('a[data-action="redrive"]');
    expect(await text('#dry-run')).toContain(`(run ${key(S_DLQ, 'sync')}, DEAD): revived: would be revived (dry run).`);
    expect((await c.box.ledger.getRun(id('sync', S_DLQ)))!.status).toBe(RunStatus.DEAD);
    await c.page.click('#confirm');
    expect(await text('#result')).toContain('2 message(s): 1 revived');
    expect((await c.box.ledger.getRun(id('sync', S_DLQ)))!.status).toBe(RunStatus.READY);
  });

  it('retry all DEAD runs of every job: the dry run lists them, confirming says per run what happened (revived, or refused and why)', async () => {
    await c.open('/attention');
    await c.page.click('a[data-action="retry-all"][href$="jobs=*"]');
    const lane = 'refused (was DEAD): forbid-skip: the run of 2026-12-01T11:00:00.000Z holds the lane';
    const dry = await text('#dry-run');
    expect(dry).toContain(`${key(S_DEAD)}: ${lane}`);
    expect(dry).toContain(`${key(S_SYNC_DEAD, 'sync')}: would be revived, DEAD → READY.`);
    expect(dry).toContain('cache: no DEAD run to retry.');
    await c.page.click('#confirm');
    const result = await text('#result');
    expect(result).toContain(`${key(S_DEAD)}: ${lane}`);
    expect(result).toContain(`${key(S_SYNC_DEAD, 'sync')}: revived, DEAD → READY.`);
    expect((await c.box.ledger.getRun(id('report', S_DEAD)))!.status).toBe(RunStatus.DEAD);
    expect((await c.box.ledger.getRun(id('sync', S_SYNC_DEAD)))!.status).toBe(RunStatus.READY);
  });

  it('Run: each attempt says whether it asked reconcile and what it answered, and the outbox events the run wrote are listed', async () => {
    await c.open(`/runs/${encodeURIComponent(key(S_RECONCILED))}`);
    expect(await text('tr[data-claim="1"] td.reconcile')).toBe('not asked: the previous result was known');
    expect(await text('tr[data-claim="2"] td.reconcile')).toBe(`not-done · ${new Date(S_RECONCILED + 3 * SEC + 200).toISOString()}`);
    const event = c.page.locator(`#outbox tr[data-event="${key(S_RECONCILED)}#settled"]`);
    expect(await event.innerText()).toContain('PaymentSettled');
    expect(await event.innerText()).toContain('{"paymentId":"pay-7"}');
    await c.open(`/runs/${encodeURIComponent(key(S_LANE))}`);
    expect(await text('p#outbox')).toContain('None in the ledger');
  });

  it("Job: an exclusive job's lane holder is named and marked on the timeline; System shows the sweeper's cursor", async () => {
    await c.open('/jobs/report');
    expect(await c.page.locator('#lanes li[data-holder]').getAttribute('data-holder')).toBe(key(S_LANE));
    expect(await c.page.locator('svg.timeline text[data-lane-holder="true"]').textContent()).toBe(`lane ◆ ${key(S_LANE)}`);
    await c.open('/jobs/sync');
    expect(await text('#lanes')).toContain('no lane');
    await c.open('/system');
    expect(await text('tr[data-partition="0"] li[data-bucket="3"]')).toBe(
      `bucket 3: after JOB#report RUN#${new Date(S_DLQ).toISOString()}#0`,
    );
  });
});
