/**
 * The one place that knows the ledger's item layout (keys, expressions, marker and planner
 * items). The rest of the model tester works through the public entry points (planner tick,
 * processBatch, ops functions, the history stream); when the ledger's internals change, this file
 * is what adapts:
 *  - `classifyCall` names a DynamoDB/SQS call from its input, so faults can target "the claim"
 *    or "the completion" and the story can say what happened;
 *  - `readFinal` reads the final tables (every item of the scenario's own tables) into the
 *    checker's terms: runs, active-run markers, planner state (layout, watermarks, the paused and
 *    catching-up job lists, each job's plan item), business items.
 *
 * Layout read here (shared/core/resources.ts LedgerKeys): runs `JOB#<job>` / `RUN#<slot>#<shard>`;
 * lane markers `JOB#<job>` / `#ACTIVE#<shard>`; job plans `JOB#<job>` / `#PLAN`; the planner's
 * layout `PLANNER` / `#STATE` ({of, gen, partitions: {p: {plannedUntil, sweptUntil, watchAfter}}});
 * exception lists `PLANNER` / `#EXCEPTIONS#nn` ({paused, behind} name sets).
 */
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { markerOf } from '../../shared/store/lanes.js';
import { runFromItem } from '../../shared/store/ledger.js';
import type { BusinessEffect, BusinessState, LaneMarker, PlannerState } from '../verify/checker.js';
import { partitionOf } from '../../shared/core/partition.js';
import type { Run } from '../../shared/core/vocabulary.js';
import { LedgerKeys } from '../../shared/core/resources.js';

export type CallKind =
  | 'claim'
  | 'heartbeat'
  | 'checkpoint'
  | 'complete'
  | 'settle'
  | 'create-run'
  | 'redispatch'
  | 'watch'
  | 'lane'
  | 'planner-state'
  | 'ops-repair'
  | 'fenced-write'
  | 'read'
  | 'other'
  | 'sqs-send'
  | 'sqs-visibility'
  | 'sqs-delete'
  | 'sqs-receive'
  | 'sqs-other';

export const DYNAMO_CALL_KINDS: readonly CallKind[] = [
  'claim',
  'heartbeat',
  'checkpoint',
  'complete',
  'settle',
  'create-run',
  'redispatch',
  'watch',
  'lane',
  'planner-state',
  'ops-repair',
  'fenced-write',
  'read',
];
export const SQS_CALL_KINDS: readonly CallKind[] = ['sqs-send', 'sqs-visibility', 'sqs-delete'];

type Input = Record<string, unknown>;

function str(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && 'S' in value && typeof (value as { S: unknown }).S === 'string')
    return (value as { S: string }).S;
  return '';
}

function isPlannerKey(key: Input): boolean {
  return str(key.pk) === LedgerKeys.plannerPk || str(key.sk) === LedgerKeys.jobPlanSk;
}

function isLaneKey(key: Input): boolean {
  return str(key.sk).startsWith(LedgerKeys.activeSk(0).slice(0, -3));
}

function classifyUpdate(update: Input): CallKind {
  const expression = str(update.UpdateExpression);
  const key = (update.Key ?? {}) as Input;
  if (expression.includes('lastFence')) return 'fenced-write';
  if (isPlannerKey(key)) return 'planner-state';
  if (expression.includes('claimedFrom')) return 'claim';
  if (expression.includes(':outcome')) return 'complete';
  if (expression.includes(':settled')) return 'settle';
  if (expression.includes('#checkpoint')) return 'checkpoint';
  if (expression.includes(':revival') || expression.includes('resolution')) return 'ops-repair';
  if (expression.trim() === 'SET leaseUntil = :leaseUntil') return 'heartbeat';
  if (expression.includes('dispatchedAt = :now')) return 'redispatch';
  if (expression.includes('openPk')) return 'watch';
  return 'other';
}

/** What a call is, from its command name and input. */
export function classifyCall(command: string, input: Input): { kind: CallKind; transactional: boolean } {
  switch (command) {
    case 'GetItemCommand':
    case 'GetCommand':
    case 'QueryCommand':
    case 'ScanCommand':
    case 'BatchGetItemCommand':
    case 'BatchGetCommand':
      return { kind: 'read', transactional: false };
    case 'PutItemCommand':
    case 'PutCommand': {
      const item = (input.Item ?? {}) as Input;
      if ('lastFence' in item) return { kind: 'fenced-write', transactional: false };
      if (str(item.sk).startsWith(LedgerKeys.runSkPrefix)) return { kind: 'create-run', transactional: false };
      if (isLaneKey(item)) return { kind: 'lane', transactional: false };
      return { kind: 'other', transactional: false };
    }
    case 'DeleteItemCommand':
    case 'DeleteCommand':
      return { kind: isLaneKey((input.Key ?? {}) as Input) ? 'lane' : 'other', transactional: false };
    case 'UpdateItemCommand':
    case 'UpdateCommand':
      return { kind: classifyUpdate(input), transactional: false };
    case 'TransactWriteItemsCommand':
    case 'TransactWriteCommand': {
      const items = (input.TransactItems ?? []) as Input[];
      const first = items[0] ?? {};
      if (first.Update) return { kind: classifyUpdate(first.Update as Input), transactional: true };
      const put = first.Put ? (((first.Put as Input).Item ?? {}) as Input) : undefined;
      if (put && 'lastFence' in put) return { kind: 'fenced-write', transactional: true };
      if (put && isLaneKey(put)) return { kind: 'lane', transactional: true };
      return { kind: 'other', transactional: true };
    }
    case 'SendMessageBatchCommand':
    case 'SendMessageCommand':
      return { kind: 'sqs-send', transactional: false };
    case 'ChangeMessageVisibilityCommand':
    case 'ChangeMessageVisibilityBatchCommand':
      return { kind: 'sqs-visibility', transactional: false };
    case 'DeleteMessageCommand':
    case 'DeleteMessageBatchCommand':
      return { kind: 'sqs-delete', transactional: false };
    case 'ReceiveMessageCommand':
      return { kind: 'sqs-receive', transactional: false };
    default:
      return { kind: command.includes('Message') || command.includes('Queue') ? 'sqs-other' : 'other', transactional: false };
  }
}

