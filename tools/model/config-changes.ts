/**
 * Config changes of a job between planner ticks (issue 30, point 7): every field a team edits in a
 * deploy (shards up and down, maxRuns, schedule, startLead, deadline, overlap, checkpoints), and
 * jobs whose first slot falls inside the planner's lookahead (a one-time `{ at }` job, a daily job
 * due in a minute). The planner must re-plan the slots a changed job owns from the previous tick
 * on, and keep each slot's runs under the shard count they were created with; owed.ts owes them.
 *
 * Pure: a change maps a job's spec to its next spec; the world validates it as the config is
 * validated and applies it (a change the validation refuses is told in the story, not applied).
 */
import type { ScheduleInput } from '../../shared/schedule/schedule-schema.js';
import type { JobSpec } from './world-setup.js';

/** A job's schedule as the model writes it: a cron expression or a one-time `{ at }` (an instant with `Z`). */
export type ModelSchedule = Extract<ScheduleInput, string> | { readonly at: string };

export function scheduleLabel(schedule: ModelSchedule): string {
  return typeof schedule === 'string' ? schedule : `{ at: ${schedule.at} }`;
}

export type JobChange =
  | { readonly field: 'shards'; readonly to: number }
  /** Raised by this many: a job whose count is reached plans again (a lowered bound is not drawn: runs already counted stay). */
  | { readonly field: 'maxRuns'; readonly raiseBy: number }
  | { readonly field: 'schedule'; readonly to: string }
  | { readonly field: 'startLead'; readonly toMs: number }
  | { readonly field: 'deadline'; readonly toMs: number | undefined }
  | { readonly field: 'overlap'; readonly to: JobSpec['overlap'] }
  | { readonly field: 'checkpoints'; readonly to: boolean };

/** The spec after `change`, or undefined when the change does not apply to this job (same value, no maxRuns to raise). */
export function changedSpec(spec: JobSpec, change: JobChange): JobSpec | undefined {
  switch (change.field) {
    case 'shards':
      return spec.shards === change.to ? undefined : { ...spec, shards: change.to };
    case 'maxRuns':
      return spec.maxRuns === undefined ? undefined : { ...spec, maxRuns: spec.maxRuns + change.raiseBy };
    case 'schedule':
      return spec.schedule === change.to ? undefined : { ...spec, schedule: change.to };
    case 'startLead':
      return spec.startLeadMs === change.toMs ? undefined : { ...spec, startLeadMs: change.toMs };
    case 'deadline':
      return spec.deadlineMs === change.toMs ? undefined : { ...spec, deadlineMs: change.toMs };
    case 'overlap':
      return spec.overlap === change.to ? undefined : { ...spec, overlap: change.to };
    case 'checkpoints':
      return spec.checkpoints === change.to ? undefined : { ...spec, checkpoints: change.to };
  }
}

export function changeLabel(change: JobChange): string {
  switch (change.field) {
    case 'maxRuns':
      return `maxRuns +${change.raiseBy}`;
    case 'startLead':
      return `startLead → ${change.toMs / 1000}s`;
    case 'deadline':
      return `deadline → ${change.toMs === undefined ? 'none' : `${change.toMs / 1000}s`}`;
    default:
      return `${change.field} → ${String(change.to)}`;
  }
}

/** What the story says of a spec's value of the changed field. */
export function fieldLabel(spec: JobSpec, field: JobChange['field']): string {
  switch (field) {
    case 'shards':
      return String(spec.shards);
    case 'maxRuns':
      return String(spec.maxRuns ?? 'unbounded');
    case 'schedule':
      return scheduleLabel(spec.schedule);
    case 'startLead':
      return `${spec.startLeadMs / 1000}s`;
    case 'deadline':
      return spec.deadlineMs === undefined ? 'none' : `${spec.deadlineMs / 1000}s`;
    case 'overlap':
      return spec.overlap;
    case 'checkpoints':
      return String(spec.checkpoints);
  }
}

/**
 * A schedule whose first slot is `offsetMs` after the next whole minute (whole seconds; a minute
 * later when that is not ahead of `now`): a one-time `{ at }` job, or a daily cron at that second.
 * Planner ticks run at whole minutes, so a small offset puts the slot after the next tick's `now`
 * and before the watermark the previous tick left (its `now` + lookahead: the minute, the tick
 * delay margin and the longest startLead), where a job new to the planner has slots no tick
 * planned for it (issue 30, point 4).
 */
export function scheduleSoon(now: number, offsetMs: number, kind: 'at' | 'daily'): ModelSchedule {
  let at = Math.ceil(now / 60_000) * 60_000 + Math.round(offsetMs / 1000) * 1000;
  while (at <= now) at += 60_000;
  if (kind === 'at') return { at: new Date(at).toISOString() };
  const when = new Date(at);
  return `${when.getUTCSeconds()} ${when.getUTCMinutes()} ${when.getUTCHours()} * * *`;
}
