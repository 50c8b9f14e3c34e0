/**
 * A run's attempt history as `ops show` lists it: one row per claim number, from the history the
 * run item keeps (`attempts`, the last ATTEMPT_HISTORY_LIMIT recorded claims) and the gaps in it.
 *
 * Claim numbers are the fencing token's low digits (claimsOf), so every claim ever made has a
 * number up to the run's current one. A number with no record is a claim whose attempt never
 * recorded an outcome: its worker died or lost its lease, and a later claim took the run over.
 * The exceptions are the fence advances of the ops commands that take a RUNNING run over
 * (`resolve`, and `retry`/`redrive` reviving it), which are not claims: the run's `resolution`
 * and `lastRevival` say which number they used, and the current claim of a RUNNING run, which has
 * not ended yet. A claim taken over whose worker came back and found its writes fenced out has
 * an entry of its own nonetheless: the note it left (no outcome), which gives the row its owner,
 * token, claim time and the time its first write was refused.
 */
import { claimsOf } from '../../shared/core/fence.js';
import { ATTEMPT_HISTORY_LIMIT } from '../../shared/core/limits.js';
import type { FencedOutRecord, ReconcileRecord } from '../../shared/core/attempt-notes.js';
import { RunStatus, type AttemptRecord, type Run } from '../../shared/core/vocabulary.js';

export const AttemptEnd = {
  /** The attempt recorded its outcome (the row's `outcome`). */
  RECORDED: 'recorded',
  /** A claim with no outcome, followed by a later claim: its worker died or lost the lease. */
  TAKEN_OVER: 'taken-over',
  /** The current claim of a RUNNING run. */
  RUNNING: 'running',
  /** Not a claim: an operator's takeover advanced the fence (resolve, or a revival of a RUNNING run). */
  OPS_TAKEOVER: 'ops-takeover',
  /** A claim with no outcome and nothing after it (the run was closed without one). */
  NO_OUTCOME: 'no-outcome',
} as const;
export type AttemptEnd = (typeof AttemptEnd)[keyof typeof AttemptEnd];

export interface AttemptRow {
  readonly claim: number;
  readonly end: AttemptEnd;
  readonly token?: number;
  readonly owner?: string;
  /** The status the claim took the run from (RUNNING: a takeover; UNKNOWN: reconciled first). */
  readonly from?: RunStatus;
  readonly claimedAt?: number;
  readonly endedAt?: number;
  /** The status the attempt recorded. */
  readonly outcome?: RunStatus;
  readonly code?: string;
  readonly message?: string;
  readonly durationMs?: number;
  /** What the handler's reconcile answered (recorded since answers were kept). */
  readonly reconcile?: ReconcileRecord;
  /** The attempt's writes fenced out by a newer token. */
  readonly fencedOut?: FencedOutRecord;
}

export interface AttemptHistory {
  readonly rows: readonly AttemptRow[];
  /** Claims older than the kept history (not listed). */
  readonly earlier: number;
}

/** What the history derivation reads of a run item (Run, plus the ops records it may carry). */
export type HistorySource = Pick<Run, 'slot' | 'status' | 'fencingToken' | 'owner' | 'startedAt' | 'leaseUntil' | 'attempts'> & {
  readonly resolution?: { readonly from?: RunStatus; readonly at?: number };
  readonly lastRevival?: { readonly from?: RunStatus; readonly at?: number };
};

/** The words for how an attempt ended, for the table. */
export function endText(row: AttemptRow): string {
  switch (row.end) {
    case AttemptEnd.RECORDED:
      return row.outcome ?? '?';
    case AttemptEnd.TAKEN_OVER:
      return 'no outcome recorded (taken over)';
    case AttemptEnd.RUNNING:
      return 'running';
    case AttemptEnd.OPS_TAKEOVER:
      return 'fence advanced by an operator (takeover)';
    case AttemptEnd.NO_OUTCOME:
      return 'no outcome recorded';
  }
}

export function attemptHistory(run: HistorySource): AttemptHistory {
  const claims = claimsOf(run.fencingToken, run.slot);
  if (claims <= 0) return { rows: [], earlier: 0 };
  const all = new Map((run.attempts ?? []).map((a) => [a.claim, a]));
  // Entries with an outcome; a fenced-out note alone is no recorded end.
  const records = new Map([...all].filter(([, a]) => a.outcome !== undefined && a.endedAt !== undefined));
  const newestRecorded = Math.max(0, ...records.keys());
  // Each recorded claim drops the one ATTEMPT_HISTORY_LIMIT before it, so below this nothing is known.
  const first = Math.max(1, (newestRecorded || claims) - ATTEMPT_HISTORY_LIMIT + 1);
  const opsTakeovers = opsFenceAdvances(run, claims, records);
  const rows: AttemptRow[] = [];
  for (let claim = first; claim <= claims; claim++) {
    const record = records.get(claim);
    if (record) {
      rows.push(recordedRow(record));
      continue;
    }
    const token = run.fencingToken - (claims - claim);
    const note = all.get(claim);
    if (opsTakeovers.has(claim)) rows.push({ claim, token, end: AttemptEnd.OPS_TAKEOVER, claimedAt: opsTakeovers.get(claim) });
    else if (claim === claims && run.status === RunStatus.RUNNING) {
      rows.push({ claim, token, end: AttemptEnd.RUNNING, owner: run.owner, claimedAt: run.startedAt });
    } else if (note) rows.push(notedRow(note, claim < claims ? AttemptEnd.TAKEN_OVER : AttemptEnd.NO_OUTCOME));
    else rows.push({ claim, token, end: claim < claims ? AttemptEnd.TAKEN_OVER : AttemptEnd.NO_OUTCOME });
  }
  return { rows, earlier: first - 1 };
}

