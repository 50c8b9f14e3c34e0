/**
 * `fsched ops <command> --help`: one line per flag, with its default. The flags listed are the
 * ones the command really parses (parseCommand hands its option table over in a HelpRequest);
 * this file only adds the words. A flag a command parses but this table does not describe is
 * printed as "(undocumented)", which test/unit/ops-cli.test.ts refuses.
 */
import type { ParseArgsConfig } from 'node:util';
import { BACKFILL_DEFAULT_RATE, BACKFILL_MAX_SLOTS } from '../../shared/operations/backfill.js';
import { DEFAULT_DST } from '../../shared/schedule/dst.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { COMMON_OPTIONS } from './args.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** How the CLI is invoked, in usage lines and hints (bin/fsched; `npx fsched` in the project). */
export const PROGRAM = 'fsched ops';

export interface FlagHelp {
  /** The value's placeholder (string options). */
  readonly value?: string;
  readonly text: string;
  /** What applies when the flag is absent; absent for booleans (off) and required flags. */
  readonly default?: string;
}

const STATES = Object.values(RunStatus).join(', ');
const BY: FlagHelp = {
  value: 'NAME',
  text: 'who does it, recorded on the run or plan item',
  default: '$USER, else $LOGNAME, else the OS account name',
};

/** The target and output flags every command accepts. */
export const COMMON_FLAG_HELP: Readonly<Record<keyof typeof COMMON_OPTIONS, FlagHelp>> = {
  json: { text: 'print exactly one JSON document on stdout instead of a table' },
  local: { text: 'act on the running `npm start` (.local-data/endpoints.json of the project)' },
  endpoints: { value: 'FILE', text: 'act on the local stack described by FILE (the endpoints JSON `npm start` writes)' },
  stack: { value: 'NAME', text: 'act on this CloudFormation stack (its outputs name the table and queues)', default: 'FencedScheduler' },
  region: { value: 'R', text: 'AWS region of the stack', default: 'AWS_REGION / the profile' },
  help: { text: 'this help' },
};

