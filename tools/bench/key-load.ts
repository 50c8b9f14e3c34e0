/**
 * Load per partition key: for every DynamoDB request a client sends, the partition key value of
 * the base table and of each global secondary index it writes or reads, with the units consumed
 * there. DynamoDB's per-partition limits (1,000 WCU and 3,000 RCU per second on one key value,
 * DESIGN §12) are what a scheduler at scale must stay under; DynamoDB Local enforces none, so the
 * bench measures the load each key value takes and projects it.
 *
 * Where the numbers come from:
 *  - Key values come from the request and the tables' key schemas (DescribeTable, not guesses):
 *    Key / Item of single-item writes and gets, each entry of TransactItems and of BatchGet /
 *    BatchWrite RequestItems, the partition-key equality of a Query's KeyConditionExpression.
 *  - A GSI's partition key value is the item's index key attributes before and after the write.
 *    They are tracked per item from every request seen: a Put with or without them, an Update that
 *    SETs or REMOVEs them, a Delete, and every item a response hands back (ALL_NEW, a refused
 *    write's ALL_OLD, query and get results). A sparse index only holds items with both its key
 *    attributes.
 *  - Units are DynamoDB Local's own ConsumedCapacity (ReturnConsumedCapacity: 'INDEXES', set here),
 *    which splits table and index units per request. A request touching several items (a
 *    transaction, a batch) gets its table's units split over its items in proportion to each
 *    item's units by DynamoDB's rules (writes: ceil(size / 1 KB), twice in a transaction; reads:
 *    ceil(size / 4 KB), half when eventually consistent), and its index units over the items whose
 *    index entry changed.
 *  - What DynamoDB Local leaves out, DynamoDB bills, and so does this: a refused conditional write
 *    costs ceil(size of the existing item / 1 KB), at least 1 WCU (the refusal carries no
 *    capacity); a read costs at least one 4 KB read per request (per key in a batch get), where
 *    DynamoDB Local reports 0 for an empty result.
 */
import { DescribeTableCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

type Raw = Record<string, AttributeValue>;

export interface IndexSchema {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey?: string;
}

export interface TableSchema {
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly indexes: readonly IndexSchema[];
}

/** The key schemas of `tables` as DynamoDB describes them. */
export async function describeKeySchemas(
  client: Pick<DynamoDBClient, 'send'>,
  tables: readonly string[],
): Promise<Map<string, TableSchema>> {
  const out = new Map<string, TableSchema>();
  for (const name of tables) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    const keyOf = (schema: { AttributeName?: string; KeyType?: string }[] | undefined, type: 'HASH' | 'RANGE') =>
      schema?.find((k) => k.KeyType === type)?.AttributeName;
    const partitionKey = keyOf(Table?.KeySchema, 'HASH');
    if (!partitionKey) throw new Error(`bench: table ${name} has no partition key in its description`);
    out.set(name, {
      partitionKey,
      sortKey: keyOf(Table?.KeySchema, 'RANGE'),
      indexes: (Table?.GlobalSecondaryIndexes ?? []).map((gsi) => ({
        name: gsi.IndexName!,
        partitionKey: keyOf(gsi.KeySchema, 'HASH')!,
        sortKey: keyOf(gsi.KeySchema, 'RANGE'),
      })),
    });
  }
  return out;
}

// ------------------------------------------------------------------ item size (DynamoDB's rules)

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

