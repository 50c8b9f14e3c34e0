/**
 * The ops CLI's pure parts: argument parsers, dispatch and exit codes, the repair rules
 * (who may be revived or resolved) and backfill's range checks. No stack needed.
 */
import { describe, expect, it } from 'vitest';
import { needsRevival, resolveRefusal } from '../../shared/store/repairs.js';
import {
  BACKFILL_MAX_SLOTS,
  BackfillRequestError,
  countSlotsInRange,
  planBackfill,
  slotsInRange,
} from '../../shared/operations/backfill.js';
import { UNLIMITED_GUARD } from '../../shared/schedule/slots.js';
import { RunStatus, type Run } from '../../shared/core/vocabulary.js';
import { userInfo } from 'node:os';
import { jobsOf, operatorOf, parseInstant, parseRunKey, parseSince, parseStatuses } from '../../tools/ops/args.js';
import { fschedUsage, runFsched } from '../../tools/fsched-cli.js';
import { COMMANDS, runOps } from '../../tools/ops/cli.js';
import { cell, formatAge, printTable, UsageError, type OpsIo } from '../../tools/ops/io.js';
import { RUN_HEADERS, runRow } from '../../tools/ops/runs.js';
import { localTime } from '../../tools/ops/preview.js';
import { testJobs } from '../support/helpers.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), jobs: [] };
  return { io, out, err };
}

const run = (over: Partial<Run>): Run => ({
  job: 'j',
  slot: 0,
  shard: 0,
  shards: 1,
  runKey: 'j@1970-01-01T00:00:00.000Z',
  status: RunStatus.READY,
  fencingToken: 0,
  attempt: 0,
  createdAt: 0,
  ...over,
});

