/**
 * Directed scenarios: one fixed setup and a fixed list of steps per defect class, run through the
 * same world, quiescence and checker as generated scenarios. `--prove` runs a class's directed
 * scenario in the patched tree before the search: it shows that the patch really puts the defect
 * back and that the checker names it (a patch that crashes the code instead, or no longer
 * applies, would make the search look for a defect that is not there). The same scenarios run
 * against the fixed code in `npm test` (test/model/model-directed.test.ts), with no violation.
 */
import fc from 'fast-check';
import type { CheckViolation } from '../verify/checker.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { RUN_QUEUES } from '../../shared/core/resources.js';
import { FaultKind } from './faults.js';
import { BehaviourKind } from './handlers.js';
import type { CallKind } from './ledger-view.js';
import { scheduleSoon, type JobChange } from './config-changes.js';
import { withTrait } from './commands.js';
import { operatorTrigger } from './operator-trigger.js';
import { World, type JobSpec, type ModelStack, type ScenarioSetup } from './world.js';

export type DirectedStep =
  | { readonly step: 'tick' }
  | { readonly step: 'run'; readonly ms: number }
  | { readonly step: 'advance'; readonly ms: number }
  | { readonly step: 'arm'; readonly container: number; readonly kind: CallKind; readonly fault: FaultKind; readonly count: number }
  | { readonly step: 'retry'; readonly prefer: RunStatus }
  | { readonly step: 'retry-job'; readonly job: number }
  | { readonly step: 'partitions'; readonly of: number }
  | { readonly step: 'many'; readonly count: number }
  | { readonly step: 'remove'; readonly job: number }
  | { readonly step: 'rollback-bulk' }
  | { readonly step: 'remove-backlogged' }
  | { readonly step: 'redrive' }
  | { readonly step: 'add'; readonly job: Partial<JobSpec> }
  | { readonly step: 'backfill'; readonly job: number; readonly agoMs: number; readonly spanMs: number }
  | { readonly step: 'arm-planner'; readonly kind: CallKind; readonly fault: FaultKind; readonly count: number }
  | { readonly step: 'arm-ops'; readonly kind: CallKind; readonly fault: FaultKind; readonly count: number }
  | { readonly step: 'change'; readonly job: number; readonly change: JobChange }
  | { readonly step: 'add-soon'; readonly job: Partial<JobSpec>; readonly offsetMs: number }
  | { readonly step: 'trigger'; readonly job: number };

export interface DirectedScenario {
  readonly title: string;
  readonly jobs: readonly Partial<JobSpec>[];
  readonly containers?: number;
  readonly sdkAttempts?: number;
  /** The planner's SDK attempts per call (1: an armed refusal fails the call, no SDK retry). @default 3 */
  readonly plannerSdkAttempts?: number;
  /** Open runs of a removed job the tables start with (`ScenarioSetup.inheritedOrphans`). @default none */
  readonly inheritedOrphans?: number;
  readonly steps: readonly DirectedStep[];
}

const MINUTE = 60_000;

function jobSpec(i: number, over: Partial<JobSpec>): JobSpec {
  return {
    name: `j${i}`,
    schedule: '* * * * *',
    overlap: 'parallel',
    misfire: { policy: 'all', afterMs: 300_000, maxPerTick: 10 },
    shards: 1,
    maxAttempts: 3,
    backoffBaseMs: 200,
    backoffMaxMs: 2_000,
    leaseMs: 15_000,
    timeoutMs: 4_000,
    startLeadMs: 0,
    checkpoints: false,
    reconcile: false,
    group: `own${i}`,
    behaviours: [{ kind: BehaviourKind.OK, workMs: 200, writes: 1 }],
    ...over,
  };
}

