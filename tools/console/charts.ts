/**
 * Charts as inline SVG built from numbers and escaped text: the timeline of recent runs' attempts
 * (one bar per claim, coloured by how it ended, takeovers and fenced-out writes marked) and the
 * calendar heatmap of outcomes per UTC day.
 */
import { RunStatus, type Run } from '../../shared/core/vocabulary.js';
import { AttemptEnd, attemptHistory, fencedOutText, type AttemptRow } from '../ops/attempts.js';
import { escape, html, raw, type Html } from './html.js';

const DAY_MS = 86_400_000;

/** The colour class of an attempt: its recorded outcome, else how it ended. */
export function attemptClass(row: AttemptRow): string {
  if (row.end === AttemptEnd.RECORDED && row.outcome !== undefined) return `o-${row.outcome.toLowerCase()}`;
  return `o-${row.end}`;
}

export interface TimelineRun {
  readonly run: Run;
  readonly attempts: readonly AttemptRow[];
}

export function timelineRuns(runs: readonly Run[]): TimelineRun[] {
  return runs.map((run) => ({ run, attempts: attemptHistory(run).rows }));
}

/** One row per run (newest on top), one bar per attempt from its claim to its end (now while running). */
export function timeline(runs: readonly TimelineRun[], now: number, laneHolders: ReadonlySet<string> = new Set()): Html {
  const bars = runs.flatMap((r, index) =>
    r.attempts
      .filter((a) => a.claimedAt !== undefined)
      .map((a) => ({ r, a, index, start: a.claimedAt!, end: a.endedAt ?? (a.end === AttemptEnd.RUNNING ? now : a.claimedAt! + 1_000) })),
  );
  if (bars.length === 0) return html`<p>No attempts among these runs yet.</p>`;
  const t0 = Math.min(...bars.map((b) => b.start));
  const t1 = Math.max(...bars.map((b) => b.end), t0 + 1_000);
  const left = 260;
  const width = 900;
  const rowH = 18;
  const x = (t: number) => left + ((t - t0) / (t1 - t0)) * (width - left - 10);
  const parts: string[] = [];
  runs.forEach((r, i) => {
    const holder = laneHolders.has(r.run.runKey);
    parts.push(
      `<text x="4" y="${i * rowH + 13}" class="label${holder ? ' holder' : ''}"${holder ? ' data-lane-holder="true"' : ''}>${holder ? 'lane ◆ ' : ''}${escape(r.run.runKey.slice(0, 40))}</text>`,
    );
  });
  for (const { r, a, index, start, end } of bars) {
    const takeover = a.from === RunStatus.RUNNING;
    const fenced = a.fencedOut !== undefined;
    const w = Math.max(3, x(end) - x(start));
    const refused = fenced ? `; ${a.fencedOut!.count} write(s) fenced out: ${fencedOutText(a.fencedOut)}` : '';
    const title = `${r.run.runKey} claim ${a.claim} by ${a.owner ?? '?'} token ${a.token ?? '?'}${takeover ? ' (took over a RUNNING run)' : ''}: ${a.outcome ?? a.end}${a.code ? ` ${a.code}` : ''}${refused}`;
    parts.push(
      `<rect x="${x(start).toFixed(1)}" y="${index * rowH + 3}" width="${w.toFixed(1)}" height="${rowH - 6}" class="bar ${attemptClass(a)}${takeover ? ' takeover' : ''}${fenced ? ' fenced' : ''}" data-run="${escape(r.run.runKey)}" data-claim="${a.claim}" data-takeover="${takeover}" data-fenced="${fenced}"><title>${escape(title)}</title></rect>`,
    );
    if (takeover)
      parts.push(`<text x="${(x(start) - 2).toFixed(1)}" y="${index * rowH + 14}" class="mark" text-anchor="end">takeover ▶</text>`);
    if (fenced)
      parts.push(
        `<text x="${(x(start) + w + 2).toFixed(1)}" y="${index * rowH + 14}" class="mark fenced" data-run="${escape(r.run.runKey)}" data-claim="${a.claim}">fenced ✕</text>`,
      );
  }
  const height = runs.length * rowH + 20;
  parts.push(`<text x="${left}" y="${height - 4}" class="axis">${new Date(t0).toISOString()}</text>`);
  parts.push(`<text x="${width - 10}" y="${height - 4}" class="axis" text-anchor="end">${new Date(t1).toISOString()}</text>`);
  return html`<svg class="timeline" role="img" aria-label="Timeline of the recent runs' attempts" viewBox="0 0 ${width} ${height}" width="100%">${raw(parts.join(''))}</svg>
<p class="legend"><span class="key o-succeeded"></span>succeeded <span class="key o-retry"></span>retry <span class="key o-dead"></span>dead <span class="key o-unknown"></span>unknown <span class="key o-taken-over"></span>taken over (worker died or lost its lease) <span class="key o-running"></span>running · “takeover ▶” marks a claim of a RUNNING run · “fenced ✕” marks an attempt whose writes a newer token refused (the bar ends at the first) · “lane ◆” marks the run holding its exclusive lane</p>`;
}

