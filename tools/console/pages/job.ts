/**
 * `/jobs/<name>`: the job's upcoming slots (the planner's own slot code, as `ops preview` and
 * `ops jobs` use it), a timeline of the shown runs' attempts (an exclusive job's lane holder
 * marked, from the lane markers), a 90-day heatmap of outcomes, and
 * its runs newest first, paged by slot (`?before=<slot ms>`, the oldest slot shown).
 */
import { jobPlanning } from '../../../shared/store/job-planning.js';
import { partitionOf } from '../../../shared/core/partition.js';
import { runKeyOf } from '../../../shared/core/vocabulary.js';
import { OverlapPolicy, type Job } from '../../../shared/schedule/job-schema.js';
import { describeSchedule, slotSpecOf } from '../../../shared/schedule/slots.js';
import { localTime, nextFires } from '../../ops/preview.js';
import { runRow, RUN_HEADERS } from '../../ops/runs.js';
import { iso } from '../../ops/io.js';
import { countByDay, heatmap, timeline, timelineRuns } from '../charts.js';
import { HttpError, type ConsoleContext } from '../context.js';
import { html, href, jobHref, runHref, statusBadge, utc, type Html } from '../html.js';
import { actionButton } from './actions-ui.js';
import { pauseBadge } from './jobs.js';

export const RUNS_PER_PAGE = 20;
export const UPCOMING = 10;
export const HEATMAP_DAYS = 90;
/**
 * Runs the heatmap reads at most (newest first, slot and status only); a busier job's older days
 * are marked as not read. Bounds the page's server time whatever the job's history: one query of
 * at most this many small items.
 */
export const HEATMAP_MAX_RUNS = 2_000;

export async function jobPage(ctx: ConsoleContext, name: string, before: string | undefined): Promise<{ title: string; main: Html }> {
  const job = ctx.jobs.find((j) => j.name === name);
  if (!job) throw new HttpError(404, `no job "${name}" in ${ctx.jobSource}`);
  const untilSlot = before === undefined || before === '' ? undefined : Number(before);
  if (untilSlot !== undefined && !Number.isSafeInteger(untilSlot))
    throw new HttpError(400, `"before" must be a slot in epoch milliseconds, got "${before}"`);
  const now = ctx.now();
  const [plan, read, recent, lanes] = await Promise.all([
    jobPlanning(ctx.target.ledger.planning, [job.name], partitionOf, now).then((m) => m.get(job.name)!),
    ctx.target.ops.queryRuns(job.name, { untilSlot, limit: RUNS_PER_PAGE + 1 }),
    ctx.target.ops.runStatuses(job.name, { sinceSlot: now - HEATMAP_DAYS * 86_400_000, untilSlot: now + 1, limit: HEATMAP_MAX_RUNS }),
    laneHolders(ctx, job),
  ]);
  const { runs, before: older } = pageOf(read, RUNS_PER_PAGE);
  const upcoming = nextFires({ spec: slotSpecOf(job), jitter: job }, now, UPCOMING);
  const paused = {
    paused: plan.pause !== undefined,
    pausedBy: plan.pause?.by,
    pausedAt: iso(plan.pause?.at),
    pauseNote: plan.pause?.note,
    pausedUntil: iso(plan.pause?.until),
    timezone: job.timezone,
  };
  const truncatedFrom = recent.length >= HEATMAP_MAX_RUNS ? recent.at(-1)!.slot : undefined;
  const main = html`<h1>Job ${job.name} ${pauseBadge(paused)}</h1>
<p>Schedule <code>${describeSchedule(job)}</code> in zone <strong>${job.timezone}</strong> · overlap ${job.overlap} · misfire ${job.misfire.policy}${job.enabled ? '' : ' · disabled'}${plan.plannedUntil !== undefined ? html` · planned until ${utc(plan.plannedUntil)}` : ''}</p>
${ctx.readOnly ? '' : html`<p class="actions">${plan.pause ? actionButton('resume', { job: job.name }, 'Resume…') : actionButton('pause', { job: job.name }, 'Pause…')} ${actionButton('trigger', { job: job.name }, 'Trigger now…')} ${actionButton('backfill', { job: job.name }, 'Backfill…')}</p>`}
<h2>Upcoming</h2>
<table class="upcoming"><thead><tr><th scope="col">Slot (${job.timezone})</th><th scope="col">Slot (UTC)</th><th scope="col">Fires at (UTC, with jitter)</th></tr></thead>
<tbody>${upcoming.map((f) => html`<tr><td>${localTime(f.slot, job.timezone)}</td><td>${utc(f.slot)}</td><td>${utc(f.fireAt)}</td></tr>`)}</tbody></table>
${upcoming.length === 0 ? html`<p>No slot to come.</p>` : ''}
<h2>Timeline of the runs below</h2>
${lanesText(job, lanes)}
${timeline(timelineRuns(runs), now, new Set(lanes.flatMap((l) => (l.holder ? [l.holder] : []))))}
<h2>Outcomes per day, last ${HEATMAP_DAYS} days</h2>
${heatmap(countByDay(recent, now, HEATMAP_DAYS))}
${truncatedFrom !== undefined ? html`<p class="note">Only the newest ${HEATMAP_MAX_RUNS} runs are read: days before ${utc(truncatedFrom)} are incomplete.</p>` : ''}
<h2>Runs, newest first</h2>
${runsTable(runs, now)}
<p class="pager">${before !== undefined ? html`<a href="${jobHref(job.name)}">Newest</a> · ` : ''}${older !== undefined ? html`<a href="${href(jobHref(job.name), { before: older })}" rel="next">Older runs</a>` : 'No older runs.'}</p>`;
  return { title: `Job ${job.name}`, main };
}

