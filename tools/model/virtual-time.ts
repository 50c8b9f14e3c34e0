/**
 * Virtual time for one scenario: one shared clock and one timer wheel, with a view per actor.
 *
 * Real leases (30 s) would make thousands of scenarios impossible, so every actor of a scenario
 * (planner, worker lanes, operator) reads `now + skew` from here and waits on timers of this wheel
 * (the worker's `timers` port, backfill's `sleep`). Time moves only when the scenario says so:
 * `advanceTo` fires due timers one at a time, in time order, and lets the world settle after each
 * (every store call the timer starts lands before the next timer fires), so heartbeats, watchdogs,
 * timeouts and backoffs play out deterministically while DynamoDB and SQS calls are real.
 *
 * An actor can be frozen (a paused process, a Lambda container between invocations): its timers
 * stay due and fire when it thaws, late, as a SIGSTOPped process's would. A killed actor's timers
 * never fire again.
 */
import type { TimerHandle, Timers } from '../../shared/core/concurrency.js';

interface Timer {
  readonly id: number;
  readonly actor: string;
  at: number;
  readonly every?: number;
  readonly fn: () => void;
}

export type ActorState = 'running' | 'frozen' | 'dead';

export class VirtualTime {
  private current: number;
  private nextId = 1;
  private readonly timers = new Map<number, Timer>();
  private readonly states = new Map<string, ActorState>();
  /** Timers fired so far (a measure of how much the scenario exercised). */
  fired = 0;

  constructor(start: number) {
    this.current = start;
  }

  /** The true (unskewed) virtual instant. */
  now(): number {
    return this.current;
  }

  state(actor: string): ActorState {
    return this.states.get(actor) ?? 'running';
  }

  setState(actor: string, state: ActorState): void {
    if (this.state(actor) === 'dead') return;
    this.states.set(actor, state);
    if (state === 'dead') for (const [id, timer] of this.timers) if (timer.actor === actor) this.timers.delete(id);
  }

  /** The clock an actor reads: the shared instant plus its skew. */
  clockOf(actor: { readonly skewMs: number }): () => number {
    return () => this.current + actor.skewMs;
  }

  /** The Timers port of one actor. */
  timersOf(actor: string): Timers {
    return {
      setTimeout: (fn, ms) => this.add(actor, fn, ms),
      clearTimeout: (handle) => this.clear(handle),
      setInterval: (fn, ms) => this.add(actor, fn, ms, Math.max(1, ms)),
      clearInterval: (handle) => this.clear(handle),
    };
  }

  /** A promise that resolves when virtual time has passed `ms` for `actor`. */
  sleepOf(actor: string): (ms: number) => Promise<void> {
    return (ms) => new Promise((resolve) => void this.add(actor, resolve, ms));
  }

  private add(actor: string, fn: () => void, ms: number, every?: number): TimerHandle {
    const id = this.nextId++;
    if (this.state(actor) === 'dead') return id;
    this.timers.set(id, { id, actor, at: this.current + Math.max(0, Number.isFinite(ms) ? ms : 0), every, fn });
    return id;
  }

  private clear(handle: TimerHandle): void {
    if (typeof handle === 'number') this.timers.delete(handle);
  }

  /** The earliest timer of a running actor due at or before `until`. */
  private nextDue(until: number): Timer | undefined {
    let best: Timer | undefined;
    for (const timer of this.timers.values()) {
      if (timer.at > until || this.state(timer.actor) !== 'running') continue;
      if (!best || timer.at < best.at || (timer.at === best.at && timer.id < best.id)) best = timer;
    }
    return best;
  }

  /** Earliest pending timer instant of any running actor (undefined: none). */
  nextTimerAt(): number | undefined {
    let at: number | undefined;
    for (const timer of this.timers.values())
      if (this.state(timer.actor) === 'running' && (at === undefined || timer.at < at)) at = timer.at;
    return at;
  }

  /**
   * Moves time to `target`, firing every due timer of a running actor in order; `settle` runs
   * after each one (the world lets the store calls it started land). A frozen actor's overdue
   * timers fire at the instant it thaws, through `fireOverdue`.
   */
  async advanceTo(target: number, settle: () => Promise<void>, maxFirings = 10_000): Promise<number> {
    let firings = 0;
    for (;;) {
      const timer = this.nextDue(target);
      if (!timer || firings >= maxFirings) break;
      this.current = Math.max(this.current, timer.at);
      this.fire(timer);
      firings++;
      await settle();
    }
    this.current = Math.max(this.current, target);
    return firings;
  }

  /** Fires every timer of `actor` that is already due (after a thaw), in order. */
  async fireOverdue(actor: string, settle: () => Promise<void>): Promise<void> {
    for (let guard = 0; guard < 10_000; guard++) {
      let best: Timer | undefined;
      for (const timer of this.timers.values()) {
        if (timer.actor !== actor || timer.at > this.current) continue;
        if (!best || timer.at < best.at || (timer.at === best.at && timer.id < best.id)) best = timer;
      }
      if (!best || this.state(actor) !== 'running') return;
      this.fire(best);
      await settle();
    }
  }

  private fire(timer: Timer): void {
    this.fired++;
    // An overdue interval fires once and then keeps its period from now, like Node's timers.
    if (timer.every !== undefined) timer.at = timer.at + timer.every > this.current ? timer.at + timer.every : this.current + timer.every;
    else this.timers.delete(timer.id);
    timer.fn();
  }

  /** Drops every timer (end of scenario). */
  clearAll(): void {
    this.timers.clear();
  }
}
