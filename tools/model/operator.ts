/** The operator's actions (pause, resume, backfill, redrive, resolve, retry), as the ops CLI runs them. */
import { Ledger } from '../../shared/store/ledger.js';
import { LedgerOps } from '../../shared/store/repairs.js';
import { RunQueue } from '../../shared/messaging/run-queue.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { partitionOf } from '../../shared/core/partition.js';
import { isTerminal, RunStatus, type Run, type RunId } from '../../shared/core/vocabulary.js';
import { redrive } from '../../shared/operations/redrive.js';
import { laneHandOn } from '../../shared/operations/resolve.js';
import { resolveRun } from '../ops/resolve.js';
import { RETRYABLE_STATES, retryRuns } from '../../shared/operations/retry.js';
import { jobPlanning } from '../../shared/store/job-planning.js';
import { INHERITED_JOB, iso, short } from './world-setup.js';
import type { Stage } from './stage.js';

export class Operator {
  constructor(readonly stage: Stage) {}

  opsDeps() {
    const clock = this.stage.time.clockOf({ skewMs: this.stage.setup.opsSkewMs });
    const ledger = new Ledger(this.stage.opsClients.doc, { tableName: this.stage.tables.ledger });
    const ops = new LedgerOps(this.stage.opsClients.doc, { tableName: this.stage.tables.ledger });
    const queue = new RunQueue(this.stage.opsClients.sqs, this.stage.queues.runQueueUrl);
    return { clock, ledger, ops, queue };
  }

  async opsActivity(label: string, work: () => Promise<void>): Promise<void> {
    this.stage.trackUnkillable(
      work().catch((error: unknown) => {
        this.stage.say(`ops ${label} failed: ${short(error)}`);
      }),
    );
    await this.stage.settleUnlessBatched();
  }

  /** Whether the planner's state lists `job` as paused (a harness read: no gate, no faults). */
  private async pausedInLedger(job: string): Promise<boolean> {
    const { paused } = await this.stage.readTables();
    return paused.includes(job);
  }

  /**
   * An operator pauses or resumes a job, then checks the outcome as `ops status` would: the model
   * records the change it sees (a call whose response was lost may have paused the job although
   * it reported failure, or "already paused" on its retry). The change happened somewhere between
   * the call and the check: both sequence numbers are kept.
   */
  private async flipPause(job: Job, action: 'pause' | 'resume'): Promise<void> {
    const from = this.stage.nextSeq();
    await this.opsActivity(`${action} ${job.name}`, async () => {
      try {
        const { clock, ledger } = this.opsDeps();
        if (action === 'pause') {
          // As `ops pause` does: the job's plan item remembers how far it was planned.
          const now = clock();
          const before = (await jobPlanning(ledger.planning, [job.name], partitionOf, now)).get(job.name);
          await ledger.planning.pause(job.name, before?.plannedUntil ?? now, { by: 'model', note: 'model pause', at: now });
        } else {
          await ledger.planning.resume(job.name);
        }
      } finally {
        const paused = await this.pausedInLedger(job.name);
        if (paused !== this.stage.pausedJobs.has(job.name)) {
          if (paused) this.stage.pausedJobs.add(job.name);
          else this.stage.pausedJobs.delete(job.name);
          this.stage.timeline.push({ kind: paused ? 'pause' : 'resume', seq: this.stage.nextSeq(), from, job: job.name });
          this.stage.say(`ops ${paused ? 'pause' : 'resume'} ${job.name}`);
        }
      }
    });
  }

  async pauseJob(index: number): Promise<void> {
    if (this.stage.jobs.length === 0) return;
    await this.flipPause(this.stage.jobs[index % this.stage.jobs.length]!, 'pause');
  }

  async resumeJob(index: number): Promise<void> {
    if (this.stage.jobs.length === 0) return;
    await this.flipPause(this.stage.jobs[index % this.stage.jobs.length]!, 'resume');
  }

  async backfill(index: number, agoMs: number, spanMs: number): Promise<void> {
    if (this.stage.jobs.length === 0) return;
    const job = this.stage.jobs[index % this.stage.jobs.length]!;
    await this.opsActivity(`backfill ${job.name}`, async () => {
      const { clock, ledger } = this.opsDeps();
      const to = clock() - agoMs;
      const from = to - spanMs;
      const report = await this.stage.recordedBackfill(
        {
          ledger,
          queue: new RunQueue(this.stage.opsClients.sqs, this.stage.queues.runQueueUrl),
          clock,
          sleep: this.stage.time.sleepOf('ops'),
        },
        { job, from, to, maxPerSecond: 20 },
      );
      this.stage.say(`ops backfill ${job.name} [${iso(from)}, ${iso(to)}): ${report.created} created`);
    });
  }

  async redrive(): Promise<void> {
    await this.opsActivity('redrive', async () => {
      const { clock, ledger, ops } = this.opsDeps();
      if ((await this.stage.queue.deadLetterDepth()) === 0) return;
      const report = await redrive(
        {
          sqs: this.stage.opsClients.sqs,
          ledger,
          ops,
          jobs: this.stage.jobs,
          deadLetterQueueUrl: this.stage.queues.deadLetterQueueUrl,
          deadLetterQueueArn: async () => this.stage.queues.deadLetterQueueArn,
          runQueueArn: async () => this.stage.queues.runQueueArn,
          clock,
        },
        { maxPerSecond: 500, by: 'model' },
      );
      for (const entry of report.entries) {
        if (entry.action !== 'revived' || !entry.runKey || !entry.status) continue;
        const after = await this.stage.harnessRun(entry.runKey);
        this.stage.events.push({
          type: 'ops',
          at: this.stage.time.now(),
          runKey: entry.runKey,
          action: 'redrive',
          from: entry.status,
          to: after?.status ?? RunStatus.READY,
        });
      }
      this.stage.say(`ops redrive: ${report.messages} message(s), ${report.revived} revived`);
      if (report.taskHandle) await this.stage.queue.afterRedrive(this.stage.queues.deadLetterQueueArn);
    });
  }

