/**
 * Generated bad inputs for the worker (DESIGN §8): more than 10,000 malformed SQS messages
 * (fast-check: not JSON, JSON that is not an object, random objects, every field of a real message
 * removed or given a wrong value, unknown jobs and shards, runs that do not exist, oversized and
 * hostile bodies) mixed with healthy messages and duplicates, through processBatch against the
 * local ledger. No batch may crash, every healthy run succeeds exactly once, and every bad message
 * is reported in batchItemFailures. A small end-to-end sample on a real queue with
 * maxReceiveCount 2 ends in the DLQ.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { RunQueue } from '../../shared/messaging/run-queue.js';
import { jobsByName } from '../../shared/config.js';
import { mapBounded } from '../../shared/core/concurrency.js';
import { RunStatus, runKeyOf, type RunId } from '../../shared/core/vocabulary.js';
import type { JobHandler } from '../../shared/handler-api.js';
import { InMemoryMetrics } from '../../shared/runtime/observability.js';
import { messageFor } from '../../shared/planner/planner.js';
import { processBatch, type QueueRecord, type WorkerDeps } from '../../shared/worker/batch.js';
import { LocalPoller } from '../../tools/local-poller.js';
import { Rng } from '../../tools/chaos/rng.js';
import { silentLogger, testJobs, waitFor } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';
import { workerDeps } from '../support/worker-harness.js';

const JOBS = testJobs(
  [
    { name: 'gen-a', schedule: '* * * * *', handler: 'count', startLead: 0 },
    { name: 'gen-b', schedule: '* * * * * *', handler: 'count', shards: 3, startLead: 0 },
  ],
  ['count'],
);
const T0 = Math.floor(Date.UTC(2026, 5, 1) / 60_000) * 60_000;
const FUTURE = Date.UTC(2099, 0, 1);
const DELETE = Symbol('delete');
const FIELDS = ['v', 'job', 'slot', 'shard', 'runKey'] as const;

function healthyIds(countA: number, countB: number): RunId[] {
  return [
    ...Array.from({ length: countA }, (_, i) => ({ job: 'gen-a', slot: T0 - i * 60_000, shard: 0 })),
    ...Array.from({ length: countB }, (_, i) => [0, 1, 2].map((shard) => ({ job: 'gen-b', slot: T0 - 7_000 - i * 1_000, shard }))).flat(),
  ];
}
const keyOf = (id: RunId) => runKeyOf(id.job, id.slot, id.shard, JOBS.find((j) => j.name === id.job)!.shards);
const bodyOf = (id: RunId) => messageFor({ ...id, runKey: keyOf(id) });

/** Every kind of message a worker must survive, none of them a valid message for an existing run. */
function badBodyArb(existing: readonly RunId[]): fc.Arbitrary<string> {
  const anyValue = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.object({ maxDepth: 1 }),
  );
  const mutated = fc
    .tuple(fc.nat({ max: existing.length - 1 }), fc.constantFrom(...FIELDS), fc.oneof(fc.constant<typeof DELETE>(DELETE), anyValue))
    .filter(
      ([i, field, value]) =>
        value === DELETE || JSON.stringify(value) !== JSON.stringify((bodyOf(existing[i]!) as unknown as Record<string, unknown>)[field]),
    )
    .map(([i, field, value]) => {
      const body: Record<string, unknown> = { ...bodyOf(existing[i]!) };
      if (value === DELETE) delete body[field];
      else body[field] = value;
      return JSON.stringify(body);
    });
  const otherRun = fc
    .tuple(
      fc.nat({ max: existing.length - 1 }),
      fc.constantFrom('unknown-job', 'shard-out-of-range', 'negative-shard', 'slot-as-string', 'float-slot', 'huge-slot', 'max-date'),
    )
    .map(([i, kind]) => {
      const id = existing[i]!;
      const base = bodyOf(id) as unknown as Record<string, unknown>;
      switch (kind) {
        case 'unknown-job':
          return JSON.stringify({ ...base, job: 'no-such-job', runKey: runKeyOf('no-such-job', id.slot, 0, 1) });
        case 'shard-out-of-range':
          return JSON.stringify({ ...base, shard: 3, runKey: runKeyOf(id.job, id.slot, 3, 4) });
        case 'negative-shard':
          return JSON.stringify({ ...base, shard: -1 });
        case 'slot-as-string':
          return JSON.stringify({ ...base, slot: String(id.slot) });
        case 'float-slot':
          return JSON.stringify({ ...base, slot: id.slot + 0.5 });
        case 'huge-slot':
          return JSON.stringify({ ...base, slot: 1e20 });
        default:
          return JSON.stringify({ ...base, slot: 8.64e15, runKey: runKeyOf(id.job, 8.64e15, id.shard, id.job === 'gen-b' ? 3 : 1) });
      }
    });
  // Well-formed, but the run was never created: the claim finds nothing.
  const missing = fc
    .integer({ min: 1, max: 500_000 })
    .map((k) =>
      JSON.stringify(
        messageFor({ job: 'gen-a', slot: FUTURE + k * 60_000, shard: 0, runKey: runKeyOf('gen-a', FUTURE + k * 60_000, 0, 1) }),
      ),
    );
  const hostile = fc.constantFrom(
    '{"__proto__":{"v":1,"job":"gen-a"},"slot":1}',
    '{"constructor":{"prototype":{"v":1}}}',
    `{"v":1,"v":2,"job":"gen-a","slot":${T0},"shard":0,"runKey":"${runKeyOf('gen-a', T0, 0, 1)}"}`,
    `{"v":"1","job":"gen-a","slot":${T0},"shard":0,"runKey":"${runKeyOf('gen-a', T0, 0, 1)}"}`,
    `{"v":1.0000001,"job":"gen-a","slot":${T0},"shard":0,"runKey":"${runKeyOf('gen-a', T0, 0, 1)}"}`,
    'null',
    '',
    ' ',
    '[]',
    '"{}"',
    '\u0000',
    'x'.repeat(200_000),
    JSON.stringify({ v: 1, job: 'gen-a'.repeat(10_000) }),
    '{"v":1,"job":"gen-a","slot":' + '9'.repeat(400) + ',"shard":0,"runKey":"x"}',
  );
  return fc.oneof(
    { arbitrary: fc.string({ maxLength: 200 }).map((s) => `${s}{`), weight: 2 },
    { arbitrary: fc.string({ unit: 'binary', maxLength: 100 }), weight: 2 },
    {
      arbitrary: fc
        .jsonValue({ maxDepth: 2 })
        .filter((v) => v === null || typeof v !== 'object' || Array.isArray(v))
        .map((v) => JSON.stringify(v)),
      weight: 2,
    },
    {
      arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 6 }).map((v) => JSON.stringify(v)),
      weight: 2,
    },
    { arbitrary: mutated, weight: 6 },
    { arbitrary: otherRun, weight: 3 },
    { arbitrary: missing, weight: 1 },
    { arbitrary: hostile, weight: 1 },
  );
}

