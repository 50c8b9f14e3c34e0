/**
 * `/`: every deployed job, from `ops jobs`' own collectJobs (schedule, zone, pause, next fires,
 * last run, open and DEAD runs), filtered by name, state and overlap policy from the query string.
 */
import type { Job } from '../../../shared/schedule/job-schema.js';
import { collectJobs, type JobRow } from '../../ops/jobs.js';
import type { ConsoleContext } from '../context.js';
import { localTime } from '../../ops/preview.js';
import { html, jobHref, runHref, statusBadge, utc, type Html } from '../html.js';

export const JOB_STATES = ['active', 'paused', 'disabled', 'finished'] as const;

export function stateOf(row: JobRow): (typeof JOB_STATES)[number] {
  if (row.paused) return 'paused';
  if (row.finished) return 'finished';
  return row.enabled ? 'active' : 'disabled';
}

export function pauseBadge(row: Pick<JobRow, 'paused' | 'pausedBy' | 'pausedAt' | 'pauseNote'>): Html {
  if (!row.paused) return html``;
  return html`<span class="badge paused" role="status">PAUSED by ${row.pausedBy ?? '?'} at ${row.pausedAt ?? '?'}${row.pauseNote ? html`: ${row.pauseNote}` : ''}</span>`;
}

export interface JobsFilter {
  readonly name?: string;
  readonly state?: string;
  readonly policy?: string;
}

export async function jobsPage(ctx: ConsoleContext, filter: JobsFilter): Promise<{ title: string; main: Html }> {
  const now = ctx.now();
  const byName = new Map(ctx.jobs.map((j) => [j.name, j]));
  const named = ctx.jobs.filter((j) => (filter.name ? j.name.includes(filter.name) : true) && (filter.policy ? j.overlap === filter.policy : true));
  const rows = (await collectJobs(ctx.target, named, now)).filter((row) => (filter.state ? stateOf(row) === filter.state : true));
  const policies = [...new Set(ctx.jobs.map((j) => j.overlap))].sort();
  const option = (value: string, chosen: string | undefined) => html`<option value="${value}" ${value === chosen ? html`selected` : ''}>${value || 'any'}</option>`;
  const main = html`<h1>Jobs</h1>
<form method="get" action="/" class="filter"><label>Name contains <input name="name" value="${filter.name ?? ''}"></label>
<label>State <select name="state">${['', ...JOB_STATES].map((s) => option(s, filter.state))}</select></label>
<label>Overlap policy <select name="policy">${['', ...policies].map((p) => option(p, filter.policy))}</select></label>
<button type="submit">Filter</button></form>
<p>${rows.length} of ${ctx.jobs.length} job(s) (${ctx.jobSource}) · ${utc(now)}</p>
<table class="jobs"><thead><tr><th scope="col">Job</th><th scope="col">Schedule</th><th scope="col">State</th><th scope="col">Next fires (job's zone · UTC)</th><th scope="col">Last run</th><th scope="col">Open</th><th scope="col">DEAD 24 h</th></tr></thead>
<tbody>${rows.map((row) => jobRow(row, byName.get(row.job)!))}</tbody></table>`;
  return { title: 'Jobs', main };
}

function jobRow(row: JobRow, job: Job): Html {
  const fires = row.nextFireTimes.map((f) => Date.parse(f));
  return html`<tr data-job="${row.job}"><th scope="row"><a href="${jobHref(row.job)}">${row.job}</a></th>
<td><code>${row.schedule}</code><br><small>zone ${row.timezone} · overlap ${job.overlap}</small></td>
<td>${row.paused ? pauseBadge(row) : html`<span class="state">${stateOf(row)}${row.behind ? ' (catching up)' : ''}</span>`}</td>
<td class="fires">${fires.length === 0 ? (row.finished ? 'none (finished)' : 'none') : fires.map((f) => html`<div>${localTime(f, row.timezone)} · ${utc(f)}</div>`)}</td>
<td>${row.lastRun ? html`<a href="${runHref(row.lastRun.runKey)}">${row.lastRun.runKey}</a> ${statusBadge(row.lastRun.status)}` : 'none'}</td>
<td class="num">${row.openRuns}</td><td class="num ${row.deadLast24h > 0 ? 'alert' : ''}">${row.deadLast24h}</td></tr>`;
}
