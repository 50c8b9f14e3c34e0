/** Small helpers shared by the integration tests. */
import { ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { parseJobs, type Job, type JobInput } from '../../shared/schedule/job-schema.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import type { Timers } from '../../shared/core/concurrency.js';

/**
 * Jobs validated exactly as the config is, with the handler names the test registers. The
 * in-process worker has no invocation time limit, so a job need not fit one Lambda invocation
 * unless the test says so (`workerTimeoutMs`).
 */
export function testJobs(
  inputs: readonly JobInput[],
  handlerNames: readonly string[] = ['noop'],
  options: { workerTimeoutMs?: number } = {},
): Job[] {
  return parseJobs(inputs, { handlers: [...handlerNames], workerTimeoutMs: options.workerTimeoutMs ?? Number.POSITIVE_INFINITY });
}

export const silentLogger = () => new JsonLineLogger(() => undefined);
export const metrics = () => new InMemoryMetrics();

/** Receives until `expected` messages arrived or the queue stayed empty for `idleMs`. */
export async function drain(
  sqs: SQSClient,
  queueUrl: string,
  options: { expected?: number; idleMs?: number; visibilityTimeoutSeconds?: number } = {},
): Promise<Message[]> {
  const all: Message[] = [];
  let idleSince = Date.now();
  while (Date.now() - idleSince < (options.idleMs ?? 1_500)) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: options.visibilityTimeoutSeconds ?? 300,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    // local-aws-sqs may hand out one message twice in a poll (legal SQS behaviour): keep one copy.
    const fresh = Messages.filter((m) => !all.some((seen) => seen.MessageId === m.MessageId));
    if (Messages.length > 0) {
      all.push(...fresh);
      idleSince = Date.now();
      if (options.expected !== undefined && all.length >= options.expected) break;
    } else {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return all;
}

/** A clock the test moves by hand. */
export class ManualClock {
  constructor(public now: number) {}
  readonly read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Timers that never fire: a worker frozen between invocations (its heartbeats and watchdog never run). */
export const FROZEN_TIMERS: Timers = {
  setTimeout: () => undefined,
  clearTimeout: () => undefined,
  setInterval: () => undefined,
  clearInterval: () => undefined,
};

/**
 * Time that moves only when the test moves it: a clock and the timers that tell the same time.
 * `advance` fires every timer that falls due, in due order, with the clock set to its due time.
 * The worker's watchdog, heartbeats and job timeout then depend on the work done, not on how
 * fast a loaded machine does it (ledger calls still take real time, but no virtual time).
 */
export class VirtualTime {
  private timers = new Map<number, { due: number; every?: number; fn: () => void }>();
  private nextId = 0;
  constructor(public now: number) {}
  readonly read = (): number => this.now;

  readonly port: Timers = {
    setTimeout: (fn, ms) => this.add(fn, ms),
    clearTimeout: (handle) => void this.timers.delete(handle as number),
    setInterval: (fn, ms) => this.add(fn, ms, Math.max(1, ms)),
    clearInterval: (handle) => void this.timers.delete(handle as number),
  };

  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const [id, next] = [...this.timers].reduce<[number, { due: number; every?: number; fn: () => void }] | []>(
        (earliest, entry) => (earliest.length === 0 || entry[1].due < earliest[1]!.due ? entry : earliest),
        [],
      );
      if (id === undefined || next === undefined || next.due > until) break;
      this.now = Math.max(this.now, next.due);
      if (next.every === undefined) this.timers.delete(id);
      else next.due += next.every;
      next.fn();
    }
    this.now = until;
  }

  private add(fn: () => void, ms: number, every?: number): number {
    const id = ++this.nextId;
    this.timers.set(id, { due: this.now + Math.max(0, ms), every, fn });
    return id;
  }
}
