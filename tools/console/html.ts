/**
 * HTML rendered on the server: a tagged template that escapes every interpolated value unless it
 * is already Html (built by this template or `raw`), so a job name, note or error message from the
 * ledger can never become markup.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type HtmlValue = Html | string | number | boolean | undefined | null | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.text;
  if (value === undefined || value === null || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  return escape(String(value));
}

export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Markup the caller built itself (SVG from numbers); never pass text from the ledger here. */
export function raw(text: string): Html {
  return new Html(text);
}

/** A path segment or query value, percent-encoded. */
export function href(path: string, query: Record<string, string | number | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export const runHref = (runKey: string) => `/runs/${encodeURIComponent(runKey)}`;
export const jobHref = (job: string) => `/jobs/${encodeURIComponent(job)}`;

export function utc(ms: number | undefined): string {
  return ms === undefined || !Number.isFinite(ms) ? '' : new Date(ms).toISOString().replace(/\.000Z$/, 'Z');
}

/** A status as a coloured badge (the colour is a class; the word is always shown too). */
export function statusBadge(status: string): Html {
  return html`<span class="badge s-${status.toLowerCase()}">${status}</span>`;
}
