/**
 * `/system`: the planner's partitions with their watermarks (how far each is planned and swept,
 * and where the sweeper's watch sweep resumes in each bucket),
 * and the config hash the deployment recorded against this checkout's (tools/ops/job-config.ts's
 * comparison).
 */
import { DeployedConfigStore } from '../../../shared/store/deployed-config.js';
import { configHash } from '../../../shared/core/deployed-config.js';
import { describeDifference } from '../../ops/job-config.js';
import { decodeCursor } from '../../../shared/planner/sweeper.js';
import type { ConsoleContext } from '../context.js';
import { html, utc, type Html } from '../html.js';

/** The watch sweep's resume point per bucket, as the sweeper decodes its cursor. */
function sweepCursor(raw: string | undefined): Html {
  const points = [...decodeCursor(raw)].sort(([a], [b]) => a - b);
  if (points.length === 0) return html`every bucket from its start`;
  return html`<ul class="cursor">${points.map(([bucket, key]) => html`<li data-bucket="${bucket}">bucket ${bucket}: after ${key.pk} ${key.sk}</li>`)}</ul>`;
}

export async function systemPage(ctx: ConsoleContext): Promise<{ title: string; main: Html }> {
  const [layout, recorded] = await Promise.all([
    ctx.target.ledger.planning.readLayout(),
    DeployedConfigStore.of(ctx.target.ledger).readRecorded(),
  ]);
  const checkout = ctx.checkoutJobs === undefined ? undefined : configHash(ctx.checkoutJobs);
  const partitions = layout === undefined ? [] : [...layout.partitions.entries()].sort(([a], [b]) => a - b);
  const same = recorded !== undefined && checkout === recorded.hash;
  const main = html`<h1>System</h1>
<p>Target: ${ctx.target.description}</p>
<h2>Planner partitions</h2>
${
  layout === undefined
    ? html`<p id="planner">The planner has never run against this ledger.</p>`
    : html`<p id="planner">${layout.of} partition(s), layout generation ${layout.gen}.</p>
<table class="partitions"><thead><tr><th scope="col">Partition</th><th scope="col">Planned until (watermark)</th><th scope="col">Swept until</th><th scope="col">Watch sweep resumes (the sweeper's cursor)</th></tr></thead><tbody>
${partitions.map(([p, c]) => html`<tr data-partition="${p}"><td>${p}</td><td>${utc(c.plannedUntil) || '-'}</td><td>${utc(c.sweptUntil) || '-'}</td><td>${sweepCursor(c.watchAfter)}</td></tr>`)}</tbody></table>
<p class="note">The sweeper's cursor is on each partition: it re-dispatches open runs whose slot is past up to “swept until”, and pages through the watch index (open runs older than that window) bucket by bucket, resuming each bucket after the run named; a bucket read to its end starts over.</p>`
}
<h2>Job config</h2>
<dl class="fields" id="config">
<dt>Deployed (recorded by the planner)</dt><dd>${recorded ? html`<code>${recorded.hash.slice(0, 12)}</code>, recorded ${utc(recorded.recordedAt)}, ${recorded.jobs.length} job(s)` : 'none recorded yet'}</dd>
<dt>This checkout</dt><dd>${checkout ? html`<code>${checkout.slice(0, 12)}</code>, ${ctx.checkoutJobs!.length} job(s)` : 'does not load'}</dd>
<dt>Comparison</dt><dd id="config-compare">${recorded === undefined || checkout === undefined ? 'cannot compare' : same ? 'the same' : html`<strong>different</strong>: ${describeDifference(recorded.jobs, ctx.checkoutJobs!) || 'the same job names, other settings'}`}</dd>
<dt>The console acts on</dt><dd>${ctx.jobSource}</dd>
</dl>`;
  return { title: 'System', main };
}
