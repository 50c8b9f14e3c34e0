/**
 * The lines `npm start` prints as the runtime goes: one per run outcome (with the error the attempt
 * recorded), per run ended without an attempt (SKIPPED, SUPERSEDED, DEAD), per takeover, per
 * fenced-out write, per poison message, per message moved to the DLQ, per job paused by failure,
 * per outbox event, and the
 * summary. Every line starts with the same three columns, a label, the job and how long the
 * attempt took (blank when none ran), padded so they align whatever the label; `key=value` follows,
 * so they read in a terminal and grep well. An error message is quoted (JSON) so it stays on its
 * line. Durations read in units (`45 s`, `2 h 57 min`: shared/schedule/duration.ts).
 */
import { readableDuration } from '../shared/schedule/duration.js';
import type { OutboxEvent } from '../shared/core/outbox.js';
import { slotIso } from '../shared/core/vocabulary.js';
import { RUN_QUEUES } from '../shared/core/resources.js';
import type {
  DeadLetterLine,
  FencedOutLine,
  PausedLine,
  PoisonLine,
  RunOutcomeLine,
  RunSettledLine,
  RuntimeSummary,
  TakeoverLine,
} from './local-reports.js';

/** Every label a line starts with; the first column is as wide as the longest. */
export const LINE_LABELS = [
  'SUCCEEDED',
  'RETRY',
  'UNKNOWN',
  'DEAD',
  'SUPERSEDED',
  'SKIPPED',
  'TAKEOVER',
  'FENCED',
  'POISON',
  'DLQ',
  'PAUSED',
  'EVENT',
] as const;
const LABEL_WIDTH = Math.max(...LINE_LABELS.map((label) => label.length));
/** Wide enough for the longest readable duration under a day ("59 min 59 s"). */
const TOOK_WIDTH = 11;
/** The job column's width unless the runtime passes its longest job name's. */
export const DEFAULT_JOB_WIDTH = 20;

const jobOf = (runKey: string) => runKey.split('@')[0] ?? runKey;
const head = (label: string, job: string, jobWidth: number, took = '') =>
  `${label.padEnd(LABEL_WIDTH)} ${job.padEnd(jobWidth)} ${took.padStart(TOOK_WIDTH)}`;

/** The job column's width for these job names: the longest, at least DEFAULT_JOB_WIDTH. */
export function jobColumnWidth(names: readonly string[]): number {
  return Math.max(DEFAULT_JOB_WIDTH, ...names.map((name) => name.length));
}

export function outcomeLine(o: RunOutcomeLine, jobWidth = DEFAULT_JOB_WIDTH): string {
  const error = o.error ? ` error=${o.error.code} ${JSON.stringify(o.error.message)}` : '';
  return `${head(o.status, o.job, jobWidth, readableDuration(o.durationMs))}  slot=${slotIso(o.slot)} runKey=${o.runKey} attempt=${o.attempt} token=${o.token}${error}`;
}

export function settledLine(s: RunSettledLine, jobWidth = DEFAULT_JOB_WIDTH): string {
  return `${head(s.status, s.job, jobWidth, '(not run)')}  slot=${slotIso(s.slot)} runKey=${s.runKey}${s.reason ? ` reason=${JSON.stringify(s.reason)}` : ''}`;
}

export function takeoverLine(t: TakeoverLine, jobWidth = DEFAULT_JOB_WIDTH): string {
  return `${head('TAKEOVER', jobOf(t.runKey), jobWidth)}  runKey=${t.runKey} token=${t.token} owner=${t.owner} from=${t.previousOwner ?? '?'} (its lease expired)`;
}

export function fencedOutLine(f: FencedOutLine, jobWidth = DEFAULT_JOB_WIDTH): string {
  return `${head('FENCED', jobOf(f.runKey), jobWidth)}  runKey=${f.runKey} token=${f.token} resource=${f.resource} (refused: a higher fence already wrote it)`;
}

export function poisonLine(p: PoisonLine, jobWidth = DEFAULT_JOB_WIDTH): string {
  const runKey = p.runKey === '' ? '' : ` runKey=${p.runKey}`;
  return (
    `${head('POISON', p.job ?? '?', jobWidth)}  messageId=${p.messageId}${runKey} code=${p.code} reason=${JSON.stringify(p.reason)} ` +
    `(no worker can run it: SQS moves it to the dead-letter queue after ${RUN_QUEUES.maxReceiveCount} receives)`
  );
}

export function deadLetterLine(d: DeadLetterLine, jobWidth = DEFAULT_JOB_WIDTH): string {
  const runKey = d.runKey === undefined ? '' : ` runKey=${d.runKey}`;
  return `${head('DLQ', d.job ?? '?', jobWidth)}  messageId=${d.messageId}${runKey} (moved to the dead-letter queue: it waits for an operator; npx fsched ops status shows the DLQ depth)`;
}

export function pausedLine(p: PausedLine, jobWidth = DEFAULT_JOB_WIDTH): string {
  const note = p.note === undefined ? '' : `note=${JSON.stringify(p.note)} `;
  return `${head('PAUSED', p.job, jobWidth)}  ${note}(paused by failure: no slot is planned until npx fsched ops resume ${p.job})`;
}

export function eventLine(e: OutboxEvent, jobWidth = DEFAULT_JOB_WIDTH): string {
  return `${head('EVENT', e.detailType, jobWidth)}  eventKey=${e.eventKey} ${JSON.stringify(e.detail)}`;
}

export function summaryLine(s: RuntimeSummary): string {
  const lag =
    s.triggerLagSamples === 0
      ? 'no on-time first attempts yet'
      : `p50 ${readableDuration(s.triggerLagP50Ms)} / p99 ${readableDuration(s.triggerLagP99Ms)} over ${s.triggerLagSamples} on-time first attempt(s)`;
  const late =
    s.lateStarts === 0 ? '' : `, ${s.lateStarts} late start(s) (catch-up, backfill, manual) p99 ${readableDuration(s.lateStartLagP99Ms)}`;
  return (
    `summary: ${readableDuration(s.uptimeSeconds * 1_000)} up, ${s.ticks} ticks, ${s.runsSucceeded} succeeded, ${s.runsFailed} dead, ${s.runsSkipped} skipped, ${s.runsSuperseded} superseded, ` +
    `${s.duplicatesAcked} duplicates acked, ${s.takeovers} takeovers, ${s.fencedOutWrites} fenced-out writes, ${s.poisonMessages} poison message(s), ${s.deadLettered} moved to the DLQ, ` +
    `${s.jobsPausedByFailure} job(s) paused by failure, trigger lag ${lag}${late}, ${s.violations} violations`
  );
}
