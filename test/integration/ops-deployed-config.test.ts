/**
 * What the CLI shows must be what runs (issue 31, points 7 and 8), against the local stack:
 *
 * - the planner records the job config it runs in the ledger on its cold start, once (a second
 *   cold start with the same config writes nothing), chunked when large;
 * - every ops command acts on that deployed config: `ops jobs` lists what is deployed; trigger,
 *   backfill and retry refuse a job only the operator's checkout has (exit 2, nothing written);
 *   one warning line on stderr exactly when the checkout's config differs, or when nothing is
 *   recorded yet and the checkout's jobs are used;
 * - a backfill of a latest-wins job (its runs overwrite one shared fenced item, so every older
 *   slot's write is refused by a newer slot) is refused without --allow-superseded, and the dry
 *   run says the same.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_BYTES, DeployedConfigStore } from '../../shared/store/deployed-config.js';
import { configuredJobDefinitions, loadJobs } from '../../shared/config.js';
import { ConfigRecorder } from '../../shared/planner/config-record.js';
import { configHash } from '../../shared/core/deployed-config.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import { handlers } from '../../shared/handlers/index.js';
import { LocalRuntime, seedPayments } from '../../tools/local-runtime.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { CountingMiddleware } from '../support/counting.js';
import { drain, silentLogger, testJobs } from '../support/helpers.js';
import { Lab } from '../support/lab.js';
import { localClients, sandbox, type Sandbox } from '../support/stack.js';

const MINUTE = 60_000;
const NOW = Date.UTC(2026, 11, 6, 12, 0, 30);
const [REPORT, FRESH, ONLY_DEPLOYED] = testJobs([
  { name: 'report', schedule: '0 * * * *', handler: 'noop' },
  // In the operator's checkout, not deployed: the running workers do not know it.
  { name: 'fresh', schedule: '*/5 * * * *', handler: 'noop' },
  { name: 'only-deployed', schedule: '30 2 * * *', handler: 'noop', timezone: 'Europe/London' },
]) as [Job, Job, Job];

function capture(checkoutJobs: readonly Job[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), now: () => NOW, checkoutJobs, env: { USER: 'alice' } };
  return { io, out, err, json: <T>() => JSON.parse(out.join('\n')) as T };
}

async function endpointsFileOf(box: Sandbox, prefix: string): Promise<string> {
  const path = join(mkdtempSync(join(tmpdir(), prefix)), 'endpoints.json');
  writeFileSync(path, JSON.stringify({ ...box.endpoints, partitions: 1 }));
  return path;
}

/** Every run item of the job, and the messages waiting on the run queue. */
async function written(box: Sandbox, job: string): Promise<{ runs: number; messages: number }> {
  const runs = (await box.ledger.listRuns(job)).length;
  const messages = (await drain(box.clients.sqs, box.endpoints.runQueueUrl, { idleMs: 800 })).length;
  return { runs, messages };
}