function recordedRow(a: AttemptRecord): AttemptRow {
  return {
    claim: a.claim,
    end: AttemptEnd.RECORDED,
    token: a.token,
    owner: a.owner,
    from: a.from,
    claimedAt: a.claimedAt,
    endedAt: a.endedAt,
    outcome: a.outcome,
    code: a.code,
    message: a.message,
    durationMs: a.endedAt === undefined ? undefined : a.endedAt - a.claimedAt,
    ...notesOf(a),
  };
}

/**
 * The row of a claim that recorded no outcome but left a fenced-out note: it ended, as far as the
 * ledger can tell, when its first write was refused.
 */
function notedRow(a: AttemptRecord, end: AttemptEnd): AttemptRow {
  const refusedAt = a.fencedOut?.writes[0]?.at;
  return {
    claim: a.claim,
    end,
    token: a.token,
    owner: a.owner,
    from: a.from,
    claimedAt: a.claimedAt,
    endedAt: refusedAt,
    durationMs: refusedAt === undefined ? undefined : refusedAt - a.claimedAt,
    ...notesOf(a),
  };
}

function notesOf(a: AttemptRecord): Pick<AttemptRow, 'reconcile' | 'fencedOut'> {
  // The note's write id is the store's own (its retry's recognition), not history.
  const fencedOut = a.fencedOut ? { writes: a.fencedOut.writes, count: a.fencedOut.count } : undefined;
  return { ...(a.reconcile ? { reconcile: a.reconcile } : {}), ...(fencedOut ? { fencedOut } : {}) };
}

/** The words for what the attempt's reconcile answered, if it was recorded. */
export function reconcileAnswerText(reconcile: ReconcileRecord | undefined): string | undefined {
  if (reconcile === undefined) return undefined;
  const detail =
    reconcile.evidence !== undefined
      ? ` (evidence ${JSON.stringify(reconcile.evidence)})`
      : reconcile.evidenceChars !== undefined
        ? ` (evidence of ${reconcile.evidenceChars} characters, on the run)`
        : reconcile.reason !== undefined
          ? `: ${reconcile.reason}`
          : '';
  return `${reconcile.answer}${detail}`;
}

/** The words for an attempt's fenced-out writes: which, refused by which token, and how many. */
export function fencedOutText(fencedOut: FencedOutRecord | undefined): string | undefined {
  if (fencedOut === undefined) return undefined;
  const listed = fencedOut.writes.map((w) => `${w.write}${w.resource ? ` ${w.resource}` : ''} by token ${w.by}`);
  const more = fencedOut.count - fencedOut.writes.length;
  return `${listed.join('; ')}${more > 0 ? ` (and ${more} more)` : ''}`;
}

/**
 * The claim numbers an operator's takeover used, with when: `resolve` of a RUNNING run (its
 * `resolution`), and the last revival of a RUNNING run (`lastRevival`; earlier ones are not on
 * the item and read as takeovers). Each used the number just before the first claim made after
 * it, or, when no recorded claim came after, the current number (the one before it if the
 * current claim of a RUNNING run was made after it). A claim after it that died unrecorded would
 * shift this by one: the history cannot tell the two apart.
 */
function opsFenceAdvances(run: HistorySource, claims: number, records: ReadonlyMap<number, AttemptRecord>): Map<number, number> {
  const out = new Map<number, number>();
  for (const event of [run.resolution, run.lastRevival]) {
    if (event?.from !== RunStatus.RUNNING || event.at === undefined) continue;
    const at = event.at;
    const firstAfter = Math.min(...[...records.values()].filter((a) => a.claimedAt >= at).map((a) => a.claim));
    const currentIsLater = run.status === RunStatus.RUNNING && run.startedAt !== undefined && run.startedAt >= at;
    const used = Number.isFinite(firstAfter) ? firstAfter - 1 : currentIsLater ? claims - 1 : claims;
    if (used >= 1 && !records.has(used)) out.set(used, at);
  }
  return out;
}
