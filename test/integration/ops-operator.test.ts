/**
 * Who an operator's action is recorded as, against the local stack. The hazard: one command
 * records `ops` and another `unknown` for the same person (resolve used its own default), or one
 * reads $USER where a shell sets only $LOGNAME, so an audit cannot tell who paused, triggered,
 * retried or resolved what. Every command that records an operator uses one fallback.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobPlanning } from '../../shared/store/job-planning.js';
import { LedgerOps } from '../../shared/store/repairs.js';
import { partitionOf } from '../../shared/core/partition.js';
import { RunStatus, runKeyOf } from '../../shared/core/vocabulary.js';
import { runOps } from '../../tools/ops/cli.js';
import type { OpsIo } from '../../tools/ops/io.js';
import { testJobs } from '../support/helpers.js';
import { sandbox, type Sandbox } from '../support/stack.js';

const MINUTE = 60_000;
// Near the real time: an ended run's expiresAt is then in the future, so DynamoDB Local's TTL
// sweep never deletes the runs a test reads (a fixed date in the past would let it, at random).
const NOW = Math.floor(Date.now() / MINUTE) * MINUTE;
const JOBS = testJobs([{ name: 'audited', schedule: '* * * * *', handler: 'noop' }]);

describe('the operator recorded by every command', () => {
  let box: Sandbox;
  let endpoints: string;
  beforeAll(async () => {
    box = await sandbox();
    endpoints = join(mkdtempSync(join(tmpdir(), 'ops-operator-')), 'endpoints.json');
    writeFileSync(endpoints, JSON.stringify({ ...box.endpoints, partitions: 1 }));
    for (const slot of [NOW - 2 * MINUTE, NOW - MINUTE]) {
      await box.ledger.createRun({ job: 'audited', slot, shard: 0, shards: 1, status: RunStatus.READY }, slot);
      const claim = await box.ledger.claim({ job: 'audited', slot, shard: 0 }, 'w-1', slot + 100, 30_000, 2_000);
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      await box.ledger.complete(claim.run, { status: RunStatus.DEAD, lastError: { code: 'E', message: 'gave up' } }, slot + 1_000);
    }
  });
  afterAll(() => box.destroy());

  it('without --by and $USER, pause, trigger, retry and resolve all record $LOGNAME; --by wins over it', async () => {
    const err: string[] = [];
    // A shell that sets only LOGNAME (cron, some containers).
    const io: OpsIo = { stdout: () => undefined, stderr: (l) => err.push(l), now: () => NOW, jobs: JOBS, env: { LOGNAME: 'dana' } };
    const ops = async (...args: string[]) =>
      expect(await runOps([...args, '--endpoints', endpoints], io), `${args.join(' ')}: ${err.join(' | ')}`).toBe(0);
    await ops('pause', 'audited', '--note', 'audit');
    await ops('trigger', 'audited', '--note', 'audit');
    await ops('retry', runKeyOf('audited', NOW - 2 * MINUTE, 0, 1));
    await ops('resolve', runKeyOf('audited', NOW - MINUTE, 0, 1), '--as', 'dead', '--reason', 'audit');

    const pause = (await jobPlanning(box.ledger.planning, ['audited'], partitionOf, Date.now())).get('audited')?.pause;
    expect(pause?.by).toBe('dana');
    const items = new LedgerOps(box.clients.doc, { tableName: box.endpoints.ledgerTable });
    const [manual] = (await box.ledger.listRuns('audited')).filter((r) => r.origin === 'manual');
    expect(manual?.triggeredBy).toBe('dana');
    const retried = await items.getRunItem({ job: 'audited', slot: NOW - 2 * MINUTE, shard: 0 });
    expect(retried?.lastRevival).toMatchObject({ by: 'dana' });
    const resolved = await items.getRunItem({ job: 'audited', slot: NOW - MINUTE, shard: 0 });
    expect(resolved?.resolution).toMatchObject({ by: 'dana' });

    await ops('resume', 'audited');
    await ops('pause', 'audited', '--by', 'erin');
    expect((await jobPlanning(box.ledger.planning, ['audited'], partitionOf, Date.now())).get('audited')?.pause?.by).toBe('erin');
  });
});
