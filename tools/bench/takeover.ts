/**
 * Takeover latency: real worker child processes (tools/worker-process.ts) run a job whose first
 * attempt holds for minutes while heartbeating; the bench SIGKILLs the holder mid-run and
 * measures kill → the successor's `claimed` event (from RUNNING). Two idle workers are kept alive
 * (the killed one is replaced at once), so a successor is always polling.
 *
 * Kill k of n lands (k + 0.5) / n of a heartbeat interval after a heartbeat, so the samples cover
 * the whole cycle, the worst case (a kill right after a heartbeat) included. Each takeover is
 * split into the lease the dead worker still held at the kill (its last leaseUntil − kill) and
 * the time after that lease ended: the claimer's clock-skew allowance (whatever the worker code
 * in force uses) plus SQS redelivery (message visibility, re-hide rounding, polling).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { HistoryEvent } from '../../shared/core/history.js';
import { InvariantMonitor } from '../verify/invariants.js';
import { parseJobs, type JobInput } from '../../shared/schedule/job-schema.js';
import { messageFor } from '../../shared/planner/planner.js';
import { createAdapters } from '../../shared/runtime/clients.js';
import { percentile } from '../local-runtime.js';
import type { LocalEndpoints } from '../local-stack.js';
import { handlers as holdHandlers } from './takeover-handlers.js';
import { benchClients, freshResources, mean, round, sleepMs, until } from './measure.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORKER_SCRIPT = join(ROOT, 'tools', 'worker-process.ts');
const HANDLERS_MODULE = join(ROOT, 'tools', 'bench', 'takeover-handlers.ts');

export interface TakeoverOptions {
  readonly base: Pick<LocalEndpoints, 'dynamoEndpoint' | 'sqsEndpoint'>;
  readonly kills: number;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  /** Passed to the workers as --clock-skew; undefined = the default allowance. */
  readonly clockSkewMs?: number;
  readonly log?: (line: string) => void;
}

export interface TakeoverSample {
  readonly takeoverMs: number;
  /** Kill → the dead worker's last leaseUntil. */
  readonly leaseRemainingMs: number;
  /** Last leaseUntil → the successor's claim: skew allowance + redelivery. */
  readonly afterLeaseMs: number;
  /** Kill − the heartbeat before it. */
  readonly killAfterHeartbeatMs: number;
}

export interface TakeoverResult {
  readonly kills: number;
  readonly p50Ms: number;
  readonly maxMs: number;
  readonly minMs: number;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  /** The --clock-skew given to the workers, or 'default' (the worker code's own rule). */
  readonly clockSkew: number | 'default';
  readonly leaseRemainingMeanMs: number;
  readonly afterLeaseMeanMs: number;
  readonly afterLeaseMaxMs: number;
  readonly samples: readonly TakeoverSample[];
  readonly violations: number;
}

interface WorkerChild {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly ready: Promise<void>;
  alive: boolean;
  stderrTail: string[];
}

