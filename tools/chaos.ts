/**
 * `npm run chaos`: the six fault drills of DESIGN §9 with randomized timing, against an embedded
 * local stack (DynamoDB Local + local-aws-sqs on free ports), workers partly as real child
 * processes (SIGKILL, SIGSTOP/SIGCONT, a TCP proxy that drops their ledger connection).
 *
 *   npm run chaos -- [--runs 10000] [--seed N] [--drills a,b,...|names] [--children 2]
 *                    [--concurrency 1] [--quiet]
 *
 * Prints progress on stderr, then on stdout a table (drill, runs, faults injected, takeovers,
 * fencing rejections, violations), facts and observations per drill, the first violations, and
 * as its last line one JSON object with the totals. Exits 0 only with 0 violations.
 */
import { parseArgs } from 'node:util';
import { JavaMissingError, startLocalStack, type LocalStack } from './local-stack.js';
import { DRILLS } from './chaos/drills/index.js';
import { formatDetails, formatTable, runChaos } from './chaos/run.js';

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

function positiveInt(name: string, raw: string | undefined, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) fail(`--${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string' },
      seed: { type: 'string' },
      drills: { type: 'string' },
      children: { type: 'string' },
      concurrency: { type: 'string' },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log('usage: npm run chaos -- [--runs 10000] [--seed N] [--drills a,b,...] [--children 2] [--concurrency 1] [--quiet]');
    console.log(`drills: ${DRILLS.map((d) => `${d.letter}=${d.name}`).join(', ')}`);
    return 0;
  }
  const runs = positiveInt('runs', values.runs, 10_000);
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : positiveInt('seed', values.seed, 0, 0);
  const childIterations = positiveInt('children', values.children, 2, 0);
  const concurrency = positiveInt('concurrency', values.concurrency, 1);
  if (concurrency !== 1 && concurrency !== 2) fail('--concurrency must be 1 or 2');
  const drills = values.drills?.split(',').map((d) => d.trim()).filter(Boolean);
  const log = values.quiet ? undefined : (line: string) => process.stderr.write(`${line}\n`);

  let stack: LocalStack;
  try {
    stack = await startLocalStack({});
  } catch (error) {
    if (error instanceof JavaMissingError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
  const stop = () => {
    void stack.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  log?.(`chaos: ${runs} runs, seed ${seed}, ${childIterations} child-process iteration(s) per worker drill, concurrency ${concurrency}`);
  try {
    const report = await runChaos({ base: stack, runs, seed, drills, childIterations, concurrency: concurrency as 1 | 2, log });
    console.log(formatTable(report));
    console.log('');
    console.log(formatDetails(report));
    console.log(JSON.stringify(report.totals));
    return report.totals.violations === 0 ? 0 : 1;
  } finally {
    await stack.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
