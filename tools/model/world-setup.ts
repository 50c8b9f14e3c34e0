/**
 * What a model scenario is made of (its jobs, worker containers, actors' clocks, faults) and the
 * constants and small helpers the parts of its world (world.ts) share.
 */
import { DeleteQueueCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { formatViolations, type CheckViolation } from '../verify/checker.js';
import type { HistoryEvent } from '../../shared/core/history.js';
import { parseJobs, type Job, type JobInput } from '../../shared/schedule/job-schema.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { JsonLineLogger } from '../../shared/runtime/observability.js';
import { PLANNER_SCHEDULE, RUN_QUEUES } from '../../shared/core/resources.js';
import { localClientConfig, type LocalEndpoints } from '../local-stack.js';
import { createClients, type Clients } from '../../shared/runtime/clients.js';
import type { ActorClients } from './actor-io.js';
import type { FaultProfile } from './faults.js';
import { BehaviourKind, MODEL_HANDLER, MODEL_HANDLER_NAMES, MODEL_RECONCILING_HANDLER, type Behaviour } from './handlers.js';
import type { ModelSchedule } from './config-changes.js';

export interface JobSpec {
  readonly name: string;
  /** A cron expression, or `{ at }`: a one-time job (an instant with `Z`). */
  readonly schedule: ModelSchedule;
  readonly overlap: 'forbid-skip' | 'forbid-queue' | 'coalesce' | 'parallel';
  readonly misfire: { readonly policy: 'skip' | 'latest' | 'all'; readonly afterMs: number; readonly maxPerTick: number };
  readonly shards: number;
  readonly maxAttempts: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly leaseMs: number;
  readonly timeoutMs: number;
  readonly deadlineMs?: number;
  readonly startLeadMs: number;
  /** The handler checkpoints and resumes: its timeout may exceed one invocation. */
  readonly checkpoints: boolean;
  readonly reconcile: boolean;
  /** Jobs with the same group write the same business items. */
  readonly group: string;
  readonly behaviours: readonly Behaviour[];
  /** The job ends after this many scheduled runs. @default unbounded */
  readonly maxRuns?: number;
  /**
   * A long job: every run needs this many invocations, each saving one checkpoint of progress and
   * then yielding at the invocation's time limit (its script is not used, in quiescence either:
   * the work is long, not faulty). More than the queue's maxReceiveCount, so a yield that re-used
   * its message would land it in the DLQ (issue 30, point 3).
   */
  readonly longRun?: number;
}

export interface ContainerSpec {
  readonly skewMs: number;
  /** SDK attempts per call. */
  readonly sdkAttempts: number;
  readonly batchSize: number;
}

export interface ScenarioSetup {
  /** Virtual start instant. */
  readonly start: number;
  readonly containers: readonly ContainerSpec[];
  readonly plannerSkewMs: number;
  readonly plannerSdkAttempts: number;
  readonly opsSkewMs: number;
  /** The workers' and operators' clock allowance. */
  readonly clockAllowanceMs: number;
  readonly partitions: number;
  readonly jobs: readonly JobSpec[];
  readonly faults: FaultProfile;
  readonly seed: number;
  /**
   * Open runs the scenario's tables start with, of a job a previous deployment removed while its
   * backlog waited (`inherit`); none when absent.
   */
  readonly inheritedOrphans?: number;
}

export interface ModelStack {
  readonly endpoints: LocalEndpoints;
  readonly clients: Clients;
}

export function modelStack(endpoints: LocalEndpoints): ModelStack {
  return {
    endpoints,
    clients: createClients({ dynamo: localClientConfig(endpoints.dynamoEndpoint), sqs: localClientConfig(endpoints.sqsEndpoint) }),
  };
}

/**
 * A worker container as the event source mapping sees it (`w0`, `w1`, …): Lambda runs one batch
 * in it at a time, freezes it between invocations, and starts a fresh one (the next generation)
 * where one was killed.
 */
export interface Container {
  readonly name: string;
  readonly spec: ContainerSpec;
  generation: number;
  /** The actor its current generation is known by to the gate and the clock (`w0#2`). */
  actor: string;
  clients?: ActorClients;
  busy: boolean;
  invocations: number;
  owner: string;
  held: string[];
  paused: boolean;
}

/** The actors' logs: silent, or every line on stderr with MODEL_DEBUG_LOG=1 (to read a replayed failure). */
export const QUIET_LOGGER = process.env.MODEL_DEBUG_LOG
  ? new JsonLineLogger((line) => process.stderr.write(`${line}\n`), {}, 'debug')
  : new JsonLineLogger(() => undefined, {}, 'error');
export const never = () => new Promise<never>(() => undefined);
export const iso = (ms: number) => new Date(ms).toISOString().slice(11, 19);
export const SWEEP_GRACE_MS = 120_000;
/** Quiescence ends at the latest this long after the fault phase (virtual time). */
export const QUIESCENCE_MAX_MS = 40 * PLANNER_SCHEDULE.tickMs;
/** Checks in a row a backlog must move before quiescence may end with it unfinished. */
export const CATCH_UP_STREAK = 3;
/** Containers Lambda may add during quiescence when every container is busy. */
export const MAX_EXTRA_CONTAINERS = 4;
export const HARNESS = 'harness';

export function jobInput(spec: JobSpec, schedule: ModelSchedule = spec.schedule): JobInput {
  return {
    name: spec.name,
    schedule,
    handler: spec.reconcile ? MODEL_RECONCILING_HANDLER : MODEL_HANDLER,
    overlap: spec.overlap,
    misfire: { policy: spec.misfire.policy, after: spec.misfire.afterMs, maxPerTick: spec.misfire.maxPerTick },
    shards: spec.shards,
    lease: spec.leaseMs,
    timeout: spec.timeoutMs,
    retry: { maxAttempts: spec.maxAttempts, backoff: { base: spec.backoffBaseMs, max: spec.backoffMaxMs, jitter: 'full' } },
    ...(spec.deadlineMs !== undefined ? { deadline: spec.deadlineMs } : {}),
    startLead: spec.startLeadMs,
    checkpoints: spec.checkpoints,
    ...(spec.maxRuns !== undefined ? { maxRuns: spec.maxRuns } : {}),
  };
}

/** The item group prefix of the jobs `add N hourly jobs` adds (one group each: `many0`, `many1`, …). */
export const BULK_GROUP = 'many';

/** The job whose orphans a scenario may start with (`ScenarioSetup.inheritedOrphans`). */
export const INHERITED_JOB = 'legacy';

/** The jobs `add N hourly jobs` adds (a config of a hundred jobs, most of them hourly). */
export const MANY_TEMPLATE: Omit<JobSpec, 'name' | 'group'> = {
  schedule: '0 * * * *',
  overlap: 'parallel',
  misfire: { policy: 'all', afterMs: 600_000, maxPerTick: 1 },
  shards: 1,
  maxAttempts: 2,
  backoffBaseMs: 500,
  backoffMaxMs: 2_000,
  leaseMs: 20_000,
  timeoutMs: 10_000,
  startLeadMs: 1_500,
  checkpoints: false,
  reconcile: false,
  behaviours: [{ kind: BehaviourKind.OK, workMs: 50, writes: 0 }],
};

/** The model's worker Lambda timeout: every job's attempt must fit it (unless it checkpoints). */
export const MODEL_WORKER_TIMEOUT_MS = RUN_QUEUES.workerTimeoutSeconds * 1000;

/** Jobs validated as the config is, for the model's handlers and worker timeout. */
export function parseModelJobs(inputs: readonly JobInput[]): Job[] {
  return parseJobs(inputs, { handlers: [...MODEL_HANDLER_NAMES], workerTimeoutMs: MODEL_WORKER_TIMEOUT_MS });
}

export class ScenarioFailure extends Error {
  override readonly name = 'ScenarioFailure';
  constructor(
    readonly violations: readonly CheckViolation[],
    readonly story: string,
  ) {
    super(`${violations.length} violation(s):\n${formatViolations(violations.slice(0, 12))}\n\nstory:\n${story}`);
  }
}

/** The history events a reader of a failure's story needs, one line each. */
export function storyOf(event: HistoryEvent): string | undefined {
  switch (event.type) {
    case 'claimed':
      return `${event.owner} claims ${event.runKey} (token …${event.token % 1000}, from ${event.from})`;
    case 'outcome':
      return `${event.owner} records ${event.runKey} ${event.status}${event.code ? ` (${event.code}${event.resultUnknown ? ', result unknown' : ''})` : ''}${event.accepted ? '' : ' — refused'}`;
    case 'handler-finished':
      return `${event.owner} handler of ${event.runKey} ended ${event.result}`;
    case 'reconciled':
      return `${event.owner} reconciles ${event.runKey}: ${event.outcome}`;
    case 'effect':
      return event.result === 'accepted' ? undefined : `write of ${event.runKey} (token …${event.token % 1000}) ${event.result}`;
    case 'run-created':
      return event.status === RunStatus.SKIPPED ? `planner creates ${event.runKey} SKIPPED` : undefined;
    default:
      return undefined;
  }
}

export function deleteQueue(sqs: SQSClient, url: string): Promise<unknown> {
  return sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
}

export function runKeyIn(body: string): string {
  try {
    const parsed = JSON.parse(body) as { runKey?: unknown };
    return typeof parsed.runKey === 'string' ? parsed.runKey : '?';
  } catch {
    return '?';
  }
}

export function short(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message.split('\n')[0]!.slice(0, 160)}` : String(error);
}