export async function measureTakeover(options: TakeoverOptions): Promise<TakeoverResult> {
  const log = options.log ?? (() => undefined);
  const endpoints = await freshResources(options.base, 'takeover', { visibilityTimeoutSeconds: 30, maxReceiveCount: 1000 });
  const dir = mkdtempSync(join(tmpdir(), 'scheduler-bench-'));
  const endpointsFile = join(dir, 'endpoints.json');
  const jobsFile = join(dir, 'jobs.json');
  const jobInput: JobInput = {
    name: 'bench-takeover',
    schedule: '* * * * * *',
    handler: 'bench-hold',
    overlap: 'parallel',
    lease: options.leaseMs,
    heartbeatEvery: options.heartbeatMs,
    timeout: '30m',
    startLead: 0,
  };
  writeFileSync(endpointsFile, JSON.stringify(endpoints));
  writeFileSync(jobsFile, JSON.stringify([jobInput]));
  // The holder runs as a local child process, with no Lambda time limit: its long hold need not fit one invocation.
  const [job] = parseJobs([jobInput], { handlers: Object.keys(holdHandlers), workerTimeoutMs: Number.POSITIVE_INFINITY });
  const clients = benchClients(endpoints);
  const { ledger, queue } = createAdapters(clients, {
    ledgerTable: endpoints.ledgerTable,
    paymentsTable: endpoints.paymentsTable,
    runQueueUrl: endpoints.runQueueUrl,
    retentionDays: 1,
  });
  // A successor may claim up to the allowance early by its own clock; same machine here, so none.
  const monitor = new InvariantMonitor(0);
  const events: HistoryEvent[] = [];
  const children = new Map<string, WorkerChild>();
  let spawned = 0;

  const spawnWorker = (): WorkerChild => {
    const name = `bench-takeover-w${spawned++}`;
    const args = [
      '--import',
      'tsx',
      WORKER_SCRIPT,
      '--endpoints',
      endpointsFile,
      '--owner',
      name,
      '--handlers',
      HANDLERS_MODULE,
      '--jobs',
      jobsFile,
      '--batch-size',
      '1',
    ];
    if (options.clockSkewMs !== undefined) args.push('--clock-skew', String(options.clockSkewMs));
    const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let markReady: () => void = () => undefined;
    let failReady: (error: Error) => void = () => undefined;
    const ready = new Promise<void>((res, rej) => {
      markReady = res;
      failReady = rej;
    });
    // A replacement stopped at the end of the phase before it was ready is no failure: nobody waits on it then.
    ready.catch(() => undefined);
    const child: WorkerChild = { name, proc, ready, alive: true, stderrTail: [] };
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      let parsed: { ready?: string; event?: HistoryEvent };
      try {
        parsed = JSON.parse(line) as typeof parsed;
      } catch {
        return;
      }
      if (parsed.ready) markReady();
      if (parsed.event) {
        events.push(parsed.event);
        monitor.record(parsed.event);
      }
    });
    createInterface({ input: proc.stderr! }).on('line', (line) => {
      child.stderrTail.push(line);
      if (child.stderrTail.length > 20) child.stderrTail.shift();
    });
    proc.once('exit', (code, signal) => {
      child.alive = false;
      failReady(new Error(`worker ${name} exited (${signal ?? code}) before it was ready: ${child.stderrTail.join('\n')}`));
    });
    children.set(name, child);
    return child;
  };

  const idleWorkers = () => [...children.values()].filter((c) => c.alive);
  const samples: TakeoverSample[] = [];
  try {
    spawnWorker();
    spawnWorker();
    await Promise.all(idleWorkers().map((c) => c.ready));
    for (let i = 0; i < options.kills; i++) {
      await Promise.all(idleWorkers().map((c) => c.ready));
      const slot = Math.floor(Date.now() / 1000) * 1000;
      const created = await ledger.createRun({ job: job!.name, slot, shard: 0, shards: 1, status: 'READY' }, Date.now());
      if (!created.created) throw new Error(`bench: run for slot ${slot} already existed`);
      const runKey = created.run.runKey;
      await queue.send([{ message: messageFor(created.run), delaySeconds: 0 }]);
      const first = await until(
        () => events.find((e): e is Extract<HistoryEvent, { type: 'claimed' }> => e.type === 'claimed' && e.runKey === runKey),
        20_000,
        `the first claim of ${runKey}`,
      );
      const holder = children.get(first.owner);
      if (!holder) throw new Error(`bench: ${runKey} claimed by unknown owner ${first.owner}`);
      // Sync to a heartbeat of the holder (the second one, so the run is well under way), then
      // kill at this sample's phase of the heartbeat cycle.
      type Beat = Extract<HistoryEvent, { type: 'heartbeat' }>;
      const beats = () => events.filter((e): e is Beat => e.type === 'heartbeat' && e.ok && e.runKey === runKey && e.owner === holder.name);
      const beat = await until(() => beats()[1], 10_000, `two heartbeats on ${runKey}`);
      const phase = Math.round(((i + 0.5) / options.kills) * options.heartbeatMs);
      await sleepMs(beat.at + phase - Date.now());
      const killAt = Date.now();
      holder.proc.kill('SIGKILL');
      holder.alive = false;
      spawnWorker();
      const successor = await until(
        () =>
          events.find(
            (e): e is Extract<HistoryEvent, { type: 'claimed' }> =>
              e.type === 'claimed' && e.runKey === runKey && e.from === 'RUNNING' && e.owner !== holder.name,
          ),
        60_000,
        `a successor to take over ${runKey}`,
      );
      await until(
        () => events.find((e) => e.type === 'outcome' && e.runKey === runKey && e.accepted),
        20_000,
        `the successor's outcome on ${runKey}`,
      );
      // Every lease extension the holder printed before it died (read now: its last lines may have been in the pipe).
      const leases = [first, ...beats().filter((e) => e.at <= killAt)];
      const lastBeatAt = Math.max(...leases.map((e) => e.at));
      const lastLeaseUntil = Math.max(...leases.map((e) => e.leaseUntil));
      const sample: TakeoverSample = {
        takeoverMs: successor.at - killAt,
        leaseRemainingMs: lastLeaseUntil - killAt,
        afterLeaseMs: successor.at - lastLeaseUntil,
        killAfterHeartbeatMs: killAt - lastBeatAt,
      };
      samples.push(sample);
      log(
        `takeover ${i + 1}/${options.kills}: ${sample.takeoverMs} ms (kill ${sample.killAfterHeartbeatMs} ms after a heartbeat; lease left ${sample.leaseRemainingMs} ms, then ${sample.afterLeaseMs} ms to the successor's claim)`,
      );
    }
  } finally {
    const exits = [...children.values()]
      .filter((c) => c.proc.exitCode === null && c.proc.signalCode === null)
      .map(
        (c) =>
          new Promise<void>((res) => {
            c.proc.once('exit', () => res());
            c.proc.kill('SIGTERM');
            setTimeout(() => c.proc.kill('SIGKILL'), 5_000).unref();
          }),
      );
    await Promise.all(exits);
    clients.dynamo.destroy();
    clients.sqs.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  const takeovers = samples.map((s) => s.takeoverMs);
  return {
    kills: samples.length,
    p50Ms: percentile(takeovers, 50),
    maxMs: Math.max(...takeovers),
    minMs: Math.min(...takeovers),
    leaseMs: options.leaseMs,
    heartbeatMs: options.heartbeatMs,
    clockSkew: options.clockSkewMs ?? 'default',
    leaseRemainingMeanMs: round(mean(samples.map((s) => s.leaseRemainingMs)), 1),
    afterLeaseMeanMs: round(mean(samples.map((s) => s.afterLeaseMs)), 1),
    afterLeaseMaxMs: Math.max(...samples.map((s) => s.afterLeaseMs)),
    samples,
    violations: monitor.violations.length,
  };
}