describe('the planner records the config it runs, once per change', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('a planner tick records it on cold start; a second cold start with the same config writes nothing; a changed config is written once', async () => {
    const runtime = new LocalRuntime({ endpoints: box.endpoints, jobs: [REPORT], handlers: {}, clock: () => NOW });
    try {
      await runtime.tick();
    } finally {
      await runtime.stop();
    }
    const store = DeployedConfigStore.of(box.ledger);
    const first = await store.readRecorded();
    expect(first).toEqual({ hash: configHash([REPORT]), jobs: [REPORT], recordedAt: NOW });

    // Another cold start (another process, its own clients) of the same config: reads, writes nothing.
    const clients = localClients();
    const counting = new CountingMiddleware();
    counting.attach(clients.doc);
    try {
      const again = new DeployedConfigStore(clients.doc, box.endpoints.ledgerTable);
      await new ConfigRecorder(again, [REPORT], silentLogger()).ensureRecorded(NOW + MINUTE);
      expect(counting.byCommand()).toEqual({ GetItemCommand: 1 });
      expect(await store.readRecorded()).toEqual(first);

      counting.reset();
      const changed = { ...REPORT, schedule: '15 * * * *' };
      const recorder = new ConfigRecorder(again, [changed], silentLogger());
      await recorder.ensureRecorded(NOW + 2 * MINUTE);
      await recorder.ensureRecorded(NOW + 3 * MINUTE);
      expect(counting.byCommand()).toEqual({ GetItemCommand: 1, PutItemCommand: 1 });
      expect(await store.readRecorded()).toEqual({ hash: configHash([changed]), jobs: [changed], recordedAt: NOW + 2 * MINUTE });
    } finally {
      clients.dynamo.destroy();
      clients.sqs.destroy();
    }
  });

  it('a config larger than one item is chunked under its hash and read back whole', async () => {
    // Names that do not compress (64 hex characters each), so the gzip'd document needs several items.
    const many = Array.from({ length: 20_000 }, (_, i) => ({
      ...REPORT,
      name: `j${createHash('sha256').update(String(i)).digest('hex').slice(0, 63)}`,
    }));
    const store = DeployedConfigStore.of(box.ledger);
    const result = await store.recordIfChanged(many, NOW);
    expect(result.written).toBe(true);
    expect(result.chunks).toBeGreaterThan(1);
    const read = await store.readRecorded();
    expect(read?.hash).toBe(configHash(many));
    expect(read?.jobs).toEqual(many);
    expect(CHUNK_BYTES).toBeLessThan(400_000);
    expect(await store.recordIfChanged(many, NOW + MINUTE)).toMatchObject({ written: false });
  });
});

