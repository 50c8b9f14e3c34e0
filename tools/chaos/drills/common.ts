/** Pieces the worker-fault drills (kill, pause, ledger unreachable) share. */
import type { HistoryEvent } from '../../../shared/core/history.js';
import type { JobInput } from '../../../shared/core/job-schema.js';
import { RunStatus, type Run, type RunId } from '../../../shared/core/vocabulary.js';
import type { World } from '../world.js';
import type { Rng } from '../rng.js';

/** A job whose runs the drill creates itself (slots in the past: due at once, no planner timing). */
export function workerJob(name: string, handler: string, lease: number, heartbeatEvery: number): JobInput {
  return {
    name,
    schedule: '* * * * * *',
    handler,
    lease,
    heartbeatEvery,
    startLead: 0,
    timeout: '60s',
    retry: { maxAttempts: 8, backoff: { base: 100, max: 1_000, jitter: 'full' } },
  };
}

/** `count` distinct whole-second slots, a minute or more in the past. */
export function pastSlots(count: number, rng: Rng): number[] {
  const base = Math.floor(Date.now() / 1_000) * 1_000 - 60_000 - rng.int(0, 600) * 1_000;
  return Array.from({ length: count }, (_, i) => base - i * 1_000);
}

/** Lease parameters a drill iteration draws: lease in [min, max] ms, heartbeat a third or a quarter of it. */
export function leaseOf(rng: Rng, min: number, max: number): { lease: number; heartbeatEvery: number } {
  const lease = rng.int(min, max);
  return { lease, heartbeatEvery: Math.round(lease / rng.pick([3, 4])) };
}

export function claimsBy(events: readonly HistoryEvent[], owner: string): Extract<HistoryEvent, { type: 'claimed' }>[] {
  return events.filter((e): e is Extract<HistoryEvent, { type: 'claimed' }> => e.type === 'claimed' && e.owner === owner);
}

/** When each (run, token) lease ended at the latest: the claim's lease, extended by accepted heartbeats. */
export function leaseEnds(events: readonly HistoryEvent[]): Map<string, number> {
  const ends = new Map<string, number>();
  for (const e of events) {
    if (e.type === 'claimed') ends.set(`${e.runKey}|${e.token}`, Math.max(ends.get(`${e.runKey}|${e.token}`) ?? 0, e.leaseUntil));
    if (e.type === 'heartbeat' && e.ok) ends.set(`${e.runKey}|${e.token}`, Math.max(ends.get(`${e.runKey}|${e.token}`) ?? 0, e.leaseUntil));
  }
  return ends;
}

/** Expected slots for the checker: every one of these runs ends SUCCEEDED. */
export function allSucceeded(ids: readonly RunId[]) {
  return ids.map((id) => ({ job: id.job, slot: id.slot, shard: id.shard, statuses: [RunStatus.SUCCEEDED] }));
}

export function randomOwner(prefix: string, role: string, rng: Rng): string {
  return `${prefix}-${role}-${rng.int(0, 46_655).toString(36)}`;
}

/**
 * How hard the environment pushed back: the slowest heartbeat round trip, leases lost, the most
 * claims one run needed, and DEAD runs by error code (e.g. attempts burnt by lease losses).
 */
export function loadFacts(world: World, runs: readonly Run[]): Record<string, number> {
  const latencies = world.metrics.observations.get('HeartbeatLatency') ?? [];
  const facts: Record<string, number> = {
    maxHeartbeatLatencyMs: Math.max(0, ...latencies),
    leaseLost: world.metrics.get('LeaseLost'),
    maxAttemptsOfARun: Math.max(0, ...runs.map((r) => r.attempt)),
  };
  for (const run of runs) if (run.status === RunStatus.DEAD) facts[`dead_${run.lastError?.code ?? 'unknown'}`] = (facts[`dead_${run.lastError?.code ?? 'unknown'}`] ?? 0) + 1;
  return facts;
}