/** Healthy variants of a message: exact, extra fields, other key order, pretty-printed. */
function healthyBody(id: RunId, variant: number): string {
  const body = bodyOf(id) as unknown as Record<string, unknown>;
  switch (variant % 4) {
    case 1:
      return JSON.stringify({ ...body, traceId: 'abc', extra: { nested: true } });
    case 2:
      return JSON.stringify(Object.fromEntries(Object.entries(body).reverse()));
    case 3:
      return JSON.stringify(body, null, 2);
    default:
      return JSON.stringify(body);
  }
}

describe('generated bad SQS messages through processBatch', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  it('10,000+ malformed messages mixed with healthy ones and duplicates: no batch crashes, every healthy run succeeds once, every bad one is reported', async () => {
    const healthy = healthyIds(200, 100);
    await mapBounded(healthy, 16, (id) => box.ledger.createRun({ ...id, shards: id.job === 'gen-b' ? 3 : 1, status: RunStatus.READY }, T0));
    const bad = fc.sample(badBodyArb(healthy), { numRuns: 10_500, seed: 611 });
    const executions = new Map<string, number>();
    const count: JobHandler = { run: async (ctx) => void executions.set(ctx.runKey, (executions.get(ctx.runKey) ?? 0) + 1) };
    const hidden: number[] = [];
    const queue = {
      send: async () => undefined,
      changeVisibility: async (_: string, seconds: number) => void hidden.push(seconds),
    } as unknown as RunQueue;
    const metrics = new InMemoryMetrics();
    const deps = (owner: string): WorkerDeps => workerDeps(box, JOBS, { count }, owner, { queue, clock: () => T0 + 3_600_000, metrics });

    const rng = new Rng(2026);
    type Tagged = QueueRecord & { readonly kind: 'bad' | 'healthy' };
    let n = 0;
    const record = (body: string, kind: Tagged['kind'], receives = 1): Tagged => ({
      messageId: `m-${n++}`,
      receiptHandle: `r-${n}`,
      body,
      attributes: { ApproximateReceiveCount: String(receives) },
      kind,
    });
    const records: Tagged[] = [
      ...bad.map((b) => record(b, 'bad', rng.int(1, 5))),
      ...healthy.map((id, i) => record(healthyBody(id, i), 'healthy')),
    ];
    for (let i = records.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [records[i], records[j]] = [records[j]!, records[i]!];
    }
    const batches: Tagged[][] = [];
    for (let i = 0; i < records.length; ) {
      const size = rng.int(1, 10);
      const batch = records.slice(i, i + size);
      // Now and then SQS hands the same message twice in one batch.
      if (rng.chance(0.05)) batch.push({ ...batch[0]!, receiptHandle: `${batch[0]!.receiptHandle}-again` });
      batches.push(batch);
      i += size;
    }

    const crashes: string[] = [];
    const wronglyRetried: string[] = [];
    const unreported: string[] = [];
    const runBatches = async (list: Tagged[][], owner: string) =>
      mapBounded(list, 8, async (batch, i) => {
        let failures: Set<string>;
        try {
          failures = new Set((await processBatch(deps(`${owner}-${i % 8}`), batch)).batchItemFailures.map((f) => f.itemIdentifier));
        } catch (error) {
          // Find the message that brought the whole batch down (bad ones alone: no side effects).
          for (const r of batch.filter((x) => x.kind === 'bad')) {
            await processBatch(deps(`${owner}-probe`), [r]).catch((e: unknown) =>
              crashes.push(`${String(e)} <- body ${r.body.slice(0, 160)}`),
            );
          }
          if (crashes.length === 0) crashes.push(`${String(error)} (batch of ${batch.length})`);
          return;
        }
        for (const r of batch) {
          if (r.kind === 'bad' && !failures.has(r.messageId)) unreported.push(r.body.slice(0, 120));
          if (r.kind === 'healthy' && failures.has(r.messageId)) wronglyRetried.push(r.body.slice(0, 120));
        }
      });
    await runBatches(batches, 'gen');
    // Redelivery of finished runs under new message ids: acknowledged, never executed again.
    const redelivered = healthy.filter((_, i) => i % 10 === 0).map((id) => record(healthyBody(id, 0), 'healthy', 2));
    await runBatches([redelivered.slice(0, 10), redelivered.slice(10, 20), redelivered.slice(20)], 'again');

    expect(unreported).toEqual([]);
    expect(wronglyRetried).toEqual([]);
    expect(bad.length).toBeGreaterThanOrEqual(10_000);
    expect([...executions.keys()].sort()).toEqual(healthy.map(keyOf).sort());
    expect([...executions.values()].every((c) => c === 1)).toBe(true);
    const runs = [...(await box.ledger.listRuns('gen-a')), ...(await box.ledger.listRuns('gen-b'))];
    expect(runs).toHaveLength(healthy.length);
    expect(runs.every((r) => r.status === RunStatus.SUCCEEDED && r.attempt === 1)).toBe(true);
    expect(metrics.get('PoisonMessages')).toBeGreaterThanOrEqual(bad.length);
    expect(metrics.get('RunsSucceeded')).toBe(healthy.length);
    expect(hidden.every((s) => s >= 1)).toBe(true);
    // Regression: a well-formed message whose slot was near the end of the Date range passed
    // parseRunMessage, but its fence bound (slot * 1000 + 999) was not a safe integer: the claim's
    // marshalling threw and processBatch rejected, failing every message of the batch.
    expect([...new Set(crashes)], 'processBatch must never crash on a bad message').toEqual([]);
  }, 600_000);

  it('end to end on a queue with maxReceiveCount 2: ~20 generated bad messages end in the DLQ, the healthy runs succeed', async () => {
    const e2e = await sandbox({ visibilityTimeoutSeconds: 1, maxReceiveCount: 2 });
    try {
      const healthy = healthyIds(5, 0).map((id) => ({ ...id, slot: id.slot - 86_400_000 }));
      await Promise.all(healthy.map((id) => e2e.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, T0)));
      const sqsLegal = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]+$/u;
      const bad = [
        ...new Set(fc.sample(badBodyArb(healthy), { numRuns: 400, seed: 99 }).filter((b) => b.length < 100_000 && sqsLegal.test(b))),
      ].slice(0, 20);
      expect(bad).toHaveLength(20);
      const bodies = [...bad, ...healthy.map((id) => JSON.stringify(bodyOf(id)))];
      for (let i = 0; i < bodies.length; i += 10) {
        const { Failed = [] } = await e2e.clients.sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: e2e.endpoints.runQueueUrl,
            Entries: bodies.slice(i, i + 10).map((b, j) => ({ Id: String(j), MessageBody: b })),
          }),
        );
        expect(Failed).toEqual([]);
      }
      const executions = new Map<string, number>();
      const count: JobHandler = { run: async (ctx) => void executions.set(ctx.runKey, (executions.get(ctx.runKey) ?? 0) + 1) };
      const poller = new LocalPoller(
        e2e.clients.sqs,
        (records) =>
          processBatch(
            {
              ledger: e2e.ledger,
              queue: e2e.queue,
              doc: e2e.clients.doc,
              jobs: jobsByName(JOBS),
              handlers: { count },
              tables: { ledger: e2e.endpoints.ledgerTable, payments: e2e.endpoints.paymentsTable },
              owner: 'e2e-worker',
              clock: Date.now,
              logger: silentLogger(),
              metrics: new InMemoryMetrics(),
            },
            records,
          ),
        { queueUrl: e2e.endpoints.runQueueUrl },
        () => undefined,
      );
      poller.start();
      const dead: string[] = [];
      try {
        await waitFor(
          async () => {
            const { Messages = [] } = await e2e.clients.sqs.send(
              new ReceiveMessageCommand({
                QueueUrl: e2e.endpoints.deadLetterQueueUrl,
                MaxNumberOfMessages: 10,
                WaitTimeSeconds: 0,
                VisibilityTimeout: 600,
              }),
            );
            dead.push(...Messages.map((m) => m.Body ?? ''));
            return dead.length >= bad.length ? true : undefined;
          },
          45_000,
          'the bad messages to reach the DLQ',
        );
      } finally {
        await poller.stop();
      }
      expect(dead.sort()).toEqual([...bad].sort());
      expect([...executions.keys()].sort()).toEqual(healthy.map(keyOf).sort());
      expect([...executions.values()].every((c) => c === 1)).toBe(true);
      const runs = await e2e.ledger.listRuns('gen-a');
      expect(runs.map((r) => r.status)).toEqual(healthy.map(() => RunStatus.SUCCEEDED));
    } finally {
      e2e.destroy();
    }
  }, 300_000);
});
