/**
 * Merges the incremental files of scoped Stryker runs made side by side (in separate worktrees,
 * each on its own source files) into one (docs/testing.md, Mutation testing).
 *
 *   npx tsx tools/mutation/merge.ts <base.json> <other.json>=<file>[,<file>…] … [--out <out.json>]
 *
 * Each source file's mutants are taken from the report named for it (the base for every other
 * file). Test ids are per report (Stryker numbers them "0", "1", … in each run), so they cannot be
 * copied across: every test is known by its file and name, given a new id, and each mutant's
 * `killedBy` / `coveredBy` is rewritten to the new ids. A test file's entry is taken from the
 * report whose copy of it matches the file on disk, so that Stryker's next incremental run reuses
 * what it can; a mutant whose killing test no longer exists keeps its status here, and Stryker
 * tests it again at its next run (as it would after any change of that test).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

interface TestEntry {
  id: string;
  name: string;
  location?: unknown;
}

interface MutantEntry {
  killedBy?: string[];
  coveredBy?: string[];
  [key: string]: unknown;
}

interface Report {
  files: Record<string, { source: string; mutants: MutantEntry[]; [key: string]: unknown }>;
  testFiles: Record<string, { source?: string; tests: TestEntry[] }>;
  [key: string]: unknown;
}

function load(path: string): Report {
  return JSON.parse(readFileSync(path, 'utf8')) as Report;
}

const keyOf = (file: string, name: string) => `${file}\u0000${name}`;

/** Old id → test key, for one report. */
function testKeys(report: Report): Map<string, string> {
  const keys = new Map<string, string>();
  for (const [file, entry] of Object.entries(report.testFiles)) for (const test of entry.tests) keys.set(test.id, keyOf(file, test.name));
  return keys;
}

export function merge(
  base: Report,
  others: ReadonlyArray<{ readonly report: Report; readonly owns: readonly string[] }>,
  onDisk: (path: string) => string | undefined,
): { merged: Report; warnings: string[] } {
  const warnings: string[] = [];
  const reports = [base, ...others.map((o) => o.report)];

  // Test files: the copy that matches the file on disk, else the last report's copy (with a warning).
  const testFiles: Report['testFiles'] = {};
  const names = new Set(reports.flatMap((r) => Object.keys(r.testFiles)));
  for (const file of [...names].sort()) {
    const copies = reports.map((r) => r.testFiles[file]).filter((c): c is NonNullable<typeof c> => c !== undefined);
    const current = onDisk(file);
    if (current === undefined) continue; // the test file is gone: its tests kill nothing any more
    const matching = copies.find((c) => c.source === current);
    if (!matching) warnings.push(`${file}: no report holds its current text; Stryker will test its mutants again`);
    testFiles[file] = structuredClone(matching ?? copies[copies.length - 1]!);
  }
  // New ids, one per (file, name).
  const newId = new Map<string, string>();
  for (const [file, entry] of Object.entries(testFiles)) {
    for (const test of entry.tests) {
      const key = keyOf(file, test.name);
      if (!newId.has(key)) newId.set(key, String(newId.size));
      test.id = newId.get(key)!;
    }
  }

  const owner = new Map<string, Report>();
  for (const { report, owns } of others) {
    for (const file of owns) {
      if (!report.files[file]) throw new Error(`the report given for ${file} has no results for it`);
      if (owner.has(file)) throw new Error(`${file} is named for two reports`);
      owner.set(file, report);
    }
  }
  const files: Report['files'] = {};
  const allFiles = new Set(reports.flatMap((r) => Object.keys(r.files)));
  for (const file of [...allFiles].sort()) {
    const from = owner.get(file) ?? base;
    const entry = from.files[file];
    if (!entry) continue;
    if (onDisk(file) !== entry.source) warnings.push(`${file}: its results were measured on other text than the file on disk`);
    const keys = testKeys(from);
    const remap = (ids: string[] | undefined) =>
      ids?.map((id) => newId.get(keys.get(id) ?? '')).filter((id): id is string => id !== undefined);
    files[file] = {
      ...structuredClone(entry),
      mutants: entry.mutants.map((m) => ({ ...structuredClone(m), killedBy: remap(m.killedBy), coveredBy: remap(m.coveredBy) })),
    };
  }
  return { merged: { ...base, files, testFiles }, warnings };
}

function main(): void {
  const args = process.argv.slice(2);
  let out: string | undefined;
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--out') out = args[++i];
    else positional.push(args[i]!);
  }
  const [basePath, ...rest] = positional;
  if (!basePath || rest.length === 0) {
    console.error('usage: merge.ts <base.json> <other.json>=<file>[,<file>…] … [--out <out.json>]');
    process.exit(2);
  }
  const others = rest.map((arg) => {
    const [path, files] = arg.split('=');
    if (!path || !files) throw new Error(`expected <report.json>=<file>[,<file>…], got "${arg}"`);
    return { report: load(path), owns: files.split(',') };
  });
  const { merged, warnings } = merge(load(basePath), others, (path) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined));
  for (const w of warnings) console.error(`warning: ${w}`);
  // Indented as Stryker writes it, so that the committed file diffs line by line.
  writeFileSync(out ?? basePath, JSON.stringify(merged, null, 2));
  console.log(
    `merged ${Object.keys(merged.files).length} source files, ${Object.values(merged.testFiles).reduce((n, t) => n + t.tests.length, 0)} tests into ${out ?? basePath}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) main();
