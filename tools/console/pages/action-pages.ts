/**
 * The confirmation page of an action (its fields, what it will do, and for a bulk action the dry
 * run of the same commands) and the page that says what happened.
 */
import { randomUUID } from 'node:crypto';
import { runAction, type ActionField, type ActionResult, type ActionSpec } from '../actions.js';
import { ALL_JOBS, zoneOfJob } from '../bulk-actions.js';
import type { ConsoleContext } from '../context.js';
import { html, jobHref, runHref, type Html } from '../html.js';
import { CSRF_FIELD } from '../security.js';

function subjectHref(spec: ActionSpec, subject: string): string {
  if (spec.subject === 'job') return jobHref(subject);
  if (spec.subject === 'run') return runHref(subject);
  return '/attention';
}

export function subjectLink(spec: ActionSpec, subject: string): Html {
  const text = spec.subject === 'dlq' ? 'Needs a person' : spec.subject === 'jobs' && subject === ALL_JOBS ? 'every job' : subject;
  return html`<a href="${subjectHref(spec, subject)}">${text}</a>`;
}

function fieldInput(field: ActionField, value: string, zone: string | undefined): Html {
  const label = field.localTime ? `${field.label}, in ${zone ?? 'UTC'}` : field.label;
  const control = field.choices
    ? html`<select name="${field.name}" ${field.required ? html`required` : ''}>${field.choices.map((c) => html`<option value="${c}" ${c === value ? html`selected` : ''}>${c || "the job's own"}</option>`)}</select>`
    : field.localTime
      ? html`<input type="datetime-local" step="1" name="${field.name}" value="${value}" ${field.required ? html`required` : ''}>`
      : html`<input name="${field.name}" size="60" value="${value}" ${field.required ? html`required` : ''}>`;
  return html`<p><label>${label}${field.required ? ' (required)' : ''}<br>${control}</label></p>`;
}

/** The values of the shown fields given in the query string (a preview's inputs). */
function givenFields(spec: ActionSpec, query: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field of spec.fields) if (!field.hidden) out[field.name] = (query.get(field.name) ?? '').trim();
  return out;
}

export async function confirmPage(
  ctx: ConsoleContext,
  action: string,
  spec: ActionSpec,
  subject: string,
  csrf: string,
  query: URLSearchParams,
): Promise<{ title: string; main: Html }> {
  const zone = spec.subject === 'job' && spec.fields.some((f) => f.localTime) ? zoneOfJob(ctx, subject) : undefined;
  const given = givenFields(spec, query);
  const heading = html`<h1>${spec.title}: ${subjectLink(spec, subject)}</h1>
<p>${spec.describe(subject, ctx)}</p>`;
  const cancel = html`<a href="${subjectHref(spec, subject)}">Cancel</a>`;
  const confirmForm = (fields: Html, button = true) => html`<form method="post" action="/actions/${action}" class="confirm">
<input type="hidden" name="${CSRF_FIELD}" value="${csrf}"><input type="hidden" name="${spec.subject}" value="${subject}">
${spec.fields.filter((f) => f.hidden).map((f) => html`<input type="hidden" name="${f.name}" value="console-${randomUUID()}">`)}
${fields}
<p>${button ? html`<button type="submit" id="confirm">Confirm: ${spec.title.toLowerCase()}</button> ` : ''}${cancel}</p>
</form>`;
  if (!spec.preview) {
    return {
      title: `${spec.title} ${subject}`,
      main: html`${heading}${confirmForm(html`${spec.fields.filter((f) => !f.hidden).map((f) => fieldInput(f, given[f.name] ?? '', zone))}`)}`,
    };
  }
  const missing = spec.fields.filter((f) => f.required && !f.hidden && given[f.name] === '');
  // The inputs of the dry run: a GET form, so nothing changes until the confirm button's POST.
  const inputs = spec.fields.some((f) => !f.hidden)
    ? html`<form method="get" action="/confirm/${action}" class="preview"><input type="hidden" name="${spec.subject}" value="${subject}">
${spec.fields.filter((f) => !f.hidden).map((f) => fieldInput(f, given[f.name] ?? '', zone))}
<p><button type="submit" id="preview">${missing.length > 0 ? 'Dry run' : 'Dry run again'}</button></p></form>`
    : html``;
  if (missing.length > 0)
    return {
      title: `${spec.title} ${subject}`,
      main: html`${heading}${inputs}<p class="note">The dry run comes first: nothing is created until you confirm what it shows.</p>`,
    };
  const dry = await runAction(ctx, spec.preview(subject, given, ctx.by, ctx), spec.summarize);
  const main = html`${heading}${inputs}
<h2>Dry run</h2>
<div id="dry-run" class="${dry.ok ? 'ok' : 'refused'}" role="status">${dry.ok ? '' : html`<p><strong>Refused: confirming would be refused too.</strong></p>`}
<ul>${dry.lines.map((l) => html`<li>${l}</li>`)}</ul></div>
${dry.warnings.length > 0 ? html`<div id="warnings" role="alert"><p><strong>Warning</strong></p><ul>${dry.warnings.map((w) => html`<li>${w}</li>`)}</ul></div>` : ''}
<p class="note">Same as <code>${dry.command}</code>.</p>
${confirmForm(html`${spec.fields.filter((f) => !f.hidden).map((f) => html`<input type="hidden" name="${f.name}" value="${given[f.name] ?? ''}">`)}`, dry.ok)}`;
  return { title: `${spec.title} ${subject}`, main };
}

export function resultPage(spec: ActionSpec, subject: string, result: ActionResult): { title: string; main: Html } {
  const main = html`<h1>${spec.title}: ${subjectLink(spec, subject)}</h1>
<div id="result" class="${result.ok ? 'ok' : 'refused'}" role="status"><p><strong>${result.ok ? 'Done.' : 'Refused or failed: nothing was done that is not listed here.'}</strong></p>
<ul>${result.lines.map((l) => html`<li>${l}</li>`)}</ul></div>
${result.warnings.length > 0 ? html`<p class="note">${result.warnings.join(' ')}</p>` : ''}
<p>Same as <code>${result.command}</code>.</p>
<p>Back to ${subjectLink(spec, subject)}.</p>`;
  return { title: `${spec.title} ${subject}`, main };
}