describe('argument parsers', () => {
  it('instants: ISO with or without offset (UTC when absent), dates, and nothing else', () => {
    expect(parseInstant('2026-03-08T07:30:00Z', 'from')).toBe(Date.UTC(2026, 2, 8, 7, 30));
    expect(parseInstant('2026-03-08T07:30', 'from')).toBe(Date.UTC(2026, 2, 8, 7, 30));
    expect(parseInstant('2026-03-08T02:30:00-05:00', 'from')).toBe(Date.UTC(2026, 2, 8, 7, 30));
    expect(parseInstant('2026-03-08', 'from')).toBe(Date.UTC(2026, 2, 8));
    for (const bad of ['yesterday', '03/08/2026', '2026-13-45T00:00:00Z', '']) {
      expect(() => parseInstant(bad, 'from')).toThrow(UsageError);
    }
    expect(() => parseInstant('soon', 'to')).toThrow(/field "to"/);
  });

  it('impossible dates and times are refused naming the part, never rolled over into another instant (2026-02-30 is not March 2nd, 24:00 not the next midnight)', () => {
    const refused: [string, RegExp][] = [
      ['2026-02-30', /field "from": not a real instant: "2026-02-30" has no day 30 of 2026-02 \(it has 28 days\)/],
      ['2026-02-29T00:00:00Z', /has no day 29 of 2026-02/],
      ['2026-13-01', /has no month 13/],
      ['2026-00-10T00:00Z', /has no month 00/],
      ['2026-04-31T10:00', /has no day 31 of 2026-04/],
      ['2026-03-01T24:00', /has no hour 24/],
      ['2026-03-01T23:60:00Z', /has no minute 60/],
      ['2026-03-01T23:59:60Z', /has no second 60/],
      ['2026-03-01T10:00:00+15:00', /has no offset \+15:00/],
    ];
    for (const [raw, message] of refused) expect(() => parseInstant(raw, 'from'), raw).toThrow(message);
    // The real ones still read as before: a leap day, the last second of a day.
    expect(parseInstant('2028-02-29', 'from')).toBe(Date.UTC(2028, 1, 29));
    expect(parseInstant('2026-12-31T23:59:59Z', 'to')).toBe(Date.UTC(2026, 11, 31, 23, 59, 59));
  });

  it('an impossible date in any command is exit 2 with one line naming the field, before any stack is touched', async () => {
    const jobs = testJobs([{ name: 'alpha', schedule: '* * * * *', handler: 'noop' }]);
    for (const argv of [
      ['backfill', 'alpha', '--from', '2026-02-30', '--to', '2026-03-01'],
      ['preview', '--schedule', '0 * * * *', '--from', '2026-13-01'],
      ['runs', '--job', 'alpha', '--until', '2026-03-01T24:00'],
    ]) {
      const c = capture();
      expect(await runOps([...argv, '--endpoints', '/nonexistent.json'], { ...c.io, jobs }), argv.join(' ')).toBe(2);
      expect(c.err, argv.join(' ')).toEqual([expect.stringMatching(/field "(from|until)": not a real instant/)]);
    }
  });

  it('every command that records an operator falls back alike: --by, else $USER, else $LOGNAME, else the OS account name', () => {
    const io = (env: NodeJS.ProcessEnv): OpsIo => ({ ...capture().io, env });
    expect(operatorOf({ by: 'carol' }, io({ USER: 'alice' }))).toBe('carol');
    expect(operatorOf({}, io({ USER: 'alice', LOGNAME: 'bob' }))).toBe('alice');
    expect(operatorOf({}, io({ LOGNAME: 'bob' }))).toBe('bob');
    expect(operatorOf({ by: '  ' }, io({ USER: '', LOGNAME: 'bob' }))).toBe('bob');
    expect(operatorOf({}, io({}))).toBe(userInfo().username);
  });

  it('since: a duration before now, or an instant', () => {
    const now = Date.UTC(2026, 0, 2);
    expect(parseSince('24h', now, 'since')).toBe(Date.UTC(2026, 0, 1));
    expect(parseSince('90m', now, 'since')).toBe(now - 90 * 60_000);
    expect(parseSince('2025-12-31T00:00:00Z', now, 'since')).toBe(Date.UTC(2025, 11, 31));
    expect(() => parseSince('a while', now, 'since')).toThrow(/field "since"/);
  });

  it('run keys: job@slotISO[#shard]', () => {
    expect(parseRunKey('payments-reconcile@2026-03-08T07:30:00.000Z')).toEqual({
      job: 'payments-reconcile',
      slot: Date.UTC(2026, 2, 8, 7, 30),
      shard: 0,
    });
    expect(parseRunKey('sharded@2026-03-08T07:30:00.000Z#3')).toEqual({ job: 'sharded', slot: Date.UTC(2026, 2, 8, 7, 30), shard: 3 });
    for (const bad of ['nojob', '@2026-03-08T07:30:00Z', 'Job@2026-03-08T07:30:00Z', 'j@notatime', 'j@2026-03-08T07:30:00Z#x']) {
      expect(() => parseRunKey(bad), bad).toThrow(/field "runKey"/);
    }
  });

  it('states are case-insensitive and checked', () => {
    expect(parseStatuses('dead,Running')).toEqual(['DEAD', 'RUNNING']);
    expect(() => parseStatuses('done')).toThrow(/field "state"/);
  });

  it('ages and local times read naturally', () => {
    expect(formatAge(42_000)).toBe('42s');
    expect(formatAge(185_000)).toBe('3m05s');
    expect(formatAge(2 * 3_600_000 + 3 * 60_000)).toBe('2h03m');
    expect(localTime(Date.UTC(2026, 2, 8, 7, 30), 'America/New_York')).toBe('2026-03-08 03:30:00 -04:00');
    expect(localTime(Date.UTC(2026, 0, 1), 'UTC')).toBe('2026-01-01 00:00:00 +00:00');
    expect(localTime(Date.UTC(2026, 9, 4, 15, 45), 'Australia/Lord_Howe')).toBe('2026-10-05 02:45:00 +11:00');
  });
});

