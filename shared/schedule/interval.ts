/**
 * Interval schedules: slots at epoch + n × every + phase, in UTC. No zone and no DST question:
 * an interval is elapsed time, so `every: '90s'` or `every: '7m'` keeps its rhythm across hours,
 * days and clock changes, which cron (whose fields restart every hour or day) cannot express.
 */
import type { IntervalSchedule } from './schedule-spec.js';

/** Appends the slots in the inclusive range [lo, hi], ascending, until `out` holds `limit`. */
export function intervalSlotsIn(schedule: IntervalSchedule, lo: number, hi: number, limit: number, out: number[]): void {
  const { every, phase } = schedule;
  for (let t = Math.ceil((lo - phase) / every) * every + phase; t <= hi && out.length < limit; t += every) out.push(t);
}

/** The last slot at or before t. */
export function intervalSlotAtOrBefore(schedule: IntervalSchedule, t: number): number {
  return Math.floor((t - schedule.phase) / schedule.every) * schedule.every + schedule.phase;
}
