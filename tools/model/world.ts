/**
 * One scenario's world: fresh tables and queues on the shared local stack, virtual time, the
 * actors (planner, worker lanes as Lambda containers, the operator) with their real SDK clients
 * behind the model's gate and faults, the model queue, the config timeline and the history.
 * Commands (commands.ts) act on it through the methods below; `quiesce` then lets time run on
 * without faults and `check` reads the final tables and runs the checker.
 *
 * Every store call of every actor passes the gate, and the gate lets one call through at a time,
 * in the order the scenario's fc.scheduler picks: a scenario is a pure function of its commands
 * and its scheduler seed, so a failure replays and shrinks.
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, DeleteQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Scheduler } from 'fast-check';
import { backfill, type BackfillDeps, type BackfillReport, type BackfillRequest } from '../../shared/operations/backfill.js';
import { Ledger } from '../../shared/store/ledger.js';
import { LedgerOps } from '../../shared/store/repairs.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import { jobsByName } from '../../shared/config.js';
import { checkScenario, formatViolations, type CheckResult, type CheckViolation } from '../verify/checker.js';
import type { HistoryEvent, HistorySink } from '../../shared/core/history.js';
import { parseJobs, type Job, type JobInput } from '../../shared/schedule/job-schema.js';
import { partitionOf } from '../../shared/core/partition.js';
import { isTerminal, isWaiting, RunStatus, runKeyOf, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { SWEEP_DEFAULTS } from '../../shared/planner/sweeper.js';
import { InMemoryMetrics, JsonLineLogger } from '../../shared/runtime/observability.js';
import { defaultLookaheadMs, runPlannerTick } from '../../shared/planner/planner.js';
import { PLANNER_SCHEDULE, RUN_QUEUES } from '../../shared/core/resources.js';
import { processBatch, type QueueRecord, type WorkerDeps } from '../../shared/worker/batch.js';
import { redrive } from '../ops/redrive.js';
import { laneHandOn, resolveRun } from '../ops/resolve.js';
import { RETRYABLE_STATES, retryRuns } from '../ops/retry.js';
import { jobPlanning } from '../../shared/store/planner-state.js';
import { createQueues, createTables, localClientConfig, type LocalEndpoints } from '../local-stack.js';
import { createClients, type Clients } from '../../shared/runtime/clients.js';
import { actorClients, type ActorClients, type Gate } from './actor-io.js';
import { FaultPlan, prng, type CallInfo, type FaultKind, type FaultProfile } from './faults.js';
import { BehaviourKind, MODEL_HANDLER, MODEL_HANDLER_NAMES, MODEL_RECONCILING_HANDLER, modelHandlers, type Behaviour } from './handlers.js';
import { readFinal, type FinalTables } from './ledger-view.js';
import { ModelQueue } from './model-queue.js';
import { computeOwed, owedStatuses, unexpectedRuns, type TickRecord, type TimelineEvent } from './owed.js';
import { VirtualTime } from './virtual-time.js';
import { checkCreatedRunsRun, checkMaxRuns, checkOneShardCountPerSlot, checkOnlyPoisonDeadLettered, checkReportsKept, type OperatorReports, checkYieldsNeverDeadLettered, withoutSpentMaxRuns, withSlotShards } from './report-checks.js';
import { changedSpec, changeLabel, fieldLabel, scheduleLabel, type JobChange, type ModelSchedule } from './config-changes.js';

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

export interface LaneSpec {
  readonly skewMs: number;
  /** SDK attempts per call. */
  readonly sdkAttempts: number;
  readonly batchSize: number;
}

export interface ScenarioSetup {
  /** Virtual start instant. */
  readonly start: number;
  readonly lanes: readonly LaneSpec[];
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
  return { endpoints, clients: createClients({ dynamo: localClientConfig(endpoints.dynamoEndpoint), sqs: localClientConfig(endpoints.sqsEndpoint) }) };
}

interface Lane {
  readonly name: string;
  readonly spec: LaneSpec;
  generation: number;
  container: string;
  clients?: ActorClients;
  busy: boolean;
  invocations: number;
  owner: string;
  held: string[];
  paused: boolean;
}

/** The actors' logs: silent, or every line on stderr with MODEL_DEBUG_LOG=1 (to read a replayed failure). */
const QUIET_LOGGER = process.env.MODEL_DEBUG_LOG ? new JsonLineLogger((line) => process.stderr.write(`${line}\n`), {}, 'debug') : new JsonLineLogger(() => undefined, {}, 'error');
const never = () => new Promise<never>(() => undefined);
const iso = (ms: number) => new Date(ms).toISOString().slice(11, 19);
const SWEEP_GRACE_MS = 120_000;
/** Quiescence ends at the latest this long after the fault phase (virtual time). */
const QUIESCENCE_MAX_MS = 40 * PLANNER_SCHEDULE.tickMs;
/** Checks in a row a backlog must move before quiescence may end with it unfinished. */
const CATCH_UP_STREAK = 3;
/** Containers Lambda may add during quiescence when every lane is busy. */
const MAX_EXTRA_LANES = 4;
const HARNESS = 'harness';

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

/** The model's worker Lambda timeout: every job's attempt must fit it (unless it checkpoints). */
/** The item group prefix of the jobs `add N hourly jobs` adds (one group each: `many0`, `many1`, …). */
const BULK_GROUP = 'many';

/** The job whose orphans a scenario may start with (`ScenarioSetup.inheritedOrphans`). */
const INHERITED_JOB = 'legacy';

