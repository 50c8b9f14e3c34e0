/**
 * The lines `npm start` prints: an outcome carries the error the attempt recorded, a run ended
 * without an attempt says why, takeovers, fenced-out writes, poison messages and jobs paused by
 * failure have a line each, every line's columns align whatever its label, durations read in units,
 * and the summary's trigger lag counts on-time first attempts only (late starts are a figure of
 * their own) beside the poison count.
 */
import { describe, expect, it } from 'vitest';
import {
  deadLetterLine,
  eventLine,
  fencedOutLine,
  jobColumnWidth,
  outcomeLine,
  pausedLine,
  poisonLine,
  settledLine,
  summaryLine,
  takeoverLine,
} from '../../tools/local-lines.js';
import type { RuntimeSummary } from '../../tools/local-runtime.js';

const SLOT = Date.UTC(2026, 10, 29, 18, 28, 10);
const KEY = 'payments-reconcile@2026-11-29T18:28:10.000Z';
const SUMMARY: RuntimeSummary = {
  uptimeSeconds: 60,
  ticks: 6,
  runsSucceeded: 7,
  runsFailed: 0,
  runsSkipped: 1,
  runsSuperseded: 0,
  duplicatesAcked: 0,
  takeovers: 0,
  fencingRejections: 0,
  fencedOutWrites: 0,
  poisonMessages: 0,
  deadLettered: 0,
  jobsPausedByFailure: 0,
  outboxEvents: 0,
  triggerLagSamples: 6,
  triggerLagP50Ms: 0,
  triggerLagP99Ms: 4,
  lateStarts: 1,
  lateStartLagP99Ms: 1_112_051,
  violations: 0,
};

