/** What the job parser reports (job-schema-core.ts, job-calendars.ts): one issue names its job, field and value as written. */

/** Named lists of local dates that jobs exclude with `{ calendar: name }` (e.g. holidays). */
export type Calendars = Readonly<Record<string, readonly string[]>>;

export interface JobConfigIssue {
  readonly job: string;
  readonly field: string;
  readonly value: unknown;
  readonly message: string;
}

/** A job definition is invalid; `issues` names each job and field at fault. */
export class JobConfigError extends Error {
  override readonly name = 'JobConfigError';
  constructor(readonly issues: readonly JobConfigIssue[]) {
    super(issues.map(formatIssue).join('\n'));
  }
}

function formatIssue(issue: JobConfigIssue): string {
  const value = issue.value === undefined ? '' : ` (value: ${JSON.stringify(issue.value)})`;
  return `job "${issue.job}": field "${issue.field}": ${issue.message}${value}`;
}