/** One scenario per defect class of the proof (prove.ts), by defect number. */
export const DIRECTED: Readonly<Record<number, DirectedScenario>> = {
  1: {
    title: 'a coalesce job with the next minute planned ahead',
    jobs: [{ overlap: 'coalesce' }],
    steps: [{ step: 'run', ms: 4 * MINUTE }],
  },
  2: {
    title: "a forbid-skip job whose holder's lane release is refused",
    jobs: [{ overlap: 'forbid-skip', maxAttempts: 1 }],
    sdkAttempts: 1,
    steps: [
      { step: 'arm', container: 0, kind: 'lane', fault: FaultKind.REFUSED, count: 2 },
      { step: 'run', ms: 4 * MINUTE },
    ],
  },
  3: {
    title: 'a run retried after a newer slot of another job wrote its item',
    jobs: [
      {
        group: 'shared',
        backoffBaseMs: 20_000,
        backoffMaxMs: 30_000,
        behaviours: [
          { kind: BehaviourKind.RETRYABLE, workMs: 100, writes: 0 },
          { kind: BehaviourKind.OK, workMs: 100, writes: 1 },
        ],
      },
      { schedule: '*/5 * * * * *', group: 'shared' },
    ],
    steps: [{ step: 'run', ms: 3 * MINUTE }],
  },
  4: {
    title: "a handler's increment whose response is lost after it committed, retried by the SDK",
    jobs: [{}],
    steps: [
      { step: 'arm', container: 0, kind: 'fenced-write', fault: FaultKind.LOST_RESPONSE, count: 1 },
      { step: 'run', ms: 2 * MINUTE },
    ],
  },
  5: {
    title: 'a zombie handler that writes after its attempt timed out',
    // The zombie sleeps past its attempt; its container thaws for the other job's next run, and it
    // writes its item again (nobody newer wrote it since: the fence alone would let it through).
    jobs: [
      {
        schedule: '*/2 * * * *',
        timeoutMs: 4_000,
        leaseMs: 15_000,
        maxAttempts: 1,
        behaviours: [{ kind: BehaviourKind.ZOMBIE, workMs: 200, writes: 1 }],
      },
      {},
    ],
    steps: [{ step: 'run', ms: 4 * MINUTE }],
  },
  6: {
    title: 'an outcome write refused once',
    jobs: [{}],
    sdkAttempts: 1,
    steps: [
      { step: 'arm', container: 0, kind: 'complete', fault: FaultKind.REFUSED, count: 1 },
      { step: 'run', ms: 2 * MINUTE },
    ],
  },
  7: {
    title: 'a claim whose response is lost after it committed, retried by the SDK',
    jobs: [{}],
    steps: [
      { step: 'arm', container: 0, kind: 'claim', fault: FaultKind.LOST_RESPONSE, count: 1 },
      { step: 'run', ms: 2 * MINUTE },
    ],
  },
  8: {
    title: '120 hourly jobs catching up after a three-hour planner outage',
    jobs: [{}],
    steps: [{ step: 'tick' }, { step: 'many', count: 120 }, { step: 'advance', ms: 3 * 60 * MINUTE }, { step: 'run', ms: 3 * MINUTE }],
  },
  9: {
    title: 'a run whose message was lost twice, watched behind more than 100 older watched runs',
    // j0 fires every second and backs its runs off for two minutes; removed while they wait, its
    // ~180 open runs come back as poison and stay watched for good (reported, never dispatched):
    // the oldest entries of the watch index. Then j1@00:05's message is lost (the planner's send
    // refused), and so is the sweep's first re-send: j1@00:05 is watched and lost, and only a
    // watch sweep that pages past the older entries ever sends it again.
    jobs: [
      {
        schedule: '* * * * * *',
        maxAttempts: 2,
        backoffBaseMs: 120_000,
        backoffMaxMs: 120_000,
        behaviours: [{ kind: BehaviourKind.RETRYABLE, workMs: 50, writes: 0 }],
      },
      { schedule: '*/5 * * * *' },
    ],
    plannerSdkAttempts: 1,
    steps: [
      { step: 'run', ms: 2 * MINUTE },
      { step: 'remove', job: 0 },
      { step: 'run', ms: 100_000 },
      { step: 'arm-planner', kind: 'sqs-send', fault: FaultKind.REFUSED, count: 1 },
      { step: 'run', ms: 3 * MINUTE },
      { step: 'arm-planner', kind: 'sqs-send', fault: FaultKind.REFUSED, count: 1 },
      { step: 'run', ms: 6 * MINUTE },
    ],
  },
  10: {
    title: 'plannerPartitions changed after a planner outage',
    jobs: [{ misfire: { policy: 'all', afterMs: 600_000, maxPerTick: 10 } }],
    steps: [{ step: 'tick' }, { step: 'advance', ms: 5 * MINUTE }, { step: 'partitions', of: 2 }, { step: 'run', ms: 3 * MINUTE }],
  },
  13: {
    title: 'a run DEAD with its result unknown, revived by ops retry',
    jobs: [{ reconcile: true, maxAttempts: 1, behaviours: [{ kind: BehaviourKind.UNKNOWN, workMs: 200, writes: 0 }] }],
    steps: [
      { step: 'run', ms: 150_000 },
      { step: 'retry', prefer: RunStatus.DEAD },
      { step: 'run', ms: MINUTE },
    ],
  },
  15: {
    title: 'a slot the misfire policy created SKIPPED, revived by ops retry',
    jobs: [{ misfire: { policy: 'skip', afterMs: 10_000, maxPerTick: 10 } }],
    steps: [
      { step: 'tick' },
      { step: 'advance', ms: 3 * MINUTE },
      { step: 'run', ms: MINUTE },
      { step: 'retry', prefer: RunStatus.SKIPPED },
      { step: 'run', ms: 2 * MINUTE },
    ],
  },
  // ---- issue 30 (defects 1, 2, 3, 4 and 6 of its third adversarial review), numbered 30N.
  301: {
    title: 'maxRuns raised from 2 to 4 once the first 2 runs were planned',
    jobs: [{ maxRuns: 2 }],
    steps: [
      { step: 'run', ms: 3 * MINUTE },
      { step: 'change', job: 0, change: { field: 'maxRuns', raiseBy: 2 } },
      { step: 'run', ms: 4 * MINUTE },
    ],
  },
  302: {
    title: 'shards changed 1 → 3 → 1 with the next slot planned ahead each time',
    jobs: [{}],
    steps: [
      { step: 'run', ms: 2 * MINUTE },
      { step: 'change', job: 0, change: { field: 'shards', to: 3 } },
      { step: 'run', ms: 2 * MINUTE },
      { step: 'change', job: 0, change: { field: 'shards', to: 1 } },
      { step: 'run', ms: 2 * MINUTE },
    ],
  },
  303: {
    title: `a long job whose run yields with progress ${RUN_QUEUES.maxReceiveCount + 3} times`,
    jobs: [withTrait(jobSpec(0, { schedule: '*/5 * * * *' }), { longRun: RUN_QUEUES.maxReceiveCount + 3 })],
    steps: [{ step: 'run', ms: 6 * MINUTE }],
  },
  304: {
    title: 'a one-time { at } job deployed with its instant between the next tick and the watermark',
    jobs: [{}],
    // The first tick (00:00:10) plans to 00:01:13.5; the job is added at 00:00:55, due at 00:01:02.
    steps: [
      { step: 'tick' },
      { step: 'advance', ms: 45_000 },
      { step: 'add-soon', job: {}, offsetMs: 2_000 },
      { step: 'run', ms: 3 * MINUTE },
    ],
  },
  306: {
    title: 'a backfill of 4 slots of a job with a deadline of 60 s',
    jobs: [{ schedule: '*/5 * * * *', deadlineMs: 60_000 }],
    steps: [
      { step: 'run', ms: MINUTE },
      { step: 'backfill', job: 0, agoMs: 5 * MINUTE, spanMs: 20 * MINUTE },
      { step: 'run', ms: 2 * MINUTE },
    ],
  },
};

