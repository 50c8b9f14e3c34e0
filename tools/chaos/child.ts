/**
 * A worker as a real child process (tools/worker-process.ts) for the drills that must SIGKILL or
 * SIGSTOP/SIGCONT a worker, or cut its own connection to the ledger. Its stdout carries one JSON
 * line per history event (`{"event": ...}`), drill note (`{"drill": ...}`, from
 * child-handlers.ts) and, on SIGTERM, its metrics (`{"metrics": ...}`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HistoryEvent } from '../../shared/core/history.js';
import type { JobInput } from '../../shared/schedule/job-schema.js';
import type { LocalEndpoints } from '../local-stack.js';
import type { DrillNote, HandlerConfig } from './handlers.js';

export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Never leave a worker behind (paused ones included) if the drill process dies.
  process.once('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

export interface ChildWorkerOptions {
  readonly endpoints: LocalEndpoints;
  readonly owner: string;
  readonly jobs: readonly JobInput[];
  readonly handlerConfig: HandlerConfig;
  readonly clockSkewMs?: number;
  readonly batchSize?: number;
  readonly pollWaitSeconds?: number;
  readonly onEvent: (event: HistoryEvent) => void;
  readonly onNote?: (note: DrillNote) => void;
  /** @default 20 s */
  readonly readyTimeoutMs?: number;
}

export class ChildWorker {
  private readonly stderrLines: string[] = [];
  private metricsLine: Record<string, number> | undefined;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly owner: string,
  ) {
    this.exited = new Promise((resolveExit) => child.once('exit', (code, signal) => resolveExit({ code, signal })));
    void this.exited.then(() => {
      live.delete(child);
      rmSync(this.dir, { recursive: true, force: true });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  static async start(options: ChildWorkerOptions): Promise<ChildWorker> {
    installExitHook();
    const dir = mkdtempSync(join(tmpdir(), 'chaos-worker-'));
    const endpointsFile = join(dir, 'endpoints.json');
    const jobsFile = join(dir, 'jobs.json');
    writeFileSync(endpointsFile, JSON.stringify(options.endpoints));
    writeFileSync(jobsFile, JSON.stringify(options.jobs));
    const env: NodeJS.ProcessEnv = { ...process.env, CHAOS_HANDLER_CONFIG: JSON.stringify(options.handlerConfig) };
    delete env.NODE_OPTIONS;
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(PROJECT_ROOT, 'tools/worker-process.ts'),
        '--endpoints',
        endpointsFile,
        '--owner',
        options.owner,
        '--handlers',
        join(PROJECT_ROOT, 'tools/chaos/child-handlers.ts'),
        '--jobs',
        jobsFile,
        '--clock-skew',
        String(options.clockSkewMs ?? 200),
        '--batch-size',
        String(options.batchSize ?? 10),
        '--poll-wait',
        String(options.pollWaitSeconds ?? 0),
      ],
      { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    live.add(child);
    const worker = new ChildWorker(child, dir, options.owner);
    let ready: (() => void) | undefined;
    const readyPromise = new Promise<void>((resolveReady) => (ready = resolveReady));
    let buffer = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const text = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!text.trim()) continue;
        let line: { event?: HistoryEvent; drill?: DrillNote; ready?: string; metrics?: Record<string, number> };
        try {
          line = JSON.parse(text);
        } catch {
          worker.stderrLines.push(`stdout: ${text}`);
          continue;
        }
        if (line.event) options.onEvent(line.event);
        else if (line.drill) options.onNote?.(line.drill);
        else if (line.ready) ready?.();
        else if (line.metrics) worker.metricsLine = line.metrics;
      }
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      for (const text of chunk.split('\n')) if (text.trim() && !text.includes('NodeVersionSupportWarning')) worker.stderrLines.push(text);
      if (worker.stderrLines.length > 200) worker.stderrLines.splice(0, worker.stderrLines.length - 200);
    });
    const timeout = options.readyTimeoutMs ?? 20_000;
    const outcome = await Promise.race([
      readyPromise.then(() => 'ready' as const),
      worker.exited.then(() => 'exited' as const),
      new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeout).unref()),
    ]);
    if (outcome !== 'ready') {
      child.kill('SIGKILL');
      throw new Error(`worker child ${options.owner} ${outcome} before it was ready:\n${worker.stderrTail()}`);
    }
    return worker;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  kill(): void {
    this.signal('SIGCONT');
    this.signal('SIGKILL');
  }

  pause(): void {
    this.signal('SIGSTOP');
  }

  resume(): void {
    this.signal('SIGCONT');
  }

  /** SIGTERM (the worker prints its metrics and stops polling), SIGKILL after `graceMs`. */
  async terminate(graceMs = 5_000): Promise<Record<string, number> | undefined> {
    this.signal('SIGCONT');
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
    return this.metricsLine;
  }

  stderrTail(lines = 20): string {
    return this.stderrLines.slice(-lines).join('\n');
  }
}
