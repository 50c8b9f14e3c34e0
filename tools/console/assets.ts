/**
 * The console's only static files, served by its own server (no CDN: it works offline): the style
 * sheet, and the live-refresh script that polls the page's fragment (`?fragment=1`) with
 * If-None-Match every few seconds and swaps `<main>` in place when it changed.
 */
export const LIVE_INTERVAL_MS = 3_000;

export const LIVE_JS = `(() => {
  const main = document.getElementById('main');
  if (!main || !main.hasAttribute('data-live')) return;
  let etag = main.getAttribute('data-etag');
  const status = document.createElement('p');
  status.className = 'live';
  status.setAttribute('aria-live', 'polite');
  main.after(status);
  const editing = () => { const a = document.activeElement; return a && main.contains(a) && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName); };
  async function tick() {
    if (editing()) return;
    const url = new URL(location.href);
    url.searchParams.set('fragment', '1');
    try {
      const res = await fetch(url, { headers: etag ? { 'If-None-Match': etag } : {}, credentials: 'same-origin' });
      if (res.status === 200) {
        const text = await res.text();
        etag = res.headers.get('ETag');
        main.innerHTML = text;
        main.setAttribute('data-etag', etag || '');
      } else if (res.status !== 304) {
        status.textContent = 'Live refresh: the server answered ' + res.status;
        return;
      }
      status.textContent = 'Live: checked ' + new Date().toISOString().slice(11, 19) + ' UTC';
    } catch (error) {
      status.textContent = 'Live refresh failed: ' + error;
    }
  }
  setInterval(tick, ${LIVE_INTERVAL_MS});
})();
`;

export const CSS = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #111; background: #fff; }
header { display: flex; gap: 1.5em; align-items: baseline; padding: .6em 1em; background: #1f2937; color: #fff; }
header a { color: #fff; margin-right: .8em; } header .target { margin-left: auto; font-size: 90%; }
main { padding: 1em; } h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.4em; }
a { color: #0645ad; } a:focus, button:focus, input:focus, select:focus { outline: 3px solid #f59e0b; }
table { border-collapse: collapse; } th, td { border-bottom: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
td.num { text-align: right; } td.alert { color: #b91c1c; font-weight: bold; }
.badge { display: inline-block; padding: 0 .4em; border-radius: 3px; font-size: 85%; font-weight: 600; background: #e5e7eb; }
.badge.paused { background: #b45309; color: #fff; font-size: 95%; } .badge.ro { background: #fff; color: #1f2937; }
.s-succeeded, .s-manual { background: #bbf7d0; } .s-dead { background: #b91c1c; color: #fff; } .s-unknown { background: #7c3aed; color: #fff; }
.s-running { background: #bfdbfe; } .s-retry { background: #fde68a; } .s-ready { background: #e0f2fe; }
.button, button { display: inline-block; padding: .3em .8em; border: 1px solid #1f2937; border-radius: 4px; background: #f3f4f6; color: #111; text-decoration: none; font: inherit; cursor: pointer; }
.filter label { margin-right: 1em; } dl.fields { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; } dl.fields dt { font-weight: 600; }
#result.ok { border-left: 5px solid #15803d; padding-left: 1em; } #result.refused { border-left: 5px solid #b91c1c; padding-left: 1em; }
.note, .live { color: #4b5563; font-size: 90%; }
svg text { font: 10px system-ui, sans-serif; fill: #111; } svg .mark { fill: #b91c1c; font-weight: bold; }
rect.takeover { stroke: #b91c1c; stroke-width: 2; } rect.fenced { stroke: #111; stroke-width: 2; stroke-dasharray: 3 2; } table.attempts td.fenced, table.attempts td.reconcile { max-width: 16em; overflow-wrap: anywhere; }
.o-succeeded, .d-ok { fill: #16a34a; background: #16a34a; } .o-retry { fill: #f59e0b; background: #f59e0b; } .o-dead, .d-dead { fill: #b91c1c; background: #b91c1c; }
.o-unknown, .d-unknown { fill: #7c3aed; background: #7c3aed; } .o-taken-over, .o-no-outcome, .o-ops-takeover { fill: #6b7280; background: #6b7280; } .o-running { fill: #2563eb; background: #2563eb; }
.d-mixed { fill: #facc15; background: #facc15; } .d-none { fill: #e5e7eb; background: #e5e7eb; }
tr.o-succeeded, tr.o-retry, tr.o-dead, tr.o-unknown, tr.o-taken-over, tr.o-no-outcome, tr.o-ops-takeover, tr.o-running { background: none; }
.key { display: inline-block; width: .9em; height: .9em; margin: 0 .2em 0 .8em; vertical-align: middle; }
`;