/** Bytes of a number as DynamoDB stores it: about one byte per two significant digits, plus one. */
function numberBytes(n: string): number {
  const digits = n.replace(/^-/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

function valueBytes(v: AttributeValue): number {
  if (v.S !== undefined) return utf8(v.S);
  if (v.N !== undefined) return numberBytes(v.N);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((s, x) => s + utf8(x), 0);
  if (v.NS !== undefined) return v.NS.reduce((s, x) => s + numberBytes(x), 0);
  if (v.BS !== undefined) return v.BS.reduce((s, x) => s + x.byteLength, 0);
  // Lists and maps: 3 bytes, plus one per element, plus the elements (and a map's names).
  if (v.L !== undefined) return 3 + v.L.reduce((s, x) => s + 1 + valueBytes(x), 0);
  if (v.M !== undefined) return 3 + Object.entries(v.M).reduce((s, [k, x]) => s + 1 + utf8(k) + valueBytes(x), 0);
  return 0;
}

/** An item's size as DynamoDB bills it: attribute names plus values, in bytes. */
export function itemBytes(item: Raw): number {
  return Object.entries(item).reduce((s, [name, v]) => s + utf8(name) + valueBytes(v), 0);
}

export const writeUnitsOf = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
export const readUnitsOf = (bytes: number, consistent: boolean) => Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);

// ------------------------------------------------------------------ expressions

function resolveName(token: string, names: Record<string, string> | undefined): string {
  return token.startsWith('#') ? (names?.[token] ?? token) : token;
}

/** Top-level comma split (function calls such as if_not_exists(a, :b) stay whole). */
function splitTop(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(text.slice(start).trim());
  return out.filter((s) => s.length > 0);
}

/** What an UpdateExpression does to top-level attributes: value tokens SET, names REMOVEd. */
export function parseUpdate(
  expression: string | undefined,
  names: Record<string, string> | undefined,
): { sets: Map<string, string>; removes: Set<string> } {
  const sets = new Map<string, string>();
  const removes = new Set<string>();
  if (!expression) return { sets, removes };
  const parts = expression.split(/\b(SET|REMOVE|ADD|DELETE)\b/i);
  for (let i = 1; i < parts.length; i += 2) {
    const clause = parts[i]!.toUpperCase();
    const body = parts[i + 1] ?? '';
    for (const action of splitTop(body)) {
      if (clause === 'SET') {
        const eq = action.indexOf('=');
        if (eq < 0) continue;
        const path = resolveName(action.slice(0, eq).trim(), names);
        sets.set(path, action.slice(eq + 1).trim());
      } else if (clause === 'REMOVE') {
        removes.add(resolveName(action.trim(), names));
      }
    }
  }
  return { sets, removes };
}

/** The value a Query's key condition requires of `attribute` (`attr = :v` in either order). */
export function keyConditionValue(
  expression: string | undefined,
  attribute: string,
  names: Record<string, string> | undefined,
  values: Raw | undefined,
): string | undefined {
  if (!expression) return undefined;
  for (const clause of expression.split(/\bAND\b/i)) {
    const m = /^\s*\(?\s*([#:\w.]+)\s*=\s*([#:\w.]+)\s*\)?\s*$/.exec(clause);
    if (!m) continue;
    const [left, right] = [m[1]!, m[2]!];
    if (resolveName(left, names) === attribute && right.startsWith(':')) return values?.[right]?.S ?? values?.[right]?.N;
    if (resolveName(right, names) === attribute && left.startsWith(':')) return values?.[left]?.S ?? values?.[left]?.N;
  }
  return undefined;
}

// ------------------------------------------------------------------ the tracker

interface CapacityPart {
  readonly CapacityUnits?: number;
}
interface Consumed {
  readonly TableName?: string;
  readonly CapacityUnits?: number;
  readonly Table?: CapacityPart;
  readonly GlobalSecondaryIndexes?: Record<string, CapacityPart>;
}

/** One item a request touched, with what is known of its index entries before and after. */
interface Touch {
  readonly table: string;
  readonly pk: string | undefined;
  readonly itemId: string;
  /** Table units by DynamoDB's rules (the weight for splitting a multi-item request's units). */
  readonly weight: number;
  /** Per index: [partition key value before, after] when the entry may have changed. */
  readonly indexChanges: ReadonlyMap<string, readonly [string | undefined, string | undefined]>;
}

/** Units on one key value; `label` is the value for a table key, "index:value" for an index key. */
export interface KeyUnits {
  readonly label: string;
  /** The partition key value as stored (JOB#…, PLANNER, OPEN#nn). */
  readonly value: string;
  /** The table, or "table/index". */
  readonly where: string;
  /** The index name for an index key. */
  readonly index?: string;
  readonly units: number;
}

/** A key value's kind for reports: per-job keys lose their job name, index buckets their number. */
export function keyKind(value: string): string {
  if (value.startsWith('JOB#')) return 'JOB#<name>';
  if (/^OPEN#\d+$/.test(value)) return 'OPEN#nn';
  return value;
}

function kindOf(k: Pick<KeyUnits, 'index' | 'value'>): string {
  return `${k.index ? `${k.index}:` : ''}${keyKind(k.value)}`;
}

export interface KeyLoadSnapshot {
  readonly writes: readonly KeyUnits[];
  readonly reads: readonly KeyUnits[];
  readonly totalWriteUnits: number;
  readonly totalReadUnits: number;
  /** Requests per key kind (a request that touches several kinds counts once for each). */
  readonly writeRequestsByKind: Readonly<Record<string, number>>;
  readonly readRequestsByKind: Readonly<Record<string, number>>;
}

const WRITE_COMMANDS = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);
const READ_COMMANDS = new Set(['GetItemCommand', 'QueryCommand', 'BatchGetItemCommand']);

export class KeyLoad {
  private readonly writeUnits = new Map<string, KeyUnits>();
  private readonly readUnits = new Map<string, KeyUnits>();
  /** Per item: its index key attribute values as last seen (undefined = absent). */
  private readonly indexState = new Map<string, Map<string, string | undefined>>();
  private writeRequests = new Map<string, number>();
  private readRequests = new Map<string, number>();
  /** Key kinds the request being observed touched. */
  private touched = new Set<string>();
  /** Requests answered and not yet worked out. */
  private pending: { name: string; input: Record<string, unknown>; output: Record<string, unknown> | undefined; error: unknown }[] = [];

  private drain(): void {
    for (const r of this.pending) this.observeOne(r.name, r.input, r.output, r.error);
    this.pending = [];
  }
  /** Requests whose key could not be told (should stay 0; reported so a gap is visible). */
  private unattributedCount = 0;

  get unattributed(): number {
    this.drain();
    return this.unattributedCount;
  }

  constructor(private readonly schemas: ReadonlyMap<string, TableSchema>) {}

  attach(client: Pick<DynamoDBDocumentClient, 'middlewareStack'>): this {
    const id = randomUUID();
    // Ask for the per-table and per-index split (the document client passes it through).
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? '';
        if (WRITE_COMMANDS.has(name) || READ_COMMANDS.has(name)) (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'INDEXES';
        return next(args);
      },
      { step: 'initialize', name: `bench-key-load-capacity-${id}`, priority: 'low' },
    );
    // At the build step the document client has marshalled the input: attribute values are typed.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? '';
        if (!WRITE_COMMANDS.has(name) && !READ_COMMANDS.has(name)) return next(args);
        const input = args.input as Record<string, unknown>;
        // Recorded in answer order and worked out later (snapshot): the burst's CPU is not spent on it.
        let result: Awaited<ReturnType<typeof next>>;
        try {
          result = await next(args);
        } catch (error) {
          this.pending.push({ name, input, output: undefined, error });
          throw error;
        }
        this.pending.push({ name, input, output: result.output as Record<string, unknown>, error: undefined });
        return result;
      },
      { step: 'build', name: `bench-key-load-${id}` },
    );
    return this;
  }

  reset(): void {
    // Earlier requests still teach the index state (which items are in the index), then are forgotten.
    this.drain();
    this.writeUnits.clear();
    this.readUnits.clear();
    this.writeRequests = new Map();
    this.readRequests = new Map();
    this.unattributedCount = 0;
  }

  snapshot(): KeyLoadSnapshot {
    this.drain();
    const sorted = (m: Map<string, KeyUnits>) => [...m.values()].sort((a, b) => b.units - a.units);
    const total = (m: Map<string, KeyUnits>) => [...m.values()].reduce((s, k) => s + k.units, 0);
    const counts = (m: Map<string, number>) => Object.fromEntries([...m].sort((a, b) => b[1] - a[1]));
    return {
      writes: sorted(this.writeUnits),
      reads: sorted(this.readUnits),
      totalWriteUnits: total(this.writeUnits),
      totalReadUnits: total(this.readUnits),
      writeRequestsByKind: counts(this.writeRequests),
      readRequestsByKind: counts(this.readRequests),
    };
  }

  // ---------------------------------------------------------------- bookkeeping

  private add(map: Map<string, KeyUnits>, where: string, value: string | undefined, units: number): void {
    if (value === undefined) {
      this.unattributedCount++;
      value = '?';
    }
    const index = where.includes('/') ? where.slice(where.indexOf('/') + 1) : undefined;
    // Label by the key alone when one table is tracked (the ledger); else name the table too.
    const table = this.schemas.size > 1 ? `${where.split('/')[0]}:` : '';
    const label = `${table}${index ? `${index}:` : ''}${value}`;
    this.touched.add(`${table}${kindOf({ index, value })}`);
    if (units <= 0) return;
    const prev = map.get(label);
    map.set(label, { label, value, where, index, units: (prev?.units ?? 0) + units });
  }

  private schema(table: string): TableSchema | undefined {
    return this.schemas.get(table);
  }

  private itemId(table: string, key: Raw): { pk: string | undefined; id: string } {
    const s = this.schema(table);
    const pk = s ? scalar(key[s.partitionKey]) : undefined;
    const sk = s?.sortKey ? scalar(key[s.sortKey]) : '';
    return { pk, id: `${table}|${pk}|${sk}` };
  }

  /** The index partition key value an item holds in `index` (a sparse index needs both key attributes). */
  private memberKey(index: IndexSchema, attrs: Map<string, string | undefined> | undefined): string | undefined {
    if (!attrs) return undefined;
    const pk = attrs.get(index.partitionKey);
    if (pk === undefined) return undefined;
    if (index.sortKey && attrs.get(index.sortKey) === undefined) return undefined;
    return pk;
  }

  /** Remembers an item's index attributes from a full item (a response, a Put). */
  private learnItem(table: string, item: Raw | undefined): void {
    const s = this.schema(table);
    if (!s || !item || s.indexes.length === 0) return;
    const { id } = this.itemId(table, item);
    const attrs = new Map<string, string | undefined>();
    for (const index of s.indexes) {
      attrs.set(index.partitionKey, scalar(item[index.partitionKey]));
      if (index.sortKey) attrs.set(index.sortKey, scalar(item[index.sortKey]));
    }
    this.indexState.set(id, attrs);
  }

  /** The item's index attributes after a write, and per index the key before and after. */
  private planWrite(
    table: string,
    id: string,
    next: Map<string, string | undefined> | undefined,
  ): Map<string, readonly [string | undefined, string | undefined]> {
    const s = this.schema(table);
    const changes = new Map<string, readonly [string | undefined, string | undefined]>();
    if (!s) return changes;
    const before = this.indexState.get(id);
    for (const index of s.indexes) {
      const a = this.memberKey(index, before);
      const b = this.memberKey(index, next);
      if (a !== undefined || b !== undefined) changes.set(index.name, [a, b]);
    }
    return changes;
  }

  private touchOfWrite(
    kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck',
    table: string,
    body: Record<string, unknown>,
    transactional: boolean,
  ): Touch & { next?: Map<string, string | undefined> } {
    const s = this.schema(table);
    const key = (kind === 'Put' ? body.Item : body.Key) as Raw;
    const { pk, id } = this.itemId(table, key);
    const factor = transactional ? 2 : 1;
    const before = this.indexState.get(id);
    let next: Map<string, string | undefined> | undefined = before;
    let weight = factor;
    if (kind === 'Put') {
      weight = factor * writeUnitsOf(itemBytes(key));
      next = new Map();
      for (const index of s?.indexes ?? []) {
        next.set(index.partitionKey, scalar(key[index.partitionKey]));
        if (index.sortKey) next.set(index.sortKey, scalar(key[index.sortKey]));
      }
    } else if (kind === 'Delete') {
      next = new Map();
    } else if (kind === 'Update') {
      const { sets, removes } = parseUpdate(
        body.UpdateExpression as string | undefined,
        body.ExpressionAttributeNames as Record<string, string> | undefined,
      );
      const values = body.ExpressionAttributeValues as Raw | undefined;
      next = new Map(before ?? []);
      for (const index of s?.indexes ?? []) {
        for (const attr of [index.partitionKey, index.sortKey].filter((a): a is string => a !== undefined)) {
          if (removes.has(attr)) next.set(attr, undefined);
          const token = sets.get(attr);
          if (token !== undefined) next.set(attr, token.startsWith(':') ? scalar(values?.[token]) : '?');
        }
      }
    }
    const indexChanges = kind === 'ConditionCheck' ? new Map() : this.planWrite(table, id, next);
    // An index entry that keeps its key and whose keys were not written is not rewritten (keys-only projection).
    for (const [name, [a, b]] of [...indexChanges]) {
      const index = s?.indexes.find((i) => i.name === name);
      if (!index) continue;
      const keyWritten = kind !== 'Update' || keyAttrsTouched(body, index);
      if (a === b && !keyWritten) indexChanges.delete(name);
    }
    return { table, pk, itemId: id, weight, indexChanges, next };
  }

  private commit(touch: Touch & { next?: Map<string, string | undefined> }): void {
    if (touch.next) this.indexState.set(touch.itemId, touch.next);
  }

  /** Splits a table's reported units over its touches by weight, and index units over changed entries. */
  private chargeWrites(touches: readonly Touch[], consumed: readonly Consumed[] | undefined, refused: boolean): void {
    const byTable = new Map<string, Touch[]>();
    for (const t of touches) byTable.set(t.table, [...(byTable.get(t.table) ?? []), t]);
    for (const [table, list] of byTable) {
      const report = consumed?.find((c) => c.TableName === table);
      const weights = list.reduce((s, t) => s + t.weight, 0);
      const tableUnits = refused ? weights : (report?.Table?.CapacityUnits ?? report?.CapacityUnits ?? weights);
      for (const t of list) this.add(this.writeUnits, table, t.pk, (tableUnits * t.weight) / Math.max(1, weights));
      if (refused) continue;
      const schema = this.schema(table);
      for (const index of schema?.indexes ?? []) {
        const changed = list.filter((t) => t.indexChanges.has(index.name));
        if (changed.length === 0) continue;
        // DynamoDB Local's split when it answered one (an index it did not write is absent: 0).
        const reported = consumed ? (report?.GlobalSecondaryIndexes?.[index.name]?.CapacityUnits ?? 0) : undefined;
        // Keys-only entries are far below 1 KB: one unit per entry written (two when the key moves).
        const entries = changed.flatMap((t) => {
          const [a, b] = t.indexChanges.get(index.name)!;
          return a !== undefined && b !== undefined && a !== b ? [a, b] : [b ?? a];
        });
        const units = reported ?? entries.length;
        for (const value of entries) this.add(this.writeUnits, `${table}/${index.name}`, value, units / entries.length);
      }
    }
  }

  /** Synchronous from here on: requests in flight at once never mix their keys. */
  private observeOne(name: string, input: Record<string, unknown>, output: Record<string, unknown> | undefined, error: unknown): void {
    this.touched = new Set();
    this.observe(name, input, output, error);
    const requests = WRITE_COMMANDS.has(name) ? this.writeRequests : this.readRequests;
    for (const kind of this.touched) requests.set(kind, (requests.get(kind) ?? 0) + 1);
  }

  private observe(name: string, input: Record<string, unknown>, output: Record<string, unknown> | undefined, error: unknown): void {
    const consumedList = (c: unknown): Consumed[] | undefined =>
      c === undefined ? undefined : Array.isArray(c) ? (c as Consumed[]) : [c as Consumed];
    const consumed = consumedList(output?.ConsumedCapacity);
    const failure = error as { name?: string; Item?: Raw } | undefined;
    const refused = failure?.name === 'ConditionalCheckFailedException' || failure?.name === 'TransactionCanceledException';
    if (error && !refused) return;
    switch (name) {
      case 'PutItemCommand':
      case 'UpdateItemCommand':
      case 'DeleteItemCommand': {
        const table = input.TableName as string;
        const kind = name === 'PutItemCommand' ? 'Put' : name === 'UpdateItemCommand' ? 'Update' : 'Delete';
        const touch = this.touchOfWrite(kind, table, input, false);
        if (refused) {
          // DynamoDB bills a refused write by the existing item's size (at least 1 WCU); it changes nothing.
          const existing = failure?.Item;
          this.add(this.writeUnits, table, touch.pk, writeUnitsOf(existing ? itemBytes(existing) : 0));
          this.learnItem(table, existing);
          return;
        }
        this.chargeWrites([touch], consumed, false);
        this.commit(touch);
        const returned = output?.Attributes as Raw | undefined;
        if (returned && input.ReturnValues === 'ALL_NEW') this.learnItem(table, returned);
        return;
      }
      case 'TransactWriteItemsCommand':
      case 'BatchWriteItemCommand': {
        const touches: (Touch & { next?: Map<string, string | undefined> })[] = [];
        if (name === 'TransactWriteItemsCommand') {
          for (const entry of (input.TransactItems as Record<string, Record<string, unknown>>[] | undefined) ?? []) {
            for (const kind of ['Put', 'Update', 'Delete', 'ConditionCheck'] as const) {
              const body = entry[kind];
              if (body) touches.push(this.touchOfWrite(kind, body.TableName as string, body, true));
            }
          }
        } else {
          for (const [table, requests] of Object.entries(
            (input.RequestItems as Record<string, Record<string, Record<string, unknown>>[]>) ?? {},
          )) {
            for (const r of requests) {
              if (r.PutRequest) touches.push(this.touchOfWrite('Put', table, r.PutRequest, false));
              if (r.DeleteRequest) touches.push(this.touchOfWrite('Delete', table, r.DeleteRequest, false));
            }
          }
        }
        this.chargeWrites(touches, consumed, refused);
        if (!refused) for (const t of touches) this.commit(t);
        return;
      }
      case 'GetItemCommand': {
        if (refused) return;
        const table = input.TableName as string;
        const { pk } = this.itemId(table, input.Key as Raw);
        const item = output?.Item as Raw | undefined;
        const floor = readUnitsOf(item ? itemBytes(item) : 0, input.ConsistentRead === true);
        this.add(this.readUnits, table, pk, Math.max(floor, consumed?.[0]?.Table?.CapacityUnits ?? consumed?.[0]?.CapacityUnits ?? 0));
        this.learnItem(table, item);
        return;
      }
      case 'BatchGetItemCommand': {
        if (refused) return;
        const responses = (output?.Responses as Record<string, Raw[]> | undefined) ?? {};
        const unprocessed = (output?.UnprocessedKeys as Record<string, { Keys?: Raw[] }> | undefined) ?? {};
        for (const [table, request] of Object.entries(
          (input.RequestItems as Record<string, { Keys?: Raw[]; ConsistentRead?: boolean }>) ?? {},
        )) {
          const consistent = request.ConsistentRead === true;
          const items = new Map<string, Raw>();
          for (const item of responses[table] ?? []) items.set(this.itemId(table, item).id, item);
          const skipped = new Set((unprocessed[table]?.Keys ?? []).map((k) => this.itemId(table, k).id));
          const keys = (request.Keys ?? []).filter((k) => !skipped.has(this.itemId(table, k).id));
          const weights = keys.map((k) => {
            const item = items.get(this.itemId(table, k).id);
            return readUnitsOf(item ? itemBytes(item) : 0, consistent);
          });
          const total = weights.reduce((s, w) => s + w, 0);
          const reported = consumed?.find((c) => c.TableName === table);
          const units = Math.max(total, reported?.Table?.CapacityUnits ?? reported?.CapacityUnits ?? 0);
          keys.forEach((k, i) => this.add(this.readUnits, table, this.itemId(table, k).pk, (units * weights[i]!) / Math.max(total, 1e-9)));
          for (const item of items.values()) this.learnItem(table, item);
        }
        return;
      }
      case 'QueryCommand': {
        if (refused) return;
        const table = input.TableName as string;
        const schema = this.schema(table);
        const indexName = input.IndexName as string | undefined;
        const index = indexName ? schema?.indexes.find((i) => i.name === indexName) : undefined;
        const attribute = index ? index.partitionKey : schema?.partitionKey;
        const value = attribute
          ? keyConditionValue(
              input.KeyConditionExpression as string | undefined,
              attribute,
              input.ExpressionAttributeNames as Record<string, string> | undefined,
              input.ExpressionAttributeValues as Raw | undefined,
            )
          : undefined;
        const report = consumed?.[0];
        const reported = index
          ? report?.GlobalSecondaryIndexes?.[index.name]?.CapacityUnits
          : (report?.Table?.CapacityUnits ?? report?.CapacityUnits);
        const items = (output?.Items as Raw[] | undefined) ?? [];
        const bytes = items.reduce((s, item) => s + itemBytes(item), 0);
        const floor = readUnitsOf(bytes, !index && input.ConsistentRead === true);
        this.add(this.readUnits, index ? `${table}/${index.name}` : table, value, Math.max(floor, reported ?? 0));
        if (!index) for (const item of items) this.learnItem(table, item);
        return;
      }
    }
  }
}

function scalar(v: AttributeValue | undefined): string | undefined {
  return v?.S ?? v?.N;
}

function keyAttrsTouched(body: Record<string, unknown>, index: IndexSchema): boolean {
  const { sets, removes } = parseUpdate(
    body.UpdateExpression as string | undefined,
    body.ExpressionAttributeNames as Record<string, string> | undefined,
  );
  return [index.partitionKey, index.sortKey].some((a) => a !== undefined && (sets.has(a) || removes.has(a)));
}

export interface HotKey {
  /** The key with the most units, as "table:value" or "table/index:value". */
  readonly label: string;
  readonly kind: string;
  readonly units: number;
  /** Its share of every unit of the phase (0–1). */
  readonly share: number;
  /** Its units per run of the phase. */
  readonly unitsPerRun: number;
}

/** The hottest key of a list (by units), with its share and per-run load. */
export function hottest(list: readonly KeyUnits[], total: number, runs: number): HotKey | undefined {
  const top = list[0];
  if (!top) return undefined;
  return {
    label: top.label,
    kind: kindOf(top),
    units: top.units,
    share: total > 0 ? top.units / total : 0,
    unitsPerRun: top.units / Math.max(1, runs),
  };
}

/** Units on JOB#<name> keys, summed per job (a job's runs, lane markers and plan item share its key). */
export function perJobUnits(list: readonly KeyUnits[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const k of list) if (k.value.startsWith('JOB#') && !k.index) out.set(k.value, (out.get(k.value) ?? 0) + k.units);
  return out;
}

/** Units per kind of key (JOB#<name> summed over jobs), for the breakdown in the report. */
export function unitsByKind(list: readonly KeyUnits[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of list) out[kindOf(k)] = (out[kindOf(k)] ?? 0) + k.units;
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1] - a[1]));
}
