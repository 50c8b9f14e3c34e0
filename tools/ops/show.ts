/**
 * `ops show <runKey>`: every attribute of one run item as stored (consistent read), with epoch
 * times also shown as ISO-8601, then its attempt history: one row per claim (claim time, owner,
 * fence, how it ended, error code and message, duration, what its reconcile answered, its writes
 * fenced out by a newer token), the claims that recorded nothing shown from the gaps in the claim
 * numbers or from the fenced-out note they left (tools/ops/attempts.ts).
 *
 * A run that ended well (SUCCEEDED, MANUAL) shows no `lastError`: an earlier attempt's error is
 * history, in the attempts, not the run's state (older items may still carry one).
 */
import { runFromItem } from '../../shared/store/ledger.js';
import { ATTEMPT_HISTORY_LIMIT } from '../../shared/core/limits.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { noExtraPositionals, parseCommand, parseRunKey } from './args.js';
import { attemptHistory, endText, fencedOutText, reconcileAnswerText, type AttemptHistory, type HistorySource } from './attempts.js';
import {
  cell,
  ERROR_CELL_WIDTH,
  EXIT_OK,
  NOTE_CELL_WIDTH,
  formatElapsed,
  iso,
  jsonValue,
  OpsFailure,
  printJson,
  printTable,
  type OpsIo,
} from './io.js';
import { withTarget } from './target.js';

export const showUsage = 'show <job@slotISO[#shard]>';

/** First the run's own fields in the design's order, then anything else alphabetically. */
const ORDER = [
  'runKey',
  'job',
  'slot',
  'shard',
  'shards',
  'status',
  'origin',
  'owner',
  'leaseUntil',
  'fencingToken',
  'attempt',
  'nextAttemptAt',
  'lastError',
  'resultUnknown',
  'createdAt',
  'dispatchedAt',
  'startedAt',
  'finishedAt',
  'checkpoint',
  'evidence',
  'resolution',
  'note',
  'expiresAt',
];

/** Listed as the attempts table (and the `attempts` array of --json), not as a field. */
const HISTORY_FIELD = 'attempts';

/** States in which the run's last error is no longer its state. */
const ENDED_WELL: readonly unknown[] = [RunStatus.SUCCEEDED, RunStatus.MANUAL];

export function formatValue(key: string, value: unknown): string {
  // An epoch time shows as stored, with its ISO form (the attributes printJson converts).
  const instant = jsonValue(key, value);
  if (typeof value === 'number' && typeof instant === 'string') return `${value} (${instant})`;
  if (typeof value === 'string') return value;
  return JSON.stringify(value, (k, v: unknown) => jsonValue(k, v));
}

/** The fields `show` prints, in order: no history map, and no stale lastError on a run that ended well. */
export function orderedFields(item: Record<string, unknown>): string[] {
  const shown = (k: string) => k !== HISTORY_FIELD && !(k === 'lastError' && ENDED_WELL.includes(item.status));
  const rest = Object.keys(item)
    .filter((k) => !ORDER.includes(k) && shown(k))
    .sort();
  return [...ORDER.filter((k) => k in item && shown(k)), ...rest];
}

export function historyOf(item: Record<string, unknown>): AttemptHistory {
  const run = runFromItem(item);
  return attemptHistory({
    ...run,
    resolution: item.resolution as HistorySource['resolution'],
    lastRevival: item.lastRevival as HistorySource['lastRevival'],
  });
}

function printHistory(io: OpsIo, history: AttemptHistory): void {
  io.stdout('');
  if (history.rows.length === 0) {
    io.stdout('attempts: none (never claimed)');
    return;
  }
  io.stdout(
    `attempts (the run keeps its last ${ATTEMPT_HISTORY_LIMIT})${history.earlier > 0 ? `: ${history.earlier} earlier claim(s) not kept` : ''}`,
  );
  printTable(
    io,
    ['CLAIM', 'CLAIMED AT', 'OWNER', 'FENCE', 'FROM', 'ENDED', 'ERROR', 'DURATION', 'RECONCILE', 'FENCED OUT'],
    history.rows.map((row) => [
      row.claim,
      iso(row.claimedAt),
      row.owner,
      row.token,
      row.from === RunStatus.RUNNING ? 'RUNNING (takeover)' : row.from,
      endText(row),
      row.code === undefined ? undefined : cell(`${row.code}: ${row.message ?? ''}`, ERROR_CELL_WIDTH),
      formatElapsed(row.durationMs),
      cell(reconcileAnswerText(row.reconcile), NOTE_CELL_WIDTH),
      cell(fencedOutText(row.fencedOut), NOTE_CELL_WIDTH),
    ]),
  );
}

export async function showCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {});
  noExtraPositionals(positionals, 1);
  const id = parseRunKey(positionals[0]);
  const item = await withTarget(values, io, (target) => target.ops.getRunItem(id));
  if (!item) throw new OpsFailure(`no run ${positionals[0]} in the ledger`);
  const history = historyOf(item);
  if (values.json) {
    const attempts = history.rows.map((row) => ({ ...row, claimedAt: iso(row.claimedAt), endedAt: iso(row.endedAt), ended: endText(row) }));
    printJson(io, { ...Object.fromEntries(orderedFields(item).map((k) => [k, item[k]])), attempts, earlierAttempts: history.earlier });
    return EXIT_OK;
  }
  printTable(
    io,
    ['FIELD', 'VALUE'],
    orderedFields(item).map((key) => [key, formatValue(key, item[key])]),
  );
  printHistory(io, history);
  return EXIT_OK;
}
