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
import { JobConfigError, parseJobs } from '../../shared/core/job-schema.js';
import { handlers } from '../../shared/handlers/index.js';

const README = readFileSync(projectPath('README.md'), 'utf8');
const DOCS = ['README.md', ...readdirSync(projectPath('docs')).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'));

describe('README and docs', () => {
  it('the example of an invalid job shows the message synth prints for it', () => {
    const example = /`(invalid job configuration \(shared\/jobs\.ts\): job "nightly-report"[^`]*)`/.exec(README)?.[1];
    expect(example).toBeDefined();
    // Step 1 of "Adding a job" registered the handler; step 2 misspelt the zone.
    let problems: string[] = [];
    try {
      parseJobs([{ name: 'nightly-report', schedule: '30 2 * * *', timezone: 'Europe/Londn', handler: 'nightly-report' }], { handlers: [...Object.keys(handlers), 'nightly-report'] });
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
