/** Small helpers shared by the integration tests. */
import { ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { parseJobs, type Job, type JobInput } from '../../shared/core/job-schema.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/observability.js';
import type { Timers } from '../../shared/core/concurrency.js';

/**
 * Jobs validated exactly as the config is, with the handler names the test registers. The
 * in-process worker has no invocation time limit, so a job need not fit one Lambda invocation
 * unless the test says so (`workerTimeoutMs`).
 */
export function testJobs(inputs: readonly JobInput[], handlerNames: readonly string[] = ['noop'], options: { workerTimeoutMs?: number } = {}): Job[] {
  return parseJobs(inputs, { handlers: [...handlerNames], workerTimeoutMs: options.workerTimeoutMs ?? Number.POSITIVE_INFINITY });
}

export const silentLogger = () => new JsonLineLogger(() => undefined);
export const metrics = () => new InMemoryMetrics();

/** Receives until `expected` messages arrived or the queue stayed empty for `idleMs`. */
export async function drain(sqs: SQSClient, queueUrl: string, options: { expected?: number; idleMs?: number; visibilityTimeoutSeconds?: number } = {}): Promise<Message[]> {
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
