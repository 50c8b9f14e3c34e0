/**
 * `ops preview` in-process (no stack): any job definition as JSON, validated like the config;
 * the next N slots without a range; fire times when the job has jitter; option values that start
 * with a dash.
 */
import { describe, expect, it } from 'vitest';
import { fireTimeOf } from '../../shared/schedule/jitter.js';
import { parseJobs } from '../../shared/schedule/job-schema.js';
import { nextSlotAfter, slotSpecOf, slotsBetween } from '../../shared/schedule/slots.js';
import { joinDashValues } from '../../tools/ops/args.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';

const NOW = Date.parse('2026-06-01T00:00:00Z');
const JOBS = parseJobs(
  [
    { name: 'hourly', schedule: '0 * * * *', handler: 'h' },
    { name: 'herd', schedule: '0 * * * *', handler: 'h', jitter: '10m' },
    { name: 'launch', schedule: { at: '2026-12-24T18:00:00' }, timezone: 'America/New_York', handler: 'h' },
  ],
  { handlers: ['h'] },
);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const io: OpsIo = {
    stdout: (l) => out.push(l),
    stderr: (l) => err.push(l),
    jobs: JOBS,
    now: () => NOW,
    calendars: { 'us-holidays': ['2026-07-03', '2026-12-25'] },
  };
  return { io, out, err, json: () => JSON.parse(out.join('\n')) as string[] };
}

async function preview(args: string[]) {
  const c = capture();
  const code = await runOps(['preview', ...args], c.io);
  return { ...c, code };
}

