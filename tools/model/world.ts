/**
 * One scenario's world: fresh tables and queues on the shared local stack, virtual time, the
 * actors (planner, worker containers, the operator) with their real SDK clients behind the
 * model's gate and faults, the model queue, the config timeline and the history.
 * Commands (commands.ts) act on it through the methods below; `quiesce` then lets time run on
 * without faults and `check` reads the final tables and runs the checker.
 *
 * Every store call of every actor passes the gate, and the gate lets one call through at a time,
 * in the order the scenario's fc.scheduler picks: a scenario is a pure function of its commands
 * and its scheduler seed, so a failure replays and shrinks.
 *
 * The world is its shared state and gate (stage.ts) and a part per concern: the job config
 * (world-config.ts), the planner's invocations (planner-driver.ts), the worker containers
 * (fleet.ts), the operator (operator.ts), and quiescence and the check (quiescence.ts).
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { Scheduler } from 'fast-check';
import type { CheckResult } from '../verify/checker.js';
import type { RunStatus } from '../../shared/core/vocabulary.js';
import { RUN_QUEUES } from '../../shared/core/resources.js';
import { createQueues, createTables } from '../local-stack.js';
import type { CallInfo, FaultKind } from './faults.js';
import type { FinalTables } from './ledger-view.js';
import type { JobChange } from './config-changes.js';
import { Fleet } from './fleet.js';
import { Operator } from './operator.js';
import { PlannerDriver } from './planner-driver.js';
import { Quiescence } from './quiescence.js';
import { Stage } from './stage.js';
import { WorldConfig } from './world-config.js';
import { deleteQueue, iso, type JobSpec, type ModelStack, type ScenarioSetup } from './world-setup.js';

export {
  jobInput,
  modelStack,
  MODEL_WORKER_TIMEOUT_MS,
  ScenarioFailure,
  type ContainerSpec,
  type JobSpec,
  type ModelStack,
  type ScenarioSetup,
} from './world-setup.js';

export class World extends Stage {
  private readonly config = new WorldConfig(this);
  private readonly driver = new PlannerDriver(this);
  private readonly fleet = new Fleet(this, this.driver);
  private readonly operator = new Operator(this);
  private readonly ending = new Quiescence(this, this.driver, this.fleet);
  private destroyed = false;

  static async create(stack: ModelStack, setup: ScenarioSetup, scheduler: Scheduler): Promise<World> {
    const suffix = randomUUID().slice(0, 12);
    const tables = { ledger: `model-ledger-${suffix}`, payments: `model-items-${suffix}` };
    await createTables(stack.clients.dynamo, { ledgerTable: tables.ledger, paymentsTable: tables.payments });
    const queues = await createQueues(stack.clients.sqs, {
      nameSuffix: `-m${suffix}`,
      visibilityTimeoutSeconds: RUN_QUEUES.visibilityTimeoutSeconds,
    });
    const arn = async (url: string) =>
      (await stack.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ??
      '';
    const world = new World(stack, setup, scheduler, tables, {
      ...queues,
      runQueueArn: await arn(queues.runQueueUrl),
      deadLetterQueueArn: await arn(queues.deadLetterQueueUrl),
    });
    for (const spec of setup.jobs) world.config.addJobNow(spec, true);
    const orphans = setup.inheritedOrphans ?? 0;
    if (orphans > 0) {
      // A failure here (a put or send of the local stack) must not leave the tables and queues behind.
      await world.config.inherit(orphans).catch(async (error: unknown) => {
        await world.destroy();
        throw error;
      });
    }
    return world;
  }

  // ---------------------------------------------------------------- config

  newJobName(): string {
    return this.config.newJobName();
  }

  addJob(spec: JobSpec): void {
    this.config.addJob(spec);
  }

  removeJob(index: number): void {
    this.config.removeJob(index);
  }

  removeBackloggedJob(): Promise<void> {
    return this.config.removeBackloggedJob();
  }

  addBulk(count: number): void {
    this.config.addBulk(count);
  }

  removeBulkAdded(): void {
    this.config.removeBulkAdded();
  }

  changeSchedule(index: number, schedule: string): void {
    this.config.changeSchedule(index, schedule);
  }

  changeJob(index: number, change: JobChange): void {
    this.config.changeJob(index, change);
  }

  setPartitions(of: number): void {
    this.config.setPartitions(of);
  }

  // ---------------------------------------------------------------- planner and worker containers

  tick(copies = 1): Promise<void> {
    return this.driver.tick(copies);
  }

  deliver(index: number, duplicateTo?: number): Promise<void> {
    return this.fleet.deliver(index, duplicateTo);
  }

  runFor(ms: number): Promise<void> {
    return this.fleet.runFor(ms);
  }

  deliverNext(index: number, withinMs: number): Promise<void> {
    return this.fleet.deliverNext(index, withinMs);
  }

  kill(index: number): void {
    this.fleet.kill(index);
  }

  pause(index: number, ms: number): Promise<void> {
    return this.fleet.pause(index, ms);
  }

  /** Arms a fault for a container or an actor, as the fleet takes it (Fleet.armFault). */
  armFault(...args: Parameters<Fleet['armFault']>): void {
    this.fleet.armFault(...args);
  }

  armContainerFault(index: number, kind: CallInfo['kind'], fault: FaultKind, count: number, latencyMs?: number): void {
    this.fleet.armContainerFault(index, kind, fault, count, latencyMs);
  }

  // ---------------------------------------------------------------- operator

  opsDeps() {
    return this.operator.opsDeps();
  }

  opsActivity(label: string, work: () => Promise<void>): Promise<void> {
    return this.operator.opsActivity(label, work);
  }

  pauseJob(index: number): Promise<void> {
    return this.operator.pauseJob(index);
  }

  resumeJob(index: number): Promise<void> {
    return this.operator.resumeJob(index);
  }

  backfill(index: number, agoMs: number, spanMs: number): Promise<void> {
    return this.operator.backfill(index, agoMs, spanMs);
  }

  redrive(): Promise<void> {
    return this.operator.redrive();
  }

  resolve(pick: number, as: 'succeeded' | 'dead'): Promise<void> {
    return this.operator.resolve(pick, as);
  }

  retry(pick: number, prefer: RunStatus | 'result-unknown'): Promise<void> {
    return this.operator.retry(pick, prefer);
  }

  retryJob(jobRef: number): Promise<void> {
    return this.operator.retryJob(jobRef);
  }

  // ---------------------------------------------------------------- the end

  quiesce(): Promise<void> {
    return this.ending.quiesce();
  }

  check(): Promise<{ result: CheckResult; final: FinalTables }> {
    return this.ending.check();
  }

  story(): string {
    return this.storyLines.join('\n');
  }

  /** Where a scenario is (for a stall report): virtual time, calls, actors in flight, last story lines. */
  whereNow(): string {
    return `virtual ${iso(this.time.now())}, ${this.calls} call(s), ${this.activities.size} activit(ies) in flight, ${this.unkillableInFlight} tick/ops in flight, containers busy [${this.containers
      .filter((l) => l.busy)
      .map((l) => l.actor)
      .join(', ')}]; last: ${this.storyLines.slice(-4).join(' | ')}`;
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const container of this.containers) this.time.setState(container.actor, 'dead');
    this.time.clearAll();
    for (const container of this.containers) container.clients?.destroy();
    this.plannerClients.destroy();
    this.opsClients.destroy();
    const { dynamo, sqs } = this.stack.clients;
    await Promise.all([
      dynamo.send(new DeleteTableCommand({ TableName: this.tables.ledger })).catch(() => undefined),
      dynamo.send(new DeleteTableCommand({ TableName: this.tables.payments })).catch(() => undefined),
      deleteQueue(sqs, this.queues.runQueueUrl),
      deleteQueue(sqs, this.queues.deadLetterQueueUrl),
    ]);
  }
}
