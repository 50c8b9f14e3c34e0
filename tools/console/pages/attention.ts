/**
 * `/attention`: what needs a person. Per deployed job, its DEAD, UNKNOWN and MANUAL runs of the
 * last 7 days (newest first, a bounded number each); the open runs of jobs no longer deployed
 * (from the sweeper's watch index, as `ops status` finds them); the DLQ's depth, with a link to
 * its messages (pages/dlq.ts) and the redrive action; retry all DEAD runs of a job or of all jobs.
 */
import { mapBounded } from '../../../shared/core/concurrency.js';
import { RunStatus, type Run } from '../../../shared/core/vocabulary.js';
import { dlqDepth, STATUS_OPEN_RUNS_LIMIT } from '../../ops/status.js';
import type { ConsoleContext } from '../context.js';
import { html, runHref, statusBadge, utc, type Html } from '../html.js';
import { ALL_JOBS } from '../bulk-actions.js';
import { actionButton } from './actions-ui.js';

export const ATTENTION_STATES: readonly RunStatus[] = [RunStatus.DEAD, RunStatus.UNKNOWN, RunStatus.MANUAL];
export const ATTENTION_WINDOW_MS = 7 * 86_400_000;
/** Runs listed per job. */
export const ATTENTION_PER_JOB = 20;

export async function attentionPage(ctx: ConsoleContext): Promise<{ title: string; main: Html }> {
  const now = ctx.now();
  const [perJob, open, dlq] = await Promise.all([
    mapBounded(ctx.jobs, 8, (job) =>
      ctx.target.ops.queryRuns(job.name, { statuses: ATTENTION_STATES, sinceSlot: now - ATTENTION_WINDOW_MS, limit: ATTENTION_PER_JOB }),
    ),
    ctx.target.ledger.listOpenRuns(now, STATUS_OPEN_RUNS_LIMIT),
    dlqDepth(ctx.target),
  ]);
  const configured = new Set(ctx.jobs.map((j) => j.name));
  const orphans = open.filter((run) => !configured.has(run.job));
  const runs = perJob.flat().sort((a, b) => b.slot - a.slot);
  const deadJobs = [...new Set(runs.filter((r) => r.status === RunStatus.DEAD).map((r) => r.job))].sort();
  const full = ctx.jobs.filter((_, i) => perJob[i]!.length >= ATTENTION_PER_JOB).map((j) => j.name);
  const main = html`<h1>Needs a person</h1>
<p id="dlq">Dead-letter queue: <strong>${dlq.visible}</strong> visible, ${dlq.inFlight} in flight. <a href="/attention/dlq">Its messages (a peek)</a>${ctx.readOnly || dlq.visible === 0 ? '' : html` · ${actionButton('redrive', { dlq: 'dlq' }, 'Redrive…')}`}</p>
<h2>DEAD, UNKNOWN and MANUAL runs, last 7 days</h2>
${ctx.readOnly || deadJobs.length === 0 ? '' : html`<p class="actions" id="retry-all">${actionButton('retry-all', { jobs: ALL_JOBS }, 'Retry all DEAD runs…')} ${deadJobs.map((job) => actionButton('retry-all', { jobs: job }, `Retry DEAD runs of ${job}…`))}</p>`}
${runsTable(runs)}
${full.length > 0 ? html`<p class="note">Only the newest ${ATTENTION_PER_JOB} of ${full.join(', ')} are listed: open the job for all of them.</p>` : ''}
<h2>Open runs of jobs no longer deployed</h2>
${orphans.length === 0 ? html`<p>None.</p>` : runsTable(orphans)}`;
  return { title: 'Needs a person', main };
}

function runsTable(runs: readonly Run[]): Html {
  if (runs.length === 0) return html`<p>None.</p>`;
  return html`<table class="attention"><thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Finished</th><th scope="col">Last error</th></tr></thead><tbody>
${runs.map((run) => html`<tr data-run="${run.runKey}"><td><a href="${runHref(run.runKey)}">${run.runKey}</a></td><td>${statusBadge(run.status)}</td><td>${utc(run.finishedAt) || '-'}</td><td>${run.lastError ? `${run.lastError.code}: ${run.lastError.message}` : '-'}</td></tr>`)}</tbody></table>`;
}
