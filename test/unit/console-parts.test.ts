/**
 * The console's parts that need no server: escaping in the HTML template, the Host/Origin and
 * CSRF rules, the heatmap's day counts and colours, and the actions' form checks.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { ACTIONS, formFields } from '../../tools/console/actions.js';
import { countByDay, dayClass } from '../../tools/console/charts.js';
import { HttpError } from '../../tools/console/context.js';
import { html, raw } from '../../tools/console/html.js';
import { pageOf } from '../../tools/console/pages/job.js';
import { jobsQuery, pauseBadge } from '../../tools/console/pages/jobs.js';
import { failureStreak } from '../../tools/console/jobs-rows.js';
import { Security, sessionOf } from '../../tools/console/security.js';

const DAY = 86_400_000;
const request = (headers: IncomingMessage['headers']) => ({ headers }) as IncomingMessage;

describe('console html', () => {
  it('escapes every interpolated value, nested lists included, and keeps Html as it is', () => {
    const note = `<script>alert("x")</script> & 'q'`;
    expect(html`<p title="${note}">${[note, html`<b>${note}</b>`]}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;<b>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;</b></p>',
    );
    expect(html`${undefined}${null}${false}${0}${raw('<svg/>')}`.text).toBe('0<svg/>');
  });
});

describe('console security', () => {
  const security = new Security(8123);

  it('accepts only its own loopback Host and Origin', () => {
    expect(security.refusal(request({ host: '127.0.0.1:8123' }))).toBeUndefined();
    expect(security.refusal(request({ host: 'localhost:8123', origin: 'http://localhost:8123' }))).toBeUndefined();
    expect(security.refusal(request({ host: '127.0.0.1:8124' }))).toContain('foreign Host');
    expect(security.refusal(request({ host: 'rebound.example:8123' }))).toContain('foreign Host');
    expect(security.refusal(request({}))).toContain('foreign Host');
    expect(security.refusal(request({ host: '127.0.0.1:8123', origin: 'null' }))).toContain('foreign Origin');
    expect(security.refusal(request({ host: '127.0.0.1:8123', origin: 'https://127.0.0.1:8123' }))).toContain('foreign Origin');
  });

  it('a CSRF token is valid for its own session only, and for no other console process', () => {
    const session = security.newSession();
    const token = security.tokenFor(session);
    expect(security.validToken(session, token)).toBe(true);
    expect(security.validToken(security.newSession(), token)).toBe(false);
    expect(security.validToken(undefined, token)).toBe(false);
    expect(security.validToken(session, undefined)).toBe(false);
    expect(security.validToken(session, token.slice(1))).toBe(false);
    expect(new Security(8123).validToken(session, token)).toBe(false);
    expect(sessionOf(request({ cookie: `a=b; fsched_console_session=${session}` }))).toBe(session);
  });
});

describe('console heatmap', () => {
  const now = Date.UTC(2026, 11, 1, 12);
  it('counts runs per UTC day by slot, oldest day first, and drops what is outside the days', () => {
    const days = countByDay(
      [
        { slot: now - 1, status: RunStatus.SUCCEEDED },
        { slot: now - 2, status: RunStatus.DEAD },
        { slot: now - DAY, status: RunStatus.SUCCEEDED },
        { slot: now - 3 * DAY, status: RunStatus.SUCCEEDED },
      ],
      now,
      3,
    );
    expect(days.map((d) => new Date(d.day).toISOString().slice(0, 10))).toEqual(['2026-11-29', '2026-11-30', '2026-12-01']);
    expect(days.map((d) => d.counts)).toEqual([{}, { SUCCEEDED: 1 }, { SUCCEEDED: 1, DEAD: 1 }]);
  });

  it('colours a day by its worst outcome', () => {
    expect(dayClass({})).toBe('d-none');
    expect(dayClass({ SUCCEEDED: 3, MANUAL: 1 })).toBe('d-ok');
    expect(dayClass({ SUCCEEDED: 3, RUNNING: 1 })).toBe('d-mixed');
    expect(dayClass({ SUCCEEDED: 3, UNKNOWN: 1 })).toBe('d-unknown');
    expect(dayClass({ UNKNOWN: 1, DEAD: 1 })).toBe('d-dead');
  });
});

describe('console action forms', () => {
  it('a required field left empty, or a value outside its choices, is a 400 naming the field', () => {
    const form = (entries: Record<string, string>) => new URLSearchParams(entries);
    expect(() => formFields(ACTIONS.pause!, form({ note: '  ' }))).toThrow(
      new HttpError(400, 'field "note": note (why; shown with the paused badge) is required'),
    );
    expect(() => formFields(ACTIONS.resolve!, form({ as: 'maybe', reason: 'x' }))).toThrow(
      /field "as": one of succeeded, dead, got "maybe"/,
    );
    expect(formFields(ACTIONS.resolve!, form({ as: 'dead', reason: ' fixed by hand ' }))).toEqual({ as: 'dead', reason: 'fixed by hand' });
    expect(formFields(ACTIONS.trigger!, form({ note: '', overlap: '', idempotency: 'console-1' }))).toEqual({ idempotency: 'console-1' });
    expect(() => formFields(ACTIONS.trigger!, form({ note: '', overlap: '' }))).toThrow(/field "idempotency"/);
    expect(formFields(ACTIONS.pause!, form({ note: 'window', until: ' 2h ' }))).toEqual({ note: 'window', until: '2h' });
    expect(formFields(ACTIONS.pause!, form({ note: 'window', until: '' }))).toEqual({ note: 'window' });
  });
});

describe('console jobs page', () => {
  const dead = { status: RunStatus.DEAD, lastError: { code: 'BANK_DOWN', message: 'x' } };
  const ok = { status: RunStatus.SUCCEEDED };
  it('counts the failure streak newest first up to the first success, passing over runs that did not run or that an operator closed', () => {
    expect(failureStreak([], true)).toEqual({ count: 0, atLeast: false });
    expect(failureStreak([ok, dead], true)).toEqual({ count: 0, atLeast: false });
    expect(
      failureStreak(
        [
          dead,
          { status: RunStatus.RETRY },
          { status: RunStatus.SKIPPED },
          { status: RunStatus.DEAD, lastError: { code: 'RESOLVED', message: 'x' } },
          dead,
          ok,
          dead,
        ],
        true,
      ),
    ).toEqual({ count: 3, atLeast: false });
    expect(failureStreak([{ status: RunStatus.READY }, dead, dead], true)).toEqual({ count: 2, atLeast: false });
    // The read ran out while the streak went on: at least.
    expect(failureStreak([dead, dead], false)).toEqual({ count: 2, atLeast: true });
  });

  it('refuses an unknown state or policy, naming the field and the value as written', () => {
    expect(jobsQuery({ state: 'paused', policy: 'parallel', after: 'b' }, ['parallel'])).toEqual({
      name: undefined,
      state: 'paused',
      policy: 'parallel',
      after: 'b',
    });
    expect(jobsQuery({ state: '', policy: '' }, ['parallel'])).toEqual({
      name: undefined,
      state: undefined,
      policy: undefined,
      after: undefined,
    });
    expect(() => jobsQuery({ state: 'sleeping' }, ['parallel'])).toThrow(
      new HttpError(400, 'field "state": one of active, paused, disabled, finished, got "sleeping"'),
    );
    expect(() => jobsQuery({ policy: 'serial' }, ['parallel', 'replace'])).toThrow(
      new HttpError(400, 'field "policy": one of parallel, replace, got "serial"'),
    );
  });

  it("the paused badge says who, when, until when in UTC and the job's zone, and the note as text", () => {
    expect(
      pauseBadge({
        paused: true,
        pausedBy: 'dana',
        pausedAt: '2026-12-01T12:00:00Z',
        pausedUntil: '2026-12-01T17:00:00.000Z',
        timezone: 'Europe/Paris',
        pauseNote: '<i>db</i>',
      }).text,
    ).toBe(
      '<span class="badge paused" role="status">PAUSED by dana at 2026-12-01T12:00:00Z until 2026-12-01T17:00:00Z (2026-12-01 18:00:00 +01:00 Europe/Paris): &lt;i&gt;db&lt;/i&gt;</span>',
    );
    expect(pauseBadge({ paused: false }).text).toBe('');
  });
});

describe('console run pages', () => {
  const runs = (...slots: number[]) => slots.map((slot, i) => ({ slot, i }));
  it('shows all runs when they fit, with no older page', () => {
    expect(pageOf(runs(5, 4, 3), 3)).toEqual({ runs: runs(5, 4, 3) });
  });
  it('ends a full page on a slot boundary, so the next page (before the cursor) holds the split slot whole', () => {
    expect(pageOf(runs(9, 8, 7, 6), 3)).toEqual({ runs: runs(9, 8, 7, 6).slice(0, 3), before: 7 });
    expect(pageOf(runs(9, 8, 7, 7), 3)).toEqual({ runs: runs(9, 8, 7, 7).slice(0, 2), before: 8 });
    expect(pageOf(runs(9, 8, 8, 8), 3)).toEqual({ runs: runs(9, 8, 8, 8).slice(0, 1), before: 9 });
    // One slot alone fills the page: it is cut (its other shards are reached by run key).
    expect(pageOf(runs(8, 8, 8, 8), 3)).toEqual({ runs: runs(8, 8, 8, 8).slice(0, 3), before: 8 });
  });
});