export interface DayCounts {
  readonly day: number;
  readonly counts: Partial<Record<RunStatus, number>>;
}

/** Counts per UTC day of the `days` days up to `now`, oldest first. */
export function countByDay(runs: readonly Pick<Run, 'slot' | 'status'>[], now: number, days: number): DayCounts[] {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const out = Array.from({ length: days }, (_, i) => ({
    day: today - (days - 1 - i) * DAY_MS,
    counts: {} as Partial<Record<RunStatus, number>>,
  }));
  for (const run of runs) {
    const index = Math.floor((run.slot - out[0]!.day) / DAY_MS);
    const cell = out[index];
    if (cell) cell.counts[run.status] = (cell.counts[run.status] ?? 0) + 1;
  }
  return out;
}

/** A day's colour: any DEAD, any UNKNOWN, all ended well, something else, nothing. */
export function dayClass(counts: Partial<Record<RunStatus, number>>): string {
  const n = (s: RunStatus) => counts[s] ?? 0;
  const total = Object.values(counts).reduce((a, b) => a + (b ?? 0), 0);
  if (total === 0) return 'd-none';
  if (n(RunStatus.DEAD) > 0) return 'd-dead';
  if (n(RunStatus.UNKNOWN) > 0) return 'd-unknown';
  if (n(RunStatus.SUCCEEDED) + n(RunStatus.MANUAL) === total) return 'd-ok';
  return 'd-mixed';
}

/** Weeks as columns, days as rows, like a contribution calendar. */
export function heatmap(days: readonly DayCounts[]): Html {
  const size = 13;
  const firstWeekday = new Date(days[0]!.day).getUTCDay();
  const cells = days.map((d, i) => {
    const pos = i + firstWeekday;
    const col = Math.floor(pos / 7);
    const row = pos % 7;
    const summary =
      Object.entries(d.counts)
        .map(([s, c]) => `${s} ${c}`)
        .join(', ') || 'no runs';
    const date = new Date(d.day).toISOString().slice(0, 10);
    return `<rect x="${col * (size + 2)}" y="${row * (size + 2)}" width="${size}" height="${size}" class="${dayClass(d.counts)}" data-day="${date}"><title>${date}: ${escape(summary)}</title></rect>`;
  });
  const cols = Math.ceil((days.length + firstWeekday) / 7);
  return html`<svg class="heatmap" role="img" aria-label="Outcomes per day over ${days.length} days" viewBox="0 0 ${cols * (size + 2)} ${7 * (size + 2)}" width="${cols * (size + 2) * 1.5}">${raw(cells.join(''))}</svg>
<p class="legend"><span class="key d-ok"></span>all succeeded <span class="key d-mixed"></span>other outcomes or open <span class="key d-unknown"></span>some UNKNOWN <span class="key d-dead"></span>some DEAD <span class="key d-none"></span>no runs (UTC days, by slot)</p>`;
}