describe('the ops CLI acts on the deployed config', () => {
  let box: Sandbox;
  let endpoints: string;
  const deadSlot = NOW - 30 * MINUTE;

  beforeAll(async () => {
    box = await sandbox();
    endpoints = await endpointsFileOf(box, 'ops-deployed-');
    await new ConfigRecorder(DeployedConfigStore.of(box.ledger), [REPORT, ONLY_DEPLOYED], silentLogger()).ensureRecorded(NOW - 5 * MINUTE);
    // A DEAD run of the job only the checkout has (an earlier deployment ran it).
    await box.ledger.createRun({ job: FRESH.name, slot: deadSlot, shard: 0, shards: 1, status: RunStatus.READY }, deadSlot);
    const claim = await box.ledger.claim({ job: FRESH.name, slot: deadSlot, shard: 0 }, 'w', deadSlot + 1_000, 30_000, 2_000);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await box.ledger.complete(claim.run, { status: RunStatus.DEAD, lastError: { code: 'E', message: 'gave up' } }, deadSlot + 2_000);
    await drain(box.clients.sqs, box.endpoints.runQueueUrl, { idleMs: 500 });
  });
  afterAll(() => box.destroy());

  it.each([
    ['trigger', ['trigger', 'fresh']],
    [
      'backfill',
      ['backfill', 'fresh', '--from', new Date(NOW - 20 * MINUTE).toISOString(), '--to', new Date(NOW - 5 * MINUTE).toISOString()],
    ],
    ['retry by run key', ['retry', runKeyOf('fresh', deadSlot, 0, 1)]],
    ['retry --job', ['retry', '--job', 'fresh']],
  ])('%s of a job the checkout has and the deployed config does not: exit 2, one line saying so, nothing written', async (_label, args) => {
    const before = await box.ledger.getRun({ job: FRESH.name, slot: deadSlot, shard: 0 });
    const c = capture([REPORT, FRESH, ONLY_DEPLOYED]);
    expect(await runOps([...args, '--endpoints', endpoints], c.io)).toBe(2);
    expect(c.err).toHaveLength(2);
    expect(c.err[0]).toMatch(
      /^ops: warning: this checkout's job config \([0-9a-f]{12}\) differs from the deployed one .*only in this checkout: fresh; acting on the deployed one$/,
    );
    expect(c.err[1]).toContain(
      'field "job": no configured job "fresh" in the deployed config; configured: report, only-deployed (this checkout has it, the running scheduler does not: deploy it first)',
    );
    expect(await written(box, FRESH.name)).toEqual({ runs: 1, messages: 0 });
    expect(await box.ledger.getRun({ job: FRESH.name, slot: deadSlot, shard: 0 })).toEqual(before);
  });

  it('`ops jobs` lists what is deployed, not what the checkout holds', async () => {
    const c = capture([REPORT, FRESH]);
    expect(await runOps(['jobs', '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    expect(c.json<{ job: string; timezone: string }[]>().map((r) => [r.job, r.timezone])).toEqual([
      ['report', 'UTC'],
      ['only-deployed', 'Europe/London'],
    ]);
    expect(c.err).toEqual([
      expect.stringContaining('only in this checkout: fresh; only deployed: only-deployed; acting on the deployed one'),
    ]);
  });

  it('the warning appears exactly when the hashes differ: not for the same jobs in another order, once for a changed field', async () => {
    const same = capture([ONLY_DEPLOYED, REPORT]);
    expect(await runOps(['jobs', '--endpoints', endpoints], same.io)).toBe(0);
    expect(same.err).toEqual([]);

    const changed = capture([{ ...REPORT, retry: { ...REPORT.retry, maxAttempts: 5 } }, ONLY_DEPLOYED]);
    expect(await runOps(['runs', '--job', 'report', '--endpoints', endpoints], changed.io)).toBe(0);
    expect(changed.err).toEqual([
      expect.stringMatching(
        /^ops: warning: this checkout's job config \(\w{12}\) differs from the deployed one \(\w{12}, recorded 2026-12-06T11:55:30.000Z\): changed here: report; acting on the deployed one$/,
      ),
    ]);
  });

  it('a job both have is triggered under the deployed definition, silently', async () => {
    const c = capture([REPORT, ONLY_DEPLOYED]);
    expect(await runOps(['trigger', 'only-deployed', '--endpoints', endpoints, '--json'], c.io)).toBe(0);
    expect(c.err).toEqual([]);
    expect(await written(box, ONLY_DEPLOYED.name)).toEqual({ runs: 1, messages: 1 });
  });

  it("nothing recorded yet: the checkout's jobs, with one warning line saying so", async () => {
    const empty = await sandbox();
    try {
      const c = capture([FRESH]);
      expect(await runOps(['jobs', '--endpoints', await endpointsFileOf(empty, 'ops-undeployed-'), '--json'], c.io)).toBe(0);
      expect(c.json<{ job: string }[]>().map((r) => r.job)).toEqual(['fresh']);
      expect(c.err).toEqual([
        expect.stringMatching(
          /^ops: warning: no deployed config is recorded in local stack \(.*\) yet \(its planner records one on its next cold start\): using this checkout's jobs, which may not be what runs$/,
        ),
      ]);
    } finally {
      empty.destroy();
    }
  });
});

describe('backfill of a latest-wins job (its runs overwrite one shared fenced item)', () => {
  let box: Sandbox;
  let endpoints: string;
  // What `npm start` runs: the example jobs, payments-reconcile among them.
  const examples = loadJobs(configuredJobDefinitions({ exampleJobs: true }));
  // 10:00 to 12:00 (excluded): 120 minutely slots.
  const range = ['--from', new Date(NOW - 30_000 - 120 * MINUTE).toISOString(), '--to', new Date(NOW - 30_000).toISOString()];
  const WARNING = `"payments-reconcile" has effects 'latest-wins' (its runs overwrite one shared fenced item): each older slot's write will be refused by a newer slot, so the 120 backfilled run(s) would end SUPERSEDED_BY_NEWER_SLOT without effect; to run its work now use \`ops trigger payments-reconcile\``;

  beforeAll(async () => {
    box = await sandbox();
    endpoints = await endpointsFileOf(box, 'ops-latest-wins-');
    await new ConfigRecorder(DeployedConfigStore.of(box.ledger), examples, silentLogger()).ensureRecorded(NOW - MINUTE);
  });
  afterAll(() => box.destroy());

  it('the example job that writes one shared item is latest-wins, and the deployed config says so', async () => {
    expect(examples.find((j) => j.name === 'payments-reconcile')?.effects).toBe('latest-wins');
    expect((await DeployedConfigStore.of(box.ledger).readRecorded())?.jobs.find((j) => j.name === 'payments-reconcile')?.effects).toBe(
      'latest-wins',
    );
  });

  it("is refused without --allow-superseded: exit 2, one line saying each older slot's write will be refused by a newer slot, nothing created", async () => {
    const c = capture(examples);
    expect(await runOps(['backfill', 'payments-reconcile', ...range, '--endpoints', endpoints], c.io)).toBe(2);
    expect(c.out).toEqual([]);
    expect(c.err).toEqual([`ops backfill: field "job": ${WARNING}, or pass --allow-superseded to create them anyway`]);
    expect(await written(box, 'payments-reconcile')).toEqual({ runs: 0, messages: 0 });
  });

  it('--dry-run prints the same warning beside its count, and creates nothing', async () => {
    const c = capture(examples);
    expect(await runOps(['backfill', 'payments-reconcile', ...range, '--dry-run', '--endpoints', endpoints], c.io)).toBe(0);
    expect(c.err).toEqual([`ops backfill: warning: ${WARNING}`]);
    expect(c.out[0]).toMatch(/^dry run: payments-reconcile has 120 slot\(s\) \(120 run\(s\)\)/);
    expect(await written(box, 'payments-reconcile')).toEqual({ runs: 0, messages: 0 });
  });

  it('with --allow-superseded it creates and dispatches the runs, still saying what they will do', async () => {
    const c = capture(examples);
    expect(
      await runOps(
        ['backfill', 'payments-reconcile', ...range, '--allow-superseded', '--max-per-second', '1000', '--endpoints', endpoints],
        c.io,
      ),
    ).toBe(0);
    expect(c.err).toEqual([`ops backfill: warning: ${WARNING}`]);
    expect(c.out.at(-1)).toMatch(/: 120 created, 0 already existed, 120 dispatched$/);
    expect((await box.ledger.listRuns('payments-reconcile')).length).toBe(120);
  });

  it('what the warning says is what happens: once a newer slot has moved the shared cursor, each of the 120 backfilled runs ends SUPERSEDED_BY_NEWER_SLOT', async () => {
    await seedPayments(box.clients, box.endpoints.paymentsTable, 25);
    const lab = new Lab(box, examples, handlers, NOW);
    // The planner's slot of 12:00:00 runs (as it did before anyone backfilled): it moves the cursor.
    const newest = NOW - 30_000;
    await lab.create('payments-reconcile', newest);
    expect(await lab.deliver('payments-reconcile', newest)).toBe('ack');
    expect(await lab.status('payments-reconcile', newest)).toBe(RunStatus.SUCCEEDED);
    const backfilled = (await box.ledger.listRuns('payments-reconcile')).filter((r) => r.slot < newest);
    expect(backfilled).toHaveLength(120);
    for (const run of backfilled) expect(await lab.deliver('payments-reconcile', run.slot)).toBe('ack');
    const ends = await Promise.all(
      backfilled.map(async (r) => {
        const run = await lab.run('payments-reconcile', r.slot);
        return `${run?.status} ${run?.lastError?.code}`;
      }),
    );
    expect(new Set(ends)).toEqual(new Set([`${RunStatus.SUPERSEDED} SUPERSEDED_BY_NEWER_SLOT`]));
  }, 120_000);

  it('a per-slot job of the same config is backfilled without a word', async () => {
    const perSlot = testJobs([{ name: 'per-slot-report', schedule: '*/10 * * * *', handler: 'noop' }]);
    await DeployedConfigStore.of(box.ledger).recordIfChanged(perSlot, NOW);
    const c = capture(perSlot);
    expect(await runOps(['backfill', 'per-slot-report', ...range, '--dry-run', '--endpoints', endpoints], c.io)).toBe(0);
    expect(c.err).toEqual([]);
  });
});
