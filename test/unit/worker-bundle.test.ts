/**
 * The worker bundle carries neither the cron parser nor the slot engine: it validates the config
 * without the cron grammar and takes fire times from jitter.ts, which depends on nothing.
 */
import { join, relative } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../infra/lambda-defaults.js';
import { lambdaBuildOptions } from '../../tools/bench/bundle.js';

async function inputsOf(entry: string): Promise<string[]> {
  const result = await build({
    ...lambdaBuildOptions(),
    entryPoints: [join(PROJECT_ROOT, entry)],
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  return Object.keys(result.metafile.inputs).map((p) => relative(PROJECT_ROOT, join(PROJECT_ROOT, p)));
}

describe('bundles', () => {
  it('functions/worker.ts: no cron-parser, no slots.ts / cron.ts / zone.ts; the config schema is there', async () => {
    const inputs = await inputsOf('functions/worker.ts');
    expect(inputs.filter((p) => p.includes('cron-parser') || /shared\/core\/(slots|cron|zone|schedule-resolve)\.ts$/.test(p))).toEqual([]);
    expect(inputs).toContain('shared/schedule/schedule-schema.ts');
  });

  it('shared/schedule/jitter.ts alone imports nothing', async () => {
    expect(await inputsOf('shared/schedule/jitter.ts')).toEqual(['shared/schedule/jitter.ts']);
  });

  it('functions/planner.ts does carry the slot engine (the check above would notice a renamed file)', async () => {
    const inputs = await inputsOf('functions/planner.ts');
    expect(inputs).toContain('shared/schedule/slots.ts');
    expect(inputs.some((p) => p.includes('cron-parser'))).toBe(true);
  });
});
