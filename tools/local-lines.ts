/**
 * The lines `npm start` prints as the runtime goes: one per run outcome (with the error the attempt
 * recorded), per run ended without an attempt (SKIPPED, SUPERSEDED, DEAD), per takeover and per
 * fenced-out write, and the summary. One line each, `key=value` after a fixed-width state and job,
 * so they read in a terminal and grep well; an error message is quoted (JSON) so it stays on its line.
 */
import { slotIso } from '../shared/core/vocabulary.js';
import type { FencedOutLine, RunOutcomeLine, RunSettledLine, RuntimeSummary, TakeoverLine } from './local-runtime.js';

const jobOf = (runKey: string) => runKey.split('@')[0] ?? runKey;
const head = (state: string, job: string) => `${state.padEnd(9)} ${job.padEnd(20)}`;

export function outcomeLine(o: RunOutcomeLine): string {
  const error = o.error ? ` error=${o.error.code} ${JSON.stringify(o.error.message)}` : '';
  return `${head(o.status, o.job)} slot=${slotIso(o.slot)} runKey=${o.runKey} attempt=${o.attempt} token=${o.token} duration=${o.durationMs}ms${error}`;
}

export function settledLine(s: RunSettledLine): string {
  return `${head(s.status, s.job)} slot=${slotIso(s.slot)} runKey=${s.runKey} (not run)${s.reason ? ` reason=${JSON.stringify(s.reason)}` : ''}`;
}

export function takeoverLine(t: TakeoverLine): string {
  return `${head('TAKEOVER', jobOf(t.runKey))} runKey=${t.runKey} token=${t.token} owner=${t.owner} from=${t.previousOwner ?? '?'} (its lease expired)`;
}

export function fencedOutLine(f: FencedOutLine): string {
  return `${head('FENCED', jobOf(f.runKey))} runKey=${f.runKey} token=${f.token} resource=${f.resource} (refused: a higher fence already wrote it)`;
}

export function summaryLine(s: RuntimeSummary): string {
  const lag = s.triggerLagSamples === 0 ? 'no on-time first attempts yet' : `p50 ${s.triggerLagP50Ms} ms / p99 ${s.triggerLagP99Ms} ms over ${s.triggerLagSamples} on-time first attempt(s)`;
  const late = s.lateStarts === 0 ? '' : `, ${s.lateStarts} late start(s) (catch-up, backfill, manual) p99 ${s.lateStartLagP99Ms} ms`;
  return (
    `summary: ${s.uptimeSeconds}s up, ${s.ticks} ticks, ${s.runsSucceeded} succeeded, ${s.runsFailed} dead, ${s.runsSkipped} skipped, ${s.runsSuperseded} superseded, ` +
    `${s.duplicatesAcked} duplicates acked, ${s.takeovers} takeovers, ${s.fencedOutWrites} fenced-out writes, trigger lag ${lag}${late}, ${s.violations} violations`
  );
}
