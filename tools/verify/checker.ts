/**
 * The offline checker of DESIGN §9: given everything the planner and workers reported (the
 * history, possibly merged from several processes), the final ledger and the final business
 * items, it verifies the five invariants and names the run behind every violation.
 *
 *  1. one-run-per-slot          at most one run item per (job, slot, shard);
 *  2. one-live-lease            at most one unexpired lease per run at any instant (within the
 *                               clock allowance): no claim while another token's lease is live,
 *                               and no heartbeat or outcome accepted from a superseded token;
 *  3. fence-monotonic           every write carrying a fence lower than one the resource has seen
 *                               is rejected: no accepted effect below an earlier-accepted higher
 *                               token on that resource, and the resource's final lastFence is the
 *                               highest token it accepted; claims hand out growing tokens;
 *  4. one-irreversible-effect   a business key never gets a second irreversible effect;
 *  5. no-lost-slot              every slot the misfire policy keeps (given by the caller) ends
 *                               SUCCEEDED, SKIPPED/SUPERSEDED, or visibly DEAD/MANUAL.
 *
 * Pure: no I/O, no clock. Events from several processes are ordered by their `at` (all processes
 * of a drill read the same machine clock). A process paused between a call landing and reporting
 * it reports late, so two kinds of evidence are trusted over timestamps:
 *  - fencing tokens, which the ledger hands out in commit order: a claim reported after a claim
 *    with a higher token landed first and is not an overlap (two claims with one token are);
 *  - where a business item keeps a commit-ordered log of the writes it accepted (`effects`), that
 *    log, not the event timestamps, decides the order of writes on it.
 */
import type { HistoryEvent } from '../../shared/core/history.js';
import { checkLiveness, type LivenessExpectations } from './liveness.js';
import { checkModelSafety } from './model-safety.js';
import { isTerminal, RunStatus, runKeyOf, type Run } from '../../shared/core/vocabulary.js';

export type { LivenessExpectations, QueuedMessage } from './liveness.js';

import { Invariant } from './invariant-names.js';
import type { BusinessEffect, CheckViolation, Expected, FinalState } from './check-types.js';
export { Invariant };
export type {
  BusinessEffect,
  BusinessState,
  CheckViolation,
  Expected,
  ExpectedSlot,
  FinalState,
  LaneMarker,
  ModelExpectations,
  PlannerState,
  UnexpectedRun,
} from './check-types.js';

export interface CheckStats {
  readonly events: number;
  readonly runsCreated: number;
  readonly claims: number;
  readonly takeovers: number;
  readonly acceptedEffects: number;
  readonly fencedOut: number;
  readonly irreversibleEffects: number;
  readonly expectedSlots: number;
}

export interface CheckResult {
  readonly ok: boolean;
  readonly violations: readonly CheckViolation[];
  readonly stats: CheckStats;
}

/** The statuses a kept slot may end in (DESIGN §9.5). */
export const SETTLED_STATUSES: readonly RunStatus[] = [
  RunStatus.SUCCEEDED,
  RunStatus.SKIPPED,
  RunStatus.SUPERSEDED,
  RunStatus.DEAD,
  RunStatus.MANUAL,
];

const slotId = (job: string, slot: number, shard: number) => `${job}|${slot}|${shard}`;
const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms));

/**
 * Orders events by time. Within one millisecond (a manual clock, or fast local calls) input order
 * is kept, except that one run's events are put in token order: a claim can only succeed after
 * the previous holder's write landed, even when the two processes reported them the other way.
 */
function ordered(history: readonly HistoryEvent[]): HistoryEvent[] {
  const byTime = history.map((event, index) => ({ event, index })).sort((a, b) => a.event.at - b.event.at || a.index - b.index);
  const out = byTime.map((x) => x.event);
  const tokenOf = (e: HistoryEvent) => ('token' in e ? e.token : -Infinity);
  for (let start = 0; start < out.length; ) {
    let end = start + 1;
    while (end < out.length && out[end]!.at === out[start]!.at) end++;
    if (end - start > 1) {
      const positions = new Map<string, number[]>();
      for (let i = start; i < end; i++) {
        const event = out[i]!;
        positions.set(event.runKey, [...(positions.get(event.runKey) ?? []), i]);
      }
      for (const slots of positions.values()) {
        if (slots.length < 2) continue;
        const events = slots
          .map((i) => out[i]!)
          .map((e, order) => ({ e, order }))
          .sort((a, b) => tokenOf(a.e) - tokenOf(b.e) || a.order - b.order);
        slots.forEach((position, k) => (out[position] = events[k]!.e));
      }
    }
    start = end;
  }
  return out;
}

