/**
 * Liveness of the exclusive overlap policies (forbid-skip, forbid-queue, coalesce): a lane always
 * moves on. Every path that ends or revives a run of an exclusive job frees its lane or leaves a
 * marker the next claim takes over, and the lane's next waiting run is dispatched; a run created
 * ahead of its slot never supersedes one that is due. Decisions are driven one message at a time
 * under a manual clock (test/support/lab.ts), against the real ledger.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { LedgerOps } from '../../../shared/store/repairs.js';
import { initialFence, MAX_CLAIMS_PER_SLOT } from '../../../shared/core/fence.js';
import { RunStatus } from '../../../shared/core/vocabulary.js';
import { PermanentError, RetryableError, type JobHandler, type RunContext } from '../../../shared/handler-api.js';
import { LedgerKeys } from '../../../shared/core/resources.js';
import { laneHandOn } from '../../../shared/operations/resolve.js';
import { resolveRun } from '../../../tools/ops/resolve.js';
import { retryRuns } from '../../../shared/operations/retry.js';
import { silentLogger, testJobs } from '../../support/helpers.js';
import { runPlannerTick } from '../../../shared/planner/planner.js';
import { Lab } from '../../support/lab.js';
import { sandbox, type Sandbox } from '../../support/stack.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 11, 1, 12, 0);

/** A handler whose behaviour the test picks per slot, and that can be held until released. */
class Script {
  readonly behaviour = new Map<number, 'ok' | 'retry' | 'permanent' | 'hold'>();
  private readonly gates = new Map<number, () => void>();
  readonly handler: JobHandler = {
    run: async (ctx: RunContext) => {
      const what = this.behaviour.get(ctx.slot) ?? 'ok';
      if (what === 'retry') {
        this.behaviour.set(ctx.slot, 'ok');
        throw new RetryableError('transient', { code: 'FLAKY' });
      }
      if (what === 'permanent') throw new PermanentError('broken for good', { code: 'BROKEN' });
      if (what === 'hold') await new Promise<void>((resolve) => this.gates.set(ctx.slot, resolve));
    },
  };
  release(slot: number): void {
    this.gates.get(slot)?.();
  }
  async waitHeld(slot: number): Promise<void> {
    for (let i = 0; i < 200 && !this.gates.has(slot); i++) await new Promise((r) => setTimeout(r, 10));
    if (!this.gates.has(slot)) throw new Error(`run of ${new Date(slot).toISOString()} never started`);
  }
}

