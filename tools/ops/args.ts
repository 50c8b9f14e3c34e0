/**
 * Argument parsing shared by the ops commands (node:util parseArgs, strict): the target options
 * every command accepts, and parsers for instants, durations, numbers and run keys that throw a
 * UsageError naming the field.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { configuredJobDefinitions, exampleJobsEnabled, loadJobs } from '../../shared/config.js';
import { durationMs } from '../../shared/schedule/duration.js';
import { daysIn } from '../../shared/schedule/local-time.js';
import { userInfo } from 'node:os';
import type { Job } from '../../shared/schedule/job-schema.js';
import { RunStatus, type RunId } from '../../shared/core/vocabulary.js';
import { UsageError, type OpsIo } from './io.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Output and target options every command accepts. */
export const COMMON_OPTIONS = {
  json: { type: 'boolean', default: false },
  local: { type: 'boolean', default: false },
  endpoints: { type: 'string' },
  stack: { type: 'string' },
  region: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies Options;

/** The run filter `runs` and `retry` read alike: --job, --state, --since, --until, --limit. */
export const RUN_FILTER_OPTIONS = {
  job: { type: 'string' },
  state: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
} as const satisfies Options;

export const COMMON_USAGE = '[--json] [--local | --endpoints FILE | --stack NAME [--region R]]';

export interface CommonValues {
  readonly json: boolean;
  readonly local: boolean;
  readonly endpoints?: string;
  readonly stack?: string;
  readonly region?: string;
  readonly help: boolean;
}

/**
 * Thrown by parseCommand when the arguments ask for `--help`: it carries the command's own option
 * table, so the help printed is generated from what the command really parses (tools/ops/help.ts
 * adds a line of text per flag).
 */
export class HelpRequest extends Error {
  override readonly name = 'HelpRequest';
  constructor(readonly options: Options) {
    super('help requested');
  }
}

/**
 * Parses one command's arguments (strict: an unknown option is a usage error naming it). Returns
 * string/boolean values as parseArgs does, plus the positionals. `--help` (or `-h`) anywhere
 * throws a HelpRequest with the command's options instead.
 */
export function parseCommand<const T extends Options>(
  args: readonly string[],
  options: T,
): { values: CommonValues & Record<string, string | boolean | undefined>; positionals: string[] } {
  const all: Options = { ...COMMON_OPTIONS, ...options };
  if (args.some((arg) => arg === '--help' || arg === '-h')) throw new HelpRequest(options);
  try {
    const { values, positionals } = parseArgs({ args: joinDashValues(args, all), options: all, allowPositionals: true, strict: true });
    return { values: values as CommonValues & Record<string, string | boolean | undefined>, positionals };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const option = /'(-{1,2}[^' ,]+)/.exec(message)?.[1]?.replace(/^-+/, '');
    throw new UsageError(option, message.split('\n')[0]!.replace(/\. To specify.*$/, ''));
  }
}

/**
 * `--opt value` where the value starts with a dash (`--from -1d`, `--schedule "-5 * * * *"`)
 * becomes `--opt=value` for options that take a string. parseArgs refuses such a value as
 * "ambiguous", which would hide the real problem (or the real answer) behind a parser message.
 * A following token that is itself one of the command's options is left alone, so a forgotten
 * value (`--from --to X`) is still reported.
 */
export function joinDashValues(args: readonly string[], options: Options): string[] {
  const isOption = (token: string): boolean => {
    const long = /^--([^=]+)/.exec(token);
    if (long) return long[1]! in options;
    const short = /^-([A-Za-z])$/.exec(token);
    return short !== null && Object.values(options).some((o) => o.short === short[1]);
  };
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const name = /^--([^=]+)$/.exec(arg)?.[1];
    const next = args[i + 1];
    if (
      name !== undefined &&
      options[name]?.type === 'string' &&
      next !== undefined &&
      next.startsWith('-') &&
      next !== '--' &&
      !isOption(next)
    ) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

export function stringOption(values: Record<string, unknown>, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

export function requireOption(values: Record<string, unknown>, name: string): string {
  const value = stringOption(values, name);
  if (value === undefined || value === '') throw new UsageError(name, `--${name} is required`);
  return value;
}

const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?)?(Z|[+-](\d{2}):?(\d{2}))?$/i;

/**
 * An ISO-8601 instant. A date-time without an offset is read as UTC (never as this machine's zone,
 * so the same command gives the same answer everywhere); a bare date is its UTC midnight. Every
 * part must exist as written: `Date.parse` would roll `2026-02-30` over into March and read
 * `24:00` as the next midnight, so an operator's typo would select another range without a word.
 */
export function parseInstant(raw: string, field: string): number {
  const text = raw.trim();
  const m = ISO_INSTANT.exec(text);
  if (!m) throw new UsageError(field, `expected an ISO-8601 instant such as 2026-03-08T07:30:00Z, got "${raw}"`);
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const [hour, minute, second] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
  const impossible =
    month < 1 || month > 12
      ? `month ${m[2]}`
      : day < 1 || day > daysIn(year, month)
        ? `day ${m[3]} of ${m[1]}-${m[2]} (it has ${daysIn(year, month)} days)`
        : hour > 23
          ? `hour ${m[4]} (00-23)`
          : minute > 59
            ? `minute ${m[5]} (00-59)`
            : second > 59
              ? `second ${m[6]} (00-59)`
              : m[8] !== undefined && (Number(m[8]) > 14 || Number(m[9]) > 59)
                ? `offset ${m[7]}`
                : undefined;
  if (impossible !== undefined) throw new UsageError(field, `not a real instant: "${raw}" has no ${impossible}`);
  const hasOffset = m[7] !== undefined && text.length > 10;
  const normalized = text.replace(' ', 'T');
  const ms = Date.parse(hasOffset || text.length === 10 ? normalized : `${normalized}Z`);
  if (!Number.isFinite(ms)) throw new UsageError(field, `not a valid instant: "${raw}"`);
  return ms;
}

/** An instant, or a duration before now ("24h", "30m", "7d"). */
export function parseSince(raw: string, now: number, field: string): number {
  const duration = durationMs(raw.trim());
  if (duration !== undefined) return now - duration;
  try {
    return parseInstant(raw, field);
  } catch {
    throw new UsageError(field, `expected an ISO-8601 instant or a duration such as 24h, 30m, 7d; got "${raw}"`);
  }
}

export function parsePositive(
  raw: string | undefined,
  field: string,
  fallback: number,
  options: { integer?: boolean; max?: number } = {},
): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (options.integer && !Number.isInteger(value))) {
    throw new UsageError(field, `must be a positive ${options.integer ? 'integer' : 'number'}, got "${raw}"`);
  }
  if (options.max !== undefined && value > options.max) throw new UsageError(field, `must be at most ${options.max}, got "${raw}"`);
  return value;
}

