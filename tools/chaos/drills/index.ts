/** The six drills of DESIGN §9 and the share of `npm run chaos` runs each gets. */
import type { Drill } from '../drill.js';
import { failingJobDrill } from './failing-job.js';
import { ledgerUnreachableDrill } from './ledger-unreachable.js';
import { plannerDownDrill } from './planner-down.js';
import { putDroppedDrill } from './put-dropped.js';
import { workerKilledDrill } from './worker-killed.js';
import { workerPausedDrill } from './worker-paused.js';

export interface DrillEntry {
  readonly name: string;
  /** The drill's letter (docs/design.md §9 lists the drills). */
  readonly letter: string;
  readonly drill: Drill;
  /** Share of the total run budget. Cheap in-process drills carry most runs. */
  readonly weight: number;
  /** Real-time drills that mostly wait (leases, SQS delays): run beside the CPU-bound ones. */
  readonly waits: boolean;
}

export const DRILLS: readonly DrillEntry[] = [
  { name: 'put-dropped', letter: 'a', drill: putDroppedDrill, weight: 0.36, waits: false },
  { name: 'worker-killed', letter: 'b', drill: workerKilledDrill, weight: 0.05, waits: true },
  { name: 'worker-paused', letter: 'c', drill: workerPausedDrill, weight: 0.05, waits: true },
  { name: 'ledger-unreachable', letter: 'd', drill: ledgerUnreachableDrill, weight: 0.05, waits: true },
  { name: 'planner-down', letter: 'e', drill: plannerDownDrill, weight: 0.36, waits: false },
  { name: 'failing-job', letter: 'f', drill: failingJobDrill, weight: 0.13, waits: true },
];

export { failingJobDrill, ledgerUnreachableDrill, plannerDownDrill, putDroppedDrill, workerKilledDrill, workerPausedDrill };
