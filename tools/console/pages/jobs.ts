/**
 * `/`: the deployed jobs, a page at a time in name order (`?after=<name>`), filtered by name,
 * state and overlap policy from the query string. What a page reads is bounded by what it shows
 * (tools/console/jobs-rows.ts): the planner's state of its jobs and a few of each job's newest runs.
 */
import { describeSchedule } from '../../../shared/schedule/slots.js';
import { HttpError, type ConsoleContext } from '../context.js';
import { localTime } from '../../ops/preview.js';
import { html, href, jobHref, runHref, statusBadge, utc, type Html } from '../html.js';
import { JOB_STATES, JOBS_PER_PAGE, readJobsPage, ROW_RUNS_READ, type JobsQuery, type JobsRow, type JobState } from '../jobs-rows.js';

export { JOB_STATES } from '../jobs-rows.js';

export interface PauseView {
  readonly paused: boolean;
  readonly pausedBy?: string;
  readonly pausedAt?: string;
  readonly pauseNote?: string;
  /** When the pause ends by itself (ISO), shown on the job's clock too. */
  readonly pausedUntil?: string;
  readonly timezone?: string;
}

/** The paused badge: who, when, until when (UTC and the job's zone), and the note, as text. */
export function pauseBadge(row: PauseView): Html {
  if (!row.paused) return html``;
  const until = row.pausedUntil === undefined ? undefined : Date.parse(row.pausedUntil);
  return html`<span class="badge paused" role="status">PAUSED by ${row.pausedBy ?? '?'} at ${row.pausedAt ?? '?'}${until !== undefined ? html` until ${utc(until)}${row.timezone ? ` (${localTime(until, row.timezone)} ${row.timezone})` : ''}` : ''}${row.pauseNote ? html`: ${row.pauseNote}` : ''}</span>`;
}

export interface JobsFilter {
  readonly name?: string;
  readonly state?: string;
  readonly policy?: string;
  readonly after?: string;
}

/** The filter as the query string wrote it, checked: an unknown state or policy is refused naming it. */
export function jobsQuery(filter: JobsFilter, policies: readonly string[]): JobsQuery {
  const state = filter.state || undefined;
  if (state !== undefined && !(JOB_STATES as readonly string[]).includes(state))
    throw new HttpError(400, `field "state": one of ${JOB_STATES.join(', ')}, got "${state}"`);
  const policy = filter.policy || undefined;
  if (policy !== undefined && !policies.includes(policy))
    throw new HttpError(400, `field "policy": one of ${policies.join(', ')}, got "${policy}"`);
  return { name: filter.name || undefined, state: state as JobState | undefined, policy, after: filter.after || undefined };
}

export async function jobsPage(ctx: ConsoleContext, filter: JobsFilter): Promise<{ title: string; main: Html }> {
  const now = ctx.now();
  const policies = [...new Set(ctx.jobs.map((j) => j.overlap))].sort();
  const query = jobsQuery(filter, policies);
  const page = await readJobsPage(ctx.target, ctx.jobs, query, now);
  const option = (value: string, chosen: string | undefined) =>
    html`<option value="${value}" ${value === chosen ? html`selected` : ''}>${value || 'any'}</option>`;
  const keep = { name: query.name, state: query.state, policy: query.policy };
  const main = html`<h1>Jobs</h1>
<form method="get" action="/" class="filter"><label>Name contains <input name="name" value="${query.name ?? ''}"></label>
<label>State <select name="state">${['', ...JOB_STATES].map((s) => option(s, query.state))}</select></label>
<label>Overlap policy <select name="policy">${['', ...policies].map((p) => option(p, query.policy))}</select></label>
<button type="submit">Filter</button></form>
<p id="jobs-count">${page.rows.length} job(s) shown${query.after ? html` after <code>${query.after}</code>` : ''}, ${JOBS_PER_PAGE} a page in name order; ${page.matching} of ${ctx.jobs.length} job(s) (${ctx.jobSource}) match the name and policy${query.state ? ` (state ${query.state} checked page by page)` : ''} · ${utc(now)}</p>
<table class="jobs"><thead><tr><th scope="col">Job</th><th scope="col">Schedule</th><th scope="col">State</th><th scope="col">Next fires (job's zone · UTC)</th><th scope="col">Last run</th><th scope="col">Failure streak</th><th scope="col">Open</th><th scope="col">DEAD 24 h</th></tr></thead>
<tbody>${page.rows.map((row) => jobRow(row))}</tbody></table>
<p class="note">Failure streak, open and DEAD: of each job's newest ${ROW_RUNS_READ} due runs (≥: more may lie beyond them).</p>
<p class="pager">${query.after !== undefined ? html`<a href="${href('/', keep)}">First page</a> · ` : ''}${page.next !== undefined ? html`<a href="${href('/', { ...keep, after: page.next })}" rel="next">Next ${JOBS_PER_PAGE} jobs</a>` : 'No more jobs.'}</p>`;
  return { title: 'Jobs', main };
}

function jobRow(row: JobsRow): Html {
  const { job, plan } = row;
  const pause: PauseView = {
    paused: plan.pause !== undefined,
    pausedBy: plan.pause?.by,
    pausedAt: utc(plan.pause?.at),
    pauseNote: plan.pause?.note,
    pausedUntil: plan.pause?.until === undefined ? undefined : new Date(plan.pause.until).toISOString(),
    timezone: job.timezone,
  };
  const partial = row.countsPartial ? '≥ ' : '';
  const streak = row.streak.count === 0 ? '0' : `${row.streak.atLeast ? '≥ ' : ''}${row.streak.count}`;
  return html`<tr data-job="${job.name}"><th scope="row"><a href="${jobHref(job.name)}">${job.name}</a></th>
<td><code>${describeSchedule(job)}</code><br><small>zone ${job.timezone} · overlap ${job.overlap}</small></td>
<td>${pause.paused ? pauseBadge(pause) : html`<span class="state">${row.state}${row.behind ? ' (catching up)' : ''}</span>`}</td>
<td class="fires">${row.nextFires.length === 0 ? (row.state === 'finished' ? 'none (finished)' : 'none') : row.nextFires.map((f) => html`<div>${localTime(f.fireAt, job.timezone)} · ${utc(f.fireAt)}</div>`)}</td>
<td>${row.lastRun ? html`<a href="${runHref(row.lastRun.runKey)}">${row.lastRun.runKey}</a> ${statusBadge(row.lastRun.status)}` : 'none'}</td>
<td class="num streak ${row.streak.count > 0 ? 'alert' : ''}">${streak}</td>
<td class="num">${row.open}</td><td class="num ${row.dead24h > 0 ? 'alert' : ''}">${partial}${row.dead24h}</td></tr>`;
}