/** Per command, its own flags. */
export const FLAG_HELP: Readonly<Record<string, Readonly<Record<string, FlagHelp>>>> = {
  status: {
    since: {
      value: 'ISO|DURATION',
      text: 'count runs whose slot is at or after this (an instant, or 24h, 30m, 7d before now)',
      default: '24h',
    },
  },
  jobs: {
    job: { value: 'NAME', text: 'only this configured job', default: 'every configured job' },
  },
  runs: {
    job: { value: 'NAME', text: 'only the runs of this configured job', default: 'every configured job' },
    state: { value: 'S[,S]', text: `only runs in these states, any case: ${STATES}`, default: 'every state' },
    since: {
      value: 'ISO|DURATION',
      text: 'only runs whose slot is at or after this (an instant, or 2h, 7d before now)',
      default: 'no lower bound',
    },
    until: { value: 'ISO', text: 'only runs whose slot is before this instant', default: 'no upper bound' },
    limit: { value: 'N', text: 'at most N runs, newest first', default: '50' },
  },
  show: {},
  pause: {
    note: { value: 'TEXT', text: 'why: shown by `status` and `jobs` until the job is resumed', default: 'none' },
    until: {
      value: 'TIME|DURATION',
      text: "when the pause ends by itself: an instant (read in the job's zone without Z or an offset), a duration from now (2h), or a time of day (14:00: its next occurrence in the job's zone, today if still ahead, else tomorrow)",
      default: 'until resumed',
    },
    by: BY,
  },
  resume: {},
  backfill: {
    from: { value: 'ISO', text: 'first instant of the range; its slot, if any, is included (required)' },
    to: { value: 'ISO', text: 'end of the range, excluded; must not be in the future (required)' },
    'max-per-second': { value: 'N', text: 'runs created and dispatched per second', default: String(BACKFILL_DEFAULT_RATE) },
    'dry-run': { text: 'count the slots and the runs already in the ledger; create nothing' },
    force: { text: `allow more than ${BACKFILL_MAX_SLOTS.toLocaleString('en-US')} slots` },
    'allow-superseded': {
      text: "create the runs of an effects: 'latest-wins' job although a newer slot's fence refuses each one's write (they end SUPERSEDED)",
    },
  },
  preview: {
    schedule: { value: 'CRON', text: 'a cron expression (5 or 6 fields) to preview, instead of --job or --definition' },
    timezone: { value: 'IANA', text: 'zone the --schedule is read in', default: 'UTC' },
    'dst-gap': {
      value: 'shift|skip',
      text: 'a wall time that does not exist on a spring-forward day: shifted or skipped',
      default: DEFAULT_DST.gap,
    },
    'dst-overlap': {
      value: 'once|twice',
      text: 'a wall time that happens twice on a fall-back day: fires once or twice',
      default: DEFAULT_DST.overlap,
    },
    job: { value: 'NAME', text: 'preview this configured job (its schedule, zone, window, exclusions, jitter)' },
    definition: { value: 'JSON', text: 'preview a job entry written as JSON, validated like the config (name, handler optional)' },
    from: { value: 'ISO', text: 'first instant; a slot exactly at it is included', default: 'now' },
    to: { value: 'ISO', text: 'end instant, excluded; without it the next --limit slots are listed', default: 'none' },
    limit: { value: 'N', text: 'at most N slots', default: '10 without --to, else every slot up to 10,000' },
  },
  redrive: {
    'max-per-second': { value: 'N', text: 'messages moved back per second (at most 500)', default: '10' },
    'dry-run': {
      text: 'list each DLQ message, its run and what redrive would do (with --drop: the message it would delete); change nothing',
    },
    by: BY,
    drop: {
      value: 'MESSAGE_ID',
      text: 'delete this one DLQ message (a junk message redrive would only move back) and say what it held; nothing is revived or moved',
    },
  },
  retry: {
    job: { value: 'NAME', text: "retry this configured job's runs (instead of one run key)" },
    state: { value: 'S[,S]', text: 'which ended runs to retry: DEAD, SKIPPED, SUPERSEDED', default: 'DEAD' },
    since: { value: 'ISO|DURATION', text: 'only runs whose slot is at or after this', default: 'no lower bound' },
    until: { value: 'ISO', text: 'only runs whose slot is before this instant', default: 'no upper bound' },
    limit: { value: 'N', text: 'at most N runs (at most 10,000)', default: '100' },
    'dry-run': { text: 'list what would be revived; change nothing' },
    by: BY,
  },
  trigger: {
    shard: { value: 'N', text: 'only this shard of a sharded job', default: 'one run per shard' },
    note: { value: 'TEXT', text: 'why, recorded on the run and shown by `runs` and `show`', default: 'none' },
    overlap: {
      value: 'POLICY',
      text: "run under this overlap policy instead of the job's: forbid-skip, forbid-queue, coalesce, replace, parallel",
      default: "the job's",
    },
    by: BY,
    'idempotency-key': {
      value: 'K',
      text: "a repeat with the same key (for this job) creates no second run: it finds the first one's runs and sends those still waiting",
      default: 'a generated one, printed if the command fails',
    },
  },
  resolve: {
    as: { value: 'succeeded|dead', text: 'close the run as MANUAL (counts as done) or DEAD (required)' },
    reason: { value: 'TEXT', text: 'why, recorded on the run (required)' },
    by: BY,
    force: { text: 'take over a RUNNING run even though its lease is not 60s past its end' },
  },
};

function flagLine(name: string, option: Options[string], help: FlagHelp | undefined, width: number): string {
  const flag = `--${name}${option.type === 'string' ? ` ${help?.value ?? 'VALUE'}` : ''}${option.short ? `, -${option.short}` : ''}`;
  const text = help === undefined ? '(undocumented)' : `${help.text}${help.default === undefined ? '' : ` (default: ${help.default})`}`;
  return `  ${flag.padEnd(width)}  ${text}`;
}

/** The help of one command: usage, summary, then one line per flag it parses. */
export function commandHelp(name: string, command: { readonly usage: string; readonly summary: string }, options: Options): string[] {
  const own = Object.entries(options);
  // preview reads no target: only the output flags apply to it.
  const common = Object.entries(COMMON_OPTIONS as Options).filter(([flag]) => name !== 'preview' || flag === 'json' || flag === 'help');
  const docs = FLAG_HELP[name] ?? {};
  const label = (flag: string, option: Options[string], help: FlagHelp | undefined) =>
    `--${flag}${option.type === 'string' ? ` ${help?.value ?? 'VALUE'}` : ''}${option.short ? `, -${option.short}` : ''}`;
  const width = Math.max(
    ...own.map(([flag, o]) => label(flag, o, docs[flag]).length),
    ...common.map(([flag, o]) => label(flag, o, COMMON_FLAG_HELP[flag as keyof typeof COMMON_OPTIONS]).length),
  );
  const lines = [`usage: ${PROGRAM} ${command.usage}`, command.summary];
  if (own.length > 0) lines.push('', 'options:', ...own.map(([flag, o]) => flagLine(flag, o, docs[flag], width)));
  lines.push('', name === 'preview' ? 'output:' : 'target and output:');
  lines.push(...common.map(([flag, o]) => flagLine(flag, o, COMMON_FLAG_HELP[flag as keyof typeof COMMON_OPTIONS], width)));
  return lines;
}
