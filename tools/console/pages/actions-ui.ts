/** The button that opens an action's confirmation page (a GET: nothing changes until it is confirmed). */
import { html, href, type Html } from '../html.js';

export function actionButton(action: string, query: Record<string, string>, label: string): Html {
  return html`<a class="button" href="${href(`/confirm/${action}`, query)}" data-action="${action}">${label}</a>`;
}
