/**
 * The machine's ceiling: conditional PutItem and conditional UpdateItem throughput on DynamoDB
 * Local, with the same client settings as the scheduler (document client, localClientConfig,
 * ReturnConsumedCapacity as the measured phases ask for it) and the planner's concurrency
 * (16 in flight). The writes are the scheduler's own requests, issued through its Ledger adapter
 * with nothing around them: createRun (conditional put), claim and complete (conditional
 * updates), on the ledger's own table definition (index, stream, TTL). Measured with simpler
 * hand-written put/update shapes they cost DynamoDB Local the same once it is warm; using the
 * ledger's shapes makes the warm-up cover exactly the code paths the phases use.
 *
 * How it is kept fair on a noisy, shared machine: every throughput phase runs on its own fresh
 * DynamoDB Local (it slows down as stream data accumulates across tables), warmed up alike on the
 * phase's own ledger table (its JIT keeps speeding up for some twenty thousand writes), and the
 * raw rate is measured on that same table with the phase's volume and write mix, once just before
 * and once just after the phase (data accumulating inside one table does not slow it down). The
 * ceiling is the better of the two, so a ratio against it is never flattered by a momentary dip
 * of the raw measurement.
 *  - puts: as many conditional puts as the planner tick creates (its comparison);
 *  - mix: K puts, then K claims and K completions: the write mix and volume of the K-run
 *    end-to-end burst (the efficiency denominator).
 */
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { Ledger } from '../../shared/store/ledger.js';
import { mapBounded } from '../../shared/core/concurrency.js';
import type { Run } from '../../shared/core/vocabulary.js';
import type { LocalEndpoints } from '../local-stack.js';
import { benchClients, cpuProbe, DynamoMeter, round, type CpuUse, type StackBase } from './measure.js';

const BASE_SLOT = Date.UTC(2030, 0, 1);
const OWNER = 'bench-raw';

/** Key i: 100 jobs, so the items spread over partitions like the planner's. */
function idOf(i: number) {
  return { job: `bench-raw-${i % 100}`, slot: BASE_SLOT + Math.floor(i / 100) * 1000, shard: 0 };
}

function range(count: number, offset: number): number[] {
  return Array.from({ length: count }, (_, i) => offset + i);
}

/** Runs `fn` over `keys` with `concurrency` in flight; returns the time each call finished (ms from start, in finishing order). */
async function timed(keys: readonly number[], concurrency: number, fn: (key: number, index: number) => Promise<void>): Promise<number[]> {
  const done: number[] = [];
  const start = performance.now();
  await mapBounded(keys, concurrency, async (key, index) => {
    await fn(key, index);
    done.push(performance.now() - start);
  });
  return done;
}

function ledgerOn(endpoints: Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint' | 'ledgerTable'>) {
  const clients = benchClients(endpoints);
  new DynamoMeter().attach(clients.doc);
  return { clients, ledger: new Ledger(clients.doc, { tableName: endpoints.ledgerTable, retentionDays: 30 }) };
}

async function put(ledger: Ledger, key: number): Promise<void> {
  const result = await ledger.createRun({ ...idOf(key), shards: 1, status: 'READY' }, Date.now());
  if (!result.created) throw new Error(`bench: raw run ${key} already existed`);
}

async function claim(ledger: Ledger, key: number): Promise<Run> {
  const result = await ledger.claim(idOf(key), OWNER, Date.now(), 30_000, 1_000);
  if (result.kind !== 'claimed') throw new Error(`bench: raw claim of ${key} refused (${result.kind})`);
  return result.run;
}

async function complete(ledger: Ledger, run: Run): Promise<void> {
  const check = await ledger.complete(run, { status: 'SUCCEEDED' }, Date.now());
  if (!check.ok) throw new Error(`bench: raw completion of ${run.runKey} refused`);
}

export interface RawPutsResult {
  readonly items: number;
  readonly putsPerSec: number;
  readonly cpu: CpuUse;
}

/** `items` conditional puts (Ledger.createRun) into the phase's table, keys from `keyOffset` on. */
export async function measureRawPuts(
  endpoints: LocalEndpoints,
  items: number,
  concurrency: number,
  keyOffset = 0,
  dynamoPid?: number,
): Promise<RawPutsResult> {
  const { clients, ledger } = ledgerOn(endpoints);
  try {
    const probe = cpuProbe(dynamoPid);
    const done = await timed(range(items, keyOffset), concurrency, (key) => put(ledger, key));
    return { items, putsPerSec: round(items / (done[items - 1]! / 1000), 1), cpu: probe() };
  } finally {
    clients.dynamo.destroy();
  }
}

export interface RawMixResult {
  readonly items: number;
  readonly putsPerSec: number;
  readonly updatesPerSec: number;
  /** (K puts + 2K updates) ÷ their total time. */
  readonly writesPerSec: number;
  readonly cpu: CpuUse;
}

/** K puts, then K claims and K completions of them (the Ledger's own requests), keys from `keyOffset` on. */
export async function measureRawMix(
  endpoints: LocalEndpoints,
  items: number,
  concurrency: number,
  keyOffset = 0,
  dynamoPid?: number,
): Promise<RawMixResult> {
  const { clients, ledger } = ledgerOn(endpoints);
  try {
    const probe = cpuProbe(dynamoPid);
    const keys = range(items, keyOffset);
    const runs: Run[] = new Array(items);
    const puts = await timed(keys, concurrency, (key) => put(ledger, key));
    const claims = await timed(keys, concurrency, async (key, index) => {
      runs[index] = await claim(ledger, key);
    });
    const completes = await timed(keys, concurrency, (_key, index) => complete(ledger, runs[index]!));
    const putMs = puts[items - 1]!;
    const updateMs = claims[items - 1]! + completes[items - 1]!;
    return {
      items,
      putsPerSec: round(items / (putMs / 1000), 1),
      updatesPerSec: round((2 * items) / (updateMs / 1000), 1),
      writesPerSec: round((3 * items) / ((putMs + updateMs) / 1000), 1),
      cpu: probe(),
    };
  } finally {
    clients.dynamo.destroy();
  }
}

/**
 * Warms DynamoDB Local's JIT on a table with the ledger's key schema and index but no stream
 * (stream data in a second table would slow the phase down; see the module comment). For the
 * latency phases; the throughput phases warm up on their own table with measureRawMix.
 */
export async function warmUp(base: StackBase, items: number, concurrency: number): Promise<void> {
  if (items <= 0) return;
  const table = `bench-warmup-${randomUUID().slice(0, 8)}`;
  const { clients } = ledgerOn({ ...base, ledgerTable: table });
  try {
    await clients.dynamo.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
          { AttributeName: 'openPk', AttributeType: 'S' },
          { AttributeName: 'openSk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'open-runs',
            KeySchema: [
              { AttributeName: 'openPk', KeyType: 'HASH' },
              { AttributeName: 'openSk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      }),
    );
  } finally {
    clients.dynamo.destroy();
  }
  await measureRawMix({ ...base, ledgerTable: table, paymentsTable: '', runQueueUrl: '', deadLetterQueueUrl: '' }, items, concurrency);
}