describe('exclusive lanes always move on', () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = await sandbox();
  });
  afterAll(() => box.destroy());

  function lab(
    overlap: 'forbid-skip' | 'forbid-queue' | 'coalesce',
    script: Script,
    schedule = '* * * * *',
    extra: Record<string, unknown> = {},
  ) {
    const name = `${overlap}-${Math.random().toString(36).slice(2, 8)}`;
    const jobs = testJobs(
      [
        {
          name,
          schedule,
          handler: 'h',
          overlap,
          startLead: 0,
          lease: '30s',
          retry: { maxAttempts: 3, backoff: { base: 0, max: 0 } },
          ...extra,
        },
      ],
      ['h'],
    );
    return { name, lab: new Lab(box, jobs, { h: script.handler }, T0) };
  }

  describe('coalesce: only a due run can supersede another', () => {
    it("a tick just before every minute leaves the next minute's run READY ahead of time: each minute still runs (none SUPERSEDED)", async () => {
      const script = new Script();
      const { name, lab: l } = lab('coalesce', script);
      for (let m = 0; m < 5; m++) {
        // The tick at hh:mm-3.5s materializes this minute's slot and the next one (65 s ahead).
        l.clock.now = T0 + m * MIN - 3_500;
        for (const slot of [T0 + m * MIN, T0 + (m + 1) * MIN]) if (!(await l.run(name, slot))) await l.create(name, slot);
        l.clock.now = T0 + m * MIN + 40;
        expect(await l.deliver(name, T0 + m * MIN)).toBe('ack');
        expect(await l.status(name, T0 + m * MIN)).toBe(RunStatus.SUCCEEDED);
      }
      expect(l.started()).toHaveLength(5);
      expect(l.metrics.get('RunsSuperseded')).toBe(0);
    });

    it('every 30 s with two runs always ahead: every slot runs', async () => {
      const script = new Script();
      const { name, lab: l } = lab('coalesce', script, '*/30 * * * * *');
      for (let k = 0; k < 6; k++) {
        l.clock.now = T0 + k * 30_000 - 3_500;
        for (let ahead = 0; ahead < 3; ahead++) {
          const slot = T0 + (k + ahead) * 30_000;
          if (!(await l.run(name, slot))) await l.create(name, slot);
        }
        l.clock.now = T0 + k * 30_000 + 40;
        await l.deliver(name, T0 + k * 30_000);
      }
      expect(l.started()).toHaveLength(6);
    });

    it('an older run that arrives after a newer due one ran is superseded (executed slots only move forward)', async () => {
      const script = new Script();
      const { name, lab: l } = lab('coalesce', script);
      await l.create(name, T0);
      await l.create(name, T0 + MIN);
      l.clock.now = T0 + MIN + 10;
      await l.deliver(name, T0 + MIN);
      await l.deliver(name, T0);
      expect(await l.status(name, T0)).toBe(RunStatus.SUPERSEDED);
      expect(l.started()).toHaveLength(1);
    });
  });

  describe('lost messages of an exclusive lane: the sweeper keeps in view what it does not send', () => {
    for (const overlap of ['coalesce', 'forbid-queue'] as const) {
      it(`${overlap}: runs whose messages were lost, older than the runs that then hold the lane, are re-sent and settle: none stays open (model seed 20300798)`, async () => {
        // Before: the window sweep found the lost runs, sent only the one the lane runs first
        // (coalesce: the newest) and dropped the others without watching them; once the sweep had
        // passed their slots nothing looked at them again. A coalesce run older than every later
        // holder is never handed the lane either (a holder dispatches only runs after its own
        // slot): it stayed READY for good.
        // A table of its own: the planner's layout and sweep cursor are the table's, not the job's.
        const own = await sandbox();
        const script = new Script();
        const name = `${overlap}-lost`;
        const jobs = testJobs(
          [{ name, schedule: '* * * * *', handler: 'h', overlap, startLead: 0, lease: '30s', misfire: { after: '1h', policy: 'all' } }],
          ['h'],
        );
        const l = new Lab(own, jobs, { h: script.handler }, T0);
        const tick = () =>
          runPlannerTick(
            { ledger: own.ledger, queue: l.queue, jobs, clock: l.clock.read, logger: silentLogger(), metrics: l.metrics },
            { partition: 0, of: 1 },
          );
        // Two runs put before the planner's (it finds them and sends nothing: their messages are
        // lost); then the planner is down for ten minutes, so one sweep finds both lost at once.
        const lost = [T0 + MIN, T0 + 3 * MIN];
        for (const slot of lost) await l.create(name, slot);
        await tick();
        l.clock.advance(10 * MIN);
        for (let k = 0; k < 20; k++) {
          await tick();
          await l.deliverSent();
          l.clock.advance(MIN);
        }
        const runs = await own.ledger.listRuns(name, { ascending: true });
        own.destroy();
        const open = runs.filter((r) => r.slot <= T0 + 20 * MIN && r.status !== RunStatus.SUCCEEDED && r.status !== RunStatus.SUPERSEDED);
        expect(open.map((r) => `${r.runKey} ${r.status}`)).toEqual([]);
        if (overlap === 'coalesce') expect(await l.status(name, lost[0]!)).toBe(RunStatus.SUPERSEDED);
      });
    }
  });

  describe('lost messages behind a lane held at every sweep: the sweeper sends those whose delivery decides them', () => {
    for (const overlap of ['forbid-skip', 'coalesce', 'forbid-queue'] as const) {
      it(`${overlap}: a lost run older than a holder that keeps the lane through every sweep (between attempts for an hour) is settled or registered with the holder, not left READY waiting for an idle lane (model seed 20269123)`, async () => {
        // Before: the sweeper sent a lost waiting run only when its lane was idle at the sweep; a
        // lane busy on a fixed beat (the model's 20-second forbid-skip job, swept every minute
        // while the next run held it) never was, and the run stayed READY for good.
        const own = await sandbox();
        try {
          const script = new Script();
          const name = `${overlap}-held`;
          const jobs = testJobs(
            [
              {
                name,
                schedule: '* * * * *',
                handler: 'h',
                overlap,
                startLead: 0,
                lease: '30s',
                misfire: { after: '1h', policy: 'all' },
                retry: { maxAttempts: 3, backoff: { base: '1h', max: '1h' } },
              },
            ],
            ['h'],
          );
          const [lostSlot, holderSlot] = [T0 + MIN, T0 + 3 * MIN];
          const l = new Lab(own, jobs, { h: script.handler }, holderSlot + 10);
          const tick = () =>
            runPlannerTick(
              { ledger: own.ledger, queue: l.queue, jobs, clock: l.clock.read, logger: silentLogger(), metrics: l.metrics },
              { partition: 0, of: 1 },
            );
          await tick();
          // The holder fails once and keeps the lane for its next attempt, an hour away.
          await l.create(name, holderSlot);
          script.behaviour.set(holderSlot, 'retry');
          await l.deliver(name, holderSlot);
          expect(await l.status(name, holderSlot)).toBe(RunStatus.RETRY);
          // An older slot opens behind its back (a backfill) and its message is lost.
          await l.create(name, lostSlot, { watch: true });
          l.queue.take();
          for (let k = 0; k < 30; k++) {
            l.clock.advance(MIN);
            await tick();
            await l.deliverSent();
          }
          expect((await own.ledger.lanes.read(name, 0))?.holderSlot).toBe(holderSlot);
          const lost = await l.run(name, lostSlot);
          if (overlap === 'forbid-queue') {
            // It waits, above the lane's floor (the sweeper lowered it, were it above): the holder's
            // next attempt finds it older and gives it the lane; it is not re-sent behind the holder.
            expect(lost?.status).toBe(RunStatus.READY);
            expect((await own.ledger.lanes.read(name, 0))?.floor ?? Number.NEGATIVE_INFINITY).toBeLessThanOrEqual(lostSlot);
            // The holder's message, hidden until its next attempt, comes back then (as SQS brings it).
            let back = false;
            for (let k = 0; k < 40; k++) {
              l.clock.advance(MIN);
              await tick();
              const holder = await l.run(name, holderSlot);
              if (!back && holder?.status === RunStatus.RETRY && (holder.nextAttemptAt ?? 0) <= l.clock.now) {
                back = true;
                await l.deliver(name, holderSlot);
              }
              await l.deliverSent();
            }
            expect({ lost: await l.status(name, lostSlot), holder: await l.status(name, holderSlot) }).toEqual({
              lost: RunStatus.SUCCEEDED,
              holder: RunStatus.SUCCEEDED,
            });
            const [lostRun, holderRun] = [await l.run(name, lostSlot), await l.run(name, holderSlot)];
            expect(lostRun!.finishedAt!).toBeLessThanOrEqual(holderRun!.finishedAt!);
          } else expect(lost?.status).toBe(overlap === 'forbid-skip' ? RunStatus.SKIPPED : RunStatus.SUPERSEDED);
        } finally {
          own.destroy();
        }
      });
    }
  });

  describe('every path that ends or revives a lane holder hands the lane on', () => {
    /** S1 holds the lane (RETRY between attempts); S2 arrives, waits, and acks its message. */
    async function retryingHolderWithWaiter(overlap: 'forbid-queue' | 'coalesce') {
      const script = new Script();
      const { name, lab: l } = lab(overlap, script);
      const [s1, s2] = [T0, T0 + MIN];
      await l.create(name, s1);
      await l.create(name, s2);
      script.behaviour.set(s1, 'retry');
      l.clock.now = s1 + 10;
      expect(await l.deliver(name, s1)).toBe('retry');
      expect(await l.status(name, s1)).toBe(RunStatus.RETRY);
      l.clock.now = s2 + 10;
      expect(await l.deliver(name, s2)).toBe('ack');
      expect(await l.status(name, s2)).toBe(RunStatus.READY);
      expect(l.started()).toHaveLength(1);
      return { script, name, l, s1, s2 };
    }

    it('holder SUCCEEDED: the waiting run is dispatched and runs', async () => {
      const script = new Script();
      const { name, lab: l } = lab('forbid-queue', script);
      const [s1, s2] = [T0, T0 + MIN];
      await l.create(name, s1);
      await l.create(name, s2);
      script.behaviour.set(s1, 'hold');
      l.clock.now = s2 + 10;
      const first = l.deliver(name, s1, 'a');
      await script.waitHeld(s1);
      expect(await l.deliver(name, s2, 'b')).toBe('ack');
      script.release(s1);
      expect(await first).toBe('ack');
      expect(await l.deliverSent()).toEqual([`${name}@${new Date(s2).toISOString()}`]);
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
    });

    it('holder DEAD (permanent error): the waiting run runs', async () => {
      const script = new Script();
      const { name, lab: l } = lab('forbid-queue', script);
      const [s1, s2] = [T0, T0 + MIN];
      await l.create(name, s1);
      await l.create(name, s2);
      script.behaviour.set(s1, 'permanent');
      l.clock.now = s2 + 10;
      await l.deliver(name, s1);
      expect(await l.status(name, s1)).toBe(RunStatus.DEAD);
      await l.deliver(name, s2);
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
    });

    it('an exclusive run that fails once is retried through its own marker, runs and succeeds; so does the waiting one after it', async () => {
      const { name, l, s1, s2 } = await retryingHolderWithWaiter('forbid-queue');
      l.clock.now = s2 + 1_000;
      expect(await l.deliver(name, s1)).toBe('ack');
      expect(await l.status(name, s1)).toBe(RunStatus.SUCCEEDED);
      await l.deliverSent();
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
    });

    it('a holder taken over after its worker died keeps the lane for its successor, which runs it and hands the lane on', async () => {
      const script = new Script();
      const { name, lab: l } = lab('forbid-queue', script);
      const [s1, s2] = [T0, T0 + MIN];
      await l.create(name, s1);
      await l.create(name, s2);
      // The first worker claims the lane and the run, then dies (nothing recorded).
      l.clock.now = s1 + 10;
      expect(await l.box.ledger.lanes.acquire(name, { slot: s1, shard: 0 }, l.clock.now)).toEqual({ kind: 'acquired' });
      expect((await l.box.ledger.claim(l.id(name, s1), 'dead-worker', l.clock.now, 30_000, 2_000)).kind).toBe('claimed');
      l.clock.now = s2 + 10;
      expect(await l.deliver(name, s2, 'b')).toBe('ack');
      // After the lease: a takeover of s1 through its own marker.
      l.clock.now = s2 + 20;
      expect(await l.deliver(name, s1, 'successor')).toBe('ack');
      expect(await l.status(name, s1)).toBe(RunStatus.SUCCEEDED);
      expect(l.metrics.get('Takeovers')).toBe(1);
      await l.deliverSent();
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
    });

    it('holder SUPERSEDED by coalesce while between attempts: the lane is freed and the newer run runs', async () => {
      const { name, l, s1, s2 } = await retryingHolderWithWaiter('coalesce');
      // The holder's retry message comes back: a newer due run exists, so it gives way.
      expect(await l.deliver(name, s1)).toBe('ack');
      expect(await l.status(name, s1)).toBe(RunStatus.SUPERSEDED);
      expect(await l.deliverSent()).toEqual([`${name}@${new Date(s2).toISOString()}`]);
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
    });

    it('holder closed by ops resolve: the lane is freed and the waiting run dispatched', async () => {
      const { name, l, s1, s2 } = await retryingHolderWithWaiter('forbid-queue');
      const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
      await resolveRun(
        { ledger: box.ledger, ops, clock: l.clock.read, handOn: laneHandOn(box.ledger, l.queue, l.jobs, l.clock.read) },
        { id: l.id(name, s1), as: 'dead', reason: 'cancelled', by: 'test' },
      );
      expect(await l.status(name, s1)).toBe(RunStatus.DEAD);
      expect(await l.deliverSent()).toEqual([`${name}@${new Date(s2).toISOString()}`]);
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
    });

    it('holder DEAD, then revived by ops retry: it runs again; the lane is not stuck either way', async () => {
      const script = new Script();
      const { name, lab: l } = lab('forbid-queue', script);
      const [s1, s2] = [T0, T0 + MIN];
      await l.create(name, s1);
      script.behaviour.set(s1, 'permanent');
      l.clock.now = s1 + 10;
      await l.deliver(name, s1);
      expect(await l.status(name, s1)).toBe(RunStatus.DEAD);
      script.behaviour.set(s1, 'ok');
      const ops = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
      const [entry] = await retryRuns({ ledger: box.ledger, ops, queue: l.queue, clock: l.clock.read }, l.job(name), [
        (await l.run(name, s1))!,
      ]);
      expect(entry).toMatchObject({ action: 'revived', to: RunStatus.READY });
      await l.deliverSent();
      expect(await l.status(name, s1)).toBe(RunStatus.SUCCEEDED);
      await l.create(name, s2);
      l.clock.now = s2 + 10;
      await l.deliver(name, s2);
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
    });

    it('a marker its holder left behind when it ended (a crash between outcome and release) is taken over by the next claim', async () => {
      const script = new Script();
      const { name, lab: l } = lab('forbid-queue', script);
      const [s1, s2] = [T0, T0 + MIN];
      await l.create(name, s1);
      await l.create(name, s2);
      l.clock.now = s1 + 10;
      await box.ledger.lanes.acquire(name, { slot: s1, shard: 0 }, l.clock.now);
      const claim = await box.ledger.claim(l.id(name, s1), 'w', l.clock.now, 30_000, 2_000);
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      expect((await box.ledger.complete(claim.run, { status: RunStatus.SUCCEEDED }, l.clock.now)).ok).toBe(true);
      expect(await box.ledger.lanes.read(name, 0)).toMatchObject({ holderSlot: s1 });
      l.clock.now = s2 + 10;
      expect(await l.deliver(name, s2)).toBe('ack');
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
      expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
    });

    it('a run whose fencing range is spent ends DEAD and hands the lane on (it never loops)', async () => {
      const script = new Script();
      const { name, lab: l } = lab('forbid-queue', script);
      const [s1, s2] = [T0, T0 + MIN];
      await l.create(name, s1);
      await l.create(name, s2);
      await box.clients.doc.send(
        new UpdateCommand({
          TableName: box.endpoints.ledgerTable,
          Key: { pk: LedgerKeys.jobPk(name), sk: LedgerKeys.runSk(s1, 0) },
          UpdateExpression: 'SET fencingToken = :spent',
          ExpressionAttributeValues: { ':spent': initialFence(s1) + MAX_CLAIMS_PER_SLOT },
        }),
      );
      l.clock.now = s2 + 10;
      expect(await l.deliver(name, s1)).toBe('ack');
      expect(await l.run(name, s1)).toMatchObject({ status: RunStatus.DEAD, lastError: { code: 'FENCE_RANGE_EXHAUSTED' } });
      await l.deliver(name, s2);
      expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
    });
  });

  describe('forbid-skip and coalesce run the next due slot once the holder finished', () => {
    it.each(['forbid-skip', 'coalesce'] as const)(
      '%s: a holder that SUCCEEDED frees its lane (no marker left), and a slot due after it runs',
      async (overlap) => {
        const script = new Script();
        const { name, lab: l } = lab(overlap, script);
        const [s1, s2, s3] = [T0, T0 + MIN, T0 + 2 * MIN];
        for (const s of [s1, s2, s3]) await l.create(name, s);
        script.behaviour.set(s1, 'hold');
        l.clock.now = s1 + 10;
        const first = l.deliver(name, s1, 'a');
        await script.waitHeld(s1);
        // s2 arrives while s1 runs: skipped (forbid-skip) or waits (coalesce).
        l.clock.now = s2 + 10;
        await l.deliver(name, s2, 'b');
        script.release(s1);
        expect(await first).toBe('ack');
        expect(await l.status(name, s1)).toBe(RunStatus.SUCCEEDED);
        // Released, not left for the next claim to take over: a kept marker would make every next
        // claim a takeover transaction and show a finished run as the lane's holder.
        expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
        if (overlap === 'forbid-skip') expect(await l.status(name, s2)).toBe(RunStatus.SKIPPED);
        else {
          await l.deliverSent();
          expect(await l.status(name, s2)).toBe(RunStatus.SUCCEEDED);
        }
        // s3 comes due after the holder finished: it runs.
        l.clock.now = s3 + 10;
        expect(await l.deliver(name, s3, 'c')).toBe('ack');
        expect(await l.status(name, s3)).toBe(RunStatus.SUCCEEDED);
        expect((await box.ledger.lanes.read(name, 0))?.holderSlot).toBeUndefined();
        expect(l.logs.filter((line) => String(line.message).startsWith('took over the lane'))).toEqual([]);
      },
    );
  });
});
