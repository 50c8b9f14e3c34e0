/**
 * A takeover as the real worker makes it, shown by the console in Chromium: a worker froze
 * mid-run, a successor took the run over after its lease (a higher token), asked reconcile and
 * succeeded, and the frozen worker's late write was fenced out by the successor's token
 * (tools/console/staged-takeover.ts, the staging the README's screenshots use). The Job page's
 * timeline marks the successor's bar "takeover ▶" and the frozen claim's bar "fenced ✕" (a bar
 * it has only because its worker came back and noted the refusal), and the Run page lists the
 * refused write against the frozen claim's token and the reconcile's answer against the successor's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { stageTakeover, type StagedTakeover } from '../../tools/console/staged-takeover.js';
import { consoleBench, type ConsoleBench } from '../support/console-browser.js';
import { testJobs } from '../support/helpers.js';

const NOW = Date.now();
const JOBS = testJobs([{ name: 'settle', schedule: '0 * * * *', handler: 'noop', overlap: 'parallel' }]);
/** A manual slot a few minutes back (not on the hourly schedule). */
const SLOT = Math.floor(NOW / 60_000) * 60_000 - 5 * 60_000 + 123;

describe('a takeover and a fenced-out write on the console', () => {
  let bench: ConsoleBench;
  let staged: StagedTakeover;

  beforeAll(async () => {
    bench = await consoleBench(JOBS, NOW, async (box) => {
      staged = await stageTakeover(
        {
          ledger: box.ledger,
          queue: box.queue,
          doc: box.clients.doc,
          tables: { ledger: box.endpoints.ledgerTable, payments: box.endpoints.paymentsTable },
        },
        JOBS[0]!,
        SLOT,
      );
    });
  }, 120_000);

  afterAll(async () => {
    await bench?.close();
  });

  it("the Job page's timeline marks the successor's claim as a takeover and the frozen claim's bar as fenced out", async () => {
    await bench.open('/jobs/settle');
    const bars = bench.page.locator(`svg.timeline rect[data-run="${staged.runKey}"]`);
    expect(
      await bars.evaluateAll((rects) =>
        rects.map((r) => [
          r.getAttribute('data-claim'),
          r.getAttribute('class'),
          r.getAttribute('data-takeover'),
          r.getAttribute('data-fenced'),
        ]),
      ),
    ).toEqual([
      ['1', 'bar o-taken-over fenced', 'false', 'true'],
      ['2', 'bar o-succeeded takeover', 'true', 'false'],
    ]);
    const marks = await bench.page.locator('svg.timeline text.mark').allTextContents();
    expect(marks.sort()).toEqual(['fenced ✕', 'takeover ▶']);
    expect(await bench.page.locator('svg.timeline text.mark.fenced').getAttribute('data-claim')).toBe('1');
    expect(await bench.page.locator(`svg.timeline rect[data-claim="1"][data-run="${staged.runKey}"] title`).textContent()).toContain(
      `1 write(s) fenced out: effect`,
    );
  });

  it('the Run page lists the refused write against the frozen claim and what reconcile answered against the successor', async () => {
    await bench.open(`/runs/${encodeURIComponent(staged.runKey)}`);
    expect(await bench.page.locator('#run-status').innerText()).toBe(RunStatus.SUCCEEDED);
    const frozen = bench.page.locator('table.attempts tr[data-claim="1"]');
    expect(await frozen.innerText()).toContain('worker-frozen');
    expect(await frozen.innerText()).toContain('no outcome recorded (taken over)');
    expect(await frozen.locator('td.fenced').innerText()).toMatch(
      new RegExp(`^✕ effect by token ${staged.successorToken} · first at \\S+Z$`),
    );
    // The item refused, in full, as the cell's title.
    expect(await frozen.locator('td.fenced').getAttribute('title')).toBe(
      `effect ${bench.box.endpoints.paymentsTable}/STAGED#takeover/${staged.runKey} by token ${staged.successorToken}`,
    );
    const successor = bench.page.locator('table.attempts tr[data-claim="2"]');
    expect(await successor.innerText()).toContain('RUNNING (takeover)');
    expect(await successor.locator('td.reconcile').innerText()).toMatch(/^not-done · \S+Z$/);
    expect(await successor.locator('td.fenced').innerText()).toBe('-');
    expect(staged.successorToken).toBe(staged.frozenToken + 1);
  });
});
