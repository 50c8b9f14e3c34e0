/**
 * The console's actions run the ops CLI's own commands in-process (COMMANDS of tools/ops/cli.ts,
 * with `--json`), on the target and deployed jobs the console opened: what the console does is
 * exactly what `fsched ops <command>` does, refusals included. Each action names its fields, says
 * what it will do (the confirmation page), and turns the command's JSON into what happened.
 */
import { COMMANDS } from '../ops/cli.js';
import { OpsFailure, UsageError, type OpsIo } from '../ops/io.js';
import type { ConsoleContext } from './context.js';
import { HttpError } from './context.js';
import { localTime } from '../ops/preview.js';
import { BULK_ACTIONS } from './bulk-actions.js';

export interface ActionField {
  readonly name: string;
  readonly label: string;
  readonly required: boolean;
  /** A choice among these values (a select), else free text. */
  readonly choices?: readonly string[];
  /** Not shown: the confirmation page fills it with a fresh value (an idempotency key). */
  readonly hidden?: boolean;
  /** A date-time typed in the job's zone (an `<input type="datetime-local">`). */
  readonly localTime?: boolean;
}

/** One ops command line: its name and arguments, and what its output is about (a job, the DLQ…). */
export interface OpsCommand {
  readonly name: string;
  readonly args: string[];
  readonly about: string;
}

export interface ActionSpec {
  readonly title: string;
  /** The subject: a job name, a run key, the dead-letter queue, or a job name or `*` (every job). */
  readonly subject: 'job' | 'run' | 'dlq' | 'jobs';
  readonly fields: readonly ActionField[];
  /** What confirming does, in words. */
  describe(subject: string, ctx: ConsoleContext): string;
  /** The ops commands confirming runs (one, or one per job), in order. */
  commands(subject: string, fields: Readonly<Record<string, string>>, by: string, ctx: ConsoleContext): OpsCommand[];
  /**
   * The dry run of the same commands, shown on the confirmation page before anything changes;
   * the confirm button is only offered when it succeeded.
   */
  preview?(subject: string, fields: Readonly<Record<string, string>>, by: string, ctx: ConsoleContext): OpsCommand[];
  /** What happened, from one command's JSON. */
  summarize(json: unknown, about: string): string[];
}

type Json = Record<string, unknown>;
const list = (json: unknown): Json[] => (Array.isArray(json) ? (json as Json[]) : []);
const obj = (json: unknown): Json => (json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Json) : {});
const optional = (flag: string, value: string | undefined) => (value ? [flag, value] : []);

/** One line per run a retry looked at: revived (from → to), or refused and why. */
function retryLines(json: unknown, about: string): string[] {
  const entries = list(json);
  if (entries.length === 0) return [`${about}: no DEAD run to retry.`];
  return entries.map(
    (e) =>
      `${String(e.runKey)}: ${String(e.action)}${e.to ? `, ${String(e.from)} → ${String(e.to)}` : ` (was ${String(e.from)})`}${e.detail ? `: ${String(e.detail)}` : ''}.`,
  );
}

