/**
 * The console's server time on a big ledger: the Jobs page (`/`) with `jobs` deployed jobs, each
 * with `runsPerJob` runs, and the Job page (`/jobs/<name>`) of one job with `bigJobRuns` runs (one
 * a minute back from now, so its 90-day heatmap window is full). The runs are seeded with
 * BatchWriteItem into a fresh table (25 items a request), then the console is started on it as
 * `fsched console` starts (startConsole) and each page is fetched over HTTP from this process:
 * one warm-up fetch, then `samples` timed ones; the figure is their median (with the 95th
 * percentile and the slowest). The console's DynamoDB client is metered (SDK middleware, as the
 * other phases count): the calls a page makes, by command, are reported beside its time.
 */
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { initialFence } from '../../shared/core/fence.js';
import { mapBounded } from '../../shared/core/concurrency.js';
import { LedgerKeys } from '../../shared/core/resources.js';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import { parseJobs, type Job } from '../../shared/schedule/job-schema.js';
import { startConsole } from '../console/server.js';
import { openTarget } from '../ops/target.js';
import { benchClients, DynamoMeter, freshResources, round, type StackBase } from './measure.js';

export interface ConsolePagesOptions {
  readonly base: StackBase;
  readonly jobs: number;
  readonly runsPerJob: number;
  readonly bigJobRuns: number;
  readonly samples: number;
  readonly log?: (line: string) => void;
}

export interface PageTiming {
  readonly p50Ms: number;
  /** The 95th percentile (nearest rank) of the timed fetches. */
  readonly p95Ms: number;
  readonly maxMs: number;
  readonly samples: number;
  /** DynamoDB requests one page makes (the timed fetches' total ÷ samples). */
  readonly dynamoCalls: number;
  /** The same, by command (`QueryCommand: 50`). */
  readonly dynamoCallsByCommand: Record<string, number>;
}

export interface ConsolePagesResult {
  readonly jobs: number;
  readonly runsSeeded: number;
  readonly seedItemsPerSec: number;
  readonly jobsPage: PageTiming;
  readonly jobPage: PageTiming;
}

const MIN = 60_000;
const BIG_JOB = 'big-job';

/** A finished run item as the ledger holds one (one attempt, its history included). */
function runItem(job: string, slot: number, status: RunStatus): Record<string, unknown> {
  const token = initialFence(slot) + 1;
  const ended = slot + 2_000;
  return {
    pk: LedgerKeys.jobPk(job),
    sk: LedgerKeys.runSk(slot, 0),
    job,
    slot,
    shard: 0,
    shards: 1,
    runKey: runKeyOf(job, slot, 0, 1),
    status,
    fencingToken: token,
    attempt: 1,
    createdAt: slot - MIN,
    startedAt: slot + 100,
    finishedAt: ended,
    ...(status === RunStatus.DEAD ? { lastError: { code: 'BENCH', message: 'seeded failure' } } : {}),
    attempts: { '1': { claim: 1, token, owner: 'bench', claimedAt: slot + 50, endedAt: ended, outcome: status } },
  };
}

async function seed(base: StackBase, table: string, items: readonly Record<string, unknown>[]): Promise<void> {
  const clients = benchClients(base);
  try {
    const batches = Array.from({ length: Math.ceil(items.length / 25) }, (_, i) => items.slice(i * 25, i * 25 + 25));
    await mapBounded(batches, 8, async (batch) => {
      let pending = batch.map((Item) => ({ PutRequest: { Item } }));
      for (let round = 0; pending.length > 0; round++) {
        const { UnprocessedItems = {} } = await clients.doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
        pending = (UnprocessedItems[table] ?? []) as typeof pending;
        if (pending.length > 0) await new Promise((r) => setTimeout(r, Math.min(1_000, 25 * 2 ** round)));
      }
    });
  } finally {
    clients.dynamo.destroy();
    clients.sqs.destroy();
  }
}

async function time(url: string, samples: number, meter: DynamoMeter): Promise<PageTiming> {
  const fetchOnce = async () => {
    const started = performance.now();
    const response = await fetch(url, { headers: { Host: new URL(url).host } });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${body.slice(0, 300)}`);
    return performance.now() - started;
  };
  await fetchOnce();
  meter.reset();
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) ms.push(await fetchOnce());
  ms.sort((a, b) => a - b);
  const perPage = (n: number) => round(n / samples, 2);
  return {
    p50Ms: round(ms[Math.floor(ms.length / 2)]!, 1),
    p95Ms: round(ms[Math.max(0, Math.ceil(ms.length * 0.95) - 1)]!, 1),
    maxMs: round(ms.at(-1)!, 1),
    samples,
    dynamoCalls: perPage(meter.requests),
    dynamoCallsByCommand: Object.fromEntries(
      Object.entries(meter.byCommand()).map(([name, n]) => [name.replace(/Command$/, ''), perPage(n)]),
    ),
  };
}

export async function measureConsolePages(options: ConsolePagesOptions): Promise<ConsolePagesResult> {
  const log = options.log ?? (() => undefined);
  const endpoints = await freshResources(options.base, 'console');
  const now = Date.now();
  const newest = Math.floor(now / MIN) * MIN;
  const names = Array.from({ length: options.jobs - 1 }, (_, i) => `job-${String(i).padStart(5, '0')}`);
  const jobs: Job[] = parseJobs(
    [...names.map((name) => ({ name, schedule: '* * * * *', handler: 'noop' })), { name: BIG_JOB, schedule: '* * * * *', handler: 'noop' }],
    { handlers: ['noop'], workerTimeoutMs: Number.POSITIVE_INFINITY },
  );
  // One run in seven DEAD, so the rows' failure streaks and DEAD counts are not all zero.
  const items = [
    ...names.flatMap((name) =>
      Array.from({ length: options.runsPerJob }, (_, k) =>
        runItem(name, newest - k * MIN, k % 7 === 0 ? RunStatus.DEAD : RunStatus.SUCCEEDED),
      ),
    ),
    ...Array.from({ length: options.bigJobRuns }, (_, k) =>
      runItem(BIG_JOB, newest - k * MIN, k % 7 === 0 ? RunStatus.DEAD : RunStatus.SUCCEEDED),
    ),
  ];
  const seedStarted = performance.now();
  await seed(options.base, endpoints.ledgerTable, items);
  const seedItemsPerSec = Math.round(items.length / ((performance.now() - seedStarted) / 1000));
  log(`  seeded ${items.length} runs (${seedItemsPerSec} items/s)`);

  const dir = mkdtempSync(join(tmpdir(), 'bench-console-'));
  const file = join(dir, 'endpoints.json');
  writeFileSync(file, JSON.stringify(endpoints));
  const target = await openTarget(
    { endpoints: file, json: false, local: false, help: false },
    { stdout: () => undefined, stderr: () => undefined },
  );
  const meter = new DynamoMeter().attach(target.clients.doc);
  const running = await startConsole({
    target,
    jobs,
    jobSource: 'the bench jobs',
    checkoutJobs: jobs,
    readOnly: true,
    by: 'bench',
    now: Date.now,
  });
  try {
    const jobsPage = await time(running.url, options.samples, meter);
    const jobPage = await time(`${running.url}jobs/${BIG_JOB}`, options.samples, meter);
    return { jobs: options.jobs, runsSeeded: items.length, seedItemsPerSec, jobsPage, jobPage };
  } finally {
    await running.close();
    target.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}
