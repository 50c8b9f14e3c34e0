/**
 * Job definitions validated in full: the schema of job-schema-core.ts with the cron grammar and
 * zone checked by the slot engine. Synth, the planner, the ops CLI and the tests use this one.
 */
import { createJobParser } from './job-schema-core.js';
import { scheduleError, timezoneError } from './slots.js';

export * from './job-schema-core.js';

/** Validates every job and returns them with defaults applied; throws JobConfigError naming job and field. */
export const parseJobs = createJobParser({ scheduleError, timezoneError });
