/**
 * Merging the incremental files of scoped Stryker runs made side by side: each run numbers its
 * tests from "0", so a mutant's `killedBy` means nothing outside its own report. A merge that
 * copied ids would point kills at the wrong tests, and Stryker's next run would reuse results
 * on the strength of tests that never killed them.
 */
import { describe, expect, it } from 'vitest';
import { merge } from '../../tools/mutation/merge.js';

type Report = Parameters<typeof merge>[0];

function report(
  tests: Record<string, { source: string; names: string[] }>,
  files: Record<string, { source: string; killedBy: string[][] }>,
  firstId = 0,
): Report {
  let id = firstId;
  const testFiles: Report['testFiles'] = {};
  const ids = new Map<string, string>();
  for (const [file, t] of Object.entries(tests)) {
    testFiles[file] = {
      source: t.source,
      tests: t.names.map((name) => {
        const test = { id: String(id++), name };
        ids.set(`${file}|${name}`, test.id);
        return test;
      }),
    };
  }
  const out: Report['files'] = {};
  for (const [file, f] of Object.entries(files)) {
    out[file] = {
      source: f.source,
      mutants: f.killedBy.map((by, i) => ({
        id: `${file}#${i}`,
        status: by.length > 0 ? 'Killed' : 'Survived',
        killedBy: by.map((k) => ids.get(k)!),
        coveredBy: by.map((k) => ids.get(k)!),
      })),
    };
  }
  return { files: out, testFiles, schemaVersion: '2' };
}

describe('merge of scoped incremental files', () => {
  const disk: Record<string, string> = { 'a.ts': 'A', 'b.ts': 'B', 'a.test.ts': 'TA', 'b.test.ts': 'TB2' };
  const onDisk = (p: string) => disk[p];
  const base = report(
    { 'a.test.ts': { source: 'TA', names: ['a1', 'a2'] }, 'b.test.ts': { source: 'TB1', names: ['b1'] } },
    { 'a.ts': { source: 'A', killedBy: [['a.test.ts|a2'], []] }, 'b.ts': { source: 'B', killedBy: [[]] } },
  );
  // The other run numbered its tests differently (and holds a newer b.test.ts with a new test).
  const other = report(
    { 'b.test.ts': { source: 'TB2', names: ['b0', 'b1'] }, 'a.test.ts': { source: 'TA', names: ['a1', 'a2'] } },
    { 'a.ts': { source: 'A', killedBy: [[], []] }, 'b.ts': { source: 'B', killedBy: [['b.test.ts|b0']] } },
  );

  it('takes each source file from the report named for it, and every kill still names the test that made it', () => {
    const { merged } = merge(base, [{ report: other, owns: ['b.ts'] }], onDisk);
    const nameOf = (id: string) =>
      Object.entries(merged.testFiles).flatMap(([f, t]) => t.tests.filter((x) => x.id === id).map((x) => `${f}|${x.name}`))[0];
    expect(merged.files['a.ts']!.mutants.map((m) => m.status)).toEqual(['Killed', 'Survived']);
    expect(merged.files['a.ts']!.mutants[0]!.killedBy!.map(nameOf)).toEqual(['a.test.ts|a2']);
    expect(merged.files['b.ts']!.mutants[0]!.killedBy!.map(nameOf)).toEqual(['b.test.ts|b0']);
    // One id per test, none shared.
    const ids = Object.values(merged.testFiles).flatMap((t) => t.tests.map((x) => x.id));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('keeps the copy of a test file that matches the file on disk', () => {
    const { merged, warnings } = merge(base, [{ report: other, owns: ['b.ts'] }], onDisk);
    expect(merged.testFiles['b.test.ts']!.source).toBe('TB2');
    expect(warnings).toEqual([]);
  });

  it('warns when no report holds a test file or a source file as it is on disk', () => {
    const { warnings } = merge(base, [{ report: other, owns: ['b.ts'] }], (p) =>
      p === 'a.test.ts' ? 'TA-changed' : p === 'a.ts' ? 'A-changed' : disk[p],
    );
    expect(warnings).toEqual([
      'a.test.ts: no report holds its current text; Stryker will test its mutants again',
      'a.ts: its results were measured on other text than the file on disk',
    ]);
  });

  it('refuses a file named for two reports, or for a report without it', () => {
    expect(() =>
      merge(
        base,
        [
          { report: other, owns: ['b.ts'] },
          { report: other, owns: ['b.ts'] },
        ],
        onDisk,
      ),
    ).toThrow(/named for two reports/);
    expect(() => merge(base, [{ report: other, owns: ['c.ts'] }], onDisk)).toThrow(/has no results for it/);
  });
});
