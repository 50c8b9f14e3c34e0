/** A job's slot specification: what the slot engine needs of a job definition. */
import type { Job } from './job-schema-core.js';
import type { SlotSpec } from './slots.js';

export function slotSpecOf(job: Pick<Job, 'schedule' | 'timezone' | 'dst'>): SlotSpec {
  return { schedule: job.schedule, timezone: job.timezone, dst: job.dst };
}
