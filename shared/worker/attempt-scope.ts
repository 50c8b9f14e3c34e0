/**
 * The lifetime of one attempt's `ctx` (DESIGN §12: nothing of an ended attempt may still write
 * when it thaws). Every read, fenced write and checkpoint of a handler goes through `guard`:
 * once the attempt has ended (the handler returned or threw, the timeout fired, the lease was
 * lost, or it yielded) every new call is refused with AttemptEndedError, and the worker waits for
 * the calls still in flight to settle before it records the outcome, so a zombie handler that
 * keeps going after its attempt cannot land a write the recorded outcome does not account for.
 */
import { setMaxListeners } from 'node:events';
import { AttemptEndedError, type AttemptAbortedError } from '../handler-api.js';
import { REAL_TIMERS, type Timers } from '../core/concurrency.js';

export class AttemptScope {
  private endedBy: AttemptAbortedError | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  /**
   * Aborts the SDK calls still in flight once the drain gives up (the lease is over): an SDK retry
   * that would go out after that (a throttled write, a lost connection) is not sent, and a call
   * still held before it reaches the network never reaches it. Without this a write delayed past
   * the lease could land after a takeover reconciled, before the newer attempt wrote the item:
   * the fence could not stop it.
   */
  private readonly cutoff = new AbortController();

  constructor(
    readonly runKey: string,
    readonly fencingToken: number,
  ) {
    // Every SDK call in flight listens on the one signal (and lets go when it settles): a handler
    // with more than ten writes at once is not a leak, so no MaxListenersExceededWarning.
    setMaxListeners(0, this.cutoff.signal);
  }

  get ended(): boolean {
    return this.endedBy !== undefined;
  }

  /** Runs `call` unless the attempt has ended; tracks it until it settles. `call` passes `signal` to its SDK calls. */
  guard<T>(call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.endedBy)
      return Promise.reject(new AttemptEndedError(this.runKey, this.fencingToken, this.endedBy.why, { cause: this.endedBy }));
    const running = call(this.cutoff.signal);
    this.inFlight.add(running);
    const forget = () => this.inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  /** Refuses every later call. The first reason wins. */
  end(reason: AttemptAbortedError): void {
    this.endedBy ??= reason;
  }

  /**
   * Waits until every call admitted before the end has settled, at most `timeoutMs`; true when none
   * is left. When some are, they are aborted: nothing of them is sent from now on.
   */
  async drain(timeoutMs: number, timers: Timers = REAL_TIMERS): Promise<boolean> {
    const drained = await this.waitForInFlight(timeoutMs, timers);
    if (!drained)
      this.cutoff.abort(
        new Error(
          `attempt of ${this.runKey} (token ${this.fencingToken}) ended with calls still in flight at the end of its lease: aborted`,
        ),
      );
    return drained;
  }

  private async waitForInFlight(timeoutMs: number, timers: Timers): Promise<boolean> {
    if (this.inFlight.size === 0) return true;
    let timer: unknown;
    const timedOut = new Promise<false>((resolve) => {
      timer = timers.setTimeout(() => resolve(false), Math.max(0, timeoutMs));
    });
    const settled = (async () => {
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      return true as const;
    })();
    try {
      return await Promise.race([settled, timedOut]);
    } finally {
      timers.clearTimeout(timer);
    }
  }
}
