/**
 * The operator console in a real browser (Debian's Chromium driven by playwright-core) against
 * the shared local stack: every page shows what the ledger holds, every action does what it says
 * (checked in the ledger), is refused in read-only mode and without the session's CSRF token, a
 * foreign Host or Origin is refused, and a page follows a run's state change without reloading.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobPlanning } from '../../shared/store/job-planning.js';
import { DeployedConfigStore } from '../../shared/store/deployed-config.js';
import { partitionOf } from '../../shared/core/partition.js';
import { slotSpecOf } from '../../shared/schedule/slots.js';
import { RunOrigin, RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { openConsole, type OpenConsole } from '../../tools/console/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { nextFires } from '../../tools/ops/preview.js';
import { testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const SEC = 1_000;
const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 11, 1, 12, 0, 30);
const JOBS = testJobs([
  { name: 'report', schedule: '0 * * * *', handler: 'noop', timezone: 'America/New_York', overlap: 'forbid-skip' },
  { name: 'sync', schedule: '*/5 * * * *', handler: 'noop', overlap: 'parallel' },
]);
const LEASE = 10 * SEC;
const SYNC_RUNS = 23;
const SKEW = 2 * SEC;
const S_TAKEOVER = NOW - 4 * HOUR - 30 * SEC;
const S_DEAD = NOW - 3 * HOUR - 30 * SEC;
const S_READY = NOW - 2 * HOUR - 30 * SEC;
const S_LIVE = NOW - HOUR - 30 * SEC;
const S_UNKNOWN = NOW - 5 * HOUR - 30 * SEC;
const id = (slot: number): RunId => ({ job: 'report', slot, shard: 0 });
const key = (slot: number) => runKeyOf('report', slot, 0, 1);
const ioOf = (): OpsIo => ({ stdout: () => undefined, stderr: () => undefined, now: () => NOW, jobs: JOBS, env: { USER: 'alice' } });

