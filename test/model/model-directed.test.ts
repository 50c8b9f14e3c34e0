/**
 * The directed scenarios of the model tester's proof (tools/model/directed.ts), one per defect
 * class of the correctness review, against the fixed code: each keeps every invariant here (in
 * its defect's patched tree, `npm run chaos -- --model --prove` shows it trips its class). And
 * every defect patch still applies to the code, so the proof searches for a defect that exists.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatViolations } from '../../shared/core/checker.js';
import { DIRECTED, runDirected } from '../../tools/model/directed.js';
import { DEFECT_CLASSES } from '../../tools/model/prove.js';
import { modelStack } from '../../tools/model/world.js';
import { sharedEndpoints } from '../support/stack.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('model tester: directed scenarios of the defect classes', () => {
  it.each(Object.entries(DIRECTED).map(([defect, scenario]) => ({ defect, title: scenario.title, scenario })))(
    'defect $defect, $title: no violation in the fixed code',
    async ({ scenario }) => {
      const stack = modelStack(sharedEndpoints());
      try {
        const { violations, story } = await runDirected(stack, scenario);
        expect(violations, `${formatViolations(violations.slice(0, 10))}\n${story}`).toEqual([]);
      } finally {
        stack.clients.dynamo.destroy();
        stack.clients.sqs.destroy();
      }
    },
    300_000,
  );

  it('every defect patch applies to the code as it is (git apply --check)', () => {
    for (const defect of DEFECT_CLASSES) {
      const checked = spawnSync('git', ['apply', '--check', `tools/model/defects/${defect.patch}.patch`], { cwd: root, encoding: 'utf8' });
      expect(`${defect.patch}: ${checked.status === 0 ? 'applies' : checked.stderr.trim()}`).toBe(`${defect.patch}: applies`);
    }
  });

  it('every defect class has a directed scenario', () => {
    expect(DEFECT_CLASSES.map((d) => d.defect).filter((d) => !DIRECTED[d])).toEqual([]);
  });
});