export interface LaneView {
  readonly shard: number;
  /** The run key of the run holding the lane; undefined when it is free. */
  readonly holder?: string;
  readonly since?: number;
  readonly token?: number;
}

/** An exclusive job's lanes (one per shard) as their markers say (consistent reads); none for a parallel job. */
async function laneHolders(ctx: ConsoleContext, job: Job): Promise<LaneView[]> {
  if (job.overlap === OverlapPolicy.PARALLEL) return [];
  return Promise.all(
    Array.from({ length: job.shards }, async (_, shard) => {
      const marker = await ctx.target.ledger.lanes.read(job.name, shard);
      if (marker?.holderSlot === undefined) return { shard };
      return { shard, holder: runKeyOf(job.name, marker.holderSlot, shard, job.shards), since: marker.since, token: marker.holderToken };
    }),
  );
}

function lanesText(job: Job, lanes: readonly LaneView[]): Html {
  if (job.overlap === OverlapPolicy.PARALLEL) return html`<p id="lanes">Overlap parallel: no lane, runs may overlap.</p>`;
  return html`<ul id="lanes" aria-label="Lanes (${job.overlap}: one run at a time per shard)">${lanes.map((l) =>
    l.holder === undefined
      ? html`<li data-shard="${l.shard}">Lane of shard ${l.shard}: free.</li>`
      : html`<li data-shard="${l.shard}" data-holder="${l.holder}">Lane of shard ${l.shard}: held by <a href="${runHref(l.holder)}">${l.holder}</a>${l.since !== undefined ? ` since ${utc(l.since)}` : ''}${l.token !== undefined ? ` (claim token ${l.token})` : ''}; marked “lane ◆” on the timeline when shown.</li>`,
  )}</ul>`;
}

/**
 * One page of runs read newest first with one run to spare: the runs shown, and the `before`
 * cursor of the next page (undefined: no older run). A page never ends inside a slot whose
 * shards go on past it: those runs move to the next page, which then holds the whole slot
 * (unless one slot alone fills the page).
 */
export function pageOf<R extends { readonly slot: number }>(read: readonly R[], size: number): { runs: R[]; before?: number } {
  if (read.length <= size) return { runs: [...read] };
  let end = size;
  const split = read[size]!.slot;
  while (end > 0 && read[end - 1]!.slot === split) end--;
  if (end === 0) end = size;
  return { runs: read.slice(0, end), before: read[end - 1]!.slot };
}

/** The same columns as `ops runs`, the run key linking to its page. */
function runsTable(runs: Parameters<typeof runRow>[0][], now: number): Html {
  if (runs.length === 0) return html`<p>No runs.</p>`;
  return html`<table class="runs"><thead><tr>${RUN_HEADERS.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead><tbody>${runs.map(
    (run) => {
      const [key, status, ...rest] = runRow(run, now);
      return html`<tr data-run="${run.runKey}"><td><a href="${runHref(run.runKey)}">${key}</a></td><td>${statusBadge(String(status))}</td>${rest.map((cell) => html`<td>${cell ?? ''}</td>`)}</tr>`;
    },
  )}</tbody></table>`;
}