describe('the operator console in Chromium', () => {
  let box: Sandbox;
  let endpoints: string;
  let live: OpenConsole;
  let readOnly: OpenConsole;
  let browser: Browser;
  let page: Page;

  async function claim(slot: number, owner: string, at: number): Promise<Run> {
    const c = await box.ledger.claim(id(slot), owner, at, LEASE, SKEW);
    if (c.kind !== 'claimed') throw new Error(`claim by ${owner}: ${c.kind}`);
    return c.run;
  }

  async function open(path: string, on: OpenConsole = live): Promise<void> {
    await page.goto(new URL(path, on.url).href);
  }

  /** A POST from the page itself (same origin, its session cookie), so only the form differs. */
  async function postFromPage(path: string, form: Record<string, string>): Promise<number> {
    return page.evaluate(async ({ path, form }) => (await fetch(path, { method: 'POST', body: new URLSearchParams(form) })).status, {
      path,
      form,
    });
  }

  const pauseOf = async () => (await jobPlanning(box.ledger.planning, ['report'], partitionOf, Date.now())).get('report')!.pause;

  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'console-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    await DeployedConfigStore.of(box.ledger).recordIfChanged(JOBS, NOW - HOUR);
    for (const slot of [S_UNKNOWN, S_TAKEOVER, S_DEAD, S_READY, S_LIVE])
      await box.ledger.createRun({ job: 'report', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
    // A worker dies holding S_TAKEOVER; another takes it over after the lease and succeeds.
    await claim(S_TAKEOVER, 'worker-a', S_TAKEOVER + 100);
    const second = await claim(S_TAKEOVER, 'worker-b', S_TAKEOVER + 100 + LEASE + SKEW + 1);
    await box.ledger.complete(second, { status: RunStatus.SUCCEEDED }, second.startedAt! + 500, { from: RunStatus.RUNNING });
    const dead = await claim(S_DEAD, 'worker-c', S_DEAD + 100);
    await box.ledger.complete(
      dead,
      { status: RunStatus.DEAD, lastError: { code: 'BANK_DOWN', message: 'bank API refused' } },
      S_DEAD + 900,
      { from: RunStatus.READY },
    );
    // An attempt whose result is unknown (it timed out mid-effect): UNKNOWN, reconciled before it runs again.
    const unknown = await claim(S_UNKNOWN, 'worker-d', S_UNKNOWN + 100);
    await box.ledger.complete(
      unknown,
      { status: RunStatus.UNKNOWN, nextAttemptAt: NOW + HOUR, lastError: { code: 'TIMEOUT', message: 'attempt timed out' } },
      S_UNKNOWN + 900,
      { from: RunStatus.READY },
    );
    // An open run of a job no longer deployed.
    await box.ledger.createRun({ job: 'gone', slot: S_READY, shard: 0, shards: 1, status: RunStatus.READY, watch: true }, S_READY - SEC);
    // The planner's layout: one partition with its watermarks.
    await box.ledger.planning.writeLayout(
      undefined,
      { of: 1, gen: 1, partitions: new Map([[0, { plannedUntil: NOW - 60 * SEC, sweptUntil: NOW - 120 * SEC }]]) },
      NOW,
    );
    for (let i = 0; i < SYNC_RUNS; i++) {
      const slot = NOW - 30 * SEC - (i + 1) * 5 * 60 * SEC;
      await box.ledger.createRun({ job: 'sync', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot - SEC);
    }
    live = await openConsole(['--endpoints', endpoints, '--by', 'alice'], ioOf());
    readOnly = await openConsole(['--endpoints', endpoints, '--read-only'], ioOf());
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    page = await browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await live?.close();
    await readOnly?.close();
    box?.destroy();
  });

  it('Jobs: every job with its schedule, zone, next fires in its zone and UTC, last run and DEAD count; filters by name, state and policy', async () => {
    await open('/');
    const report = page.locator('tr[data-job="report"]');
    await expect.poll(() => report.count()).toBe(1);
    const text = await report.innerText();
    expect(text).toContain('0 * * * *');
    expect(text).toContain('America/New_York');
    const [first] = nextFires({ spec: slotSpecOf(JOBS[0]!), jitter: JOBS[0]! }, NOW, 1);
    expect(text).toContain(new Date(first!.fireAt).toISOString().replace('.000Z', 'Z'));
    expect(text).toContain('2026-12-01 08:00:00 -05:00');
    expect(text).toContain(key(S_LIVE));
    expect(await report.locator('td.num').last().innerText()).toBe('1');
    await open('/?name=syn');
    expect(await page.locator('tr[data-job]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-job')))).toEqual(['sync']);
    await open('/?policy=parallel&state=active');
    expect(await page.locator('tr[data-job]').count()).toBe(1);
    await open('/?state=paused');
    expect(await page.locator('tr[data-job]').count()).toBe(0);
  });

  it('Job: upcoming slots, the runs newest first, the timeline marks the takeover, the heatmap colours the day with a DEAD run', async () => {
    await open('/jobs/report');
    const upcoming = await page.locator('table.upcoming tbody tr td:nth-child(2)').allInnerTexts();
    expect(upcoming[0]).toBe('2026-12-01T13:00:00Z');
    expect(upcoming).toHaveLength(10);
    const runs = await page.locator('table.runs tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')));
    expect(runs).toEqual([key(S_LIVE), key(S_READY), key(S_DEAD), key(S_TAKEOVER), key(S_UNKNOWN)]);
    const takeovers = page.locator('svg.timeline rect[data-takeover="true"]');
    expect(await takeovers.count()).toBe(1);
    expect(await takeovers.getAttribute('data-run')).toBe(key(S_TAKEOVER));
    // Claim 1 died without recording when it started: only the takeover's bar has times.
    expect(await page.locator(`svg.timeline rect[data-run="${key(S_TAKEOVER)}"]`).count()).toBe(1);
    expect(await page.locator('svg.timeline text.mark').count()).toBe(1);
    expect(await page.locator('svg.heatmap rect[data-day="2026-12-01"]').getAttribute('class')).toBe('d-dead');
    expect(await page.locator('svg.heatmap rect').count()).toBe(90);
  });

  it('Job: runs are paged newest first by slot, 20 a page', async () => {
    await open('/jobs/sync');
    const first = await page.locator('table.runs tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')!));
    expect(first).toHaveLength(20);
    await page.click('a[rel=next]');
    const second = await page.locator('table.runs tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')!));
    expect(second).toHaveLength(SYNC_RUNS - 20);
    const all = (await box.ledger.listRuns('sync'))
      .map((r) => r.runKey)
      .sort()
      .reverse();
    expect([...first, ...second]).toEqual(all);
    expect(await page.locator('.pager').innerText()).toContain('No older runs.');
  });

  it('Run: status, reason, every attempt with owner and fencing token, and what may be done', async () => {
    await open(`/runs/${encodeURIComponent(key(S_DEAD))}`);
    expect(await page.locator('#run-status').innerText()).toBe('DEAD');
    expect(await page.locator('#run-reason').innerText()).toBe('BANK_DOWN: bank API refused');
    const attempt = await page.locator('table.attempts tbody tr').innerText();
    expect(attempt).toContain('worker-c');
    expect(attempt).toContain(String((await box.ledger.getRun(id(S_DEAD)))!.fencingToken));
    expect(await page.locator('a[data-action="retry"]').count()).toBe(1);
    await open(`/runs/${encodeURIComponent(key(S_TAKEOVER))}`);
    expect(await page.locator('table.attempts').innerText()).toContain('RUNNING (takeover)');
    expect(await page.locator('ul.may').innerText()).toContain('retry: no');
  });

  it('Needs a person lists the DEAD and UNKNOWN runs, the open run of a removed job and the DLQ depth; System shows the planner and the config hash', async () => {
    await open('/attention');
    const listed = await page.locator('table.attention tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')));
    expect(listed).toEqual([key(S_DEAD), key(S_UNKNOWN), runKeyOf('gone', S_READY, 0, 1)]);
    expect(await page.locator(`tr[data-run="${key(S_UNKNOWN)}"]`).innerText()).toContain('UNKNOWN');
    expect(await page.locator('#dlq').innerText()).toContain('Dead-letter queue: 0 visible');
    await open('/system');
    expect(await page.locator('#planner').innerText()).toBe('1 partition(s), layout generation 1.');
    expect(await page.locator('tr[data-partition="0"]').innerText()).toBe(
      '0\t2026-12-01T11:59:30Z\t2026-12-01T11:58:30Z\tevery bucket from its start',
    );
    expect(await page.locator('#config-compare').innerText()).toBe('the same');
  });

  it('pause (note required) and resume: confirmed in the browser, recorded in the ledger, shown as a badge with the note as text', async () => {
    await open('/jobs/report');
    await page.click('a[data-action="pause"]');
    expect(await pauseOf()).toBeUndefined();
    expect(await postFromPage('/actions/pause', { csrf: await page.inputValue('input[name=csrf]'), job: 'report', note: '' })).toBe(400);
    await page.fill('input[name=note]', 'vendor <b>outage</b>');
    await page.click('#confirm');
    expect(await page.locator('#result').innerText()).toContain('Paused report (note: vendor <b>outage</b>), by alice');
    expect(await pauseOf()).toMatchObject({ by: 'alice', note: 'vendor <b>outage</b>' });
    await open('/');
    // The note is text, never markup.
    expect(await page.locator('tr[data-job="report"] .badge.paused').innerText()).toMatch(
      /^PAUSED by alice at \S+: vendor <b>outage<\/b>$/,
    );
    expect(await page.locator('tr[data-job="report"] .badge.paused b').count()).toBe(0);
    await open('/jobs/report');
    await page.click('a[data-action="resume"]');
    await page.click('#confirm');
    expect(await page.locator('#result').innerText()).toContain('Resumed report');
    expect(await pauseOf()).toBeUndefined();
  });

  it("pause until: the dialog names the job's zone; an until in the past is refused naming it; a local until is read in the job's zone and shown on the badge", async () => {
    await open('/jobs/report');
    await page.click('a[data-action="pause"]');
    expect(await page.locator('main').innerText()).toContain(
      "read in the job's zone, America/New_York (now 2026-12-01 07:00:30 -05:00 there)",
    );
    await page.fill('input[name=note]', 'maintenance');
    await page.fill('input[name=until]', '2026-12-01T06:00');
    await page.click('#confirm');
    expect(await page.locator('#result').innerText()).toContain(
      'field "until": must be in the future: "2026-12-01T06:00" (read in America/New_York) is 2026-12-01T11:00:00.000Z, not after now (2026-12-01T12:00:30.000Z)',
    );
    expect((await box.ledger.planning.readJobPlan('report'))?.pause).toBeUndefined();
    await open('/jobs/report');
    await page.click('a[data-action="pause"]');
    await page.fill('input[name=note]', 'maintenance');
    await page.fill('input[name=until]', '2026-12-01T09:30');
    await page.click('#confirm');
    // 09:30 in New York is 14:30 UTC.
    const until = Date.UTC(2026, 11, 1, 14, 30);
    expect(await page.locator('#result').innerText()).toContain(
      'Paused report (note: maintenance), by alice at 2026-12-01T12:00:30.000Z, until 2026-12-01T14:30:00.000Z, when it resumes by itself',
    );
    expect(await page.locator('main').innerText()).toContain(
      'fsched ops pause report --note maintenance --until 2026-12-01T09:30 --by alice',
    );
    expect((await box.ledger.planning.readJobPlan('report'))?.pause).toMatchObject({ by: 'alice', note: 'maintenance', until });
    await open('/');
    expect(await page.locator('tr[data-job="report"] .badge.paused').innerText()).toMatch(
      /^PAUSED by alice at \S+ until 2026-12-01T14:30:00Z \(2026-12-01 09:30:00 -05:00 America\/New_York\): maintenance$/,
    );
    await open('/?state=paused');
    expect(await page.locator('tr[data-job]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-job')))).toEqual(['report']);
    // A console whose clock is past the until shows no pause, and offers pause again.
    const later = await openConsole(['--endpoints', endpoints, '--by', 'alice'], { ...ioOf(), now: () => until });
    try {
      await open('/', later);
      expect(await page.locator('tr[data-job="report"] .badge.paused').count()).toBe(0);
      expect(await page.locator('tr[data-job="report"] .state').innerText()).toContain('active');
      await open('/jobs/report', later);
      expect(await page.locator('a[data-action="pause"]').count()).toBe(1);
    } finally {
      await later.close();
    }
    await open('/jobs/report');
    await page.click('a[data-action="resume"]');
    await page.click('#confirm');
    expect(await page.locator('#result').innerText()).toContain('Resumed report');
    expect((await box.ledger.planning.readJobPlan('report'))?.pause).toBeUndefined();
  });

  it('trigger now creates a manual run with the overlap chosen; retry revives the DEAD run; resolve closes the READY run with its reason', async () => {
    await open('/jobs/report');
    await page.click('a[data-action="trigger"]');
    await page.fill('input[name=note]', 'rerun after fix');
    await page.selectOption('select[name=overlap]', 'parallel');
    const form: Record<string, string> = {};
    for (const name of ['csrf', 'job', 'idempotency', 'note', 'overlap']) form[name] = await page.inputValue(`form.confirm [name=${name}]`);
    expect(form.idempotency).toMatch(/^console-[0-9a-f-]{36}$/);
    await page.click('#confirm');
    const manual = (await box.ledger.listRuns('report')).filter((r) => r.origin === RunOrigin.MANUAL);
    expect(manual).toEqual([
      expect.objectContaining({ note: 'rerun after fix', triggeredBy: 'alice', overlap: 'parallel', status: RunStatus.READY }),
    ]);
    expect(await page.locator('#result').innerText()).toContain(
      `Created manual run ${manual[0]!.runKey} (READY, overlap parallel), dispatched now.`,
    );
    // The same confirmation sent again (a double click) creates nothing more.
    expect(await postFromPage('/actions/trigger', form)).toBe(200);
    expect((await box.ledger.listRuns('report')).filter((r) => r.origin === RunOrigin.MANUAL)).toHaveLength(1);

    await open(`/runs/${encodeURIComponent(key(S_DEAD))}`);
    await page.click('a[data-action="retry"]');
    await page.click('#confirm');
    expect(await page.locator('#result').innerText()).toContain(`${key(S_DEAD)}: revived, DEAD → READY`);
    expect((await box.ledger.getRun(id(S_DEAD)))!.status).toBe(RunStatus.READY);

    await open(`/runs/${encodeURIComponent(key(S_READY))}`);
    await page.click('a[data-action="resolve"]');
    await page.selectOption('select[name=as]', 'dead');
    await page.fill('input[name=reason]', 'superseded by the manual rerun');
    await page.click('#confirm');
    expect(await page.locator('#result').innerText()).toContain(`Resolved ${key(S_READY)}: READY → DEAD (as dead, by alice)`);
    expect(await box.ledger.getRun(id(S_READY))).toMatchObject({ status: RunStatus.DEAD });
  });

  it('an action that the command refuses says so: resolving a run that already ended', async () => {
    await open(`/confirm/resolve?run=${encodeURIComponent(key(S_TAKEOVER))}`);
    await page.selectOption('select[name=as]', 'dead');
    await page.fill('input[name=reason]', 'by mistake');
    await page.click('#confirm');
    expect(await page.locator('#result').innerText()).toContain('already SUCCEEDED');
    expect((await box.ledger.getRun(id(S_TAKEOVER)))!.status).toBe(RunStatus.SUCCEEDED);
  });

  it("refuses an action without the session's CSRF token, and every action in read-only mode", async () => {
    await open('/jobs/report');
    expect(await postFromPage('/actions/pause', { job: 'report', note: 'no token' })).toBe(403);
    expect(await postFromPage('/actions/pause', { job: 'report', note: 'forged', csrf: 'x'.repeat(43) })).toBe(403);
    expect(await pauseOf()).toBeUndefined();

    await open('/jobs/report', readOnly);
    expect(await page.locator('a[data-action]').count()).toBe(0);
    expect(await page.locator('.badge.ro').innerText()).toBe('read-only');
    await open(`/runs/${encodeURIComponent(key(S_LIVE))}`, readOnly);
    expect(await page.locator('a[data-action]').count()).toBe(0);
    const confirm = await page.goto(new URL('/confirm/pause?job=report', readOnly.url).href);
    expect(confirm!.status()).toBe(403);
    expect(await postFromPage('/actions/pause', { job: 'report', note: 'read-only' })).toBe(403);
    expect(await pauseOf()).toBeUndefined();
  });

  it('refuses a foreign Host or Origin header', async () => {
    const status = (headers: Record<string, string>, method = 'GET') =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(new URL('/', live.url), { method, headers }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.once('error', reject);
        req.end();
      });
    expect(await status({})).toBe(200);
    expect(await status({ Host: 'evil.example' })).toBe(403);
    expect(await status({ Host: `evil.example:${live.port}` })).toBe(403);
    expect(await status({ Origin: 'http://evil.example' }, 'POST')).toBe(403);
    expect(await status({ Origin: `http://127.0.0.1:${live.port}` })).toBe(200);
  });

  it("a run page follows the run's state change without reloading", async () => {
    await open(`/runs/${encodeURIComponent(key(S_LIVE))}`);
    expect(await page.locator('#run-status').innerText()).toBe('READY');
    await page.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
    await claim(S_LIVE, 'worker-live', NOW);
    // The live refresh polls every 3 s: the change shows within 5 s of its write.
    await expect.poll(() => page.locator('#run-status').innerText(), { timeout: 5_000, interval: 250 }).toBe('RUNNING');
    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
  });
});
