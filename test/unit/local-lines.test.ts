/**
 * The lines `npm start` prints: an outcome carries the error the attempt recorded, a run ended
 * without an attempt says why, takeovers and fenced-out writes have a line each, and the summary's
 * trigger lag counts on-time first attempts only (late starts are a figure of their own).
 */
import { describe, expect, it } from 'vitest';
import { fencedOutLine, outcomeLine, settledLine, summaryLine, takeoverLine } from '../../tools/local-lines.js';
import type { RuntimeSummary } from '../../tools/local-runtime.js';

const SLOT = Date.UTC(2026, 10, 29, 18, 28, 10);
const KEY = 'payments-reconcile@2026-11-29T18:28:10.000Z';

describe('npm start lines', () => {
  it('an outcome with an error names its code and message, quoted on one line', () => {
    const line = outcomeLine({ job: 'payments-reconcile', slot: SLOT, runKey: KEY, attempt: 2, token: 7, status: 'RETRY', durationMs: 12, error: { code: 'UPSTREAM_503', message: 'bank API said "busy"\nretry later' } });
    expect(line).toBe(`RETRY     payments-reconcile   slot=2026-11-29T18:28:10.000Z runKey=${KEY} attempt=2 token=7 duration=12ms error=UPSTREAM_503 "bank API said \\"busy\\"\\nretry later"`);
    expect(line.split('\n')).toHaveLength(1);
    expect(outcomeLine({ job: 'j', slot: SLOT, runKey: KEY, attempt: 1, token: 1, status: 'SUCCEEDED', durationMs: 3 })).not.toContain('error=');
  });

  it('SKIPPED and SUPERSEDED runs (ended without an attempt) say so and why', () => {
    expect(settledLine({ job: 'payments-reconcile', slot: SLOT, runKey: KEY, status: 'SKIPPED', reason: 'skipped: run of 2026-11-29T18:27:10.000Z still open (forbid-skip)' })).toBe(
      `SKIPPED   payments-reconcile   slot=2026-11-29T18:28:10.000Z runKey=${KEY} (not run) reason="skipped: run of 2026-11-29T18:27:10.000Z still open (forbid-skip)"`,
    );
    expect(settledLine({ job: 'j', slot: SLOT, runKey: KEY, status: 'SUPERSEDED', reason: 'superseded by j@x (coalesce)' })).toMatch(/^SUPERSEDED j\s+slot=.* \(not run\) reason="superseded by j@x \(coalesce\)"$/);
  });

  it('a takeover names both owners; a fenced-out write names the resource', () => {
    expect(takeoverLine({ runKey: KEY, token: 9, owner: 'w-2', previousOwner: 'w-1' })).toBe(`TAKEOVER  payments-reconcile   runKey=${KEY} token=9 owner=w-2 from=w-1 (its lease expired)`);
    expect(fencedOutLine({ runKey: KEY, token: 9, resource: 'ledger/CACHE#x/CURRENT' })).toBe(
      `FENCED    payments-reconcile   runKey=${KEY} token=9 resource=ledger/CACHE#x/CURRENT (refused: a higher fence already wrote it)`,
    );
  });

  it('the summary shows trigger lag over on-time first attempts, and late starts apart', () => {
    const base: RuntimeSummary = {
      uptimeSeconds: 60, ticks: 6, runsSucceeded: 7, runsFailed: 0, runsSkipped: 1, runsSuperseded: 0, duplicatesAcked: 0, takeovers: 0,
      fencingRejections: 0, fencedOutWrites: 0, poisonMessages: 0, outboxEvents: 0,
      triggerLagSamples: 6, triggerLagP50Ms: 0, triggerLagP99Ms: 4, lateStarts: 1, lateStartLagP99Ms: 1_112_051, violations: 0,
    };
    const line = summaryLine(base);
    expect(line).toContain('trigger lag p50 0 ms / p99 4 ms over 6 on-time first attempt(s), 1 late start(s) (catch-up, backfill, manual) p99 1112051 ms');
    expect(line).toContain('1 skipped');
    expect(summaryLine({ ...base, triggerLagSamples: 0, lateStarts: 0 })).toContain('trigger lag no on-time first attempts yet, 0 violations');
  });
});
