/**
 * The house rules of the product's layout (docs/design.md, "Map"): the folders under shared/ by
 * concept, pure rules that import nothing above them, no import cycle, no file that holds two
 * concepts, and the product never reaching into tools/ or test/. A rule broken names the file.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), '..', '..'));
/** About 400 lines: past that a file holds two concepts. */
const MAX_LINES = 400;
/** What each pure folder may import (besides itself). */
const PURE: Readonly<Record<string, readonly string[]>> = {
  'shared/schedule': [],
  'shared/core': ['shared/schedule'],
};

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) return filesUnder(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const SPECIFIER = /(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g;

/** The product's files and, for each, the product files it imports (paths from the repository root). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...filesUnder('shared'), ...filesUnder('functions')]) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const targets = [...text.matchAll(SPECIFIER)].map((m) => relative(ROOT, join(ROOT, dirname(file), m[1]!.replace(/\.js$/, '.ts'))));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Files that sit on an import cycle, each cycle as one sorted list (Tarjan's strongly connected components). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('the layout of the product', () => {
  const graph = importGraph();

  it('has no import cycle under shared/ and functions/', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('keeps the pure folders pure: schedule imports only itself, core only itself and schedule, neither imports a package with I/O', () => {
    const broken: string[] = [];
    for (const [file, targets] of graph) {
      const folder = Object.keys(PURE).find((f) => file.startsWith(`${f}/`));
      if (folder === undefined) continue;
      for (const target of targets)
        if (![folder, ...PURE[folder]!].some((f) => target.startsWith(`${f}/`))) broken.push(`${file} imports ${target}`);
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const pkg of text.matchAll(/from '(@aws-sdk\/[^']+|node:(?:fs|net|http|https|child_process))'/g))
        broken.push(`${file} imports ${pkg[1]}`);
    }
    expect(broken).toEqual([]);
  });

  it('never reaches into tools/ or test/ from the product', () => {
    const broken = [...graph].flatMap(([file, targets]) =>
      targets.filter((t) => t.startsWith('tools/') || t.startsWith('test/')).map((t) => `${file} imports ${t}`),
    );
    expect(broken).toEqual([]);
  });

  it(`holds one concept a file: no file under shared/ is over ${MAX_LINES} lines`, () => {
    const long = filesUnder('shared')
      .map((file) => ({ file, lines: readFileSync(join(ROOT, file), 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    expect(long).toEqual([]);
  });

  it('is formatted and linted as biome.json says (npm run lint: no explicit any, no floating promise, nothing unused, 140 columns)', () => {
    const checked = spawnSync(join(ROOT, 'node_modules', '.bin', 'biome'), ['ci', '--colors=off', '.'], { cwd: ROOT, encoding: 'utf8' });
    expect(checked.status, `${checked.stdout}\n${checked.stderr}`).toBe(0);
  }, 120_000);
});