export function parseStatuses(raw: string | undefined): RunStatus[] | undefined {
  if (raw === undefined) return undefined;
  const known = Object.values(RunStatus) as string[];
  return raw.split(',').map((part) => {
    const status = part.trim().toUpperCase();
    if (!known.includes(status)) throw new UsageError('state', `unknown state "${part}"; one of ${known.join(', ')}`);
    return status as RunStatus;
  });
}

const RUN_KEY = /^([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)@([^#@\s]+)(?:#(\d+))?$/;

/** `job@slotISO[#shard]` → the run's id (shard 0 when absent). */
export function parseRunKey(raw: string | undefined): RunId {
  if (raw === undefined || raw === '') throw new UsageError('runKey', 'a run key job@slotISO[#shard] is required');
  const match = RUN_KEY.exec(raw.trim());
  if (!match)
    throw new UsageError('runKey', `expected job@slotISO[#shard], e.g. payments-reconcile@2026-03-08T07:30:00.000Z, got "${raw}"`);
  const slot = parseInstant(match[2]!, 'runKey');
  return { job: match[1]!, slot, shard: match[3] === undefined ? 0 : Number(match[3]) };
}

/**
 * Who an operator's action is recorded as, in every command that records one (pause, trigger,
 * retry, redrive, resolve): `--by`, else `$USER`, else `$LOGNAME`, else the OS account name.
 * `ops` only when none is known (a container user without a passwd entry makes userInfo throw).
 */
export function operatorOf(values: Record<string, unknown>, io: OpsIo): string {
  const given = stringOption(values, 'by')?.trim();
  if (given) return given;
  const env = io.env ?? process.env;
  const named = env.USER?.trim() || env.LOGNAME?.trim();
  if (named) return named;
  try {
    return userInfo().username || UNKNOWN_OPERATOR;
  } catch {
    // No account entry for this uid: there is no name to record.
    return UNKNOWN_OPERATOR;
  }
}

/** Recorded when no operator name can be found. */
export const UNKNOWN_OPERATOR = 'ops';

/** The jobs a command acts on (runOps sets the deployed ones), else this checkout's. */
export function jobsOf(io: OpsIo): readonly Job[] {
  return (
    io.jobs ??
    io.checkoutJobs ??
    loadJobs(configuredJobDefinitions({ exampleJobs: io.exampleJobs ?? exampleJobsEnabled(io.env ?? process.env) }))
  );
}

/** Configured names listed in an unknown-job error; a longer list is cut (the count says how many). */
const JOBS_LISTED = 20;

/**
 * A configured job by name; an unknown name is a usage error (exit 2) listing the configured ones.
 * Every command that takes a job name goes through here, so they all refuse an unknown job alike.
 */
export function configuredJob(io: OpsIo, name: string | undefined, field = 'job'): Job {
  if (name === undefined || name === '') throw new UsageError(field, 'a job name is required');
  const jobs = jobsOf(io);
  const job = jobs.find((j) => j.name === name);
  if (!job) {
    const names = jobs.map((j) => j.name);
    const listed =
      names.length > JOBS_LISTED ? `${names.slice(0, JOBS_LISTED).join(', ')} … (${names.length} in all)` : names.join(', ') || '(none)';
    // A job only the checkout has would be acked by no worker: say why it is refused.
    const onlyHere = io.jobSource !== undefined && io.checkoutJobs?.some((j) => j.name === name) === true;
    const where = io.jobSource === undefined ? '' : ` in ${io.jobSource}`;
    const hint = onlyHere ? ` (this checkout has it, the running scheduler does not: deploy it first)` : '';
    throw new UsageError(field, `no configured job "${name}"${where}; configured: ${listed}${hint}`);
  }
  return job;
}

/** Rejects positionals a command does not take. */
export function noExtraPositionals(positionals: readonly string[], expected: number): void {
  if (positionals.length > expected) throw new UsageError(undefined, `unexpected argument "${positionals[expected]}"`);
}
