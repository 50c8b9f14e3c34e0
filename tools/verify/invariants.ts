/**
 * An online checker of DESIGN §9's invariants over the events the planner and workers report.
 * The local runtime and the tests feed it every event; it names the run behind each violation.
 *
 * Checked here (from the history alone):
 *  1. at most one run item per (job, slot, shard): `run-created` twice for one run key;
 *  2. at most one unexpired lease per run: a claim while another owner's lease was still live;
 *  3. no write with a lower fence than the resource has seen is accepted: an accepted effect
 *     whose token is below the highest token already accepted on that resource;
 *  4. (run level) one accepted SUCCEEDED outcome per run key.
 */
import type { HistoryEvent, HistorySink } from '../../shared/core/history.js';
import { RunStatus } from '../../shared/core/vocabulary.js';

export interface Violation {
  readonly invariant: 'one-run-per-slot' | 'one-live-lease' | 'fence-monotonic' | 'one-success-per-run';
  readonly runKey: string;
  readonly detail: string;
}

export class InvariantMonitor implements HistorySink {
  readonly violations: Violation[] = [];
  private readonly created = new Set<string>();
  private readonly leases = new Map<string, { owner: string; token: number; leaseUntil: number }>();
  private readonly highestFence = new Map<string, { token: number; runKey: string }>();
  private readonly succeeded = new Map<string, number>();

  constructor(
    /** Claims within this much of the previous lease's end are not counted as overlap (clock allowance). */
    private readonly clockAllowanceMs = 0,
    private readonly onViolation?: (violation: Violation) => void,
  ) {}

  private flag(violation: Violation): void {
    this.violations.push(violation);
    this.onViolation?.(violation);
  }

  record(event: HistoryEvent): void {
    switch (event.type) {
      case 'run-created':
        if (this.created.has(event.runKey)) {
          this.flag({ invariant: 'one-run-per-slot', runKey: event.runKey, detail: 'run item created twice' });
        }
        this.created.add(event.runKey);
        break;
      case 'claimed': {
        const previous = this.leases.get(event.runKey);
        if (previous && previous.owner !== event.owner && previous.leaseUntil > event.at + this.clockAllowanceMs) {
          this.flag({
            invariant: 'one-live-lease',
            runKey: event.runKey,
            detail: `claimed by ${event.owner} (token ${event.token}) while ${previous.owner} (token ${previous.token}) held a lease until ${new Date(previous.leaseUntil).toISOString()}`,
          });
        }
        this.leases.set(event.runKey, { owner: event.owner, token: event.token, leaseUntil: event.leaseUntil });
        break;
      }
      case 'heartbeat': {
        const lease = this.leases.get(event.runKey);
        if (event.ok && lease && lease.token === event.token) lease.leaseUntil = event.leaseUntil;
        break;
      }
      case 'outcome': {
        const lease = this.leases.get(event.runKey);
        if (lease && lease.token === event.token) lease.leaseUntil = 0;
        if (event.accepted && event.status === RunStatus.SUCCEEDED) {
          const count = (this.succeeded.get(event.runKey) ?? 0) + 1;
          this.succeeded.set(event.runKey, count);
          if (count > 1) this.flag({ invariant: 'one-success-per-run', runKey: event.runKey, detail: `SUCCEEDED recorded ${count} times` });
        }
        break;
      }
      case 'effect': {
        if (event.result !== 'accepted') break;
        const seen = this.highestFence.get(event.resource);
        if (seen && event.token < seen.token) {
          this.flag({
            invariant: 'fence-monotonic',
            runKey: event.runKey,
            detail: `write to ${event.resource} with token ${event.token} accepted after token ${seen.token} (${seen.runKey})`,
          });
        }
        if (!seen || event.token > seen.token) this.highestFence.set(event.resource, { token: event.token, runKey: event.runKey });
        break;
      }
      default:
        break;
    }
  }

  get succeededRuns(): number {
    return this.succeeded.size;
  }
}

/** Fans one stream of events out to several sinks. */
export function teeHistory(...sinks: HistorySink[]): HistorySink {
  return { record: (event) => sinks.forEach((sink) => sink.record(event)) };
}
