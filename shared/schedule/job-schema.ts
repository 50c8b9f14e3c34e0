/**
 * Job definitions validated in full: the schema of job-schema-core.ts with the cron grammar, the
 * zone and the fields read together in the zone (window, one-time slot) checked by the slot engine. Synth, the planner, the ops CLI and the tests use this one.
 */
import { createJobParser } from './job-schema-core.js';
import { scheduleError, specProblems, timezoneError } from './slots.js';

export * from './job-schema-core.js';

/** Validates every job and returns them with defaults applied; throws JobConfigError naming job and field. */
export const parseJobs = createJobParser({ scheduleError, timezoneError, specProblems });
