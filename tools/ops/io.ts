/**
 * What every ops command gets and gives: an `OpsIo` (output lines, and the seams tests inject:
 * clock, sleep, jobs, environment), and the two kinds of failure the CLI maps to exit codes:
 * `UsageError` (exit 2: bad arguments or input, one line naming the field) and `OpsFailure`
 * (exit 1: the operation was refused or failed).
 */
import type { Calendars, Job } from '../../shared/schedule/job-schema.js';
import type { Clients } from '../../shared/runtime/clients.js';
import type { Target } from './target.js';

export interface OpsIo {
  stdout(line: string): void;
  stderr(line: string): void;
  /** @default Date.now */
  readonly now?: () => number;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * The jobs the command acts on. @default what the target's planner recorded (tools/ops/job-config.ts,
   * which runOps reads before the command); given (tests), they are used as they are and no config is read
   */
  readonly jobs?: readonly Job[];
  /** This checkout's jobs, compared with the deployed ones. @default loadJobs() from shared/config.ts, example jobs per `exampleJobs` */
  readonly checkoutJobs?: readonly Job[];
  /** Where `jobs` came from, for errors that name it ("the deployed config"). Set by runOps. */
  readonly jobSource?: string;
  /** The target runOps opened to read the deployed config; withTarget acts on it. Set by runOps. */
  readonly target?: Target;
  /** The calendars `preview --definition` may exclude. @default calendars from shared/jobs.ts */
  readonly calendars?: Calendars;
  /**
   * Whether the target runs the example jobs (shared/example-jobs.ts).
   * @default the local target's endpoints file says (`npm start` writes true), else EXAMPLE_JOBS
   */
  readonly exampleJobs?: boolean;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** The project folder whose .local-data/endpoints.json `--local` reads. @default the project root (PROJECT_ROOT) */
  readonly cwd?: string;
  /** Called with the target's SDK clients before any call (tests record calls with middleware). @default none */
  readonly instrument?: (clients: Clients) => void;
}

/** Exit code 2: the command line or its input is wrong; `field` names what. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    readonly field: string | undefined,
    message: string,
  ) {
    super(field === undefined ? message : `field "${field}": ${message}`);
  }
}

/** Exit code 1: the operation was refused or failed; the message is the one line to print. */
export class OpsFailure extends Error {
  override readonly name = 'OpsFailure';
}

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export function clockOf(io: OpsIo): () => number {
  return io.now ?? Date.now;
}

export function sleepOf(io: OpsIo): (ms: number) => Promise<void> {
  return io.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))));
}

/**
 * Attributes of the ledger's items and the commands' reports that hold an instant as epoch
 * milliseconds (`at`: of a pause, a revival, a resolution), and as epoch seconds (the TTL).
 */
export const EPOCH_MS_FIELDS: ReadonlySet<string> = new Set([
  'slot',
  'leaseUntil',
  'nextAttemptAt',
  'createdAt',
  'dispatchedAt',
  'startedAt',
  'finishedAt',
  'fireAt',
  'revivedAt',
  'claimedAt',
  'endedAt',
  'at',
]);
export const EPOCH_S_FIELDS: ReadonlySet<string> = new Set(['expiresAt']);

/** An instant field's value as ISO-8601 UTC; any other value as it is. */
export function jsonValue(key: string, value: unknown): unknown {
  if (value instanceof Set) return [...value];
  if (typeof value !== 'number' || !Number.isFinite(value)) return value;
  if (EPOCH_MS_FIELDS.has(key)) return new Date(value).toISOString();
  if (EPOCH_S_FIELDS.has(key)) return new Date(value * 1000).toISOString();
  return value;
}

/**
 * Exactly one JSON document on stdout. Every instant in it is an ISO-8601 UTC string, whichever
 * command printed it (ledger items hold epoch ms; a script reading two commands must not have to
 * know which format each uses); Sets become arrays, so ledger items print as they are.
 * Durations (`…Ms`) stay numbers.
 */
export function printJson(io: OpsIo, value: unknown): void {
  io.stdout(JSON.stringify(value, (key, v: unknown) => jsonValue(key, v), 2));
}

/** Widths of the free-text cells (errors, notes), so a long one does not push the columns after it. */
export const ERROR_CELL_WIDTH = 80;
export const NOTE_CELL_WIDTH = 40;

/** A table cell on one line: whitespace runs become one space, and a longer text ends in "…". */
export function cell(text: string | undefined, max: number): string | undefined {
  if (text === undefined) return undefined;
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

/** Left-aligned columns separated by two spaces; empty cells print as "-", each cell on one line. */
export function printTable(io: OpsIo, headers: readonly string[], rows: readonly (readonly (string | number | undefined)[])[]): void {
  // A line break or tab inside a value would break the row out of its columns.
  const cells = rows.map((row) =>
    headers.map((_, i) => {
      const value = row[i];
      return value === undefined || value === '' ? '-' : String(value).replace(/\s+/g, ' ');
    }),
  );
  const widths = headers.map((header, i) => Math.max(header.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  io.stdout(line(headers));
  for (const row of cells) io.stdout(line(row));
}

export function iso(ms: number | undefined): string | undefined {
  return ms === undefined || !Number.isFinite(ms) ? undefined : new Date(ms).toISOString();
}

/** 0s, 42s, 3m05s, 2h03m, 4d02h. */
export function formatAge(ms: number | undefined): string | undefined {
  if (ms === undefined || !Number.isFinite(ms)) return undefined;
  const sign = ms < 0 ? '-' : '';
  let s = Math.floor(Math.abs(ms) / 1000);
  const d = Math.floor(s / 86_400);
  s -= d * 86_400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const two = (n: number) => String(n).padStart(2, '0');
  if (d > 0) return `${sign}${d}d${two(h)}h`;
  if (h > 0) return `${sign}${h}h${two(m)}m`;
  if (m > 0) return `${sign}${m}m${two(s)}s`;
  return `${sign}${s}s`;
}

/** A duration that may be short: 3ms, 850ms, then as formatAge (1s, 3m05s, 2h03m). */
export function formatElapsed(ms: number | undefined): string | undefined {
  if (ms === undefined || !Number.isFinite(ms)) return undefined;
  return Math.abs(ms) < 1000 ? `${Math.round(ms)}ms` : formatAge(ms);
}

/**
 * A command line's process entry (tools/fsched.ts, tools/ops.ts): runs `main` with this process's
 * arguments and output, its answer the exit code; an error thrown is one line on stderr, named
 * by `name`, and exit code 1.
 */
export function runAsProcess(name: string, main: (argv: readonly string[], io: OpsIo) => Promise<number>): void {
  main(process.argv.slice(2), {
    stdout: (line) => process.stdout.write(`${line}\n`),
    stderr: (line) => process.stderr.write(`${line}\n`),
  }).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`${name}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
