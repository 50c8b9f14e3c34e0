/** What every page and action reads: the opened target, the jobs it runs, and how the console was started. */
import type { Job } from '../../shared/schedule/job-schema.js';
import type { Target } from '../ops/target.js';

export interface ConsoleContext {
  readonly target: Target;
  /** The deployed jobs (tools/ops/job-config.ts), read once when the console starts. */
  readonly jobs: readonly Job[];
  readonly jobSource: string;
  readonly checkoutJobs?: readonly Job[];
  readonly readOnly: boolean;
  /** Who the actions are recorded as (`--by`, like the CLI's). */
  readonly by: string;
  readonly now: () => number;
}

/** A page's answer: its title and the content of `<main>`, or a status and message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