describe('npm start lines', () => {
  it('an outcome with an error names its code and message, quoted on one line', () => {
    const line = outcomeLine({
      job: 'payments-reconcile',
      slot: SLOT,
      runKey: KEY,
      attempt: 2,
      token: 7,
      status: 'RETRY',
      durationMs: 12,
      error: { code: 'UPSTREAM_503', message: 'bank API said "busy"\nretry later' },
    });
    expect(line).toBe(
      `RETRY      payments-reconcile         12 ms  slot=2026-11-29T18:28:10.000Z runKey=${KEY} attempt=2 token=7 error=UPSTREAM_503 "bank API said \\"busy\\"\\nretry later"`,
    );
    expect(line.split('\n')).toHaveLength(1);
    expect(outcomeLine({ job: 'j', slot: SLOT, runKey: KEY, attempt: 1, token: 1, status: 'SUCCEEDED', durationMs: 3 })).not.toContain(
      'error=',
    );
  });

  it('a long attempt reads in hours and minutes, never as a count of milliseconds', () => {
    const line = outcomeLine({
      job: 'nightly-export',
      slot: SLOT,
      runKey: KEY,
      attempt: 1,
      token: 1,
      status: 'SUCCEEDED',
      durationMs: 10_643_367,
    });
    expect(line).toContain(' 2 h 57 min  slot=');
    expect(line).not.toMatch(/\d{4,} ?ms/);
  });

  it('SKIPPED and SUPERSEDED runs (ended without an attempt) say so and why', () => {
    expect(
      settledLine({
        job: 'payments-reconcile',
        slot: SLOT,
        runKey: KEY,
        status: 'SKIPPED',
        reason: 'skipped: run of 2026-11-29T18:27:10.000Z still open (forbid-skip)',
      }),
    ).toBe(
      `SKIPPED    payments-reconcile     (not run)  slot=2026-11-29T18:28:10.000Z runKey=${KEY} reason="skipped: run of 2026-11-29T18:27:10.000Z still open (forbid-skip)"`,
    );
    expect(settledLine({ job: 'j', slot: SLOT, runKey: KEY, status: 'SUPERSEDED', reason: 'superseded by j@x (coalesce)' })).toMatch(
      /^SUPERSEDED j\s+\(not run\)  slot=.* reason="superseded by j@x \(coalesce\)"$/,
    );
  });

  it('a takeover names both owners; a fenced-out write names the resource', () => {
    expect(takeoverLine({ runKey: KEY, token: 9, owner: 'w-2', previousOwner: 'w-1' })).toBe(
      `TAKEOVER   payments-reconcile                runKey=${KEY} token=9 owner=w-2 from=w-1 (its lease expired)`,
    );
    expect(fencedOutLine({ runKey: KEY, token: 9, resource: 'ledger/CACHE#x/CURRENT' })).toBe(
      `FENCED     payments-reconcile                runKey=${KEY} token=9 resource=ledger/CACHE#x/CURRENT (refused: a higher fence already wrote it)`,
    );
  });

  it('a poison message names its id, its code and why no worker can run it, and that it goes to the DLQ', () => {
    expect(
      poisonLine({ messageId: 'm-1', job: 'gone-job', runKey: '', code: 'UNKNOWN_JOB', reason: 'job "gone-job" is not configured' }),
    ).toBe(
      'POISON     gone-job                          messageId=m-1 code=UNKNOWN_JOB reason="job \\"gone-job\\" is not configured" (no worker can run it: SQS moves it to the dead-letter queue after 15 receives)',
    );
    expect(poisonLine({ messageId: 'm-2', runKey: '', code: 'MALFORMED', reason: 'body is not JSON' })).toMatch(/^POISON {5}\? {20}/);
  });

  it('a message moved to the DLQ names its id and the run its body names, or ? for a body that names none', () => {
    expect(deadLetterLine({ messageId: 'm-1', job: 'payments-reconcile', runKey: KEY })).toBe(
      `DLQ        payments-reconcile                messageId=m-1 runKey=${KEY} (moved to the dead-letter queue: it waits for an operator; npx fsched ops status shows the DLQ depth)`,
    );
    expect(deadLetterLine({ messageId: 'm-2' })).toMatch(/^DLQ {8}\? {20} {13}messageId=m-2 \(moved/);
  });

  it('a job paused by failure names the pause note and the command that resumes it', () => {
    expect(pausedLine({ job: 'payments-reconcile', note: 'paused after 3 consecutive DEAD run(s); last x: BOOM' })).toBe(
      'PAUSED     payments-reconcile                note="paused after 3 consecutive DEAD run(s); last x: BOOM" (paused by failure: no slot is planned until npx fsched ops resume payments-reconcile)',
    );
  });

  it('every label, job and duration column starts at the same place, whatever the label (SUPERSEDED is the longest)', () => {
    const width = jobColumnWidth(['a-job-with-a-rather-long-name', 'j']);
    expect(width).toBe('a-job-with-a-rather-long-name'.length);
    const lines = [
      outcomeLine({ job: 'j', slot: SLOT, runKey: KEY, attempt: 1, token: 1, status: 'SUCCEEDED', durationMs: 850 }, width),
      outcomeLine(
        { job: 'a-job-with-a-rather-long-name', slot: SLOT, runKey: KEY, attempt: 1, token: 1, status: 'DEAD', durationMs: 45_210 },
        width,
      ),
      settledLine({ job: 'j', slot: SLOT, runKey: KEY, status: 'SUPERSEDED' }, width),
      settledLine({ job: 'j', slot: SLOT, runKey: KEY, status: 'SKIPPED' }, width),
      takeoverLine({ runKey: KEY, token: 9, owner: 'w-2' }, width),
      fencedOutLine({ runKey: KEY, token: 9, resource: 'r' }, width),
      poisonLine({ messageId: 'm', runKey: '', code: 'MALFORMED', reason: 'x' }, width),
      pausedLine({ job: 'j' }, width),
      deadLetterLine({ messageId: 'm' }, width),
      eventLine({ detailType: 'PaymentSettled', eventKey: 'k', detail: {}, job: 'j', runKey: KEY }, width),
    ];
    // The job column starts after the label column, and what follows the duration column starts at one place.
    const jobAt = 'SUPERSEDED '.length;
    const restAt = jobAt + width + 1 + 11 + 2;
    for (const line of lines) {
      expect(line[jobAt - 1], line).toBe(' ');
      expect(line[jobAt], line).not.toBe(' ');
      expect(line.slice(restAt - 2, restAt), line).toBe('  ');
      expect(line[restAt], line).not.toBe(' ');
    }
    expect(lines[0]).toContain('     850 ms  ');
    expect(lines[1]).toContain('       45 s  ');
  });

  it('the summary shows trigger lag over on-time first attempts in units, late starts apart, and the poison count', () => {
    const line = summaryLine({ ...SUMMARY, poisonMessages: 2, deadLettered: 1, jobsPausedByFailure: 1, uptimeSeconds: 10_643 });
    expect(line).toContain('summary: 2 h 57 min up, ');
    expect(line).toContain(
      'trigger lag p50 0 ms / p99 4 ms over 6 on-time first attempt(s), 1 late start(s) (catch-up, backfill, manual) p99 18 min 32 s',
    );
    expect(line).toContain('1 skipped');
    expect(line).toContain('2 poison message(s), 1 moved to the DLQ, 1 job(s) paused by failure');
    expect(line).not.toMatch(/\d{4,} ?ms/);
    expect(summaryLine({ ...SUMMARY, triggerLagSamples: 0, lateStarts: 0 })).toContain(
      'trigger lag no on-time first attempts yet, 0 violations',
    );
  });
});