describe('preview --definition: any job entry, every field, validated like the config', () => {
  it('an interval with a phase: slots at epoch + n × every + phase', async () => {
    const r = await preview([
      '--definition',
      '{"schedule":{"every":"6h","phase":"1h"}}',
      '--from',
      '2026-06-01',
      '--to',
      '2026-06-02',
      '--json',
    ]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual([
      '2026-06-01T01:00:00.000Z',
      '2026-06-01T07:00:00.000Z',
      '2026-06-01T13:00:00.000Z',
      '2026-06-01T19:00:00.000Z',
    ]);
  });

  it('a one-time run in its zone, a window, and exclusions with the configured calendars', async () => {
    const once = await preview(['--definition', '{"schedule":{"at":"2026-12-24T18:00:00"},"timezone":"America/New_York"}', '--json']);
    expect(once.json()).toEqual(['2026-12-24T23:00:00.000Z']);
    const daily = await preview([
      '--definition',
      JSON.stringify({
        schedule: '0 9 * * *',
        startAt: '2026-07-02',
        endAt: '2026-07-06',
        exclude: ['2026-07-04', { calendar: 'us-holidays' }],
      }),
      '--json',
    ]);
    expect(daily.json()).toEqual(['2026-07-02T09:00:00.000Z', '2026-07-05T09:00:00.000Z']);
  });

  it('a bad field: exit 2, one line on stderr naming the field and the value as written, nothing on stdout', async () => {
    const cases: [string, string][] = [
      ['{"schedule":{"every":"90s","phase":"2m"}}', 'schedule.phase'],
      ['{"schedule":{"at":"someday"}}', 'schedule.at'],
      ['{"schedule":"* * *"}', 'schedule'],
      ['{"schedule":"* * * * *","jitter":"1h"}', 'jitter'],
      ['{"schedule":"* * * * *","exclude":[{"calendar":"uk-holidays"}]}', 'exclude.0.calendar'],
      ['{"schedule":"* * * * *","handler":"not-registered"}', 'handler'],
      ['{"schedule":"* * * * *","timezone":"Mars/Olympus"}', 'timezone'],
      ['{"schedule":"* * * * *","retries":3}', 'retries'],
      ['{"schedule":', 'definition'],
      ['["* * * * *"]', 'definition'],
    ];
    for (const [definition, field] of cases) {
      const r = await preview(['--definition', definition, '--json']);
      expect(r.code, definition).toBe(2);
      expect(r.out).toEqual([]);
      expect(r.err).toHaveLength(1);
      expect(r.err[0], definition).toContain(`field "${field}"`);
    }
    const phase = await preview(['--definition', '{"schedule":{"every":"90s","phase":"2m"}}']);
    expect(phase.err[0]).toContain('shorter than every "90s" (value: "2m")');
  });

  it('every error of the entry is on its one line, not only the first', async () => {
    const r = await preview(['--definition', '{"schedule":"*/61 * * * *","timezone":"Mars/Olympus","handler":"nope"}']);
    expect(r.code).toBe(2);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(
      /field "schedule": minute field "\*\/61": step 61 is larger than the field's range 0-59.*\(value: "\*\/61 \* \* \* \*"\)/,
    );
    expect(r.err[0]).toContain('; also field "timezone": unknown time zone "Mars/Olympus"');
    expect(r.err[0]).toContain('; also field "handler": unknown handler');
  });

  it('cannot be combined with --job or the --schedule options', async () => {
    expect((await preview(['--definition', '{"schedule":"* * * * *"}', '--job', 'hourly'])).code).toBe(2);
    const r = await preview(['--definition', '{"schedule":"* * * * *"}', '--timezone', 'UTC']);
    expect(r.code).toBe(2);
    expect(r.err[0]).toContain('field "timezone"');
  });
});

describe('without --to: the next slots, not a day of them', () => {
  it('--job J lists the next 10 slots from now; --limit N changes how many', async () => {
    const ten = await preview(['--job', 'hourly', '--json']);
    expect(ten.json()).toHaveLength(10);
    expect(ten.json()[0]).toBe('2026-06-01T00:00:00.000Z'); // a slot at `from` (now) is included
    expect(ten.json()[9]).toBe('2026-06-01T09:00:00.000Z');
    const three = await preview(['--job', 'hourly', '--limit', '3', '--from', '2026-06-02T10:30:00Z', '--json']);
    expect(three.json()).toEqual(['2026-06-02T11:00:00.000Z', '2026-06-02T12:00:00.000Z', '2026-06-02T13:00:00.000Z']);
  });

  it('--job of an example job works without --local or EXAMPLE_JOBS: preview reads no stack, so it knows the example jobs too', async () => {
    const out: string[] = [];
    const err: string[] = [];
    // The jobs as an operator's checkout has them: no injected list, no EXAMPLE_JOBS in the environment.
    const io: OpsIo = { stdout: (l) => out.push(l), stderr: (l) => err.push(l), now: () => NOW, env: {} };
    expect(await runOps(['preview', '--job', 'cache-refresh', '--limit', '3', '--json'], io), err.join('\n')).toBe(0);
    expect(JSON.parse(out.join('\n'))).toEqual(['2026-06-01T00:00:00.000Z', '2026-06-01T00:00:10.000Z', '2026-06-01T00:00:20.000Z']);
    // A job that is neither the team's nor an example is still exit 2 naming the field.
    expect(await runOps(['preview', '--job', 'nope'], { ...io, stdout: () => undefined })).toBe(2);
    expect(err.at(-1)).toMatch(/field "job": no configured job "nope"; configured: .*cache-refresh/);
  });

  it('a one-time job lists its one slot, then nothing after it', async () => {
    expect((await preview(['--job', 'launch', '--json'])).json()).toEqual(['2026-12-24T23:00:00.000Z']);
    expect((await preview(['--job', 'launch', '--from', '2026-12-25', '--json'])).json()).toEqual([]);
  });

  it('with a range, --limit caps the list instead of refusing a wide window', async () => {
    const r = await preview(['--schedule', '* * * * * *', '--from', '2026-01-01', '--to', '2026-02-01', '--limit', '2', '--json']);
    expect(r.json()).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z']);
    expect((await preview(['--schedule', '* * * * * *', '--from', '2026-01-01', '--to', '2026-02-01', '--json'])).code).toBe(2);
  });
});

describe('jitter: fire times listed in firing order, the slot alongside in the table', () => {
  it('--json holds plain ISO fire times, each the planner-computed fire time of its slot', async () => {
    const r = await preview(['--job', 'herd', '--from', '2026-06-01', '--to', '2026-06-01T06:00:00Z', '--json']);
    const herd = JOBS.find((j) => j.name === 'herd')!;
    const slots = slotsBetween(slotSpecOf(herd), NOW - 1, Date.parse('2026-06-01T06:00:00Z') - 1);
    expect(r.json()).toEqual(slots.map((slot) => new Date(fireTimeOf(herd, slot, nextSlotAfter(slotSpecOf(herd), slot))).toISOString()));
    const fires = r.json().map(Date.parse);
    fires.forEach((fire, i) => {
      expect(fire).toBeGreaterThanOrEqual(slots[i]!);
      expect(fire).toBeLessThan(slots[i]! + 10 * 60_000);
      if (i > 0) expect(fire).toBeGreaterThan(fires[i - 1]!);
    });
  });

  it('the table has a SLOT column only when the job has jitter', async () => {
    const jittered = await preview(['--job', 'herd', '--limit', '2']);
    expect(jittered.out[1]).toMatch(/^LOCAL\s+UTC\s+SLOT\s+DST$/);
    expect(jittered.out[2]).toMatch(/^2026-06-01 00:\d\d:\d\d \+00:00\s+2026-06-01T00:\d\d:\d\d\.\d{3}Z\s+2026-06-01T00:00:00\.000Z\s+-$/);
    const plain = await preview(['--job', 'hourly', '--limit', '2']);
    expect(plain.out[1]).toMatch(/^LOCAL\s+UTC\s+DST$/);
  });
});

describe("cron dialect: preview and the planner agree (same code), Vixie's day rule", () => {
  it('0 16 */2 * sat lists odd-day Saturdays; 0 16 1,15 * sat the 1st, the 15th and Saturdays', async () => {
    const and = await preview(['--schedule', '0 16 */2 * sat', '--from', '2026-06-01', '--to', '2026-07-01', '--json']);
    expect(and.json()).toEqual(['2026-06-13T16:00:00.000Z', '2026-06-27T16:00:00.000Z']);
    const or = await preview(['--schedule', '0 16 1,15 * sat', '--from', '2026-06-01', '--to', '2026-06-16', '--json']);
    expect(or.json()).toEqual([
      '2026-06-01T16:00:00.000Z',
      '2026-06-06T16:00:00.000Z',
      '2026-06-13T16:00:00.000Z',
      '2026-06-15T16:00:00.000Z',
    ]);
  });

  it('repeated values and MON-SUN ranges are accepted', async () => {
    const r = await preview(['--schedule', '0 9 * * 0,7', '--limit', '2', '--json']);
    expect(r.json()).toEqual(['2026-06-07T09:00:00.000Z', '2026-06-14T09:00:00.000Z']);
    expect((await preview(['--schedule', '0 9 * * MON-SUN', '--limit', '7', '--json'])).json()).toHaveLength(7);
  });
});

describe('option values starting with a dash reach their own validation, not "argument is ambiguous"', () => {
  it.each([
    [['--schedule', '-5 * * * *'], 'schedule', /minute field "-5"/],
    [['--schedule', '* * * * *', '--from', '-1d'], 'from', /ISO-8601/],
    [['--schedule', '* * * * *', '--limit', '-3'], 'limit', /positive integer/],
  ])('%j names %s', async (args, field, message) => {
    const r = await preview(args);
    expect(r.code).toBe(2);
    expect(r.err[0]).toContain(`field "${field}"`);
    expect(r.err[0]).toMatch(message);
    expect(r.err[0]).not.toMatch(/ambiguous/);
  });

  it('a forgotten value followed by another option is still reported as such', async () => {
    const r = await preview(['--schedule', '* * * * *', '--from', '--json']);
    expect(r.code).toBe(2);
    expect(joinDashValues(['--from', '--json'], { from: { type: 'string' }, json: { type: 'boolean' } })).toEqual(['--from', '--json']);
    expect(joinDashValues(['--from', '-1d', '--json'], { from: { type: 'string' }, json: { type: 'boolean' } })).toEqual([
      '--from=-1d',
      '--json',
    ]);
  });
});