describe('dispatch and exit codes', () => {
  it('no command or an unknown one: exit 2 with one line; --help: usage on stdout, exit 0', async () => {
    const none = capture();
    expect(await runOps([], none.io)).toBe(2);
    expect(none.err).toHaveLength(1);
    const unknown = capture();
    expect(await runOps(['explode'], unknown.io)).toBe(2);
    expect(unknown.err[0]).toContain('"command"');
    const help = capture();
    expect(await runOps(['--help'], help.io)).toBe(0);
    expect(help.out.join('\n')).toContain('redrive');
    const commandHelp = capture();
    expect(await runOps(['backfill', '--help'], commandHelp.io)).toBe(0);
    expect(commandHelp.out[0]).toContain('--max-per-second');
  });

  it('fsched --help lists every command of the ops CLI (trigger was missing from a hand-written list)', async () => {
    const c = capture();
    expect(await runFsched(['--help'], c.io)).toBe(0);
    expect(c.out).toEqual(fschedUsage());
    const listed = /the ops CLI: (.*) \(fsched ops --help\)/.exec(c.out.join('\n'))?.[1]?.split(', ');
    expect(listed).toEqual(Object.keys(COMMANDS));
    expect(listed).toContain('trigger');
  });

  it('an unknown option or two targets: exit 2 naming it', async () => {
    const c = capture();
    expect(await runOps(['status', '--colour'], c.io)).toBe(2);
    expect(c.err[0]).toContain('"colour"');
    const two = capture();
    expect(await runOps(['status', '--local', '--stack', 'X'], two.io)).toBe(2);
    expect(two.err[0]).toContain('"target"');
  });

  it('--partitions is not an ops option (pause follows the job whatever the partition count): exit 2 naming it, in every command', async () => {
    for (const name of Object.keys(COMMANDS)) {
      const c = capture();
      expect(await runOps([name, '--partitions', '4'], c.io), name).toBe(2);
      expect(c.err, name).toHaveLength(1);
      expect(c.err[0], name).toContain('"partitions"');
    }
  });

  it('target options may come before the command', async () => {
    const c = capture();
    expect(
      await runOps(
        ['--region', 'eu-west-1', 'preview', '--schedule', '0 0 * * *', '--from', '2026-01-01', '--to', '2026-01-03', '--json'],
        c.io,
      ),
    ).toBe(0);
    expect(JSON.parse(c.out.join(''))).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z']);
  });
});

