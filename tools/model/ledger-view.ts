/**
 * The one place that knows the ledger's item layout (keys, expressions, marker and watermark
 * items). The rest of the model tester works through the public entry points (planner tick,
 * processBatch, ops functions, the history stream); when the ledger's internals change, this file
 * is what adapts:
 *  - `classifyCall` names a DynamoDB/SQS call from its input, so faults can target "the claim"
 *    or "the completion" and the story can say what happened;
 *  - `readFinal` reads the final tables (every item of the scenario's own tables) into the
 *    checker's terms: runs, active-run markers, planner partition state, business items.
 */
import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { runFromItem } from '../../shared/adapters/ledger.js';
import type { BusinessEffect, BusinessState, LaneMarker, PlannerState } from '../../shared/core/checker.js';
import type { Run } from '../../shared/core/vocabulary.js';

export type CallKind =
  | 'claim'
  | 'heartbeat'
  | 'checkpoint'
  | 'complete'
  | 'settle'
  | 'create-run'
  | 'redispatch'
  | 'watermark'
  | 'ops-repair'
  | 'fenced-write'
  | 'read'
  | 'other'
  | 'sqs-send'
  | 'sqs-visibility'
  | 'sqs-delete'
  | 'sqs-receive'
  | 'sqs-other';

export const DYNAMO_CALL_KINDS: readonly CallKind[] = ['claim', 'heartbeat', 'checkpoint', 'complete', 'settle', 'create-run', 'redispatch', 'watermark', 'ops-repair', 'fenced-write', 'read'];
export const SQS_CALL_KINDS: readonly CallKind[] = ['sqs-send', 'sqs-visibility', 'sqs-delete'];

type Input = Record<string, unknown>;

function str(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && 'S' in value && typeof (value as { S: unknown }).S === 'string') return (value as { S: string }).S;
  return '';
}

function classifyUpdate(update: Input): CallKind {
  const expression = str(update.UpdateExpression);
  const key = (update.Key ?? {}) as Input;
  const pk = str(key.pk);
  if (expression.includes('lastFence')) return 'fenced-write';
  if (pk.startsWith('PLANNER#')) return 'watermark';
  if (expression.includes('claimedFrom')) return 'claim';
  if (expression.includes(':outcome')) return 'complete';
  if (expression.includes(':settled')) return 'settle';
  if (expression.includes('#checkpoint')) return 'checkpoint';
  if (expression.includes(':revival') || expression.includes('resolution')) return 'ops-repair';
  if (expression.trim() === 'SET leaseUntil = :leaseUntil') return 'heartbeat';
  if (expression.includes('dispatchedAt = :now')) return 'redispatch';
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
      if (str(item.sk).startsWith('RUN#')) return { kind: 'create-run', transactional: false };
      return { kind: 'other', transactional: false };
    }
    case 'UpdateItemCommand':
    case 'UpdateCommand':
      return { kind: classifyUpdate(input), transactional: false };
    case 'TransactWriteItemsCommand':
    case 'TransactWriteCommand': {
      const items = (input.TransactItems ?? []) as Input[];
      const first = items[0] ?? {};
      if (first.Update) return { kind: classifyUpdate(first.Update as Input), transactional: true };
      if (first.Put && 'lastFence' in (((first.Put as Input).Item ?? {}) as Input)) return { kind: 'fenced-write', transactional: true };
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

/** Reads the scenario's tables in full (they hold nothing but this scenario). */
export async function readFinal(doc: DynamoDBDocumentClient, tables: { readonly ledger: string; readonly business: string }): Promise<FinalTables> {
  const [ledgerItems, businessItems] = await Promise.all([scanAll(doc, tables.ledger), scanAll(doc, tables.business)]);
  const runs: Run[] = [];
  const markers: LaneMarker[] = [];
  const planner: PlannerState[] = [];
  for (const item of ledgerItems) {
    const pk = String(item.pk);
    const sk = String(item.sk);
    if (sk.startsWith('RUN#')) runs.push(runFromItem(item));
    else if (sk.startsWith('#ACTIVE#') && pk.startsWith('JOB#')) {
      markers.push({ job: pk.slice(4), shard: Number(sk.slice('#ACTIVE#'.length)), holderSlot: Number(item.holderSlot) });
    } else if (pk.startsWith('PLANNER#')) {
      const [partition, of] = pk.slice('PLANNER#'.length).split('/').map(Number);
      planner.push({
        partition: partition!,
        of: of!,
        plannedUntil: typeof item.plannedUntil === 'number' ? item.plannedUntil : undefined,
        paused: [...((item.paused as Set<string> | undefined) ?? new Set<string>())],
        behind: Object.keys((item.behind as Record<string, number> | undefined) ?? {}),
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
  return { runs, markers, planner, business };
}
