import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('the lane model (models/lanes.pml, checked by Spin)', () => {
  it('verifies every fault profile and finds a counterexample for every put-back hazard', () => {
    const spin = spawnSync('spin', ['-V'], { encoding: 'utf8' });
    if (spin.error || spin.status !== 0) {
      throw new Error('spin is not installed: the lane model cannot be checked (apt-get install -y spin; .ci/run installs it)');
    }
    const run = spawnSync(process.execPath, [join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(root, 'tools', 'model-check.ts')], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 16 * 1024 * 1024,
    });
    const lines = run.stdout.trim().split('\n');
    const summary = JSON.parse(lines.at(-1) ?? '{}') as { models: number; errors: number; hazardsFound: string; states: number };
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    expect(summary.errors).toBe(0);
    const [found, total] = summary.hazardsFound.split('/').map(Number);
    expect(total).toBeGreaterThanOrEqual(3);
    expect(found).toBe(total);
    expect(summary.models).toBeGreaterThan(0);
  });
});