  /**
   * The `pick`-th run an operator's action picks, from a consistent read: one of the scenario's own runs in `statuses` (not one of
   * the inherited orphans, which would otherwise be most of the open runs, and most picks, of a
   * scenario that starts on them).
   */
  private async candidate(
    pick: number,
    statuses: readonly RunStatus[],
    also: (run: Run) => boolean = () => true,
  ): Promise<Run | undefined> {
    const { runs } = await this.stage.readTables();
    const candidates = runs.filter((r) => r.job !== INHERITED_JOB && statuses.includes(r.status) && also(r));
    return candidates[pick % Math.max(1, candidates.length)];
  }

  async resolve(pick: number, as: 'succeeded' | 'dead'): Promise<void> {
    const run = await this.candidate(pick, [RunStatus.DEAD, RunStatus.RUNNING, RunStatus.RETRY, RunStatus.UNKNOWN, RunStatus.READY]);
    if (!run) return;
    await this.opsActivity(`resolve ${run.runKey}`, async () => {
      const { clock, ledger, ops, queue } = this.opsDeps();
      const id: RunId = { job: run.job, slot: run.slot, shard: run.shard };
      const handOn = laneHandOn(ledger, queue, this.stage.jobs, clock);
      const { before, after } = await resolveRun(
        { ledger, ops, clock, handOn },
        { id, as, reason: 'model: resolved by hand', by: 'model' },
      );
      this.stage.events.push({
        type: 'ops',
        at: this.stage.time.now(),
        runKey: after.runKey,
        action: 'resolve',
        from: before.status,
        to: after.status,
      });
      this.stage.say(`ops resolve ${after.runKey}: ${before.status} → ${after.status}`);
    });
  }

  /**
   * `ops retry <runKey>`: a fresh attempt budget for an ended run (DEAD, or SKIPPED/SUPERSEDED on
   * request), of the preferred state when there is one.
   */
  async retry(pick: number, prefer: RunStatus | 'result-unknown'): Promise<void> {
    const preferred =
      prefer === 'result-unknown'
        ? await this.candidate(pick, RETRYABLE_STATES, (r) => r.resultUnknown === true)
        : await this.candidate(pick, [prefer]);
    const candidate = preferred ?? (await this.candidate(pick, RETRYABLE_STATES));
    if (candidate) await this.retryOne(candidate);
  }

  /**
   * `ops retry --job NAME`: every DEAD run of a job gets a fresh attempt budget, one after another,
   * as an operator does on the DEAD-runs alarm.
   */
  async retryJob(jobRef: number): Promise<void> {
    if (this.stage.jobs.length === 0) return;
    const job = this.stage.jobs[jobRef % this.stage.jobs.length]!.name;
    const { runs } = await this.stage.readTables();
    const dead = runs.filter((r) => r.job === job && r.status === RunStatus.DEAD);
    if (dead.length === 0) return;
    this.stage.say(`ops retry --job ${job}: ${dead.length} DEAD run(s)`);
    for (const run of dead) await this.retryOne(run);
  }

  private async retryOne(candidate: Run): Promise<void> {
    await this.opsActivity(`retry ${candidate.runKey}`, async () => {
      const { clock, ledger, ops, queue } = this.opsDeps();
      const run = await ledger.getRun({ job: candidate.job, slot: candidate.slot, shard: candidate.shard });
      if (!run) return;
      const asked = this.stage.time.now();
      let entry: Awaited<ReturnType<typeof retryRuns>>[number] | undefined;
      try {
        const job = this.stage.jobs.find((j) => j.name === run.job);
        if (!job) return;
        [entry] = await retryRuns({ ledger, ops, queue, clock }, job, [run], { by: 'model', states: RETRYABLE_STATES });
      } catch (error) {
        // The revival may have committed before the call failed (its message send refused): the
        // operator checks the run as `ops status` would, and a revival seen there is recorded,
        // as of the call (the checker excuses what follows a repair, never what came before).
        const after = await this.stage.harnessRun(run.runKey);
        if (after && after.status !== run.status && !isTerminal(after.status)) {
          this.stage.events.push({ type: 'ops', at: asked, runKey: run.runKey, action: 'retry', from: run.status, to: after.status });
          this.stage.say(`ops retry ${run.runKey}: ${run.status} → ${after.status} (seen by ops status after the call failed)`);
        }
        throw error;
      }
      if (entry?.action !== 'revived' || !entry.to) {
        this.stage.say(`ops retry ${run.runKey}: ${entry?.action ?? 'nothing'}${entry?.detail ? ` (${entry.detail})` : ''}`);
        return;
      }
      this.stage.events.push({
        type: 'ops',
        at: this.stage.time.now(),
        runKey: run.runKey,
        action: 'retry',
        from: run.status,
        to: entry.to,
      });
      this.stage.reports.revived.push({ runKey: run.runKey, at: this.stage.time.now() });
      this.stage.say(`ops retry ${run.runKey}: ${run.status} → ${entry.to}`);
    });
  }
}
