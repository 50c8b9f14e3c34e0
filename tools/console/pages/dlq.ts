/**
 * `/attention/dlq`: a bounded peek at the dead-letter queue's messages, as `ops redrive --dry-run`
 * receives them: received hidden for a few seconds, read, and released at once. A peek is a
 * receive (it counts one more receive on each message and hides it for a moment), so it is taken
 * only when this page is asked for, never by the live refresh of the Needs-a-person page.
 */
import { jobsByName } from '../../../shared/config.js';
import { parseRunMessage } from '../../../shared/core/run-message.js';
import { receiveAll, release } from '../../../shared/messaging/dead-letter-queue.js';
import { dlqDepth } from '../../ops/status.js';
import type { ConsoleContext } from '../context.js';
import { html, runHref, utc, type Html } from '../html.js';
import { actionButton } from './actions-ui.js';

/** Messages a peek shows at most. */
export const DLQ_PEEK = 10;
/** How long peeked messages stay hidden if the release fails. */
const PEEK_VISIBILITY_SECONDS = 5;
/** A message body shown up to this many characters. */
const BODY_CHARS = 300;

export async function dlqPage(ctx: ConsoleContext): Promise<{ title: string; main: Html }> {
  const depth = await dlqDepth(ctx.target);
  const sqs = ctx.target.clients.sqs;
  const url = ctx.target.deadLetterQueueUrl;
  const received = depth.visible === 0 ? [] : await receiveAll(sqs, url, PEEK_VISIBILITY_SECONDS, DLQ_PEEK);
  await release(sqs, url, received);
  const jobs = jobsByName(ctx.jobs);
  const shown = received.slice(0, DLQ_PEEK);
  const rows = shown.map((m) => {
    const parsed = parseRunMessage(m.Body ?? '', jobs);
    const body = m.Body ?? '';
    return html`<tr data-message="${m.MessageId ?? ''}"><td><code>${m.MessageId ?? '?'}</code></td>
<td>${parsed.ok ? html`<a href="${runHref(parsed.message.runKey)}">${parsed.message.runKey}</a>` : html`not a run message: ${parsed.code}: ${parsed.reason}`}</td>
<td class="num">${m.Attributes?.ApproximateReceiveCount ?? '?'}</td><td><code>${body.length > BODY_CHARS ? `${body.slice(0, BODY_CHARS)}…` : body}</code></td></tr>`;
  });
  const main = html`<h1>Dead-letter queue</h1>
<p id="dlq-depth">${depth.visible} visible, ${depth.inFlight} in flight (peeked ${utc(ctx.now())}; reload to peek again).</p>
${
  shown.length === 0
    ? html`<p>No message to show.</p>`
    : html`<p>The first ${shown.length} message(s) received (a peek: each counts one more receive and is released at once; <code>fsched ops redrive --dry-run</code> lists them all).</p>
<table class="dlq"><thead><tr><th scope="col">Message</th><th scope="col">Run</th><th scope="col">Receives</th><th scope="col">Body</th></tr></thead><tbody>${rows}</tbody></table>`
}
${ctx.readOnly ? '' : html`<p>${actionButton('redrive', { dlq: 'dlq' }, 'Redrive…')} (a dry run of every message comes first)</p>`}
<p><a href="/attention">Back to Needs a person</a></p>`;
  return { title: 'Dead-letter queue', main };
}
