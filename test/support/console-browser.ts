/**
 * What the console's browser tests share: a sandbox whose endpoints file the console opens, the
 * deployed config recorded, a live and a read-only console on it, and one Chromium page (Debian's
 * /usr/bin/chromium through playwright-core; no browser is downloaded).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { DeployedConfigStore } from '../../shared/store/deployed-config.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { openConsole, type OpenConsole } from '../../tools/console/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { sandbox, type Sandbox } from './stack.js';

export interface ConsoleBench {
  readonly box: Sandbox;
  readonly live: OpenConsole;
  readonly readOnly: OpenConsole;
  readonly page: Page;
  /** Opens a path of the live console (or the one given) in the page. */
  open(path: string, on?: OpenConsole): Promise<void>;
  /** A POST from the page itself (same origin, its session cookie), so only the form differs. */
  postFromPage(path: string, form: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

export const consoleIo = (jobs: readonly Job[], now: number): OpsIo => ({
  stdout: () => undefined,
  stderr: () => undefined,
  now: () => now,
  jobs,
  env: { USER: 'alice' },
});

/** The sandbox comes first, then `seed` writes what the pages are to show, then the consoles and the browser start. */
export async function consoleBench(jobs: readonly Job[], now: number, seed: (box: Sandbox) => Promise<void>): Promise<ConsoleBench> {
  const box = await sandbox();
  let browser: Browser | undefined;
  const started: OpenConsole[] = [];
  try {
    const endpoints = join(mkdtempSync(join(tmpdir(), 'console-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    await DeployedConfigStore.of(box.ledger).recordIfChanged(jobs, now - 3_600_000);
    await seed(box);
    const live = await openConsole(['--endpoints', endpoints, '--by', 'alice'], consoleIo(jobs, now));
    started.push(live);
    const readOnly = await openConsole(['--endpoints', endpoints, '--read-only'], consoleIo(jobs, now));
    started.push(readOnly);
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    const page = await browser.newPage();
    const opened = browser;
    return {
      box,
      live,
      readOnly,
      page,
      open: async (path, on = live) => {
        await page.goto(new URL(path, on.url).href);
      },
      postFromPage: (path, form) =>
        page.evaluate(async ({ path, form }) => (await fetch(path, { method: 'POST', body: new URLSearchParams(form) })).status, {
          path,
          form,
        }),
      close: async () => {
        await opened.close();
        for (const c of started) await c.close();
        box.destroy();
      },
    };
  } catch (error) {
    await browser?.close();
    for (const c of started) await c.close();
    box.destroy();
    throw error;
  }
}
