/**
 * `ops trigger <job> --idempotency-key K` as an operator runs it (README "Operating"): a command
 * that exits non-zero is run again with the same key, as the runbook says, at most `tries` times.
 * What the last try reported is recorded for report-checks.ts, which holds the model to it: each
 * run it named created runs or ends, and no manual run exists that no try reported.
 */
import { trigger } from '../../shared/operations/trigger.js';
import type { World } from './world.js';

/** Tries of one operator's trigger: the first and its repeats after a non-zero exit. */
export const TRIGGER_TRIES = 3;

let keys = 0;

export async function operatorTrigger(world: World, jobRef: number, tries = TRIGGER_TRIES): Promise<void> {
  if (world.jobs.length === 0) return;
  const job = world.jobs[jobRef % world.jobs.length]!;
  const key = `model-${++keys}`;
  const record = { job: job.name, key, runKeys: [] as string[] };
  world.reports.triggers.push(record);
  await world.opsActivity(`trigger ${job.name}`, async () => {
    for (let attempt = 1; attempt <= tries; attempt++) {
      const { clock, ledger, queue } = world.opsDeps();
      try {
        const report = await trigger({ ledger, queue, clock }, { job, by: 'model', idempotencyKey: key });
        record.runKeys = report.runs.map((r) => r.runKey);
        world.say(
          `ops trigger ${job.name} --idempotency-key ${key}: exit 0, ${report.repeated ? 'found' : 'created'} ${record.runKeys.join(', ')}${report.sendError ? ` (send failed: the sweeper sends them: ${report.sendError.slice(0, 80)})` : ''}`,
        );
        return;
      } catch (error) {
        world.say(
          `ops trigger ${job.name} --idempotency-key ${key}: exit 1 (try ${attempt} of ${tries}): ${error instanceof Error ? `${error.name}: ${error.message.slice(0, 120)}` : String(error)}`,
        );
        if (attempt === tries) throw error;
      }
    }
  });
}
