/**
 * The page frame: navigation, the live-refresh script, and `<main data-live>` whose content the
 * script swaps in place from the fragment endpoint (tools/console/live.ts).
 */
import { html, type Html } from './html.js';

export interface PageContext {
  readonly readOnly: boolean;
  readonly target: string;
}

const NAV: readonly [string, string][] = [
  ['/', 'Jobs'],
  ['/attention', 'Needs a person'],
  ['/system', 'System'],
];

export function layout(title: string, ctx: PageContext, main: Html, options: { live?: boolean; etag?: string } = {}): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · fsched console</title><link rel="stylesheet" href="/assets/console.css">
${options.live === false ? '' : html`<script src="/assets/live.js" defer></script>`}</head>
<body><header><strong>fsched console</strong> <nav aria-label="Main">${NAV.map(([path, label]) => html`<a href="${path}">${label}</a> `)}</nav>
<span class="target">${ctx.target}${ctx.readOnly ? html` · <span class="badge ro">read-only</span>` : ''}</span></header>
<main id="main" ${options.live === false ? '' : html`data-live data-etag="${options.etag ?? ''}"`}>${main}</main></body></html>`;
}