describe('every command alike', () => {
  const JOBS = testJobs([{ name: 'alpha', schedule: '* * * * *', handler: 'noop' }]);
  const io = () => {
    const c = capture();
    return { ...c, io: { ...c.io, jobs: JOBS } as OpsIo };
  };

  it('an unknown job is exit 2 with one line naming field "job", before any stack is touched, in every command that takes one', async () => {
    // No target is reachable here (the stack does not exist): the job is refused first.
    const target = ['--endpoints', '/nonexistent/endpoints.json'];
    const lines: string[][] = [
      ['runs', '--job', 'nope', ...target],
      ['jobs', '--job', 'nope', ...target],
      ['pause', 'nope', ...target],
      ['resume', 'nope', ...target],
      ['backfill', 'nope', '--from', '2026-01-01', '--to', '2026-01-02', ...target],
      ['retry', '--job', 'nope', ...target],
      ['retry', 'nope@2026-01-01T00:00:00.000Z', ...target],
      ['preview', '--job', 'nope'],
    ];
    for (const args of lines) {
      const c = io();
      expect(await runOps(args, c.io), args.join(' ')).toBe(2);
      expect(c.out, args.join(' ')).toEqual([]);
      expect(c.err, args.join(' ')).toHaveLength(1);
      expect(c.err[0], args.join(' ')).toMatch(/field "job": no configured job "nope"; configured: alpha/);
    }
  });

  it.each(Object.keys(COMMANDS))('%s --help: one line per flag it parses, each explained, defaults named; exit 0', async (name) => {
    const c = io();
    expect(await runOps([name, '--help'], c.io)).toBe(0);
    expect(c.err).toEqual([]);
    expect(c.out[0]).toMatch(new RegExp(`^usage: fsched ops ${name}\\b`));
    const flagLines = c.out.filter((l) => /^  --/.test(l));
    const flags = flagLines.map((l) => /^  --([a-z-]+)/.exec(l)![1]);
    // Exactly once each, every one explained.
    expect(new Set(flags).size).toBe(flags.length);
    for (const line of flagLines) expect(line, line).not.toContain('(undocumented)');
    for (const line of flagLines) expect(line, line).toMatch(/^  --\S+(?: \S+)?(?:, -h)?\s{2,}\S/);
    // The target flags everywhere but in preview, which reads no stack.
    for (const common of ['json', 'help']) expect(flags).toContain(common);
    for (const target of ['local', 'endpoints', 'stack', 'region']) {
      if (name === 'preview') expect(flags).not.toContain(target);
      else expect(flags).toContain(target);
    }
    expect(c.out.find((l) => l.startsWith('  --stack')) ?? '(default: FencedScheduler)').toContain('(default: FencedScheduler)');
  });

  it('help names the defaults of the flags that have one', async () => {
    const help = async (name: string) => {
      const c = io();
      expect(await runOps([name, '--help'], c.io)).toBe(0);
      return c.out.join('\n');
    };
    expect(await help('status')).toMatch(/--since ISO\|DURATION .*\(default: 24h\)/);
    expect(await help('runs')).toMatch(/--limit N .*\(default: 50\)/);
    expect(await help('backfill')).toMatch(/--max-per-second N .*\(default: 10\)/);
    expect(await help('preview')).toMatch(/--limit N .*\(default: 10 without --to/);
    expect(await help('retry')).toMatch(/--state S\[,S\] .*\(default: DEAD\)/);
    expect(await help('pause')).toMatch(/--by NAME .*\(default: \$USER, else \$LOGNAME, else the OS account name\)/);
  });
});

describe('tables keep their columns', () => {
  it('a long error over several lines is cut with an ellipsis on one line in the LAST ERROR column; the rows stay one line each', () => {
    const trace = `UPSTREAM_503: bank API unavailable\n    at fetchStatement (handlers/payments.ts:42:11)\n${'    at next (node:internal)\n'.repeat(20)}`;
    const dead = run({ runKey: 'j@2026-01-01T00:00:00.000Z', status: RunStatus.DEAD, lastError: { code: 'UPSTREAM_503', message: trace } });
    const row = runRow(dead, 0);
    const error = row[RUN_HEADERS.indexOf('LAST ERROR')] as string;
    expect(error).toHaveLength(80);
    expect(error.endsWith('…')).toBe(true);
    expect(error).toMatch(/^UPSTREAM_503: UPSTREAM_503: bank API unavailable at fetchStatement/);
    const out: string[] = [];
    printTable({ stdout: (l) => out.push(l), stderr: () => undefined }, RUN_HEADERS, [
      row,
      runRow(run({ runKey: 'j@2026-01-01T00:01:00.000Z' }), 0),
    ]);
    expect(out).toHaveLength(3);
    // Both rows' STATUS cells start under the header.
    const at = out[0]!.indexOf('STATUS');
    expect(out.slice(1).map((l) => l.slice(at).split(' ')[0])).toEqual(['DEAD', 'READY']);
  });

  it('a cell is flattened to one line and cut only when longer than its width', () => {
    expect(cell('short', 10)).toBe('short');
    expect(cell('exactly10!', 10)).toBe('exactly10!');
    expect(cell('one\ntwo\tthree', 40)).toBe('one two three');
    expect(cell('a'.repeat(50), 10)).toBe(`${'a'.repeat(9)}…`);
    expect(cell(undefined, 10)).toBeUndefined();
  });
});

describe('repair rules', () => {
  const now = 1_000_000;
  it('resolve refuses a lease not past its end by the takeover margin (an operator clock may be off) unless forced, and terminal runs other than DEAD', () => {
    expect(resolveRefusal(run({ status: RunStatus.RUNNING, leaseUntil: now + 10_000 }), now)).toMatch(
      /not 60s past by this machine's clock/,
    );
    // A laptop clock 25 s fast sees a lease with 20 s left as 5 s expired: still inside the 60 s margin.
    expect(resolveRefusal(run({ status: RunStatus.RUNNING, leaseUntil: now - 5_000 }), now)).toMatch(/--force/);
    expect(resolveRefusal(run({ status: RunStatus.RUNNING, leaseUntil: now - 1_000 }), now, 2_000)).toMatch(/not 2s past/);
    expect(resolveRefusal(run({ status: RunStatus.RUNNING, leaseUntil: now - 3_000 }), now, 2_000)).toBeUndefined();
    expect(resolveRefusal(run({ status: RunStatus.RUNNING, leaseUntil: now + 10_000 }), now, 60_000, { force: true })).toBeUndefined();
    for (const status of [RunStatus.SUCCEEDED, RunStatus.SKIPPED, RunStatus.SUPERSEDED, RunStatus.MANUAL]) {
      expect(resolveRefusal(run({ status }), now)).toMatch(/already/);
    }
    for (const status of [RunStatus.DEAD, RunStatus.READY, RunStatus.RETRY, RunStatus.UNKNOWN])
      expect(resolveRefusal(run({ status }), now)).toBeUndefined();
  });

  it('redrive revives DEAD runs and RUNNING ones with an expired lease and no attempt left, nothing else', () => {
    expect(needsRevival(run({ status: RunStatus.DEAD }), 3, now)).toBe(true);
    expect(needsRevival(run({ status: RunStatus.RUNNING, leaseUntil: now - 61_000, attempt: 3 }), 3, now)).toBe(true);
    // Expired by a worker's allowance but not by the operator's margin: left alone.
    expect(needsRevival(run({ status: RunStatus.RUNNING, leaseUntil: now - 10_000, attempt: 3 }), 3, now)).toBe(false);
    expect(needsRevival(run({ status: RunStatus.RUNNING, leaseUntil: now - 61_000, attempt: 2 }), 3, now)).toBe(false);
    expect(needsRevival(run({ status: RunStatus.RUNNING, leaseUntil: now + 10_000, attempt: 3 }), 3, now)).toBe(false);
    for (const status of [RunStatus.SUCCEEDED, RunStatus.READY, RunStatus.RETRY, RunStatus.MANUAL, RunStatus.SKIPPED]) {
      expect(needsRevival(run({ status }), 3, now)).toBe(false);
    }
  });
});

describe('backfill range', () => {
  const [job] = testJobs([{ name: 'm', schedule: '* * * * *', handler: 'noop' }]);
  const T = Date.UTC(2026, 0, 1);
  it('is [from, to): the slot at from is in, the slot at to is out', () => {
    expect(slotsInRange(job!, T, T + 3 * 60_000)).toEqual([T, T + 60_000, T + 120_000]);
    expect(slotsInRange(job!, T + 1, T + 60_001)).toEqual([T + 60_000]);
  });

  it('refuses the future, an empty or inverted range, and too many slots without force', () => {
    const check = (from: number, to: number, now: number, force = false) => {
      try {
        planBackfill({ job: job!, from, to, force }, now);
        return undefined;
      } catch (error) {
        expect(error).toBeInstanceOf(BackfillRequestError);
        return (error as BackfillRequestError).field;
      }
    };
    expect(check(T, T + 60_000, T + 30_000)).toBe('to');
    expect(check(T, T, T + 60_000)).toBe('to');
    const tooMany = (BACKFILL_MAX_SLOTS + 1) * 60_000;
    expect(check(T, T + tooMany, T + tooMany)).toBe('to');
    expect(check(T, T + tooMany, T + tooMany, true)).toBeUndefined();
    expect(check(T, T + BACKFILL_MAX_SLOTS * 60_000, T + tooMany)).toBeUndefined();
  });
});

describe('backfill --dry-run', () => {
  it("counts any range, past the real run's cap and past the slot code's own guard, without refusing or stopping short", () => {
    const [seconds] = testJobs([{ name: 'every-second', schedule: '* * * * * *', handler: 'noop' }]);
    const from = Date.UTC(2026, 0, 1);
    const to = from + 14 * 86_400_000; // 1,209,600 slots
    const counted = countSlotsInRange(seconds!, from, to);
    expect(counted.slots).toBe(1_209_600);
    expect(counted.slots).toBeGreaterThan(UNLIMITED_GUARD);
    expect(counted).toMatchObject({ firstSlot: from, lastSlot: to - 1_000 });
    expect(countSlotsInRange(seconds!, from, from)).toEqual({ slots: 0, firstSlot: undefined, lastSlot: undefined });
  }, 60_000);
});

describe("which jobs the checkout's config holds", () => {
  // Compared with the deployed config; the target decides whether the example jobs are in it
  // (test/integration/ops-stack-target.test.ts), else EXAMPLE_JOBS.
  const names = (io: OpsIo) => jobsOf(io).map((j) => j.name);
  const io = (extra: Partial<OpsIo>): OpsIo => ({ stdout: () => undefined, stderr: () => undefined, env: {}, ...extra });

  it("only the team's jobs, unless EXAMPLE_JOBS=true or the target runs the example jobs", () => {
    expect(names(io({}))).not.toContain('cache-refresh');
    expect(names(io({ env: { EXAMPLE_JOBS: 'true' } }))).toContain('cache-refresh');
    expect(names(io({ exampleJobs: true }))).toContain('cache-refresh');
    expect(names(io({ exampleJobs: false, env: { EXAMPLE_JOBS: 'true' } }))).not.toContain('cache-refresh');
  });
});
