/**
 * `/runs/<runKey>`: the run as `ops show` reads it (consistent), its attempts from the same
 * history derivation with what each one's reconcile answered and which of its writes were fenced
 * out by a newer token, the outbox events it wrote,
 * and what an operator may do now, decided by the rules the commands apply
 * (resolveRefusal, retryRefusal).
 */
import { resolveRefusal } from '../../../shared/store/repairs.js';
import { runFromItem } from '../../../shared/store/ledger.js';
import { parseRunKey } from '../../ops/args.js';
import { AttemptEnd, endText, fencedOutText, reconcileAnswerText, type AttemptRow } from '../../ops/attempts.js';
import { previousResultUnknown } from '../../../shared/core/outcome.js';
import { handlers } from '../../../shared/handlers/index.js';
import { outboxRowsOfRun, type OutboxRow } from '../../../shared/store/outbox-reads.js';
import { formatElapsed } from '../../ops/io.js';
import { retryRefusal } from '../../../shared/operations/retry.js';
import { historyOf } from '../../ops/show.js';
import { HttpError, type ConsoleContext } from '../context.js';
import { html, jobHref, statusBadge, utc, type Html } from '../html.js';
import { UsageError } from '../../ops/io.js';
import { actionButton } from './actions-ui.js';
import { attemptClass } from '../charts.js';

function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof Set ? [...v] : v));
}

/** Outbox rows listed at most. */
export const OUTBOX_SHOWN = 20;

/**
 * What the attempt's reconcile answered, as its entry records it (the answer, when, ALREADY_DONE's
 * evidence, STILL_UNKNOWN's reason or why there was none). Without a recorded answer: whether it
 * was asked at all (a claim out of UNKNOWN or of a RUNNING run, a takeover, finds the previous
 * result unknown and asks; one refused before it ran, or recorded before answers were kept, has none).
 */
export function reconcileText(row: AttemptRow, handlerReconciles: boolean | undefined): string {
  const answer = reconcileAnswerText(row.reconcile);
  if (answer !== undefined && row.reconcile !== undefined) return `${answer} · ${utc(row.reconcile.at)}`;
  if (row.end !== AttemptEnd.RECORDED) return '-';
  if (!previousResultUnknown(row.from)) return 'not asked: the previous result was known';
  if (handlerReconciles === false) return 'none: the handler has no reconcile, so it ran again';
  if (row.code === 'STILL_UNKNOWN') return `still unknown (${row.message ?? 'it could not tell'})`;
  return `no answer recorded (the attempt was refused before it ran, or recorded before answers were kept); it ended ${row.outcome ?? '?'}`;
}

/** The attempt's writes refused by a newer token, with when the first was (each item refused: `fencedItems`). */
export function fencedText(row: AttemptRow): string {
  const fenced = row.fencedOut;
  const first = fenced?.writes[0];
  if (fenced === undefined || first === undefined) return '-';
  const more = fenced.count - fenced.writes.length;
  return `✕ ${fenced.writes.map((w) => `${w.write} by token ${w.by}`).join('; ')}${more > 0 ? ` (and ${more} more)` : ''} · first at ${utc(first.at)}`;
}

/** Every refused write in full, items included (the cell's title). */
export function fencedItems(row: AttemptRow): string {
  return fencedOutText(row.fencedOut) ?? '';
}

function outboxSection(rows: readonly OutboxRow[]): Html {
  const shown = rows.slice(0, OUTBOX_SHOWN);
  const note = html`<p class="note">The relay publishes each row to EventBridge once per stream record, under its event key; a retry of this run writes the same keys again, so consumers see one event per key (they dedupe on it). Nothing here is for an operator to send: to have them written again, retry the run.</p>`;
  if (shown.length === 0)
    return html`<p id="outbox">None in the ledger (the run wrote none, or they expired after the outbox retention).</p>${note}`;
  return html`<table class="outbox" id="outbox"><thead><tr><th scope="col">Event key</th><th scope="col">Detail type</th><th scope="col">Detail</th><th scope="col">Row expires</th></tr></thead><tbody>
${shown.map((e) => html`<tr data-event="${e.eventKey}"><td><code>${e.eventKey}</code></td><td>${e.detailType}</td><td><code>${json(e.detail)}</code></td><td>${e.expiresAt === undefined ? '-' : utc(e.expiresAt * 1000)}</td></tr>`)}</tbody></table>
${rows.length > OUTBOX_SHOWN ? html`<p class="note">Only the first ${OUTBOX_SHOWN} are listed.</p>` : ''}${note}`;
}

