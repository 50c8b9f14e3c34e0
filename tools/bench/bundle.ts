/**
 * Minified bundle size of each Lambda, built as the CDK stack builds them (infra/lambda-defaults.ts):
 * esbuild, platform node, target node22, ESM, minified, mainFields module/main, everything
 * bundled including the AWS SDK (nothing left to the runtime), with the same module aliases. Also the largest contributors,
 * grouped by package, from esbuild's metafile.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';
import { LAMBDA_BUNDLE_ALIASES, REQUIRE_BANNER } from '../../infra/lambda-defaults.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface BundleResult {
  readonly bytes: number;
  /** Bytes in the output by package (node_modules/<pkg>) or by project folder. */
  readonly top: readonly { readonly name: string; readonly bytes: number }[];
}

function groupOf(path: string): string {
  const marker = 'node_modules/';
  const at = path.lastIndexOf(marker);
  if (at < 0) return path.split('/').slice(0, 2).join('/');
  const rest = path.slice(at + marker.length).split('/');
  return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
}

/** esbuild options matching what the CDK stack gives NodejsFunction for every Lambda. */
export function lambdaBuildOptions(): BuildOptions {
  return {
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    minify: true,
    mainFields: ['module', 'main'],
    external: [],
    alias: { ...LAMBDA_BUNDLE_ALIASES },
    banner: { js: REQUIRE_BANNER },
  };
}

export async function bundleSize(entry: string, topN = 8): Promise<BundleResult> {
  const result = await build({
    ...lambdaBuildOptions(),
    entryPoints: [join(ROOT, entry)],
    write: false,
    metafile: true,
    logLevel: 'silent',
    outfile: join(ROOT, 'cdk.out', 'bench-bundle', `${entry.replace(/[/.]/g, '-')}.mjs`),
  });
  const js = result.outputFiles.find((f) => f.path.endsWith('.mjs'));
  const bytes = js?.contents.byteLength ?? 0;
  const groups = new Map<string, number>();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const [path, info] of Object.entries(output.inputs))
      groups.set(groupOf(path), (groups.get(groupOf(path)) ?? 0) + info.bytesInOutput);
  }
  const top = [...groups.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, topN)
    .map(([name, size]) => ({ name, bytes: size }));
  return { bytes, top };
}