export interface DirectedResult {
  readonly violations: readonly CheckViolation[];
  readonly story: string;
}

/** Runs one directed scenario (no faults but those it arms; scheduler choices from `seed`). */
export async function runDirected(stack: ModelStack, scenario: DirectedScenario, seed = 1): Promise<DirectedResult> {
  const setup: ScenarioSetup = {
    start: Date.UTC(2031, 0, 1, 0, 0, 10),
    containers: Array.from({ length: scenario.containers ?? 1 }, () => ({
      skewMs: 0,
      sdkAttempts: scenario.sdkAttempts ?? 3,
      batchSize: 3,
    })),
    plannerSkewMs: 0,
    plannerSdkAttempts: scenario.plannerSdkAttempts ?? 3,
    opsSkewMs: 0,
    clockAllowanceMs: 1_000,
    partitions: 1,
    jobs: scenario.jobs.map((over, i) => jobSpec(i, over)),
    faults: {
      rate: 0,
      weights: { refused: 0, 'lost-response': 0, throttled: 0, conflict: 0, latency: 0 },
      kinds: ['claim'],
      latencyMs: 500,
    },
    seed,
    ...(scenario.inheritedOrphans !== undefined ? { inheritedOrphans: scenario.inheritedOrphans } : {}),
  };
  let result: DirectedResult | undefined;
  await fc.assert(
    fc.asyncProperty(fc.scheduler(), async (scheduler) => {
      const world = await World.create(stack, setup, scheduler);
      try {
        for (const step of scenario.steps) await apply(world, step);
        await world.quiesce();
        const { result: checked } = await world.check();
        result = { violations: checked.violations, story: world.story() };
      } finally {
        await world.destroy();
      }
    }),
    { numRuns: 1, seed },
  );
  return result!;
}

async function apply(world: World, step: DirectedStep): Promise<void> {
  switch (step.step) {
    case 'tick':
      return world.tick();
    case 'run':
      return world.runFor(step.ms);
    case 'advance':
      return world.advance(step.ms);
    case 'arm':
      return world.armContainerFault(step.container, step.kind, step.fault, step.count);
    case 'retry':
      return world.retry(0, step.prefer);
    case 'retry-job':
      return world.retryJob(step.job);
    case 'partitions':
      return world.setPartitions(step.of);
    case 'many':
      return world.addBulk(step.count);
    case 'remove':
      return world.removeJob(step.job);
    case 'rollback-bulk':
      return world.removeBulkAdded();
    case 'remove-backlogged':
      return world.removeBackloggedJob();
    case 'redrive':
      return world.redrive();
    case 'backfill':
      return world.backfill(step.job, step.agoMs, step.spanMs);
    case 'add': {
      const name = world.newJobName();
      world.addJob({ ...jobSpec(0, step.job), name, group: `own-${name}` });
      return;
    }
    case 'arm-planner':
      return world.armFault('planner', step.kind, step.fault, step.count);
    case 'arm-ops':
      return world.armFault('ops', step.kind, step.fault, step.count);
    case 'change':
      return world.changeJob(step.job, step.change);
    case 'trigger':
      return operatorTrigger(world, step.job);
    case 'add-soon': {
      const name = world.newJobName();
      world.addJob({ ...jobSpec(0, step.job), name, group: `own-${name}`, schedule: scheduleSoon(world.time.now(), step.offsetMs, 'at') });
      return;
    }
  }
}