export async function runPage(ctx: ConsoleContext, runKey: string): Promise<{ title: string; main: Html }> {
  let id;
  try {
    id = parseRunKey(runKey);
  } catch (error) {
    if (error instanceof UsageError) throw new HttpError(400, error.message);
    throw error;
  }
  const [item, outbox] = await Promise.all([
    ctx.target.ops.getRunItem(id),
    outboxRowsOfRun(ctx.target.clients.doc, ctx.target.ledger.tableName, id.job, runKey, OUTBOX_SHOWN + 1),
  ]);
  if (!item) throw new HttpError(404, `no run ${runKey} in the ledger`);
  const run = runFromItem(item);
  const job = ctx.jobs.find((j) => j.name === run.job);
  // Undefined when this checkout does not know the handler: then the column cannot say whether it reconciles.
  const handler = job === undefined || !Object.hasOwn(handlers, job.handler) ? undefined : handlers[job.handler];
  const reconciles = handler === undefined ? undefined : handler.reconcile !== undefined;
  const history = historyOf(item);
  const now = ctx.now();
  const configured = ctx.jobs.some((j) => j.name === run.job);
  const resolution = item.resolution as { as?: string; reason?: string; by?: string; at?: number } | undefined;
  const reason = resolution
    ? `resolved as ${resolution.as} by ${resolution.by}: ${resolution.reason}`
    : run.lastError
      ? `${run.lastError.code}: ${run.lastError.message}`
      : undefined;
  // The rule `ops retry` applies; a run whose job this checkout does not configure cannot be retried by it.
  const retryNo = job
    ? await retryRefusal({ ledger: ctx.target.ledger, clock: ctx.now }, job, run)
    : `its job ${run.job} is not in ${ctx.jobSource}`;
  const resolveNo = resolveRefusal(run, now, ctx.target.ops.takeoverMarginMs);
  const may = [
    retryNo === undefined
      ? ctx.readOnly
        ? html`<li>retry it (not from this read-only console)</li>`
        : html`<li>${actionButton('retry', { run: run.runKey }, 'Retry…')}</li>`
      : html`<li>retry: no, ${retryNo}</li>`,
    resolveNo === undefined
      ? ctx.readOnly
        ? html`<li>resolve it (not from this read-only console)</li>`
        : html`<li>${actionButton('resolve', { run: run.runKey }, 'Resolve…')}</li>`
      : html`<li>resolve: no, ${resolveNo}</li>`,
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
${
  history.rows.length === 0
    ? html`<p>None (never claimed).</p>`
    : html`<table class="attempts"><thead><tr><th scope="col">Claim</th><th scope="col">Owner</th><th scope="col">Fencing token</th><th scope="col">From</th><th scope="col">Claimed (start)</th><th scope="col">Ended</th><th scope="col">How</th><th scope="col">Error</th><th scope="col">Duration</th><th scope="col">Reconcile answer</th><th scope="col">Fenced out</th></tr></thead><tbody>
${history.rows.map((row) => html`<tr class="${attemptClass(row)}" data-claim="${row.claim}"><td>${row.claim}</td><td>${row.owner ?? '-'}</td><td>${row.token ?? '-'}</td><td>${row.from === 'RUNNING' ? 'RUNNING (takeover)' : (row.from ?? '-')}</td><td>${utc(row.claimedAt) || '-'}</td><td>${utc(row.endedAt) || '-'}</td><td>${endText(row)}</td><td>${row.code ? `${row.code}: ${row.message ?? ''}` : '-'}</td><td>${formatElapsed(row.durationMs) ?? '-'}</td><td class="reconcile">${reconcileText(row, reconciles)}</td><td class="fenced" title="${fencedItems(row)}">${fencedText(row)}</td></tr>`)}</tbody></table>`
}
<h2>Outbox events it wrote</h2>
${outboxSection(outbox)}`;
  return { title: `Run ${run.runKey}`, main };
}