export interface FinalTables {
  readonly runs: Run[];
  readonly markers: LaneMarker[];
  readonly planner: PlannerState[];
  readonly business: BusinessState[];
  /** Jobs the planner's exception lists name as paused (whatever the partition count). */
  readonly paused: string[];
  /** Partition count of the planner's stored layout (undefined: the planner never ran). */
  readonly layoutOf: number | undefined;
  /** Catch-up cursors on jobs' plan items (jobs behind, or paused while behind). */
  readonly cursors: ReadonlyMap<string, number>;
}

async function scanAll(doc: DynamoDBDocumentClient, table: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

const names = (value: unknown): string[] => [...((value as Set<string> | undefined) ?? new Set<string>())];

/** Reads the scenario's tables in full (they hold nothing but this scenario). */
export async function readFinal(
  doc: DynamoDBDocumentClient,
  tables: { readonly ledger: string; readonly business: string },
): Promise<FinalTables> {
  const [ledgerItems, businessItems] = await Promise.all([scanAll(doc, tables.ledger), scanAll(doc, tables.business)]);
  const runs: Run[] = [];
  const markers: LaneMarker[] = [];
  const paused = new Set<string>();
  const behind = new Set<string>();
  const cursors = new Map<string, number>();
  let layout: { of: number; partitions: Record<string, { plannedUntil?: number }> } | undefined;
  const activePrefix = LedgerKeys.activeSk(0).slice(0, -3);
  for (const item of ledgerItems) {
    const pk = String(item.pk);
    const sk = String(item.sk);
    if (sk.startsWith(LedgerKeys.runSkPrefix)) runs.push(runFromItem(item));
    else if (sk.startsWith(activePrefix) && pk.startsWith('JOB#')) {
      // A free lane's marker (no holder, or an earlier version's vacant one) holds nothing.
      const marker = markerOf(item);
      if (marker?.holderSlot === undefined) continue;
      markers.push({
        job: pk.slice(4),
        shard: Number(sk.slice(activePrefix.length)),
        holderSlot: marker.holderSlot,
        ...(marker.since !== undefined ? { since: marker.since } : {}),
      });
    } else if (sk === LedgerKeys.jobPlanSk && pk.startsWith('JOB#')) {
      if (typeof item.cursor === 'number') cursors.set(pk.slice(4), item.cursor);
    } else if (pk === LedgerKeys.plannerPk && sk === LedgerKeys.plannerStateSk) {
      if (typeof item.of === 'number')
        layout = { of: item.of, partitions: (item.partitions as Record<string, { plannedUntil?: number }> | undefined) ?? {} };
    } else if (pk === LedgerKeys.plannerPk) {
      for (const name of names(item.paused)) paused.add(name);
      for (const name of names(item.behind)) behind.add(name);
    }
  }
  // Per partition of the stored layout: its watermark, and the exceptional jobs it owns. A job
  // counts as behind when it is listed and its plan item still has a cursor (the planner drops a
  // listing without one).
  const planner: PlannerState[] = [];
  if (layout) {
    for (let partition = 0; partition < layout.of; partition++) {
      const mine = (job: string) => partitionOf(job, layout!.of) === partition;
      planner.push({
        partition,
        of: layout.of,
        plannedUntil: layout.partitions[String(partition)]?.plannedUntil,
        paused: [...paused].filter(mine),
        behind: [...behind].filter((job) => mine(job) && (paused.has(job) || cursors.has(job))),
      });
    }
  }
  const business: BusinessState[] = businessItems.map((item) => {
    const log = Array.isArray(item.log) ? (item.log as Record<string, unknown>[]) : [];
    const effects: BusinessEffect[] = log.map((entry) => ({
      token: Number(entry.token),
      runKey: entry.runKey as string | undefined,
      businessKey: entry.businessKey as string | undefined,
      kind: entry.kind as string | undefined,
      writeId: entry.writeId as string | undefined,
    }));
    return {
      resource: `${tables.business}/${String(item.pk)}/${String(item.sk)}`,
      lastFence: typeof item.lastFence === 'number' ? item.lastFence : undefined,
      effects,
      counter: typeof item.n === 'number' ? item.n : undefined,
    };
  });
  runs.sort((a, b) => a.job.localeCompare(b.job) || a.slot - b.slot || a.shard - b.shard);
  // A cursor counts only while the job is listed (an unlisted cursor is a leftover nobody reads).
  const listed = new Map([...cursors].filter(([job]) => behind.has(job) || paused.has(job)));
  return { runs, markers, planner, business, paused: [...paused].sort(), layoutOf: layout?.of, cursors: listed };
}
