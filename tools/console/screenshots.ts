/**
 * `npx tsx tools/console/screenshots.ts [--out docs/images]`: the README's console screenshots.
 * Starts the local stack with the example jobs (`npm start` on an endpoints file of its own, so it
 * never meets a running one), lets runs happen until payments-reconcile has succeeded once (about a
 * minute), stages a takeover on payments-reconcile with the real worker (a worker frozen mid-run,
 * a successor that takes the run over and reconciles, the frozen worker's late write fenced out:
 * staged-takeover.ts), serves the console on it, and saves the Jobs, Job and Run pages (the Run
 * page of the run taken over) as PNGs with Debian's
 * Chromium (/usr/bin/chromium, driven by playwright-core; nothing is downloaded). It stops what it
 * started, and exits 1 when a page or the stack fails, or a PNG is over the size the README allows.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { loadJobs } from '../../shared/config.js';
import { exampleJobDefinitions } from '../../shared/example-jobs.js';
import { openConsole, type OpenConsole } from './cli.js';
import { stageTakeover } from './staged-takeover.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM = '/usr/bin/chromium';
/** The README keeps each image small. */
const MAX_BYTES = 200 * 1024;
/** How long the stack may take to run a payments-reconcile slot (it fires every minute). */
const RUNS_TIMEOUT_MS = 150_000;
/** The stack stops on its own after this long, should this script die without stopping it. */
const STACK_DURATION_S = 300;

async function waitUntil(what: string, probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { out: { type: 'string', default: join(ROOT, 'docs/images') } } });
  const out = resolve(values.out!);
  mkdirSync(out, { recursive: true });
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is not installed (apt-get install chromium)`);
  const endpoints = join(mkdtempSync(join(tmpdir(), 'fsched-screenshots-')), 'endpoints.json');
  const stack = spawn(
    'npm',
    ['start', '--', '--tick', '5', '--workers', '2', '--duration', String(STACK_DURATION_S), '--endpoints', endpoints],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  stack.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  stack.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((done) => stack.once('exit', (code, signal) => done(code ?? signal ?? -1)));
  let served: OpenConsole | undefined;
  try {
    process.stdout.write('screenshots: starting the local stack with the example jobs…\n');
    await waitUntil(
      'a payments-reconcile run to succeed',
      () => /SUCCEEDED\s+payments-reconcile/.test(output) || stack.exitCode !== null,
      RUNS_TIMEOUT_MS,
    );
    if (stack.exitCode !== null) throw new Error(`npm start exited ${stack.exitCode}: ${output.slice(-2_000)}`);
    served = await openConsole(['--endpoints', endpoints, '--by', 'screenshots'], {
      stdout: (l) => process.stdout.write(`${l}\n`),
      stderr: (l) => process.stderr.write(`${l}\n`),
      env: process.env,
    });
    const job = loadJobs(exampleJobDefinitions).find((j) => j.name === 'payments-reconcile');
    if (!job) throw new Error('the example jobs have no payments-reconcile');
    // A manual slot before the stack started: on the Job page's first page, never in the sweep window.
    const slot = Math.floor(Date.now() / 60_000) * 60_000 - 3 * 60_000 + 250;
    const { paymentsTable } = JSON.parse(readFileSync(endpoints, 'utf8')) as { paymentsTable: string };
    const { target } = served;
    const staged = await stageTakeover(
      {
        ledger: target.ledger,
        queue: target.queue,
        doc: target.clients.doc,
        tables: { ledger: target.ledger.tableName, payments: paymentsTable },
      },
      job,
      slot,
    );
    process.stdout.write(`screenshots: staged a takeover of ${staged.runKey} (tokens ${staged.frozenToken} → ${staged.successorToken})\n`);
    const runKey = staged.runKey;
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      const shots: [string, string][] = [
        ['console-jobs.png', '/'],
        ['console-job.png', '/jobs/payments-reconcile'],
        ['console-run.png', `/runs/${encodeURIComponent(runKey)}`],
      ];
      let over = 0;
      for (const [file, path] of shots) {
        const response = await page.goto(new URL(path, served.url).href);
        if (response?.status() !== 200) throw new Error(`${path} answered ${response?.status()}`);
        const target = join(out, file);
        // The Run page whole: its attempts table runs past the fold.
        await page.screenshot({ path: target, fullPage: file === 'console-run.png' });
        const bytes = statSync(target).size;
        process.stdout.write(`screenshots: ${path} → ${target} (${Math.round(bytes / 1024)} KB)\n`);
        if (bytes > MAX_BYTES) over++;
      }
      if (over > 0) process.stderr.write(`screenshots: ${over} image(s) over ${MAX_BYTES / 1024} KB\n`);
      return over > 0 ? 1 : 0;
    } finally {
      await browser.close();
    }
  } finally {
    await served?.close();
    if (stack.exitCode === null) stack.kill('SIGINT');
    process.stdout.write(`screenshots: the local stack stopped (${String(await exited)})\n`);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`screenshots: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