export function checkHistory(history: readonly HistoryEvent[], final: FinalState, expected: Expected = {}): CheckResult {
  const violations: CheckViolation[] = [];
  const flag = (invariant: Invariant, runKey: string, detail: string) => violations.push({ invariant, runKey, detail });
  const events = ordered(history);
  const allowance = expected.clockAllowanceMs ?? 0;

  // ------------------------------------------------------------------ 1. one run per slot
  const created = new Map<string, { runKey: string; count: number }>();
  for (const e of events) {
    if (e.type !== 'run-created') continue;
    const id = slotId(e.job, e.slot, e.shard);
    const seen = created.get(id) ?? { runKey: e.runKey, count: 0 };
    seen.count++;
    created.set(id, seen);
    if (seen.count === 2)
      flag(Invariant.ONE_RUN_PER_SLOT, e.runKey, `run item created more than once for ${e.job} slot ${iso(e.slot)} shard ${e.shard}`);
  }
  const finalBySlot = new Map<string, Run>();
  for (const run of final.runs) {
    const id = slotId(run.job, run.slot, run.shard);
    const other = finalBySlot.get(id);
    if (other)
      flag(
        Invariant.ONE_RUN_PER_SLOT,
        run.runKey,
        `two run items for ${run.job} slot ${iso(run.slot)} shard ${run.shard} (${other.runKey}, ${run.runKey})`,
      );
    else finalBySlot.set(id, run);
  }

  // ------------------------------------------------------------------ 2. one live lease per run
  interface Lease {
    token: number;
    owner: string;
    leaseUntil: number;
    open: boolean;
  }
  const leases = new Map<string, Lease>();
  const claimOwners = new Map<string, string>();
  const terminal = new Map<string, { status: RunStatus; token: number }>();
  let claims = 0;
  let takeovers = 0;
  for (const e of events) {
    if (e.type === 'claimed') {
      claims++;
      if (e.from === RunStatus.RUNNING) takeovers++;
      // Tokens are handed out by the ledger in commit order, so two claims never share one.
      const firstOwner = claimOwners.get(`${e.runKey}|${e.token}`);
      if (firstOwner !== undefined && firstOwner !== e.owner) {
        flag(Invariant.FENCE_MONOTONIC, e.runKey, `claims by ${firstOwner} and ${e.owner} both got token ${e.token}`);
      }
      claimOwners.set(`${e.runKey}|${e.token}`, e.owner);
      const current = leases.get(e.runKey);
      // A claim reported after a higher token's: the reporter stalled between the claim landing and
      // reporting it (e.g. paused). It landed first; the later claim was already checked against it.
      if (current && e.token <= current.token) continue;
      if (current && current.open && current.leaseUntil > e.at + allowance) {
        flag(
          Invariant.ONE_LIVE_LEASE,
          e.runKey,
          `claimed by ${e.owner} (token ${e.token}) at ${iso(e.at)} while ${current.owner} (token ${current.token}) held a lease until ${iso(current.leaseUntil)}`,
        );
      }
      const done = terminal.get(e.runKey);
      if (done && e.token > done.token)
        flag(Invariant.ONE_LIVE_LEASE, e.runKey, `claimed by ${e.owner} (token ${e.token}) after the run ended ${done.status}`);
      leases.set(e.runKey, { token: e.token, owner: e.owner, leaseUntil: e.leaseUntil, open: true });
    } else if (e.type === 'heartbeat' && e.ok) {
      const current = leases.get(e.runKey);
      if (!current) continue;
      if (current.token !== e.token) {
        flag(
          Invariant.ONE_LIVE_LEASE,
          e.runKey,
          `heartbeat of ${e.owner} (token ${e.token}) accepted after token ${current.token} (${current.owner}) claimed the run`,
        );
      } else if (current.open) {
        current.leaseUntil = Math.max(current.leaseUntil, e.leaseUntil);
      }
    } else if (e.type === 'outcome' && e.accepted) {
      const current = leases.get(e.runKey);
      if (current && current.token !== e.token) {
        flag(
          Invariant.ONE_LIVE_LEASE,
          e.runKey,
          `outcome ${e.status} of ${e.owner} (token ${e.token}) accepted after token ${current.token} (${current.owner}) claimed the run`,
        );
      }
      const done = terminal.get(e.runKey);
      if (done)
        flag(
          Invariant.ONE_LIVE_LEASE,
          e.runKey,
          `outcome ${e.status} (token ${e.token}) accepted after the run had ended ${done.status} (token ${done.token})`,
        );
      if (current && current.token === e.token) current.open = false;
      // Only SUCCEEDED is final for good: ops may redrive a DEAD run back to READY.
      if (e.status === RunStatus.SUCCEEDED) terminal.set(e.runKey, { status: e.status, token: e.token });
    }
  }

  // ------------------------------------------------------------------ 3. fences only move forward
  const business = new Map((final.business ?? []).map((b) => [b.resource, b]));
  const accepted = new Map<string, Extract<HistoryEvent, { type: 'effect' }>[]>();
  let fencedOut = 0;
  for (const e of events) {
    if (e.type !== 'effect') continue;
    if (e.result === 'fenced-out') fencedOut++;
    if (e.result !== 'accepted') continue;
    accepted.set(e.resource, [...(accepted.get(e.resource) ?? []), e]);
  }
  for (const [resource, writes] of accepted) {
    const state = business.get(resource);
    if (state?.effects) continue; // the item's own log decides the order (below)
    let highest: Extract<HistoryEvent, { type: 'effect' }> | undefined;
    for (const write of writes) {
      if (highest && write.token < highest.token) {
        flag(
          Invariant.FENCE_MONOTONIC,
          write.runKey,
          `write to ${resource} with token ${write.token} accepted after token ${highest.token} (${highest.runKey})`,
        );
      }
      if (!highest || write.token > highest.token) highest = write;
    }
  }
  for (const state of final.business ?? []) {
    const writes = accepted.get(state.resource) ?? [];
    const maxAccepted = writes.reduce<number | undefined>((max, w) => (max === undefined || w.token > max ? w.token : max), undefined);
    const runOf = (token: number | undefined) =>
      writes.find((w) => w.token === token)?.runKey ?? state.effects?.find((w) => w.token === token)?.runKey ?? state.resource;
    if (state.effects) {
      let highest: BusinessEffect | undefined;
      for (const effect of state.effects) {
        if (highest && effect.token < highest.token) {
          flag(
            Invariant.FENCE_MONOTONIC,
            effect.runKey ?? state.resource,
            `${state.resource} applied a write with token ${effect.token} after one with token ${highest.token} (${highest.runKey ?? '?'})`,
          );
        }
        if (!highest || effect.token > highest.token) highest = effect;
      }
      const logged = new Set(state.effects.map((w) => `${w.token}|${w.runKey ?? ''}`));
      for (const write of writes) {
        if (!logged.has(`${write.token}|${write.runKey}`) && !logged.has(`${write.token}|`)) {
          flag(
            Invariant.FENCE_MONOTONIC,
            write.runKey,
            `write to ${state.resource} with token ${write.token} was reported accepted but the item never recorded it`,
          );
        }
      }
      if (state.lastFence !== undefined && highest && state.lastFence !== highest.token) {
        flag(
          Invariant.FENCE_MONOTONIC,
          runOf(state.lastFence),
          `${state.resource} ends with lastFence ${state.lastFence}, but the highest token it applied is ${highest.token}`,
        );
      }
      if (state.lastFence !== undefined && maxAccepted !== undefined && state.lastFence < maxAccepted) {
        flag(
          Invariant.FENCE_MONOTONIC,
          runOf(maxAccepted),
          `${state.resource} ends with lastFence ${state.lastFence}, below the accepted token ${maxAccepted}`,
        );
      }
    } else if (state.lastFence !== maxAccepted) {
      flag(
        Invariant.FENCE_MONOTONIC,
        runOf(state.lastFence ?? maxAccepted),
        `${state.resource} ends with lastFence ${state.lastFence ?? 'unset'}, but the highest accepted token is ${maxAccepted ?? 'none'}`,
      );
    }
  }

  // ------------------------------------------------------------------ 4. one irreversible effect per business key
  const landed = new Map<string, Extract<HistoryEvent, { type: 'effect' }>>();
  let irreversible = 0;
  for (const e of events) {
    if (e.type !== 'effect' || e.result !== 'accepted' || e.businessKey === undefined) continue;
    irreversible++;
    const first = landed.get(e.businessKey);
    if (first) {
      flag(
        Invariant.ONE_IRREVERSIBLE_EFFECT,
        e.runKey,
        `business key ${e.businessKey} got a second irreversible effect (token ${e.token}; first by ${first.runKey} with token ${first.token})`,
      );
    } else landed.set(e.businessKey, e);
  }
  for (const state of final.business ?? []) {
    const keys = new Map<string, BusinessEffect>();
    for (const effect of state.effects ?? []) {
      if (effect.businessKey === undefined) continue;
      const first = keys.get(effect.businessKey);
      if (first) {
        flag(
          Invariant.ONE_IRREVERSIBLE_EFFECT,
          effect.runKey ?? state.resource,
          `${state.resource} holds business key ${effect.businessKey} twice (tokens ${first.token} and ${effect.token})`,
        );
      } else keys.set(effect.businessKey, effect);
    }
  }

  // ------------------------------------------------------------------ 5. no kept slot is lost
  for (const want of expected.slots ?? []) {
    const shard = want.shard ?? 0;
    const run = finalBySlot.get(slotId(want.job, want.slot, shard));
    const runKey = run?.runKey ?? runKeyOf(want.job, want.slot, shard, want.shards ?? 1);
    const allowed = want.statuses ?? SETTLED_STATUSES;
    if (!run) {
      flag(Invariant.NO_LOST_SLOT, runKey, `slot ${iso(want.slot)} of ${want.job} (shard ${shard}) has no run item`);
    } else if (!allowed.includes(run.status)) {
      flag(
        Invariant.NO_LOST_SLOT,
        runKey,
        isTerminal(run.status)
          ? `ended ${run.status}; expected ${allowed.join(' or ')}`
          : `still ${run.status} (attempt ${run.attempt}, token ${run.fencingToken}); expected ${allowed.join(' or ')}`,
      );
    }
  }

  if (expected.model) violations.push(...checkModelSafety(events, final, expected.model));

  return {
    ok: violations.length === 0,
    violations,
    stats: {
      events: history.length,
      runsCreated: [...created.values()].reduce((n, c) => n + c.count, 0),
      claims,
      takeovers,
      acceptedEffects: [...accepted.values()].reduce((n, w) => n + w.length, 0),
      fencedOut,
      irreversibleEffects: irreversible,
      expectedSlots: expected.slots?.length ?? 0,
    },
  };
}

/**
 * A model-based scenario's full check: the safety invariants (DESIGN §9 and the model's own, with
 * `expected.model`) over the history and final tables, then liveness at quiescence (§11).
 */
export function checkScenario(
  history: readonly HistoryEvent[],
  final: FinalState,
  expected: Expected,
  liveness: LivenessExpectations,
): CheckResult {
  const safety = checkHistory(history, final, expected);
  const violations = [...safety.violations, ...checkLiveness(final, liveness)];
  return { ok: violations.length === 0, violations, stats: safety.stats };
}

/** One line per violation, for test failures and the chaos report. */
export function formatViolations(violations: readonly CheckViolation[]): string {
  return violations.map((v) => `[${v.invariant}] ${v.runKey}: ${v.detail}`).join('\n');
}
