/** The scenario's job config as deploys change it: jobs added, removed and changed, partitions, a previous deployment's orphans. */
import { Ledger } from '../../shared/store/ledger.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { isTerminal } from '../../shared/core/vocabulary.js';
import { changedSpec, changeLabel, fieldLabel, scheduleLabel, type JobChange } from './config-changes.js';
import { BULK_GROUP, INHERITED_JOB, jobInput, MANY_TEMPLATE, parseModelJobs, short, type JobSpec } from './world-setup.js';
import type { Stage } from './stage.js';

export class WorldConfig {
  constructor(readonly stage: Stage) {}

  addJobNow(spec: JobSpec, initial = false): Job {
    const [job] = parseModelJobs([jobInput(spec)]);
    this.stage.specs.set(spec.name, spec);
    this.stage.jobs = [...this.stage.jobs, job!];
    this.stage.timeline.push({ kind: 'add', seq: this.stage.nextSeq(), job: job! });
    // Initial jobs too: a story must say each job's policies (misfire, deadline, attempts, reconcile) to be read.
    const misfire = `misfire ${spec.misfire.policy}${spec.misfire.afterMs !== undefined ? ` after ${spec.misfire.afterMs / 1000} s` : ''}${spec.misfire.maxPerTick !== undefined ? ` ≤ ${spec.misfire.maxPerTick}/tick` : ''}`;
    const limits = `${spec.maxAttempts} attempt(s)${spec.deadlineMs !== undefined ? `, deadline ${spec.deadlineMs / 1000} s` : ''}${spec.reconcile ? ', reconciles' : ''}`;
    this.stage.say(
      `config: job ${spec.name} ${initial ? 'configured' : 'added'} (${scheduleLabel(spec.schedule)}, ${spec.overlap}, ${spec.shards} shard(s), ${misfire}, ${limits}${spec.maxRuns !== undefined ? `, maxRuns ${spec.maxRuns}` : ''}${spec.longRun !== undefined ? `, ${spec.longRun} invocations a run` : ''})`,
    );
    return job!;
  }

  newJobName(): string {
    return `j${this.stage.setup.jobs.length + this.stage.nextJob++}`;
  }

  addJob(spec: JobSpec): void {
    if (this.stage.specs.has(spec.name)) return;
    this.addJobNow(spec);
  }

  removeJob(index: number): void {
    if (this.stage.jobs.length <= 1) return;
    const job = this.stage.jobs[index % this.stage.jobs.length]!;
    this.dropJobs(new Set([job.name]));
    this.stage.say(`config: job ${job.name} removed`);
  }

  /** Takes jobs out of the config (their open runs stay, as orphans) and out of what the model owes from now on. */
  private dropJobs(names: ReadonlySet<string>): void {
    this.stage.jobs = this.stage.jobs.filter((j) => !names.has(j.name));
    for (const job of names) this.stage.timeline.push({ kind: 'remove', seq: this.stage.nextSeq(), job });
  }

  /**
   * A job removed on its backlog alarm: the configured job with the most open runs (none removed
   * while only one job is configured, or no job has an open run), its open runs left as orphans.
   */
  async removeBackloggedJob(): Promise<void> {
    if (this.stage.jobs.length <= 1) return;
    const { runs } = await this.stage.readTables();
    const open = new Map<string, number>();
    for (const run of runs) if (!isTerminal(run.status)) open.set(run.job, (open.get(run.job) ?? 0) + 1);
    const [job] = [...this.stage.jobs].sort((a, b) => (open.get(b.name) ?? 0) - (open.get(a.name) ?? 0));
    const count = open.get(job!.name) ?? 0;
    if (count === 0) return;
    this.dropJobs(new Set([job!.name]));
    this.stage.say(`config: job ${job!.name} removed on its backlog alarm (${count} open run(s) left behind)`);
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
  async inherit(orphans: number): Promise<void> {
    const job = this.addJobNow({ ...MANY_TEMPLATE, name: INHERITED_JOB, schedule: '* * * * *', group: INHERITED_JOB }, true);
    const to = Math.floor(this.stage.time.now() / 60_000) * 60_000;
    const from = to - orphans * 60_000;
    const report = await this.stage.recordedBackfill(
      {
        ledger: new Ledger(this.stage.stack.clients.doc, { tableName: this.stage.tables.ledger }),
        queue: new RunQueue(this.stage.stack.clients.sqs, this.stage.queues.deadLetterQueueUrl),
        clock: () => this.stage.time.now(),
        // One window for all (the rate below): a sleep would wait on virtual time, which no command moves yet.
        sleep: () => Promise.reject(new Error('the inherited backfill must not wait')),
      },
      { job, from, to, maxPerSecond: 10_000 },
    );
    this.dropJobs(new Set([job.name]));
    this.stage.say(
      `config: job ${job.name} removed by an earlier deployment with ${report.created} open run(s) of a backfill left behind, their messages in the DLQ (the tables this scenario starts on)`,
    );
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
    const bulk = this.stage.jobs.filter((j) => this.stage.specs.get(j.name)?.group.startsWith(BULK_GROUP) === true);
    const removed = new Set((bulk.length >= this.stage.jobs.length ? bulk.slice(1) : bulk).map((j) => j.name));
    if (removed.size === 0) return;
    this.dropJobs(removed);
    this.stage.say(`config: ${removed.size} jobs added in bulk removed (a rollback)`);
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
    const candidates = change.field === 'maxRuns' ? this.stage.jobs.filter((j) => j.maxRuns !== undefined) : this.stage.jobs;
    if (candidates.length === 0) return;
    const job = candidates[index % candidates.length]!;
    const spec = this.stage.specs.get(job.name)!;
    const next = changedSpec(spec, change);
    if (!next) return;
    let changed: Job;
    try {
      [changed] = parseModelJobs([jobInput(next)]) as [Job];
    } catch (error) {
      this.stage.say(`config: job ${job.name} ${changeLabel(change)} refused by validation: ${short(error)}`);
      return;
    }
    this.stage.specs.set(job.name, next);
    this.stage.jobs = this.stage.jobs.map((j) => (j === job ? changed : j));
    this.stage.timeline.push({ kind: 'change', seq: this.stage.nextSeq(), job: changed });
    this.stage.say(`config: job ${job.name} ${change.field} ${fieldLabel(spec, change.field)} → ${fieldLabel(next, change.field)}`);
  }

  setPartitions(of: number): void {
    if (of === this.stage.partitions) return;
    this.stage.say(`config: plannerPartitions ${this.stage.partitions} → ${of}`);
    this.stage.partitions = of;
  }
}