/** The jobs `add N hourly jobs` adds (a config of a hundred jobs, most of them hourly). */
const MANY_TEMPLATE: Omit<JobSpec, 'name' | 'group'> = {
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

export const MODEL_WORKER_TIMEOUT_MS = RUN_QUEUES.workerTimeoutSeconds * 1000;

/** Jobs validated as the config is, for the model's handlers and worker timeout. */
function parseModelJobs(inputs: readonly JobInput[]): Job[] {
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

export class World implements Gate {
  readonly time: VirtualTime;
  readonly faults: FaultPlan;
  readonly queue: ModelQueue;
  readonly events: HistoryEvent[] = [];
  readonly storyLines: string[] = [];
  readonly timeline: TimelineEvent[] = [];
  readonly metrics = new InMemoryMetrics();
  specs = new Map<string, JobSpec>();
  jobs: Job[] = [];
  partitions: number;
  quiescent = false;
  faultPhaseEnd: number | undefined;
  operations = 0;
  /** Store calls of every actor (each SDK call once, whatever its retries). */
  calls = 0;
  /** Wall-clock ms quiescence spent reading the tables whole to tell whether the world has settled. */
  settleCheckMs = 0;
  readonly callsByKind = new Map<string, number>();
  private readonly lanes: Lane[];
  private readonly cursors = new Map<string, number>();
  private readonly holds = new Map<string, (() => void)[]>();
  /** Calls sent and not parked at the gate (on their way to it, or at the store). */
  private moving = 0;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly activities = new Set<Promise<unknown>>();
  private readonly random: () => number;
  private planner!: ActorClients;
  private ops!: ActorClients;
  private destroyed = false;
  private nextJob = 0;
  private seq = 0;
  private tickCommands = 0;
  readonly ticks: TickRecord[] = [];
  /** What operator commands reported (report-checks.ts holds the model to them). */
  readonly reports: OperatorReports = { revived: [], triggers: [] };
  /** Jobs paused as the operator last confirmed. */
  readonly pausedJobs = new Set<string>();
  private readonly extraLanes: Lane[] = [];
  private lastCursors = new Map<string, number>();
  private progressing: string[] = [];
  private readonly streaks = new Map<string, number>();
  /** Planner ticks and operator actions in flight. */
  private unkillableInFlight = 0;
  quiescenceEnd: number | undefined;
  /** What kept quiescence going at its last check (for the story). */
  private unsettled: string[] = [];

  private constructor(
    readonly stack: ModelStack,
    readonly setup: ScenarioSetup,
    readonly scheduler: Scheduler,
    readonly tables: { readonly ledger: string; readonly payments: string },
    readonly queues: { readonly runQueueUrl: string; readonly deadLetterQueueUrl: string; readonly runQueueArn: string; readonly deadLetterQueueArn: string },
  ) {
    this.time = new VirtualTime(setup.start);
    this.faults = new FaultPlan(setup.faults, setup.seed);
    this.random = prng(setup.seed ^ 0x5bd1e995);
    this.partitions = setup.partitions;
    this.queue = new ModelQueue(stack.clients.sqs, this.time, {
      queueUrl: queues.runQueueUrl,
      deadLetterQueueUrl: queues.deadLetterQueueUrl,
      visibilityMs: RUN_QUEUES.visibilityTimeoutSeconds * 1000,
      maxReceiveCount: RUN_QUEUES.maxReceiveCount,
    });
    this.lanes = setup.lanes.map((spec, i) => ({ name: `w${i}`, spec, generation: 0, container: `w${i}#0`, busy: false, invocations: 0, owner: '', held: [], paused: false }));
  }

  static async create(stack: ModelStack, setup: ScenarioSetup, scheduler: Scheduler): Promise<World> {
    const suffix = randomUUID().slice(0, 12);
    const tables = { ledger: `model-ledger-${suffix}`, payments: `model-items-${suffix}` };
    await createTables(stack.clients.dynamo, { ledgerTable: tables.ledger, paymentsTable: tables.payments });
    const queues = await createQueues(stack.clients.sqs, { nameSuffix: `-m${suffix}`, visibilityTimeoutSeconds: RUN_QUEUES.visibilityTimeoutSeconds });
    const arn = async (url: string) =>
      (await stack.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ?? '';
    const world = new World(stack, setup, scheduler, tables, { ...queues, runQueueArn: await arn(queues.runQueueUrl), deadLetterQueueArn: await arn(queues.deadLetterQueueUrl) });
    world.planner = world.clientsFor('planner', setup.plannerSdkAttempts);
    world.ops = world.clientsFor('ops', 3);
    for (const spec of setup.jobs) world.addJobNow(spec, true);
    const orphans = setup.inheritedOrphans ?? 0;
    if (orphans > 0) {
      // A failure here (a put or send of the local stack) must not leave the tables and queues behind.
      await world.inherit(orphans).catch(async (error: unknown) => {
        await world.destroy();
        throw error;
      });
    }
    return world;
  }

  // ---------------------------------------------------------------- gate (actor-io.ts)

  started(): void {
    this.moving++;
  }

  finished(): void {
    this.moving--;
    this.wakeIfIdle();
  }

  private park(): void {
    this.moving--;
    this.wakeIfIdle();
  }

  private unpark(): void {
    this.moving++;
  }

  private wakeIfIdle(): void {
    if (this.moving === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  async enter(actor: string, call: CallInfo, latencyMs: number): Promise<void> {
    this.calls++;
    // By phase and kind (reads also by actor and command): where a scenario's store calls go.
    const role = actor === 'planner' || actor === 'ops' ? actor : 'worker';
    const kind = `${this.quiescent ? 'quiesce' : 'faults'} ${call.kind}${call.kind === 'read' ? ` ${role} ${call.command.replace('Command', '')}` : ''}`;
    this.callsByKind.set(kind, (this.callsByKind.get(kind) ?? 0) + 1);
    this.park();
    if (latencyMs > 0) {
      this.disturbed(actor, 'delayed');
      this.say(`${actor} ${call.kind}: +${Math.round(latencyMs / 1000)} s latency`);
      await this.time.sleepOf(actor)(latencyMs);
    }
    for (let released = false; ; ) {
      const state = this.time.state(actor);
      if (state === 'dead') return never();
      if (state === 'frozen') {
        await new Promise<void>((resolve) => this.holds.set(actor, [...(this.holds.get(actor) ?? []), resolve]));
        continue;
      }
      if (released) break;
      await this.scheduler.schedule(Promise.resolve(), `${actor} ${call.kind}`);
      released = true;
    }
    this.unpark();
  }

  note(actor: string, call: CallInfo, fault: FaultKind): void {
    this.say(`${actor} ${call.kind} (${call.command.replace('Command', '')}): ${fault}`);
  }

  unanswered(actor: string, call: CallInfo, input: Record<string, unknown>): void {
    const runKey = this.runKeyOfItem(input.Key);
    if (runKey === undefined) return;
    const lane = [...this.lanes, ...this.extraLanes].find((l) => l.container === actor);
    this.say(`${actor} ${call.kind} of ${runKey}: committed, every answer lost`);
    this.events.push({ type: 'actor-disturbed', at: this.time.now(), owner: lane?.owner ?? actor, kind: 'unanswered', runKey });
  }

  /** The run key of a run item's key (`JOB#<job>` / `RUN#<slot>#<shard>`), if it is one. */
  private runKeyOfItem(key: unknown): string | undefined {
    if (!key || typeof key !== 'object') return undefined;
    const { pk, sk } = key as { pk?: unknown; sk?: unknown };
    if (typeof pk !== 'string' || typeof sk !== 'string' || !pk.startsWith('JOB#') || !sk.startsWith('RUN#')) return undefined;
    const [, iso, shard] = sk.split('#');
    const job = pk.slice('JOB#'.length);
    return runKeyOf(job, Date.parse(iso ?? ''), Number(shard), this.specs.get(job)?.shards ?? 1);
  }

  private async ioIdle(): Promise<void> {
    for (let i = 0; i < 10_000; i++) {
      if (this.moving > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.moving === 0) return;
    }
  }

  private batching = 0;

  private async settleUnlessBatched(): Promise<void> {
    if (this.batching === 0) await this.settle();
  }

  /**
   * Starts several actions at once and only then lets the world settle: their store calls
   * interleave in the scheduler's order (two ticks at once, a resolve racing a takeover, …).
   */
  async together(actions: readonly (() => Promise<void>)[]): Promise<void> {
    this.batching++;
    try {
      for (const action of actions) await action();
    } finally {
      this.batching--;
    }
    await this.settleUnlessBatched();
  }

  /** Lets every released call land, one at a time in the scheduler's order, until nothing can move. */
  async settle(): Promise<void> {
    for (let steps = 0; steps < 20_000; steps++) {
      await this.ioIdle();
      if (this.scheduler.count() === 0) return;
      await this.scheduler.waitNext(1);
    }
    throw new Error('the world did not settle within 20,000 steps');
  }

  // ---------------------------------------------------------------- actors

  private clientsFor(actor: string, attempts: number): ActorClients {
    return actorClients(
      actor,
      { dynamoEndpoint: this.stack.endpoints.dynamoEndpoint, sqsEndpoint: this.stack.endpoints.sqsEndpoint, maxAttempts: attempts, runQueueUrl: this.queues.runQueueUrl },
      this,
      this.faults,
      this.queue,
    );
  }

  /** A history sink for an actor whose clock is skewed: instants become true virtual time. */
  private sinkFor(skewMs: number): HistorySink {
    return {
      record: (event) => {
        const at = this.time.now();
        const line = storyOf(event);
        if (line) this.say(line);
        if (event.type === 'claimed' || event.type === 'heartbeat') this.events.push({ ...event, at, leaseUntil: event.leaseUntil - skewMs });
        else this.events.push({ ...event, at });
      },
    };
  }

  private disturbed(actor: string, kind: 'killed' | 'paused' | 'delayed'): void {
    const lane = this.lanes.find((l) => l.container === actor);
    const owner = lane?.owner ?? actor;
    const runKeys = lane && lane.busy ? lane.held : [''];
    for (const runKey of runKeys.length > 0 ? runKeys : ['']) this.events.push({ type: 'actor-disturbed', at: this.time.now(), owner, kind, runKey });
  }

  say(line: string): void {
    this.storyLines.push(`${iso(this.time.now())} ${line}`);
  }

  private track(activity: Promise<unknown>): void {
    const tracked = activity.finally(() => this.activities.delete(tracked));
    this.activities.add(tracked);
  }

  /**
   * Tracks a planner tick or an operator action: actors that are never killed, so quiescence can
   * wait for them (a tick whose response is delayed has already written what it planned).
   */
  private trackUnkillable(activity: Promise<unknown>): void {
    this.unkillableInFlight++;
    this.track(activity.finally(() => this.unkillableInFlight--));
  }

  private lane(index: number): Lane {
    return this.lanes[index % this.lanes.length]!;
  }

  get laneCount(): number {
    return this.lanes.length;
  }

  // ---------------------------------------------------------------- config

  /** The model's event order (ticks, config changes, operator actions). */
  nextSeq(): number {
    return this.seq++;
  }

  private addJobNow(spec: JobSpec, initial = false): Job {
    const [job] = parseModelJobs([jobInput(spec)]);
    this.specs.set(spec.name, spec);
    this.jobs = [...this.jobs, job!];
    this.timeline.push({ kind: 'add', seq: this.nextSeq(), job: job! });
    // Initial jobs too: a story must say each job's policies (misfire, deadline, attempts, reconcile) to be read.
    const misfire = `misfire ${spec.misfire.policy}${spec.misfire.afterMs !== undefined ? ` after ${spec.misfire.afterMs / 1000} s` : ''}${spec.misfire.maxPerTick !== undefined ? ` ≤ ${spec.misfire.maxPerTick}/tick` : ''}`;
    const limits = `${spec.maxAttempts} attempt(s)${spec.deadlineMs !== undefined ? `, deadline ${spec.deadlineMs / 1000} s` : ''}${spec.reconcile ? ', reconciles' : ''}`;
    this.say(`config: job ${spec.name} ${initial ? 'configured' : 'added'} (${scheduleLabel(spec.schedule)}, ${spec.overlap}, ${spec.shards} shard(s), ${misfire}, ${limits}${spec.maxRuns !== undefined ? `, maxRuns ${spec.maxRuns}` : ''}${spec.longRun !== undefined ? `, ${spec.longRun} invocations a run` : ''})`);
    return job!;
  }

  newJobName(): string {
    return `j${this.setup.jobs.length + this.nextJob++}`;
  }

  addJob(spec: JobSpec): void {
    if (this.specs.has(spec.name)) return;
    this.addJobNow(spec);
  }

  removeJob(index: number): void {
    if (this.jobs.length <= 1) return;
    const job = this.jobs[index % this.jobs.length]!;
    this.dropJobs(new Set([job.name]));
    this.say(`config: job ${job.name} removed`);
  }

  /** Takes jobs out of the config (their open runs stay, as orphans) and out of what the model owes from now on. */
  private dropJobs(names: ReadonlySet<string>): void {
    this.jobs = this.jobs.filter((j) => !names.has(j.name));
    for (const job of names) this.timeline.push({ kind: 'remove', seq: this.nextSeq(), job });
  }

  /** The tables as the harness sees them (consistent scans, every page): what an operator's dashboards and `ops status` show. */
  private readTables(): Promise<FinalTables> {
    return readFinal(this.stack.clients.doc, { ledger: this.tables.ledger, business: this.tables.payments });
  }

  /**
   * A job removed on its backlog alarm: the configured job with the most open runs (none removed
   * while only one job is configured, or no job has an open run), its open runs left as orphans.
   */
  async removeBackloggedJob(): Promise<void> {
    if (this.jobs.length <= 1) return;
    const { runs } = await this.readTables();
    const open = new Map<string, number>();
    for (const run of runs) if (!isTerminal(run.status)) open.set(run.job, (open.get(run.job) ?? 0) + 1);
    const [job] = [...this.jobs].sort((a, b) => (open.get(b.name) ?? 0) - (open.get(a.name) ?? 0));
    const count = open.get(job!.name) ?? 0;
    if (count === 0) return;
    this.dropJobs(new Set([job!.name]));
    this.say(`config: job ${job!.name} removed on its backlog alarm (${count} open run(s) left behind)`);
  }

  /**
   * The tables a previous deployment left: `orphans` open runs of a per-minute job removed while
   * its backfill of as many minutes waited. Their messages have long since used every receive (no
   * worker knows the job) and wait in the DLQ for an operator's redrive: an `ops redrive` brings
   * them back as poison. (Left in the run queue, they would be the first due messages of every
   * delivery, and the scenario's own runs would hardly run while faults are on: measured in the
   * review of 2026-12-03, 0 of 6 runs recorded in such a scenario against 6 without the orphans.)
   * Written before the first command, with the harness's own clients (no gate, no faults, no
   * virtual time spent): the history the scenario starts from, not part of it. The orphans stay
   * open for good, the oldest entries of the sweeper's watch index.
   */
  private async inherit(orphans: number): Promise<void> {
    const job = this.addJobNow({ ...MANY_TEMPLATE, name: INHERITED_JOB, schedule: '* * * * *', group: INHERITED_JOB }, true);
    const to = Math.floor(this.time.now() / 60_000) * 60_000;
    const from = to - orphans * 60_000;
    const report = await this.recordedBackfill(
      {
        ledger: new Ledger(this.stack.clients.doc, { tableName: this.tables.ledger }),
        queue: new RunQueue(this.stack.clients.sqs, this.queues.deadLetterQueueUrl),
        clock: () => this.time.now(),
        // One window for all (the rate below): a sleep would wait on virtual time, which no command moves yet.
        sleep: () => Promise.reject(new Error('the inherited backfill must not wait')),
      },
      { job, from, to, maxPerSecond: 10_000 },
    );
    this.dropJobs(new Set([job.name]));
    this.say(`config: job ${job.name} removed by an earlier deployment with ${report.created} open run(s) of a backfill left behind, their messages in the DLQ (the tables this scenario starts on)`);
  }

  /** A bulk add of `count` hourly jobs (a config of a hundred jobs, most of them hourly), each in a group of its own. */
  addBulk(count: number): void {
    for (let i = 0; i < count; i++) this.addJob({ ...MANY_TEMPLATE, name: this.newJobName(), group: `${BULK_GROUP}${i}` });
  }

  /**
   * A config rollback of a bulk add: every job `add N hourly jobs` added is removed at once (the
   * scenario's first job stays). Runs of theirs already planned stay open for good, reported as
   * orphans: a hundred and more of them ahead of any later run in the sweeper's watch index.
   */
  removeBulkAdded(): void {
    const bulk = this.jobs.filter((j) => this.specs.get(j.name)?.group.startsWith(BULK_GROUP) === true);
    const removed = new Set((bulk.length >= this.jobs.length ? bulk.slice(1) : bulk).map((j) => j.name));
    if (removed.size === 0) return;
    this.dropJobs(removed);
    this.say(`config: ${removed.size} jobs added in bulk removed (a rollback)`);
  }

  changeSchedule(index: number, schedule: string): void {
    this.changeJob(index, { field: 'schedule', to: schedule });
  }

  /**
   * A deploy that changes one field of a job (config-changes.ts). The change is validated as the
   * config is; one the validation refuses (a timeout that no longer fits without checkpoints) is
   * told in the story and not applied, as a deploy that fails its synth changes nothing.
   */
  changeJob(index: number, change: JobChange): void {
    // A bound is raised on a job that has one (the others have none to raise).
    const candidates = change.field === 'maxRuns' ? this.jobs.filter((j) => j.maxRuns !== undefined) : this.jobs;
    if (candidates.length === 0) return;
    const job = candidates[index % candidates.length]!;
    const spec = this.specs.get(job.name)!;
    const next = changedSpec(spec, change);
    if (!next) return;
    let changed: Job;
    try {
      [changed] = parseModelJobs([jobInput(next)]) as [Job];
    } catch (error) {
      this.say(`config: job ${job.name} ${changeLabel(change)} refused by validation: ${short(error)}`);
      return;
    }
    this.specs.set(job.name, next);
    this.jobs = this.jobs.map((j) => (j === job ? changed : j));
    this.timeline.push({ kind: 'change', seq: this.nextSeq(), job: changed });
    this.say(`config: job ${job.name} ${change.field} ${fieldLabel(spec, change.field)} → ${fieldLabel(next, change.field)}`);
  }

  setPartitions(of: number): void {
    if (of === this.partitions) return;
    this.say(`config: plannerPartitions ${this.partitions} → ${of}`);
    this.partitions = of;
  }

  groupOf(job: string): string {
    return this.specs.get(job)?.group ?? job;
  }

  behaviourFor(job: string): Behaviour {
    const spec = this.specs.get(job);
    // A long job's work is long, not faulty: the same in quiescence.
    if (spec?.longRun !== undefined) return { kind: BehaviourKind.LONG, workMs: 0, writes: spec.longRun };
    if (this.quiescent || !spec || spec.behaviours.length === 0) return { kind: BehaviourKind.OK, workMs: 100, writes: 1 };
    const cursor = this.cursors.get(job) ?? 0;
    this.cursors.set(job, cursor + 1);
    return spec.behaviours[cursor % spec.behaviours.length]!;
  }

  // ---------------------------------------------------------------- time

  async advance(ms: number): Promise<void> {
    await this.time.advanceTo(this.time.now() + ms, () => this.settle());
  }

  /** Advances to the next instant at `offsetMs` past a whole minute. */
  async advanceToMinute(offsetMs: number): Promise<void> {
    const minute = PLANNER_SCHEDULE.tickMs;
    const now = this.time.now();
    let target = Math.floor(now / minute) * minute + offsetMs;
    while (target <= now) target += minute;
    await this.time.advanceTo(target, () => this.settle());
  }

  // ---------------------------------------------------------------- planner

  /**
   * One planner invocation per partition of the current config (`copies` at once). Each is
   * recorded with the config it ran with, its clock and the horizon it reported: what it owes
   * (owed.ts) follows from that, not from what the planner stored.
   */
  async tick(copies = 1): Promise<void> {
    const of = this.partitions;
    const jobs = this.jobs;
    const clock = this.time.clockOf({ skewMs: this.setup.plannerSkewMs });
    const sink = this.sinkFor(this.setup.plannerSkewMs);
    this.say(`tick${copies > 1 ? ` ×${copies}` : ''} (${of} partition(s))`);
    for (let copy = 0; copy < copies; copy++) {
      const ledger = new Ledger(this.planner.doc, { tableName: this.tables.ledger });
      const queue = new RunQueue(this.planner.sqs, this.queues.runQueueUrl);
      const command = this.tickCommands++;
      for (let partition = 0; partition < of; partition++) {
        const seqStart = this.nextSeq();
        const now = clock();
        const record = (outcome: Pick<TickRecord, 'ok' | 'horizon' | 'advanced'>) =>
          this.ticks.push({ id: this.ticks.length, command, partition, of, seqStart, seqEnd: this.nextSeq(), now, jobs, ...outcome });
        // A tick that fails after moving its watermark (in its sweep) has planned as a resolved
        // one has: the model must know how far, or it owes slots the planner has rightly passed.
        // One that fails in its watermark write itself (the response lost on every attempt) has
        // put and sent all it planned, and its write may have landed: a job added meanwhile is
        // planned from there on (model seed 20269131), so its horizon bounds the watermark from
        // above, but not from below (`advanced` stays false).
        let planned: number | undefined;
        let planning: number | undefined;
        const tickSink: HistorySink = {
          record: (event) => {
            if (event.type === 'partition-planned') planned = event.plannedUntil;
            else if (event.type === 'partition-planning') planning = event.plannedUntil;
            else sink.record(event);
          },
        };
        const tick = runPlannerTick(
          { ledger, queue, jobs, clock, logger: QUIET_LOGGER, metrics: this.metrics, history: tickSink, options: { sweepGraceMs: SWEEP_GRACE_MS } },
          { partition, of },
        ).then(
          (report) => record({ ok: true, horizon: report.plannedUntil, advanced: report.watermarkAdvanced }),
          (error: unknown) => {
            if (planned !== undefined) record({ ok: true, horizon: planned, advanced: true });
            else if (planning !== undefined) record({ ok: true, horizon: planning, advanced: false });
            else record({ ok: false });
            this.say(`tick ${partition}/${of} failed: ${short(error)}`);
          },
        );
        this.trackUnkillable(tick);
      }
    }
    await this.settleUnlessBatched();
  }

  // ---------------------------------------------------------------- workers

  private workerDeps(lane: Lane, clients: ActorClients, deadline: number): WorkerDeps {
    const clock = this.time.clockOf({ skewMs: lane.spec.skewMs });
    const timers = this.time.timersOf(lane.container);
    return {
      ledger: new Ledger(clients.doc, { tableName: this.tables.ledger }),
      queue: new RunQueue(clients.sqs, this.queues.runQueueUrl),
      doc: clients.doc,
      jobs: jobsByName(this.jobs),
      handlers: modelHandlers({ behaviourFor: (job) => this.behaviourFor(job), groupOf: (job) => this.groupOf(job), history: this.sinkFor(lane.spec.skewMs), now: () => this.time.now() }, lane.owner, timers),
      tables: { ledger: this.tables.ledger, payments: this.tables.payments },
      owner: lane.owner,
      clock,
      random: this.random,
      logger: QUIET_LOGGER,
      metrics: this.metrics,
      history: this.sinkFor(lane.spec.skewMs),
      remainingTimeMs: () => deadline - this.time.now(),
      timers,
      options: { clockSkewMs: this.setup.clockAllowanceMs },
    };
  }

  /**
   * The event source mapping hands a batch of due messages to lane `index` (a Lambda container:
   * thawed if it was frozen between invocations, started afresh if it was killed). `duplicateTo`
   * hands a copy of the batch's first message to a second lane at the same time.
   */
  async deliver(index: number, duplicateTo?: number): Promise<void> {
    const lane = this.lane(index);
    if (lane.busy) return;
    await this.queue.pull();
    const records = await this.queue.take(lane.spec.batchSize);
    if (records.length === 0) return;
    await this.invoke(lane, records);
    if (duplicateTo !== undefined) {
      const other = this.lane(duplicateTo);
      if (other !== lane && !other.busy) await this.invoke(other, [this.queue.duplicateOf(records[0]!)]);
    }
    await this.settleUnlessBatched();
  }

  /**
   * Time runs on for `ms` as in production, faults and scripted behaviours still on: the planner
   * ticks at every whole minute, and every due message goes to a free lane as the event source
   * mapping would hand it out (a busy, paused or killed lane takes nothing; a killed one starts a
   * fresh container). Most runs of a scenario execute here, under the faults armed so far.
   */
  async runFor(ms: number): Promise<void> {
    const minute = PLANNER_SCHEDULE.tickMs;
    const end = this.time.now() + ms;
    let nextTick = Math.ceil(this.time.now() / minute) * minute;
    for (let round = 0; round < 10_000 && this.time.now() < end; round++) {
      if (this.time.now() >= nextTick) {
        await this.tick();
        nextTick += minute;
      }
      await this.queue.pull();
      for (let i = 0; i < this.lanes.length && this.queue.hasDue(); i++) {
        const lane = this.lanes[i]!;
        if (!lane.busy && !lane.paused) await this.deliver(i);
      }
      await this.settle();
      // As in quiescence: a message sent while settling is due now, not at the next tick.
      await this.queue.pull();
      const candidates = [nextTick, this.queue.nextVisibleAt(), this.time.nextTimerAt()].filter((t): t is number => t !== undefined);
      const next = Math.max(this.time.now() + 1, Math.min(...candidates));
      await this.time.advanceTo(Math.min(next, end), () => this.settle());
    }
  }

  /**
   * Lets time run on to the next message that becomes visible (within `withinMs`), then delivers
   * to lane `index`: runs execute while the fault phase lasts, under its faults and scripted
   * behaviours, rather than only once quiescence delivers everything.
   */
  async deliverNext(index: number, withinMs: number): Promise<void> {
    if (this.lane(index).busy) return;
    await this.queue.pull();
    const next = this.queue.nextVisibleAt();
    if (!this.queue.hasDue() && next !== undefined && next - this.time.now() <= withinMs) await this.time.advanceTo(next, () => this.settle());
    await this.deliver(index);
  }

  private async invoke(lane: Lane, records: QueueRecord[]): Promise<void> {
    if (this.time.state(lane.container) === 'dead' || !lane.clients) {
      lane.clients?.destroy();
      lane.generation++;
      lane.container = `${lane.name}#${lane.generation}`;
      lane.clients = this.clientsFor(lane.container, lane.spec.sdkAttempts);
    }
    lane.invocations++;
    lane.owner = `${lane.name}.${lane.invocations}`;
    lane.busy = true;
    lane.held = records.map((r) => runKeyIn(r.body));
    this.say(`${lane.owner} receives ${lane.held.map((k, i) => `${k}${records[i]!.attributes?.ApproximateReceiveCount !== '1' ? ` (receive ${records[i]!.attributes?.ApproximateReceiveCount})` : ''}`).join(', ')}`);
    // Lambda thaws the container: timers of earlier invocations (zombies) run again.
    this.time.setState(lane.container, 'running');
    await this.time.fireOverdue(lane.container, () => this.settle());
    const container = lane.container;
    const clients = lane.clients;
    const deadline = this.time.now() + RUN_QUEUES.workerTimeoutSeconds * 1000;
    const owner = lane.owner;
    // The Lambda service ends an invocation that outlives its timeout (the container dies).
    const timeoutTimer = this.time.timersOf(HARNESS).setTimeout(() => {
      if (lane.busy && lane.owner === owner) {
        this.say(`${owner}: Lambda timeout, container killed`);
        this.kill(this.lanes.indexOf(lane));
      }
    }, deadline - this.time.now());
    const deps = this.workerDeps(lane, clients, deadline);
    const invocation = processBatch(deps, records)
      .then(async (result) => {
        const failed = new Set(result.batchItemFailures.map((f) => f.itemIdentifier));
        const done = records.filter((r, i) => !failed.has(r.messageId) && records.findIndex((o) => o.messageId === r.messageId) === i);
        if (done.length > 0 && this.time.state(container) !== 'dead') {
          // The event source mapping deletes what the invocation reported done.
          await clients.sqs
            .send(new DeleteMessageBatchCommand({ QueueUrl: this.queues.runQueueUrl, Entries: done.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })) }))
            .catch((error: unknown) => this.say(`${owner}: delete failed: ${short(error)}`));
        }
      })
      .catch((error: unknown) => this.say(`${owner}: invocation failed: ${short(error)}`))
      .finally(() => {
        this.time.timersOf(HARNESS).clearTimeout(timeoutTimer);
        if (lane.owner === owner && lane.container === container) {
          lane.busy = false;
          lane.held = [];
          // Between invocations Lambda freezes the container: nothing of it runs until the next one.
          this.time.setState(container, 'frozen');
        }
      });
    this.track(invocation);
  }

  /** The lane's container dies at once (SIGKILL, OOM, Lambda timeout). */
  kill(index: number): void {
    const lane = this.lane(index);
    if (this.time.state(lane.container) === 'dead') return;
    if (lane.busy) {
      this.disturbed(lane.container, 'killed');
      this.say(`${lane.owner} killed`);
    }
    this.time.setState(lane.container, 'dead');
    lane.busy = false;
    lane.held = [];
    for (const resolve of this.holds.get(lane.container) ?? []) resolve();
    this.holds.delete(lane.container);
  }

  /** The lane's container stops for `ms` of virtual time (a GC pause, SIGSTOP, a slow host). */
  async pause(index: number, ms: number): Promise<void> {
    const lane = this.lane(index);
    if (!lane.busy || this.time.state(lane.container) !== 'running') return;
    this.disturbed(lane.container, 'paused');
    this.say(`${lane.owner} paused for ${Math.round(ms / 1000)} s`);
    const container = lane.container;
    this.time.setState(container, 'frozen');
    lane.paused = true;
    this.time.timersOf(HARNESS).setTimeout(() => {
      if (this.time.state(container) !== 'frozen' || !lane.paused) return;
      lane.paused = false;
      this.thaw(lane);
    }, ms);
    await this.settleUnlessBatched();
  }

  private thaw(lane: Lane): void {
    this.time.setState(lane.container, 'running');
    this.say(`${lane.owner} resumes`);
    for (const resolve of this.holds.get(lane.container) ?? []) resolve();
    this.holds.delete(lane.container);
    const container = lane.container;
    this.track(this.time.fireOverdue(container, () => this.settle()));
  }

  // ---------------------------------------------------------------- operator

  opsDeps() {
    const clock = this.time.clockOf({ skewMs: this.setup.opsSkewMs });
    const ledger = new Ledger(this.ops.doc, { tableName: this.tables.ledger });
    const ops = new LedgerOps(this.ops.doc, { tableName: this.tables.ledger });
    const queue = new RunQueue(this.ops.sqs, this.queues.runQueueUrl);
    return { clock, ledger, ops, queue };
  }

  async opsActivity(label: string, work: () => Promise<void>): Promise<void> {
    this.trackUnkillable(
      work().catch((error: unknown) => {
        this.say(`ops ${label} failed: ${short(error)}`);
      }),
    );
    await this.settleUnlessBatched();
  }

  /** Whether the planner's state lists `job` as paused (a harness read: no gate, no faults). */
  private async pausedInLedger(job: string): Promise<boolean> {
    const { paused } = await this.readTables();
    return paused.includes(job);
  }

  /**
   * An operator pauses or resumes a job, then checks the outcome as `ops status` would: the model
   * records the change it sees (a call whose response was lost may have paused the job although
   * it reported failure, or "already paused" on its retry). The change happened somewhere between
   * the call and the check: both sequence numbers are kept.
   */
  private async flipPause(job: Job, action: 'pause' | 'resume'): Promise<void> {
    const from = this.nextSeq();
    await this.opsActivity(`${action} ${job.name}`, async () => {
      try {
        const { clock, ledger } = this.opsDeps();
        if (action === 'pause') {
          // As `ops pause` does: the job's plan item remembers how far it was planned.
          const now = clock();
          const before = (await jobPlanning(ledger.planning, [job.name], partitionOf)).get(job.name);
          await ledger.planning.pause(job.name, before?.plannedUntil ?? now, { by: 'model', note: 'model pause', at: now });
        } else {
          await ledger.planning.resume(job.name);
        }
      } finally {
        const paused = await this.pausedInLedger(job.name);
        if (paused !== this.pausedJobs.has(job.name)) {
          if (paused) this.pausedJobs.add(job.name);
          else this.pausedJobs.delete(job.name);
          this.timeline.push({ kind: paused ? 'pause' : 'resume', seq: this.nextSeq(), from, job: job.name });
          this.say(`ops ${paused ? 'pause' : 'resume'} ${job.name}`);
        }
      }
    });
  }

  async pauseJob(index: number): Promise<void> {
    if (this.jobs.length === 0) return;
    await this.flipPause(this.jobs[index % this.jobs.length]!, 'pause');
  }

  async resumeJob(index: number): Promise<void> {
    if (this.jobs.length === 0) return;
    await this.flipPause(this.jobs[index % this.jobs.length]!, 'resume');
  }

  async backfill(index: number, agoMs: number, spanMs: number): Promise<void> {
    if (this.jobs.length === 0) return;
    const job = this.jobs[index % this.jobs.length]!;
    await this.opsActivity(`backfill ${job.name}`, async () => {
      const { clock, ledger } = this.opsDeps();
      const to = clock() - agoMs;
      const from = to - spanMs;
      const report = await this.recordedBackfill(
        { ledger, queue: new RunQueue(this.ops.sqs, this.queues.runQueueUrl), clock, sleep: this.time.sleepOf('ops') },
        { job, from, to, maxPerSecond: 20 },
      );
      this.say(`ops backfill ${job.name} [${iso(from)}, ${iso(to)}): ${report.created} created`);
    });
  }

  /**
   * A backfill as the model owes it: its range is known before its first put (runs may exist from
   * then on) and owed in full once it returns.
   */
  private async recordedBackfill(deps: BackfillDeps, request: BackfillRequest): Promise<BackfillReport> {
    const { job, from, to } = request;
    this.timeline.push({ kind: 'backfill-started', seq: this.nextSeq(), job: job.name, slotFrom: from, slotTo: to });
    const report = await backfill(deps, request);
    this.timeline.push({ kind: 'backfill', seq: this.nextSeq(), job: job.name, definition: job, slotFrom: from, slotTo: to });
    return report;
  }

  async redrive(): Promise<void> {
    await this.opsActivity('redrive', async () => {
      const { clock, ledger, ops } = this.opsDeps();
      if ((await this.queue.deadLetterDepth()) === 0) return;
      const report = await redrive(
        {
          sqs: this.ops.sqs,
          ledger,
          ops,
          jobs: this.jobs,
          deadLetterQueueUrl: this.queues.deadLetterQueueUrl,
          deadLetterQueueArn: async () => this.queues.deadLetterQueueArn,
          runQueueArn: async () => this.queues.runQueueArn,
          clock,
        },
        { maxPerSecond: 500, by: 'model' },
      );
      for (const entry of report.entries) {
        if (entry.action !== 'revived' || !entry.runKey || !entry.status) continue;
        const after = await this.harnessRun(entry.runKey);
        this.events.push({ type: 'ops', at: this.time.now(), runKey: entry.runKey, action: 'redrive', from: entry.status, to: after?.status ?? RunStatus.READY });
      }
      this.say(`ops redrive: ${report.messages} message(s), ${report.revived} revived`);
      if (report.taskHandle) await this.queue.afterRedrive(this.queues.deadLetterQueueArn);
    });
  }

  /**
   * The `pick`-th run an operator's action picks, from a consistent read: one of the scenario's own runs in `statuses` (not one of
   * the inherited orphans, which would otherwise be most of the open runs, and most picks, of a
   * scenario that starts on them).
   */
  private async candidate(pick: number, statuses: readonly RunStatus[], also: (run: Run) => boolean = () => true): Promise<Run | undefined> {
    const { runs } = await this.readTables();
    const candidates = runs.filter((r) => r.job !== INHERITED_JOB && statuses.includes(r.status) && also(r));
    return candidates[pick % Math.max(1, candidates.length)];
  }

  async resolve(pick: number, as: 'succeeded' | 'dead'): Promise<void> {
    const run = await this.candidate(pick, [RunStatus.DEAD, RunStatus.RUNNING, RunStatus.RETRY, RunStatus.UNKNOWN, RunStatus.READY]);
    if (!run) return;
    await this.opsActivity(`resolve ${run.runKey}`, async () => {
      const { clock, ledger, ops, queue } = this.opsDeps();
      const id: RunId = { job: run.job, slot: run.slot, shard: run.shard };
      const handOn = laneHandOn(ledger, queue, this.jobs, clock);
      const { before, after } = await resolveRun({ ledger, ops, clock, handOn }, { id, as, reason: 'model: resolved by hand', by: 'model' });
      this.events.push({ type: 'ops', at: this.time.now(), runKey: after.runKey, action: 'resolve', from: before.status, to: after.status });
      this.say(`ops resolve ${after.runKey}: ${before.status} → ${after.status}`);
    });
  }

  /**
   * `ops retry <runKey>`: a fresh attempt budget for an ended run (DEAD, or SKIPPED/SUPERSEDED on
   * request), of the preferred state when there is one.
   */
  async retry(pick: number, prefer: RunStatus | 'result-unknown'): Promise<void> {
    const preferred = prefer === 'result-unknown' ? await this.candidate(pick, RETRYABLE_STATES, (r) => r.resultUnknown === true) : await this.candidate(pick, [prefer]);
    const candidate = preferred ?? (await this.candidate(pick, RETRYABLE_STATES));
    if (candidate) await this.retryOne(candidate);
  }

  /**
   * `ops retry --job NAME`: every DEAD run of a job gets a fresh attempt budget, one after another,
   * as an operator does on the DEAD-runs alarm.
   */
  async retryJob(jobRef: number): Promise<void> {
    if (this.jobs.length === 0) return;
    const job = this.jobs[jobRef % this.jobs.length]!.name;
    const { runs } = await this.readTables();
    const dead = runs.filter((r) => r.job === job && r.status === RunStatus.DEAD);
    if (dead.length === 0) return;
    this.say(`ops retry --job ${job}: ${dead.length} DEAD run(s)`);
    for (const run of dead) await this.retryOne(run);
  }

  private async retryOne(candidate: Run): Promise<void> {
    await this.opsActivity(`retry ${candidate.runKey}`, async () => {
      const { clock, ledger, ops, queue } = this.opsDeps();
      const run = await ledger.getRun({ job: candidate.job, slot: candidate.slot, shard: candidate.shard });
      if (!run) return;
      const asked = this.time.now();
      let entry: Awaited<ReturnType<typeof retryRuns>>[number] | undefined;
      try {
        const job = this.jobs.find((j) => j.name === run.job);
        if (!job) return;
        [entry] = await retryRuns({ ledger, ops, queue, clock }, job, [run], { by: 'model', states: RETRYABLE_STATES });
      } catch (error) {
        // The revival may have committed before the call failed (its message send refused): the
        // operator checks the run as `ops status` would, and a revival seen there is recorded,
        // as of the call (the checker excuses what follows a repair, never what came before).
        const after = await this.harnessRun(run.runKey);
        if (after && after.status !== run.status && !isTerminal(after.status)) {
          this.events.push({ type: 'ops', at: asked, runKey: run.runKey, action: 'retry', from: run.status, to: after.status });
          this.say(`ops retry ${run.runKey}: ${run.status} → ${after.status} (seen by ops status after the call failed)`);
        }
        throw error;
      }
      if (entry?.action !== 'revived' || !entry.to) {
        this.say(`ops retry ${run.runKey}: ${entry?.action ?? 'nothing'}${entry?.detail ? ` (${entry.detail})` : ''}`);
        return;
      }
      this.events.push({ type: 'ops', at: this.time.now(), runKey: run.runKey, action: 'retry', from: run.status, to: entry.to });
      this.reports.revived.push({ runKey: run.runKey, at: this.time.now() });
      this.say(`ops retry ${run.runKey}: ${run.status} → ${entry.to}`);
    });
  }

  /** One run as the harness reads it (not an actor's call: no gate, no faults). */
  private async harnessRun(runKey: string): Promise<Run | undefined> {
    const { runs } = await this.readTables();
    return runs.find((r) => r.runKey === runKey);
  }

  // ---------------------------------------------------------------- faults

  armFault(laneOrActor: number | 'planner' | 'ops', kind: CallInfo['kind'], fault: FaultKind, count: number, latencyMs?: number): void {
    const actor = typeof laneOrActor === 'number' ? this.lane(laneOrActor).container : laneOrActor;
    this.faults.arm({ actor, kind, fault, count, latencyMs });
  }

  /** Arms a fault for whichever container the lane runs next (a container started later too). */
  armLaneFault(index: number, kind: CallInfo['kind'], fault: FaultKind, count: number, latencyMs?: number): void {
    const lane = this.lane(index);
    for (let g = lane.generation; g <= lane.generation + 2; g++) this.faults.arm({ actor: `${lane.name}#${g}`, kind, fault, count, latencyMs });
  }

  // ---------------------------------------------------------------- quiescence and check

  /**
   * Stops injecting faults, thaws every paused lane, and lets time run on: planner ticks every
   * minute, every due message delivered at once (to a free lane, or to a fresh container as Lambda
   * scales out), handlers well-behaved from now on. It ends as soon as the world has settled down
   * (no run of the fault phase open but those left for an operator, no job catching up, nothing
   * due or in progress, the watermark fresh from a tick), or at the bound.
   */
  async quiesce(): Promise<void> {
    this.faultPhaseEnd = this.time.now();
    this.faults.enabled = false;
    this.quiescent = true;
    this.say('— faults stop; time runs on —');
    for (const lane of this.lanes) {
      if (lane.paused) {
        lane.paused = false;
        this.thaw(lane);
      }
    }
    await this.settle();
    const start = this.time.now();
    const maxEnd = start + QUIESCENCE_MAX_MS;
    let nextTick = start;
    for (let round = 0; round < 20_000; round++) {
      const now = this.time.now();
      let ticked = false;
      if (now >= nextTick) {
        await this.tick();
        nextTick = now + PLANNER_SCHEDULE.tickMs;
        ticked = true;
      }
      await this.queue.pull();
      await this.deliverAllDue();
      await this.settle();
      // What the actors sent while settling (a lane's hand-on, a sweep's re-send) is due now, not
      // at the next tick: seen only at the next round's pull, it made a forbid-queue backlog move
      // one run a minute, and quiescence end with it unfinished (model seed 20269131).
      await this.queue.pull();
      const idle = !this.queue.hasDue() && this.lanes.every((l) => !l.busy) && this.extraLanes.every((l) => !l.busy);
      const nextTimer = this.time.nextTimerAt();
      const quietUntilTick = idle && (nextTimer === undefined || nextTimer >= nextTick) && (this.queue.nextVisibleAt() ?? Infinity) >= nextTick;
      // A tick or an operator action still in flight (a delayed response) may yet write: wait for it.
      if ((ticked || quietUntilTick) && this.unkillableInFlight === 0 && (await this.settledDown(ticked))) break;
      if (this.time.now() >= maxEnd) break;
      const candidates = [nextTick, this.queue.nextVisibleAt(), nextTimer].filter((t): t is number => t !== undefined);
      const next = Math.max(this.time.now() + 1, Math.min(...candidates));
      await this.time.advanceTo(Math.min(next, maxEnd), () => this.settle());
    }
    this.quiescenceEnd = this.time.now();
    const took = Math.round((this.quiescenceEnd - start) / 1000);
    this.say(this.quiescenceEnd >= maxEnd ? `— quiescence bound reached after ${took} s; still open: ${this.unsettled.join('; ')} —` : `— settled after ${took} s —`);
  }

  /** Every due message to a free lane; when all are busy, to a fresh container (Lambda scales out). */
  private async deliverAllDue(): Promise<void> {
    for (let i = 0; i < this.lanes.length && this.queue.hasDue(); i++) if (!this.lane(i).busy) await this.deliver(i);
    while (this.queue.hasDue()) {
      let lane = this.extraLanes.find((l) => !l.busy);
      if (!lane) {
        if (this.extraLanes.length >= MAX_EXTRA_LANES) return;
        const name = `q${this.extraLanes.length}`;
        lane = { name, spec: { skewMs: 0, sdkAttempts: 3, batchSize: 10 }, generation: 0, container: `${name}#0`, busy: false, invocations: 0, owner: '', held: [], paused: false };
        this.extraLanes.push(lane);
      }
      const records = await this.queue.take(lane.spec.batchSize);
      if (records.length === 0) return;
      await this.invoke(lane, records);
    }
  }

  /**
   * Whether quiescence may end: no open run of a configured job with a slot of the fault phase
   * (except runs the sweeper stopped re-dispatching: left for an operator), and no unpaused job
   * still catching up. Also remembers the catch-up cursors, to tell a long backlog from a wedge.
   */
  private async settledDown(ticked: boolean): Promise<boolean> {
    const started = Date.now();
    const final = await this.readTables();
    this.settleCheckMs += Date.now() - started;
    const configured = new Set(this.jobs.map((j) => j.name));
    const stuck = new Set(this.stuckRuns(final).map((r) => r.runKey));
    const open = final.runs.filter((r) => configured.has(r.job) && !isTerminal(r.status) && !stuck.has(r.runKey) && r.slot <= (this.faultPhaseEnd ?? 0) + this.setup.plannerSkewMs);
    const behind = [...final.cursors].filter(([job]) => configured.has(job) && !this.pausedJobs.has(job));
    // A run claimed at the very end of the fault phase by a worker killed there (any slot, even one
    // after the fault phase) is taken over only once its message or the sweeper comes back to it
    // (lease + the sweep's grace at most): quiescence waits for that, or the check would blame
    // the scheduler for a takeover that was simply not due yet.
    const lapsed = final.runs.filter((r) => configured.has(r.job) && r.status === RunStatus.RUNNING && (r.leaseUntil ?? 0) < this.time.now());
    this.unsettled = [
      ...lapsed.slice(0, 3).map((r) => `${r.runKey} RUNNING past its lease`),
      ...open.slice(0, 3).map((r) => `${r.runKey} ${r.status}`),
      ...behind.map(([job, cursor]) => `${job} behind at ${iso(cursor)}`),
    ];
    if (ticked) {
      // Progress is measured tick to tick: a check between two ticks sees nothing move.
      const moved = behind.filter(([job, cursor]) => this.lastCursors.get(job) !== undefined && this.lastCursors.get(job) !== cursor).map(([job]) => job);
      this.progressing = moved;
      for (const [job] of behind) this.streaks.set(job, moved.includes(job) ? (this.streaks.get(job) ?? 0) + 1 : 0);
      this.lastCursors = new Map(behind);
    }
    // A long backlog paged by maxPerTick: once it has moved for a few ticks in a row, the planner
    // is shown to catch up (a wedged one does not move) and waiting for the rest proves nothing more.
    return open.length === 0 && lapsed.length === 0 && behind.every(([job]) => (this.streaks.get(job) ?? 0) >= CATCH_UP_STREAK);
  }

  /** Open runs the sweeper gave up re-dispatching (budget spent, nobody claimed them): waiting for an operator. */
  private stuckRuns(final: FinalTables): Run[] {
    const messaged = this.queue.runKeysWithMessage();
    return final.runs.filter((r) => isWaiting(r.status) && (r.redispatches ?? 0) >= SWEEP_DEFAULTS.maxRedispatches && !messaged.has(r.runKey));
  }

  private clockTolerance(): number {
    const skews = [...this.setup.lanes.map((l) => l.skewMs), this.setup.plannerSkewMs, this.setup.opsSkewMs];
    return Math.max(...skews) - Math.min(...skews) + this.setup.clockAllowanceMs + 1_000;
  }

  async check(): Promise<{ result: CheckResult; final: FinalTables }> {
    const final = await this.readTables();
    const tolerance = this.clockTolerance();
    const configured = new Set(this.jobs.map((j) => j.name));
    const behindCursors = new Map([...final.cursors].filter(([job]) => final.planner.some((p) => p.behind.includes(job))));
    const owed = computeOwed({ timeline: this.timeline, ticks: this.ticks, until: this.faultPhaseEnd ?? this.time.now(), plannerSkewMs: this.setup.plannerSkewMs, configured, behindCursors });
    const stuck = this.stuckRuns(final);
    const stuckKeys = new Set(stuck.map((r) => r.runKey));
    const runsByKey = new Map(final.runs.map((r) => [r.runKey, r]));
    // Runs the sweeper left for an operator, and the last pages of a catch-up still moving (with,
    // under forbid-queue, the runs queued behind them in slot order), may stay open.
    const slotOrdered = new Set([...this.specs.values()].filter((s) => s.overlap === 'forbid-queue').map((s) => s.name));
    const bounded = new Map(this.jobs.filter((j) => j.maxRuns !== undefined).map((j) => [j.name, j.maxRuns!]));
    const owedSlots = withoutSpentMaxRuns(withSlotShards(owed.slots, final.runs), bounded, final.runs);
    const slots = owedStatuses(owedSlots, runsByKey, stuckKeys, new Set(this.progressing), slotOrdered);
    const skews = [...this.setup.lanes.map((l) => l.skewMs), this.setup.opsSkewMs];
    const pairwise = Math.max(...skews) - Math.min(...skews);
    const jobsByPartition: Record<number, string[]> = {};
    for (const job of this.jobs) (jobsByPartition[partitionOf(job.name, this.partitions)] ??= []).push(job.name);
    const all = [...this.specs.values()];
    const result = checkScenario(
      this.events,
      final,
      {
        slots,
        clockAllowanceMs: Math.max(0, pairwise - this.setup.clockAllowanceMs),
        model: {
          reconciling: all.filter((s) => s.reconcile).map((s) => s.name),
          itemGroups: Object.fromEntries(all.map((s) => [s.name, s.group])),
          overlap: Object.fromEntries(all.map((s) => [s.name, s.overlap])),
          startLeadMs: Object.fromEntries(all.map((s) => [s.name, s.startLeadMs])),
          clockToleranceMs: tolerance,
          unexpected: unexpectedRuns(final.runs, this.timeline, this.ticks),
        },
      },
      {
        now: this.time.now(),
        clockToleranceMs: tolerance,
        partitions: this.partitions,
        jobsByPartition,
        paused: [...this.pausedJobs],
        jobs: this.jobs.map((j) => j.name),
        queue: this.queue.remaining(),
        withMessage: [...this.queue.runKeysWithMessage()],
        sweepGraceMs: SWEEP_GRACE_MS + PLANNER_SCHEDULE.tickMs + tolerance,
        // Quiescence delivers every due message at once: one due for a minute was left behind.
        dueGraceMs: PLANNER_SCHEDULE.tickMs,
        stuck: [...stuckKeys],
        progressing: this.progressing,
        pausedInLedger: final.paused,
        exclusive: all.filter((spec) => spec.overlap !== 'parallel').map((spec) => spec.name),
      },
    );
    const reported = [
      ...checkMaxRuns(bounded, owed.plannedPerJob, final.runs),
      ...checkYieldsNeverDeadLettered(this.events, this.queue.deadLettered),
      ...checkCreatedRunsRun(this.events, final.runs, this.shortestDeadlines(), tolerance),
      ...checkOneShardCountPerSlot(final.runs),
      ...checkOnlyPoisonDeadLettered(this.events, this.queue.deadLettered, final.runs, configured),
      ...checkReportsKept(this.reports, this.events, final.runs, stuckKeys, configured),
    ];
    const violations = [...result.violations, ...reported];
    return { result: { ...result, ok: violations.length === 0, violations }, final };
  }

  /** Each job's shortest deadline over the scenario's definitions (the most a worker may have applied). */
  private shortestDeadlines(): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.timeline) {
      if ((e.kind !== 'add' && e.kind !== 'change') || e.job.deadline === undefined) continue;
      out.set(e.job.name, Math.min(out.get(e.job.name) ?? Infinity, e.job.deadline));
    }
    return out;
  }

  story(): string {
    return this.storyLines.join('\n');
  }

  /** Where a scenario is (for a stall report): virtual time, calls, actors in flight, last story lines. */
  whereNow(): string {
    return `virtual ${iso(this.time.now())}, ${this.calls} call(s), ${this.activities.size} activit(ies) in flight, ${this.unkillableInFlight} tick/ops in flight, lanes busy [${this.lanes.filter((l) => l.busy).map((l) => l.container).join(', ')}]; last: ${this.storyLines.slice(-4).join(' | ')}`;
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const lane of this.lanes) this.time.setState(lane.container, 'dead');
    this.time.clearAll();
    for (const lane of this.lanes) lane.clients?.destroy();
    this.planner.destroy();
    this.ops.destroy();
    const { dynamo, sqs } = this.stack.clients;
    await Promise.all([
      dynamo.send(new DeleteTableCommand({ TableName: this.tables.ledger })).catch(() => undefined),
      dynamo.send(new DeleteTableCommand({ TableName: this.tables.payments })).catch(() => undefined),
      deleteQueue(sqs, this.queues.runQueueUrl),
      deleteQueue(sqs, this.queues.deadLetterQueueUrl),
    ]);
  }
}

/** The history events a reader of a failure's story needs, one line each. */
function storyOf(event: HistoryEvent): string | undefined {
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

function deleteQueue(sqs: SQSClient, url: string): Promise<unknown> {
  return sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
}

function runKeyIn(body: string): string {
  try {
    const parsed = JSON.parse(body) as { runKey?: unknown };
    return typeof parsed.runKey === 'string' ? parsed.runKey : '?';
  } catch {
    return '?';
  }
}

function short(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message.split('\n')[0]!.slice(0, 160)}` : String(error);
}

