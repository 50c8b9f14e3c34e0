/** The confirmation page of an action (its fields, what it will do) and the page that says what happened. */
import { randomUUID } from 'node:crypto';
import type { ActionResult, ActionSpec } from '../actions.js';
import { html, jobHref, runHref, type Html } from '../html.js';
import { CSRF_FIELD } from '../security.js';

export function subjectLink(spec: ActionSpec, subject: string): Html {
  return spec.subject === 'job' ? html`<a href="${jobHref(subject)}">${subject}</a>` : html`<a href="${runHref(subject)}">${subject}</a>`;
}

export function confirmPage(action: string, spec: ActionSpec, subject: string, csrf: string): { title: string; main: Html } {
  const main = html`<h1>${spec.title}: ${subjectLink(spec, subject)}</h1>
<p>${spec.describe(subject)}</p>
<form method="post" action="/actions/${action}" class="confirm">
<input type="hidden" name="${CSRF_FIELD}" value="${csrf}"><input type="hidden" name="${spec.subject}" value="${subject}">
${spec.fields.filter((f) => f.hidden).map((f) => html`<input type="hidden" name="${f.name}" value="console-${randomUUID()}">`)}
${spec.fields.filter((f) => !f.hidden).map((f) => html`<p><label>${f.label}${f.required ? ' (required)' : ''}<br>${f.choices
    ? html`<select name="${f.name}" ${f.required ? html`required` : ''}>${f.choices.map((c) => html`<option value="${c}">${c || 'the job\'s own'}</option>`)}</select>`
    : html`<input name="${f.name}" size="60" ${f.required ? html`required` : ''}>`}</label></p>`)}
<p><button type="submit" id="confirm">Confirm: ${spec.title.toLowerCase()} ${subject}</button> <a href="${spec.subject === 'job' ? jobHref(subject) : runHref(subject)}">Cancel</a></p>
</form>`;
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
