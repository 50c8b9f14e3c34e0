/**
 * Which slots a scenario owes, and where no run may appear, from the config timeline alone (the
 * jobs, their schedule changes, pauses and removals, the planner ticks that succeeded, backfills).
 *
 * A slot is owed (must end terminal: SUCCEEDED, SKIPPED, SUPERSEDED, MANUAL, or DEAD for a person)
 * when its job was in the config, unpaused, under that schedule, after the planner first planned
 * it, and before the fault phase ended. Deliberately conservative where the design leaves room:
 * a lookahead's width after a job is added or its schedule changes, and around pauses, is not
 * owed; under misfire policy `latest` a planner outage's misfired slots are not owed (only the
 * newest runs). Everything else, partition changes included, is owed: a deploy must not drop slots.
 */
import type { ExpectedSlot, ForbiddenWindow } from '../../shared/core/checker.js';
import type { Job } from '../../shared/core/job-schema.js';
import { slotSpecOf } from '../../shared/core/plan.js';
import { slotsBetween } from '../../shared/core/slots.js';

export type TimelineEvent =
  | { readonly kind: 'add'; readonly at: number; readonly job: Job }
  | { readonly kind: 'remove'; readonly at: number; readonly job: string }
  | { readonly kind: 'schedule'; readonly at: number; readonly job: Job }
  | { readonly kind: 'pause'; readonly at: number; readonly job: string }
  | { readonly kind: 'resume'; readonly at: number; readonly job: string }
  | { readonly kind: 'partitions'; readonly at: number; readonly of: number }
  | { readonly kind: 'tick'; readonly at: number }
  | { readonly kind: 'backfill'; readonly at: number; readonly job: string; readonly from: number; readonly to: number };

export interface OwedInput {
  readonly timeline: readonly TimelineEvent[];
  /** Slots after this are not owed (the end of the fault phase). */
  readonly until: number;
  readonly lookaheadMs: number;
  /** Slack for instants written with skewed clocks. */
  readonly toleranceMs: number;
  /** At most this many owed slots per job (bounded checker work). @default 500 */
  readonly maxPerJob?: number;
}

export interface Owed {
  readonly slots: ExpectedSlot[];
  readonly forbidden: ForbiddenWindow[];
}

interface Interval {
  readonly from: number;
  readonly to: number;
}

const within = (slot: number, intervals: readonly Interval[]) => intervals.some((i) => slot > i.from && slot < i.to);

export function computeOwed(input: OwedInput): Owed {
  const { timeline, until, lookaheadMs, toleranceMs } = input;
  const ticks = timeline.filter((e) => e.kind === 'tick').map((e) => e.at).sort((a, b) => a - b);
  const names = [...new Set(timeline.filter((e) => e.kind === 'add').map((e) => (e as { job: Job }).job.name))];
  const slots: ExpectedSlot[] = [];
  const forbidden: ForbiddenWindow[] = [];

  for (const name of names) {
    const events = timeline.filter((e) => 'job' in e && (typeof e.job === 'string' ? e.job === name : e.job.name === name));
    const added = events.find((e) => e.kind === 'add') as Extract<TimelineEvent, { kind: 'add' }>;
    const removed = events.find((e) => e.kind === 'remove');
    const backfilled = events.some((e) => e.kind === 'backfill');

    // Pauses, as intervals; a pause still on at the end runs to infinity.
    const pauses: Interval[] = [];
    let pausedAt: number | undefined;
    for (const e of events) {
      if (e.kind === 'pause' && pausedAt === undefined) pausedAt = e.at;
      if (e.kind === 'resume' && pausedAt !== undefined) {
        pauses.push({ from: pausedAt, to: e.at });
        pausedAt = undefined;
      }
    }
    if (pausedAt !== undefined) pauses.push({ from: pausedAt, to: Number.POSITIVE_INFINITY });

    if (!backfilled) {
      forbidden.push({ job: name, slotFrom: Number.NEGATIVE_INFINITY, slotTo: added.at - toleranceMs, createdFrom: added.at + toleranceMs, createdTo: Number.POSITIVE_INFINITY, why: `the slot is before the job was added (${new Date(added.at).toISOString()})` });
      for (const pause of pauses) {
        forbidden.push({
          job: name,
          slotFrom: pause.from + lookaheadMs + toleranceMs,
          slotTo: Number.POSITIVE_INFINITY,
          createdFrom: pause.from + toleranceMs,
          createdTo: pause.to - toleranceMs,
          why: `the job was paused from ${new Date(pause.from).toISOString()}${Number.isFinite(pause.to) ? ` to ${new Date(pause.to).toISOString()}` : ''}`,
        });
      }
    }
    if (removed) {
      forbidden.push({ job: name, slotFrom: Number.NEGATIVE_INFINITY, slotTo: Number.POSITIVE_INFINITY, createdFrom: removed.at + toleranceMs, createdTo: Number.POSITIVE_INFINITY, why: `the job was removed at ${new Date(removed.at).toISOString()}` });
      continue; // a removed job's open runs can no longer run: nothing is owed
    }

    // The first tick that planned the job: the first tick at all for a job of the first config
    // (a partition seen for the first time starts then), else the first tick after it was added
    // plus a lookahead (slots inside the watermark it joined were never its to plan).
    const firstTick = ticks.find((t) => t >= added.at);
    if (firstTick === undefined) continue;
    const initial = ticks[0] !== undefined && added.at <= ticks[0];
    let from = initial ? firstTick : firstTick + lookaheadMs;

    const segments: { job: Job; from: number; to: number }[] = [];
    let current = added.job;
    for (const e of events) {
      if (e.kind !== 'schedule') continue;
      segments.push({ job: current, from, to: Math.min(e.at, until) });
      current = e.job;
      from = Math.max(from, e.at + lookaheadMs);
    }
    segments.push({ job: current, from, to: until });

    const excluded: Interval[] = pauses.map((p) => ({ from: p.from - lookaheadMs - toleranceMs, to: p.to + lookaheadMs + toleranceMs }));
    for (const segment of segments) {
      if (segment.to <= segment.from) continue;
      const job = segment.job;
      if (job.misfire.policy === 'latest') {
        // A planner outage: slots missed by more than misfire.after are collapsed into one.
        for (let i = 0; i + 1 < ticks.length; i++) {
          excluded.push({ from: ticks[i]! + lookaheadMs - toleranceMs, to: ticks[i + 1]! - job.misfire.after + toleranceMs });
        }
      }
      const found = slotsBetween(slotSpecOf(job), segment.from, segment.to, input.maxPerJob ?? 500);
      for (const slot of found) {
        if (within(slot, excluded)) continue;
        for (let shard = 0; shard < job.shards; shard++) slots.push({ job: name, slot, shard, shards: job.shards });
      }
    }
  }
  return { slots, forbidden };
}
