/**
 * `npm run ops -- <command>`: the ops CLI (status, runs, show, pause, resume, backfill, preview,
 * redrive, resolve). Human tables by default, `--json` for scripts (exactly one JSON document on
 * stdout). See docs/operating.md, and tools/ops/cli.ts for the in-process entry point.
 */
import './quiet-sdk.js';
import { runOps } from './ops/cli.js';

runOps(process.argv.slice(2), {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`ops: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`);
    process.exitCode = 1;
  },
);
