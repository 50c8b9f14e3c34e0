/**
 * `ops trigger` when the SQS send fails, and repeated with the same --idempotency-key: exit 0 must
 * name the run that exists and will run; a repeat must not add a second run (and a second run of
 * the job's work).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunOrigin, RunStatus } from '../../shared/core/vocabulary.js';
import type { Clients } from '../../shared/runtime/clients.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { drain, testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 30, 417);
const JOBS = testJobs([
  { name: 'report', schedule: '0 * * * *', handler: 'noop' },
  { name: 'sharded', schedule: '0 * * * *', handler: 'noop', shards: 3 },
]);

/** Refuses every SendMessageBatch while `failing.sends` > 0 (SQS unreachable past the SDK's retries). */
function failingSends(failing: { sends: number }) {
  return (clients: Clients) => {
    clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'SendMessageBatchCommand' && failing.sends > 0) {
          failing.sends--;
          throw Object.assign(new Error('Service Unavailable'), { name: 'ServiceUnavailable', $metadata: { httpStatusCode: 503 } });
        }
        return next(args);
      },
      { step: 'initialize', name: `fail-send-${Math.random()}` },
    );
  };
}

describe('ops trigger: failed sends and repeats', () => {
  let box: Sandbox;
  let endpoints: string;
  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-trigger-faults-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
  });
  afterAll(() => box.destroy());

  const capture = (now: number, instrument?: (clients: Clients) => void) => {
    const out: string[] = [];
    const err: string[] = [];
    const io: OpsIo = {
      stdout: (l) => out.push(l),
      stderr: (l) => err.push(l),
      now: () => now,
      jobs: JOBS,
      env: { USER: 'alice' },
      instrument,
    };
    return { io, out, err };
  };
  const manualRuns = async (job: string) => (await box.ledger.listRuns(job)).filter((r) => r.origin === RunOrigin.MANUAL);

  it('a trigger whose SQS send fails exits 0 naming the run it created (the sweeper sends it), and a retry with the same --idempotency-key runs the job once', async () => {
    const failing = { sends: 1 };
    const first = capture(NOW, failingSends(failing));
    expect(await runOps(['trigger', 'report', '--idempotency-key', 'deploy-42', '--endpoints', endpoints], first.io)).toBe(0);
    expect(failing.sends).toBe(0);
    const [run] = await manualRuns('report');
    expect(run).toMatchObject({ status: RunStatus.READY, runKey: `report@${new Date(NOW).toISOString()}` });
    expect(first.out.join('\n')).toContain(run!.runKey);
    expect(first.out.at(-1)).toBe('triggered 1 manual run(s) of report, not sent: the sweeper dispatches them');
    expect(first.err.join('\n')).toMatch(/could not send .*the sweeper dispatches them/);
    expect(await drain(box.clients.sqs, box.endpoints.runQueueUrl, { idleMs: 500 })).toEqual([]);

    // The operator tries again a minute later, with the same key: still one run, now dispatched.
    const again = capture(NOW + 60_000);
    expect(await runOps(['trigger', 'report', '--idempotency-key', 'deploy-42', '--endpoints', endpoints], again.io)).toBe(0);
    expect((await manualRuns('report')).map((r) => r.runKey)).toEqual([run!.runKey]);
    expect(again.out.at(-1)).toMatch(/^already triggered with idempotency key deploy-42: 1 manual run\(s\) of report, no new run created/);
    const received = await drain(box.clients.sqs, box.endpoints.runQueueUrl, { expected: 1 });
    expect(received.map((m) => (JSON.parse(m.Body!) as { runKey: string }).runKey)).toEqual([run!.runKey]);
  });

  it('a repeated trigger of a sharded job with the same --idempotency-key creates one run per shard, once', async () => {
    for (const at of [NOW, NOW + 5_000]) {
      expect(await runOps(['trigger', 'sharded', '--idempotency-key', 'k-1', '--endpoints', endpoints], capture(at).io)).toBe(0);
    }
    expect((await manualRuns('sharded')).map((r) => r.shard).sort()).toEqual([0, 1, 2]);
    // The same key for one shard is another request: refused, naming the field.
    const other = capture(NOW + 6_000);
    expect(await runOps(['trigger', 'sharded', '--shard', '1', '--idempotency-key', 'k-1', '--endpoints', endpoints], other.io)).toBe(2);
    expect(other.err[0]).toContain('field "idempotency-key"');
    expect(await manualRuns('sharded')).toHaveLength(3);
  });

  it('a trigger that fails before creating anything exits 1 naming a key whose repeat creates at most one run', async () => {
    const c = capture(NOW + 120_000, (clients) =>
      clients.doc.middlewareStack.add(
        () => async () => {
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ThrottlingException',
            $metadata: { httpStatusCode: 400 },
          });
        },
        { step: 'initialize', name: 'refuse-dynamo' },
      ),
    );
    const before = (await manualRuns('report')).length;
    expect(await runOps(['trigger', 'report', '--endpoints', endpoints], c.io)).toBe(1);
    expect(c.err.join('\n')).toMatch(/repeat with --idempotency-key auto-[0-9a-f-]+ \(it creates at most one run\)/);
    expect(await manualRuns('report')).toHaveLength(before);
  });
});
