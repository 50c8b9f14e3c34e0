/**
 * The README and docs/ say what the code does: the example error message is the parser's own, the
 * deploy parameters are exactly the context keys the app accepts, every relative link resolves in
 * a clone (nothing points outside the repository), and no doc cites an issue number.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectPath } from '../../infra/lambda-defaults.js';
import { CONTEXT_PARAMETERS } from '../../infra/scheduler-app.js';
import { InvalidJobConfigError } from '../../infra/scheduler-stack.js';
import { JobConfigError, jobFieldNames, parseJobs } from '../../shared/schedule/job-schema.js';
import { handlers } from '../../shared/handlers/index.js';

const README = readFileSync(projectPath('README.md'), 'utf8');
const DOCS = ['README.md', ...readdirSync(projectPath('docs')).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'));

/** A README default as written (`'45s'`, `{ gap: 'shift' }`, `1`): a JS literal of strings, numbers, booleans and objects. */
function literal(written: string): unknown {
  const code = /^`(.*)`$/.exec(written)?.[1];
  if (code === undefined) throw new Error(`README default ${written} is not a literal in backticks`);
  return JSON.parse(code.replace(/'/g, '"').replace(/([{,]\s*)(\w+):/g, '$1"$2":'));
}

describe('README and docs', () => {
  it('the example of an invalid job shows the message synth prints for it', () => {
    const example = /`(invalid job configuration \(shared\/jobs\.ts\): job "nightly-report"[^`]*)`/.exec(README)?.[1];
    expect(example).toBeDefined();
    // Step 1 of "Adding a job" registered the handler; step 2 misspelt the zone.
    let problems: string[] = [];
    try {
      parseJobs([{ name: 'nightly-report', schedule: '30 2 * * *', timezone: 'Europe/Londn', handler: 'nightly-report' }], {
        handlers: [...Object.keys(handlers), 'nightly-report'],
      });
    } catch (error) {
      if (!(error instanceof JobConfigError)) throw error;
      problems = error.message.split('\n');
    }
    expect(example).toBe(new InvalidJobConfigError('shared/jobs.ts', problems).message);
  });

  it('lists exactly the context keys the app accepts, under their real names', () => {
    const section = README.slice(README.indexOf('## Deploying'), README.indexOf('## Operating'));
    const keys = [...section.matchAll(/^\| `([A-Za-z]+)` \|/gm)].map((m) => m[1]);
    expect(keys).toEqual(Object.keys(CONTEXT_PARAMETERS));
  });

  it("the README's job-field defaults are the code's (a README default of 5m for timeout, when the code's is 45s, was refused at synth as written)", () => {
    const section = README.slice(README.indexOf('Required fields:'), README.indexOf('## Scheduling policies'));
    const rows = [...section.matchAll(/^\| (`[^|]+`) \| ([^|]+) \|$/gm)].map((m) => ({
      fields: [...m[1]!.matchAll(/`(\w+)`/g)].map((f) => f[1]!),
      written: m[2]!.trim(),
    }));
    const minimal = { name: 'defaults', schedule: '* * * * *', handler: 'cache-refresh' };
    const parse = (extra: Record<string, unknown>): Record<string, unknown> =>
      Object.fromEntries(
        Object.entries(parseJobs([{ ...minimal, ...extra }], { handlers: Object.keys(handlers), workerTimeoutMs: 900_000 })[0]!),
      );
    const defaults = parse({});
    const documented = new Set(rows.flatMap((row) => row.fields));
    // Every optional field of the schema is in the table, and nothing else.
    const optional = jobFieldNames().filter((field) => !(field in minimal));
    expect([...documented].sort()).toEqual(optional.sort());
    for (const { fields, written } of rows) {
      for (const field of fields) {
        if (written === 'none') expect(defaults[field], field).toBeUndefined();
        else if (written === 'lease / 3') expect(defaults[field], field).toBe((defaults.lease as number) / 3);
        else expect(defaults[field], `${field}: README says ${written}`).toEqual(parse({ [field]: literal(written) })[field]);
      }
    }
  });

  it.each(DOCS)('%s: every relative link resolves inside the repository', (doc) => {
    const text = readFileSync(projectPath(doc), 'utf8');
    const links = [...text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    for (const link of links) {
      const target = join(dirname(projectPath(doc)), link);
      expect(target.startsWith(projectPath('.')), `${doc}: ${link} leaves the repository`).toBe(true);
      expect(existsSync(target), `${doc}: ${link}`).toBe(true);
    }
  });

  it.each(DOCS)('%s cites no issue number', (doc) => {
    expect(readFileSync(projectPath(doc), 'utf8')).not.toMatch(/\bissue\s*#?\d+/i);
  });
});
