/**
 * `/runs/<runKey>`: the run as `ops show` reads it (consistent), its attempts from the same
 * history derivation, and what an operator may do now, decided by the rules the commands apply
 * (resolveRefusal, revivalRefusal, RETRYABLE_STATES).
 */
import { resolveRefusal, revivalRefusal } from '../../../shared/store/repairs.js';
import { runFromItem } from '../../../shared/store/ledger.js';
import { parseRunKey } from '../../ops/args.js';
import { endText } from '../../ops/attempts.js';
import { formatElapsed } from '../../ops/io.js';
import { RETRYABLE_STATES } from '../../ops/retry.js';
import { historyOf } from '../../ops/show.js';
import { HttpError, type ConsoleContext } from '../context.js';
import { html, jobHref, statusBadge, utc, type Html } from '../html.js';
import { UsageError } from '../../ops/io.js';
import { actionButton } from './actions-ui.js';
import { attemptClass } from '../charts.js';

function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof Set ? [...v] : v));
}

export async function runPage(ctx: ConsoleContext, runKey: string): Promise<{ title: string; main: Html }> {
  let id;
  try {
    id = parseRunKey(runKey);
  } catch (error) {
    if (error instanceof UsageError) throw new HttpError(400, error.message);
    throw error;
  }
  const item = await ctx.target.ops.getRunItem(id);
  if (!item) throw new HttpError(404, `no run ${runKey} in the ledger`);
  const run = runFromItem(item);
  const history = historyOf(item);
  const now = ctx.now();
  const configured = ctx.jobs.some((j) => j.name === run.job);
  const resolution = item.resolution as { as?: string; reason?: string; by?: string; at?: number } | undefined;
  const reason = resolution ? `resolved as ${resolution.as} by ${resolution.by}: ${resolution.reason}` : run.lastError ? `${run.lastError.code}: ${run.lastError.message}` : undefined;
  const retryNo = !RETRYABLE_STATES.includes(run.status) ? `it is ${run.status}: only ${RETRYABLE_STATES.join(', ')} runs are retried` : revivalRefusal(run);
  const resolveNo = resolveRefusal(run, now, ctx.target.ops.takeoverMarginMs);
  const may = [
    retryNo === undefined ? (ctx.readOnly ? html`<li>retry it (not from this read-only console)</li>` : html`<li>${actionButton('retry', { run: run.runKey }, 'Retry…')}</li>`) : html`<li>retry: no, ${retryNo}</li>`,
    resolveNo === undefined ? (ctx.readOnly ? html`<li>resolve it (not from this read-only console)</li>` : html`<li>${actionButton('resolve', { run: run.runKey }, 'Resolve…')}</li>`) : html`<li>resolve: no, ${resolveNo}</li>`,
  ];
  const main = html`<h1>Run ${run.runKey}</h1>
<dl class="fields">
<dt>Job</dt><dd>${configured ? html`<a href="${jobHref(run.job)}">${run.job}</a>` : html`${run.job} (not in ${ctx.jobSource}: orphaned)`}</dd>
<dt>Status</dt><dd id="run-status">${statusBadge(run.status)}</dd>
<dt>Reason</dt><dd id="run-reason">${reason ?? '-'}</dd>
<dt>Slot</dt><dd>${utc(run.slot)} · shard ${run.shard} of ${run.shards}</dd>
<dt>Origin</dt><dd>${run.origin ?? 'planned'}${run.triggeredBy ? ` by ${run.triggeredBy}` : ''}${run.note ? `: ${run.note}` : ''}</dd>
<dt>Owner · fencing token</dt><dd>${run.owner ?? '-'} · ${run.fencingToken}</dd>
<dt>Lease until</dt><dd>${utc(run.leaseUntil) || '-'}</dd>
<dt>Attempt</dt><dd>${run.attempt}${run.nextAttemptAt ? ` · next at ${utc(run.nextAttemptAt)}` : ''}</dd>
<dt>Started · finished</dt><dd>${utc(run.startedAt) || '-'} · ${utc(run.finishedAt) || '-'}</dd>
<dt>Checkpoint</dt><dd><code>${item.checkpoint === undefined ? '-' : json(item.checkpoint)}</code></dd>
<dt>Evidence</dt><dd><code>${item.evidence === undefined ? '-' : json(item.evidence)}</code></dd>
</dl>
<h2>What you may do now</h2><ul class="may">${may}</ul>
<h2>Attempts</h2>
${history.earlier > 0 ? html`<p>${history.earlier} earlier claim(s) not kept.</p>` : ''}
${history.rows.length === 0 ? html`<p>None (never claimed).</p>` : html`<table class="attempts"><thead><tr><th scope="col">Claim</th><th scope="col">Owner</th><th scope="col">Fencing token</th><th scope="col">From</th><th scope="col">Claimed (start)</th><th scope="col">Ended</th><th scope="col">How</th><th scope="col">Error</th><th scope="col">Duration</th></tr></thead><tbody>
${history.rows.map((row) => html`<tr class="${attemptClass(row)}" data-claim="${row.claim}"><td>${row.claim}</td><td>${row.owner ?? '-'}</td><td>${row.token ?? '-'}</td><td>${row.from === 'RUNNING' ? 'RUNNING (takeover)' : (row.from ?? '-')}</td><td>${utc(row.claimedAt) || '-'}</td><td>${utc(row.endedAt) || '-'}</td><td>${endText(row)}</td><td>${row.code ? `${row.code}: ${row.message ?? ''}` : '-'}</td><td>${formatElapsed(row.durationMs) ?? '-'}</td></tr>`)}</tbody></table>`}`;
  return { title: `Run ${run.runKey}`, main };
}
