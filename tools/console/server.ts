/**
 * The console's HTTP server (node:http, 127.0.0.1 only): security checks first (security.ts),
 * then routing to the pages, the fragment endpoint live refresh polls (`?fragment=1`: the page's
 * `<main>` content with an ETag, 304 when unchanged), the actions (POST, CSRF-checked, refused
 * in read-only mode), and the two assets.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { actionSpec, formFields, runAction } from './actions.js';
import { CSS, LIVE_JS } from './assets.js';
import { HttpError, type ConsoleContext } from './context.js';
import { html, type Html } from './html.js';
import { layout, type PageContext } from './layout.js';
import { confirmPage, resultPage } from './pages/action-pages.js';
import { attentionPage } from './pages/attention.js';
import { dlqPage } from './pages/dlq.js';
import { jobPage } from './pages/job.js';
import { jobsPage } from './pages/jobs.js';
import { runPage } from './pages/run.js';
import { systemPage } from './pages/system.js';
import { CSRF_FIELD, Security, sessionCookie, sessionOf } from './security.js';

export const LOOPBACK = '127.0.0.1';
/** A form is a few fields: a bigger body is refused. */
const MAX_BODY_BYTES = 64 * 1024;

const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with a form POST.
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
} as const;

type Page = { title: string; main: Html; live?: boolean; status?: number };

export interface RunningConsole {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

function segment(path: string, prefix: string): string | undefined {
  if (!path.startsWith(prefix)) return undefined;
  const rest = path.slice(prefix.length);
  if (rest === '' || rest.includes('/')) return undefined;
  try {
    return decodeURIComponent(rest);
  } catch {
    throw new HttpError(400, `bad percent-encoding in ${JSON.stringify(path)}`);
  }
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const type = request.headers['content-type'] ?? '';
  if (!type.startsWith('application/x-www-form-urlencoded'))
    throw new HttpError(415, 'actions take a form (application/x-www-form-urlencoded)');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `the form is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export async function startConsole(
  ctx: ConsoleContext,
  options: { port?: number; log?: (line: string) => void } = {},
): Promise<RunningConsole> {
  let security: Security | undefined;
  const log = options.log ?? (() => undefined);

  async function route(request: IncomingMessage, url: URL, session: string): Promise<Page> {
    const path = url.pathname;
    const method = request.method ?? 'GET';
    if (method === 'POST') {
      const action = segment(path, '/actions/');
      if (action === undefined) throw new HttpError(404, `nothing to POST at ${path}`);
      if (ctx.readOnly) throw new HttpError(403, 'this console is read-only (started with --read-only): no action is taken');
      const form = await readForm(request);
      if (!security!.validToken(sessionOf(request), form.get(CSRF_FIELD) ?? undefined))
        throw new HttpError(403, 'refused: the form carries no valid CSRF token for this session (reload the page and confirm again)');
      const spec = actionSpec(action);
      const subject = (form.get(spec.subject) ?? '').trim();
      if (subject === '') throw new HttpError(400, `field "${spec.subject}" is required`);
      const fields = formFields(spec, form);
      const result = await runAction(ctx, spec.commands(subject, fields, ctx.by, ctx), spec.summarize);
      log(`console: ${result.command}: ${result.ok ? 'ok' : 'refused'}: ${result.lines.join(' ')}`);
      return { ...resultPage(spec, subject, result), live: false, status: result.ok ? 200 : 409 };
    }
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, `${method} is not served`);
    if (path === '/')
      return jobsPage(ctx, {
        name: url.searchParams.get('name') ?? undefined,
        state: url.searchParams.get('state') ?? undefined,
        policy: url.searchParams.get('policy') ?? undefined,
        after: url.searchParams.get('after') ?? undefined,
      });
    if (path === '/attention') return attentionPage(ctx);
    // A peek receives messages: never repeated by the live refresh.
    if (path === '/attention/dlq') return { ...(await dlqPage(ctx)), live: false };
    if (path === '/system') return systemPage(ctx);
    const job = segment(path, '/jobs/');
    if (job !== undefined) return jobPage(ctx, job, url.searchParams.get('before') ?? undefined);
    const run = segment(path, '/runs/');
    if (run !== undefined) return runPage(ctx, run);
    const confirm = segment(path, '/confirm/');
    if (confirm !== undefined) {
      if (ctx.readOnly) throw new HttpError(403, 'this console is read-only (started with --read-only): no action is offered');
      const spec = actionSpec(confirm);
      const subject = (url.searchParams.get(spec.subject) ?? '').trim();
      if (subject === '') throw new HttpError(400, `field "${spec.subject}" is required`);
      return { ...(await confirmPage(ctx, confirm, spec, subject, security!.tokenFor(session), url.searchParams)), live: false };
    }
    throw new HttpError(404, `no page at ${path}`);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const refusal = security!.refusal(request);
    if (refusal) {
      response.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', ...SECURITY_HEADERS });
      response.end(`403: refused: ${refusal}\n`);
      return;
    }
    const url = new URL(request.url ?? '/', `http://${request.headers.host}`);
    if (url.pathname === '/assets/live.js' || url.pathname === '/assets/console.css') {
      const js = url.pathname.endsWith('.js');
      response.writeHead(200, { 'Content-Type': js ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8', ...SECURITY_HEADERS });
      response.end(js ? LIVE_JS : CSS);
      return;
    }
    const existing = sessionOf(request);
    const session = existing ?? security!.newSession();
    const headers: Record<string, string> = { 'Content-Type': 'text/html; charset=utf-8', ...SECURITY_HEADERS };
    if (existing === undefined) headers['Set-Cookie'] = sessionCookie(session);
    const pageCtx: PageContext = { readOnly: ctx.readOnly, target: ctx.target.description };
    let page: Page;
    try {
      page = await route(request, url, session);
    } catch (error) {
      if (!(error instanceof HttpError)) {
        log(`console: ${request.method} ${url.pathname}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      }
      const status = error instanceof HttpError ? error.status : 500;
      const message = error instanceof Error ? error.message : String(error);
      page = { title: `${status}`, main: html`<h1>${status}</h1><p id="error">${message}</p>`, live: false, status };
    }
    const fragment = url.searchParams.get('fragment') === '1';
    const etag = `"${createHash('sha1').update(page.main.text).digest('base64url')}"`;
    if (fragment) {
      if (request.headers['if-none-match'] === etag) {
        response.writeHead(304, { ETag: etag, ...SECURITY_HEADERS });
        response.end();
        return;
      }
      response.writeHead(page.status ?? 200, { ...headers, ETag: etag });
      response.end(page.main.text);
      return;
    }
    response.writeHead(page.status ?? 200, headers);
    response.end(layout(page.title, pageCtx, page.main, { live: page.live !== false, etag }).text);
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      log(`console: ${error instanceof Error ? error.message : String(error)}`);
      if (!response.headersSent) response.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
      response.end('500: the console failed to answer; see its terminal\n');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, LOOPBACK, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  security = new Security(port);
  return {
    url: `http://${LOOPBACK}:${port}/`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