export const ACTIONS: Readonly<Record<string, ActionSpec>> = {
  pause: {
    title: 'Pause',
    subject: 'job',
    fields: [
      { name: 'note', label: 'Note (why; shown with the paused badge)', required: true },
      {
        name: 'until',
        label:
          "Until (optional): a duration such as 2h, a date-time such as 2026-12-24T18:00 (read in the job's zone unless it has Z or an offset), or a time of day such as 14:00 (its next occurrence in the job's zone)",
        required: false,
      },
    ],
    describe: (job, ctx) => {
      const zone = ctx.jobs.find((j) => j.name === job)?.timezone ?? 'UTC';
      return (
        `Stop planning ${job}: nothing new is materialized until it is resumed, or until the time you give (runs already materialized still execute). ` +
        `An until without an offset is read in the job's zone, ${zone} (now ${localTime(ctx.now(), zone)} there), a time of day alone as its next occurrence there (today if still ahead, else tomorrow); at that time the job resumes by itself, and slots it missed follow its misfire policy.`
      );
    },
    commands: (job, f, by) => [
      { name: 'pause', args: [job, '--note', f.note!, ...(f.until ? ['--until', f.until] : []), '--by', by], about: job },
    ],
    summarize: (json) => {
      const r = obj(json);
      return r.changed
        ? [
            `Paused ${String(r.job)} (note: ${String(r.pauseNote ?? '')}), by ${String(r.pausedBy)} at ${String(r.pausedAt)}${r.pausedUntil ? `, until ${String(r.pausedUntil)}, when it resumes by itself` : ''}; planned up to ${String(r.plannedUntil ?? '-')}.`,
          ]
        : [
            `${String(r.job)} was already paused by ${String(r.pausedBy)} at ${String(r.pausedAt)} (${String(r.pauseNote ?? '')})${r.pausedUntil ? ` until ${String(r.pausedUntil)}` : ''}: that pause stays as it is.`,
          ];
    },
  },
  resume: {
    title: 'Resume',
    subject: 'job',
    fields: [],
    describe: (job) => `Plan ${job} again: slots missed while paused follow its misfire policy.`,
    commands: (job) => [{ name: 'resume', args: [job], about: job }],
    summarize: (json) => {
      const r = obj(json);
      const expired = obj(r.expired);
      if (r.changed) return [`Resumed ${String(r.job)}: the next tick plans from ${String(r.plannedUntil ?? 'now')}.`];
      return expired.until
        ? [
            `${String(r.job)} was not paused: its pause by ${String(expired.by)} had ended by itself at ${String(expired.until)}; its record is cleared.`,
          ]
        : [`${String(r.job)} was not paused: nothing changed.`];
    },
  },
  trigger: {
    title: 'Trigger now',
    subject: 'job',
    fields: [
      { name: 'note', label: 'Note', required: false },
      {
        name: 'overlap',
        label: "Overlap policy for this run (empty: the job's own)",
        required: false,
        choices: ['', 'forbid-skip', 'forbid-queue', 'coalesce', 'replace', 'parallel'],
      },
      // One key per confirmation page: the same form sent twice (a double click, a resent POST) creates the runs once.
      { name: 'idempotency', label: 'Idempotency key', required: true, hidden: true },
    ],
    describe: (job) => `Run ${job} now, once, outside its schedule (also while paused), one run per shard.`,
    commands: (job, f, by) => [
      {
        name: 'trigger',
        args: [job, ...optional('--note', f.note), ...optional('--overlap', f.overlap), '--by', by, '--idempotency-key', f.idempotency!],
        about: job,
      },
    ],
    summarize: (json) =>
      list(json).map((r) =>
        r.repeated
          ? `Already triggered from this confirmation: manual run ${String(r.runKey)} exists (${String(r.status)}), no new run created.`
          : `Created manual run ${String(r.runKey)} (${String(r.status)}, overlap ${String(r.overlap)}), dispatched ${String(r.dispatched)}.`,
      ),
  },
  retry: {
    title: 'Retry',
    subject: 'run',
    fields: [],
    describe: (run) => `Run ${run} again with a fresh attempt budget (an unknown last result is reconciled first).`,
    commands: (run, _f, by) => [{ name: 'retry', args: [run, '--by', by], about: run }],
    summarize: retryLines,
  },
  resolve: {
    title: 'Resolve',
    subject: 'run',
    fields: [
      { name: 'as', label: 'Close it as', required: true, choices: ['succeeded', 'dead'] },
      { name: 'reason', label: 'Reason (recorded on the run)', required: true },
    ],
    describe: (run) => `Close ${run} by hand: as succeeded it becomes MANUAL, as dead it becomes DEAD; a worker holding it is fenced out.`,
    commands: (run, f, by) => [{ name: 'resolve', args: [run, '--as', f.as!, '--reason', f.reason!, '--by', by], about: run }],
    summarize: (json) => {
      const r = obj(json);
      return [
        `Resolved ${String(r.runKey)}: ${String(r.from)} → ${String(r.to)} (as ${String(r.as)}, by ${String(r.by)}): ${String(r.reason)}.`,
      ];
    },
  },
  ...BULK_ACTIONS,
};

export function actionSpec(name: string): ActionSpec {
  const spec = Object.hasOwn(ACTIONS, name) ? ACTIONS[name] : undefined;
  if (!spec) throw new HttpError(404, `no action "${name}"; one of ${Object.keys(ACTIONS).join(', ')}`);
  return spec;
}

export interface ActionResult {
  readonly ok: boolean;
  /** What happened (ok), or why nothing did. */
  readonly lines: readonly string[];
  readonly warnings: readonly string[];
  readonly command: string;
}

/** Checks the form's fields: required ones present, choices among theirs (400 naming the field). */
export function formFields(spec: ActionSpec, form: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field of spec.fields) {
    const value = (form.get(field.name) ?? '').trim();
    if (field.required && value === '') throw new HttpError(400, `field "${field.name}": ${field.label.toLowerCase()} is required`);
    if (field.choices && !field.choices.includes(value))
      throw new HttpError(400, `field "${field.name}": one of ${field.choices.filter(Boolean).join(', ')}, got "${value}"`);
    if (value !== '') out[field.name] = value;
  }
  return out;
}

export async function runAction(
  ctx: ConsoleContext,
  commands: readonly OpsCommand[],
  summarize: ActionSpec['summarize'],
): Promise<ActionResult> {
  const lines: string[] = [];
  const warnings: string[] = [];
  const commandLines: string[] = [];
  for (const { name, args, about } of commands) {
    const out: string[] = [];
    const err: string[] = [];
    const io: OpsIo = {
      stdout: (l) => out.push(l),
      stderr: (l) => err.push(l),
      now: ctx.now,
      jobs: ctx.jobs,
      jobSource: ctx.jobSource,
      checkoutJobs: ctx.checkoutJobs,
      target: ctx.target,
    };
    commandLines.push(`fsched ops ${name} ${args.map((a) => (/^[\w@:.#-]+$/.test(a) ? a : JSON.stringify(a))).join(' ')}`);
    let code: number;
    try {
      code = await COMMANDS[name]!.run([...args, '--json'], io);
    } catch (error) {
      // A refusal ends the action: the commands after it are not run, and the page says so.
      if (error instanceof UsageError || error instanceof OpsFailure)
        return { ok: false, lines: [...lines, error.message], warnings: [...warnings, ...err], command: commandLines.join('; ') };
      throw error;
    }
    warnings.push(...err);
    const json: unknown = out.length > 0 ? JSON.parse(out.join('\n')) : undefined;
    const summary = json === undefined ? [] : summarize(json, about);
    lines.push(...(summary.length > 0 ? summary : [`${about}: the command printed nothing.`]));
    if (code !== 0) return { ok: false, lines, warnings, command: commandLines.join('; ') };
  }
  return { ok: true, lines, warnings, command: commandLines.join('; ') };
}
