/**
 * The bench's per-key load (tools/bench/key-load.ts) against DynamoDB Local, through the
 * scheduler's own Ledger requests: each unit lands on the partition key value the request really
 * wrote or read, in the table or in the watch index, and the index key is followed across writes
 * that set or remove it. The figures that project hot keys to 2,000 runs/s stand on this.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openBucketOf } from '../../shared/core/planner-state.js';
import { RunStatus } from '../../shared/core/vocabulary.js';
import { KEY_SPREAD, LedgerKeys } from '../../shared/core/resources.js';
import { describeKeySchemas, keyConditionValue, KeyLoad, parseUpdate, type KeyUnits } from '../../tools/bench/key-load.js';
import { sandbox } from '../support/stack.js';

const SLOT = Date.UTC(2031, 0, 1, 12);
const units = (list: readonly KeyUnits[]) => Object.fromEntries(list.map((k) => [k.label, k.units]));

describe('bench key load: units per partition key value', () => {
  it('charges a short run to its job key only, and a watched run to its watch-index bucket on entry and exit', async () => {
    const box = await sandbox();
    try {
      const load = new KeyLoad(await describeKeySchemas(box.clients.dynamo, [box.endpoints.ledgerTable])).attach(box.clients.doc);
      const id = { job: 'short', slot: SLOT, shard: 0 };
      await box.ledger.createRun({ ...id, shards: 1, status: RunStatus.READY }, SLOT - 60_000);
      const claim = await box.ledger.claim(id, 'owner-a', SLOT, 30_000, 1_000);
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      expect((await box.ledger.complete(claim.run, { status: RunStatus.SUCCEEDED }, SLOT + 10)).ok).toBe(true);
      expect(units(load.snapshot().writes)).toEqual({ 'JOB#short': 3 });

      load.reset();
      const watched = { job: 'late', slot: SLOT, shard: 0 };
      const bucket = LedgerKeys.openPk(openBucketOf(watched.job, watched.slot, watched.shard));
      await box.ledger.createRun({ ...watched, shards: 1, status: RunStatus.READY, watch: true }, SLOT + 1_000);
      const late = await box.ledger.claim(watched, 'owner-b', SLOT + 1_000, 30_000, 1_000);
      if (late.kind !== 'claimed') throw new Error(late.kind);
      // The claim keeps the index key: a keys-only index entry is not rewritten.
      expect(units(load.snapshot().writes)).toEqual({ 'JOB#late': 2, [`open-runs:${bucket}`]: 1 });
      await box.ledger.complete(late.run, { status: RunStatus.SUCCEEDED }, SLOT + 1_010);
      expect(units(load.snapshot().writes)).toEqual({ 'JOB#late': 3, [`open-runs:${bucket}`]: 2 });

      // A refused create is billed on the key it was refused on (DynamoDB Local reports nothing).
      load.reset();
      expect((await box.ledger.createRun({ ...watched, shards: 1, status: RunStatus.READY }, SLOT + 2_000)).created).toBe(false);
      expect(units(load.snapshot().writes)).toEqual({ 'JOB#late': 1 });
      expect(load.unattributed).toBe(0);
    } finally {
      box.destroy();
    }
  });

  it('charges the planner state read to PLANNER (one unit per key, found or not) and a bucket page to its index key', async () => {
    const box = await sandbox();
    try {
      const load = new KeyLoad(await describeKeySchemas(box.clients.dynamo, [box.endpoints.ledgerTable])).attach(box.clients.doc);
      await box.ledger.planning.readTickState();
      await box.ledger.watchedPage(3, SLOT, undefined, 100);
      const snapshot = load.snapshot();
      expect(units(snapshot.reads)).toEqual({ PLANNER: 1 + KEY_SPREAD.exceptionBuckets, 'open-runs:OPEN#03': 0.5 });
      expect(snapshot.readRequestsByKind).toEqual({ PLANNER: 1, 'open-runs:OPEN#nn': 1 });
    } finally {
      box.destroy();
    }
  });
});

describe('bench key load: expression parsing', () => {
  const attr = fc.constantFrom('openPk', 'openSk', 'status', 'owner', 'leaseUntil');
  it('finds every SET and REMOVE of an attribute, aliased or not, whatever the order and spacing', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(attr, { minLength: 1, maxLength: 5 }),
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        (attrs, remove, alias) => {
          const names: Record<string, string> = {};
          const token = (a: string, i: number) => {
            if (!alias[i]) return a;
            names[`#n${i}`] = a;
            return `#n${i}`;
          };
          const sets = attrs.filter((_, i) => !remove[i]);
          const removes = attrs.filter((_, i) => remove[i]);
          const setText = sets.map((a) => `${token(a, attrs.indexOf(a))} = if_not_exists(${a}, :v${attrs.indexOf(a)})`).join(' ,  ');
          const removeText = removes.map((a) => token(a, attrs.indexOf(a))).join(',');
          const expression = [sets.length ? `SET ${setText}` : '', removes.length ? `REMOVE ${removeText}` : ''].filter(Boolean).join('  ');
          const parsed = parseUpdate(expression, names);
          expect([...parsed.sets.keys()].sort()).toEqual([...sets].sort());
          expect([...parsed.removes].sort()).toEqual([...removes].sort());
        },
      ),
    );
  });

  it("reads the partition key's value from a key condition with a sort-key range beside it", () => {
    const values = { ':b': { S: 'OPEN#07' }, ':up': { S: 'x' } };
    expect(keyConditionValue('openPk = :b AND openSk <= :up', 'openPk', undefined, values)).toBe('OPEN#07');
    expect(keyConditionValue('#k = :b AND begins_with(openSk, :up)', 'openPk', { '#k': 'openPk' }, values)).toBe('OPEN#07');
    expect(keyConditionValue(':b = openPk', 'openPk', undefined, values)).toBe('OPEN#07');
  });
});
