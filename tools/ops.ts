/**
 * `npm run ops -- <command>`: the ops CLI as an npm script (npm prints its banner unless given
 * `--silent`). The command operators use is `fsched ops <command>` (bin/fsched, tools/fsched.ts),
 * whose stdout is the command's output only. See docs/operating.md, and tools/ops/cli.ts for the
 * in-process entry point.
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
