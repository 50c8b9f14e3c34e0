/**
 * In-process stand-ins for a killed or paused worker, cheap enough to use for most drill runs.
 * They wrap the `send` of the worker's own DynamoDB and SQS clients (everything a worker does to
 * the outside world goes through those two), its clock and its history sink:
 *
 * - KillSwitch: after `kill()`, no call of this worker ever completes and nothing it reports is
 *   recorded: to everyone else it has vanished, exactly like a SIGKILLed process.
 * - PauseSwitch: while paused, calls (and the responses of calls already in flight) wait, and the
 *   worker's clock stands still, so its watchdog and heartbeat do not notice the pause; on
 *   `resume()` everything proceeds and the clock jumps, as after SIGSTOP/SIGCONT.
 */
import type { HistorySink } from '../../shared/core/history.js';
import type { HandlerHooks } from './handlers.js';

interface Sender {
  send(...args: never[]): Promise<unknown>;
}

const never = () => new Promise<never>(() => undefined);

function withSend<T extends Sender>(client: T, send: (...args: unknown[]) => Promise<unknown>): T {
  const wrapped = Object.create(client) as T;
  Object.defineProperty(wrapped, 'send', { value: send });
  return wrapped;
}

export class KillSwitch {
  killed = false;
  killedAt: number | undefined;

  kill(): void {
    this.killed = true;
    this.killedAt = Date.now();
  }

  wrap<T extends Sender>(client: T): T {
    const send = (client.send as (...args: unknown[]) => Promise<unknown>).bind(client);
    return withSend(client, async (...args) => {
      if (this.killed) return never();
      let result: unknown;
      try {
        result = await send(...args);
      } catch (error) {
        if (this.killed) return never();
        throw error;
      }
      if (this.killed) return never();
      return result;
    });
  }

  history(sink: HistorySink): HistorySink {
    return { record: (event) => (this.killed ? undefined : sink.record(event)) };
  }

  hooks(hooks: HandlerHooks): HandlerHooks {
    return {
      record: (event) => (this.killed ? undefined : hooks.record(event)),
      note: (note) => (this.killed ? undefined : hooks.note(note)),
    };
  }
}

export class PauseSwitch {
  private paused = false;
  private pausedAt = 0;
  private waiters: (() => void)[] = [];
  pauses = 0;

  get isPaused(): boolean {
    return this.paused;
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.pausedAt = Date.now();
    this.pauses++;
  }

  resume(): void {
    this.paused = false;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** The paused worker's clock: stands still while paused, jumps on resume. */
  readonly clock = (): number => (this.paused ? this.pausedAt : Date.now());

  private gate(): Promise<void> {
    return this.paused ? new Promise((resolve) => this.waiters.push(resolve)) : Promise.resolve();
  }

  wrap<T extends Sender>(client: T): T {
    const send = (client.send as (...args: unknown[]) => Promise<unknown>).bind(client);
    return withSend(client, async (...args) => {
      await this.gate();
      let result: unknown;
      try {
        result = await send(...args);
      } catch (error) {
        await this.gate();
        throw error;
      }
      await this.gate();
      return result;
    });
  }
}
