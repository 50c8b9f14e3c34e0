/**
 * `ops show <runKey>`: every attribute of one run item as stored (consistent read), with epoch
 * times also shown as ISO-8601.
 */
import { noExtraPositionals, parseCommand, parseRunKey } from './args.js';
import { EXIT_OK, OpsFailure, printJson, printTable, type OpsIo } from './io.js';
import { withTarget } from './target.js';

export const showUsage = 'show <job@slotISO[#shard]>';

/** Attributes holding epoch milliseconds / seconds, annotated with their ISO form. */
const EPOCH_MS = new Set(['slot', 'leaseUntil', 'nextAttemptAt', 'createdAt', 'dispatchedAt', 'startedAt', 'finishedAt']);
const EPOCH_S = new Set(['expiresAt']);

/** First the run's own fields in the design's order, then anything else alphabetically. */
const ORDER = [
  'runKey', 'job', 'slot', 'shard', 'shards', 'status', 'owner', 'leaseUntil', 'fencingToken', 'attempt', 'nextAttemptAt',
  'lastError', 'createdAt', 'dispatchedAt', 'startedAt', 'finishedAt', 'checkpoint', 'evidence', 'resolution', 'expiresAt',
];

export function formatValue(key: string, value: unknown): string {
  if (typeof value === 'number' && EPOCH_MS.has(key)) return `${value} (${new Date(value).toISOString()})`;
  if (typeof value === 'number' && EPOCH_S.has(key)) return `${value} (${new Date(value * 1000).toISOString()})`;
  if (typeof value === 'string') return value;
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof Set ? [...v] : v));
}

export function orderedFields(item: Record<string, unknown>): string[] {
  const rest = Object.keys(item).filter((k) => !ORDER.includes(k)).sort();
  return [...ORDER.filter((k) => k in item), ...rest];
}

export async function showCommand(args: readonly string[], io: OpsIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {});
  noExtraPositionals(positionals, 1);
  const id = parseRunKey(positionals[0]);
  const item = await withTarget(values, io, (target) => target.ops.getRunItem(id));
  if (!item) throw new OpsFailure(`no run ${positionals[0]} in the ledger`);
  if (values.json) {
    printJson(io, Object.fromEntries(orderedFields(item).map((k) => [k, item[k]])));
    return EXIT_OK;
  }
  printTable(io, ['FIELD', 'VALUE'], orderedFields(item).map((key) => [key, formatValue(key, item[key])]));
  return EXIT_OK;
}
