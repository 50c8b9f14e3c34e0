/**
 * The tools observe the product's adapters (SDK middleware, the ledger's observer option) and
 * never subclass them: an override that forwards fewer arguments than the product passes (a
 * planner's tick id, a write id) changes what the tool measures or runs without a type error.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The classes a file extends that it imports from shared/. */
function productSubclasses(source: string): string[] {
  const fromShared = new Set<string>();
  for (const match of source.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'[./]*\/shared\/[^']*'/g)) {
    for (const name of match[1]!.split(','))
      fromShared.add(
        name
          .replace(/\btype\b/, '')
          .split(' as ')
          .at(-1)!
          .trim(),
      );
  }
  return [...source.matchAll(/class\s+\w+\s+extends\s+(\w+)/g)].map((m) => m[1]!).filter((base) => fromShared.has(base));
}

describe('tools', () => {
  it('extend no class of the product', () => {
    const found = sources(join(ROOT, 'tools')).flatMap((file) =>
      productSubclasses(readFileSync(file, 'utf8')).map((base) => `${relative(ROOT, file)} extends ${base}`),
    );
    expect(found).toEqual([]);
  });

  it('the check finds a subclass of an imported product class', () => {
    expect(productSubclasses("import { Ledger } from '../../shared/store/ledger.js';\nclass Timed extends Ledger {}")).toEqual(['Ledger']);
  });
});
