/**
 * The calendars of a job config (named lists of local dates jobs exclude): their own dates
 * checked once, and a job's `exclude` expanded with them. Part of the job parser
 * (job-schema-core.ts), apart to keep that file to the schema and its cross-field checks.
 */
import type { Calendars, JobConfigIssue } from './job-config-issue.js';
import { calendarDateErrors, type ExcludeEntry } from './schedule-schema.js';

/** The label calendar issues carry in place of a job name. */
export const CALENDARS_LABEL = '(calendars)';

export function calendarIssues(calendars: Calendars): JobConfigIssue[] {
  const issues: JobConfigIssue[] = [];
  for (const [name, dates] of Object.entries(calendars)) {
    for (const { index, message } of calendarDateErrors(dates)) {
      const field = index === undefined ? name : `${name}.${index}`;
      issues.push({ job: CALENDARS_LABEL, field, value: index === undefined ? dates : dates[index], message });
    }
  }
  return issues;
}

/** The job's excluded dates with calendars expanded, or issues naming the unknown calendars. */
export function expandExclude(
  name: string,
  entries: readonly ExcludeEntry[] | undefined,
  calendars: Calendars,
  issues: JobConfigIssue[],
): readonly string[] | undefined {
  if (entries === undefined) return undefined;
  const dates = new Set<string>();
  entries.forEach((entry, i) => {
    if (typeof entry === 'string') {
      dates.add(entry);
      return;
    }
    const calendar = Object.hasOwn(calendars, entry.calendar) ? calendars[entry.calendar] : undefined;
    if (calendar === undefined) {
      const known = Object.keys(calendars);
      issues.push({
        job: name,
        field: `exclude.${i}.calendar`,
        value: entry.calendar,
        message: `unknown calendar; defined: ${known.join(', ') || '(none)'}`,
      });
      return;
    }
    for (const date of calendar) dates.add(date);
  });
  return [...dates].sort();
}
