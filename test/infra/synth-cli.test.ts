/**
 * `npm run synth` with a bad configuration: the synth entry, run as CDK runs it (a child process,
 * context in CDK_CONTEXT_JSON), prints the one-line message naming what is wrong and exits 1,
 * with no stack trace.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectPath } from '../../infra/lambda-defaults.js';
import { cdkJsonContext } from './support.js';

const outdir = mkdtempSync(join(tmpdir(), 'synth-cli-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

function synth(entry: string, context: Record<string, unknown>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', projectPath(entry)],
      {
        cwd: projectPath('.'),
        env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJsonContext(), ...context }), CDK_OUTDIR: outdir },
        timeout: 120_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/** No V8 stack frame ("    at fn (file:line:col)") anywhere. */
const STACK_FRAME = /^\s+at .+[:(]/m;

describe('synth with a bad configuration (infra/app.ts)', () => {
  it('an unknown -c key: one line naming it, the near key and the valid ones; exit 1', async () => {
    const { code, stdout, stderr } = await synth('infra/app.ts', { triggerLagThreshold: '5' });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(
        /^unknown context key "triggerLagThreshold" \(did you mean "triggerLagThresholdSeconds"\?\); valid keys: stackName, .*oldestOpenRunAgeThresholdMinutes$/,
      ),
    ]);
    expect(stderr).not.toMatch(STACK_FRAME);
  });

  it('a value a construct refuses: named by its context key, not the construct prop; exit 1', async () => {
    const { code, stderr } = await synth('infra/app.ts', { plannerPartitions: '0' });
    expect(code).toBe(1);
    expect(stderr).toBe('context "plannerPartitions" must be an integer in [1, 64], got "0"\n');
  });

  it('a bad job: the job, the field and the value as written, on one line; exit 1', async () => {
    const { code, stderr } = await synth('test/infra/fixtures/bad-job-app.ts', {});
    expect(code).toBe(1);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(
      /^invalid job configuration \(jobs prop\): job "nightly-report": field "timezone": unknown time zone "Europe\/Londn" .*\(value: "Europe\/Londn"\)\n$/,
    );
    expect(stderr).not.toMatch(STACK_FRAME);
  });
});
