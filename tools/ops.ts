/**
 * `npm run ops -- <command>`: the ops CLI as an npm script (npm prints its banner unless given
 * `--silent`). The command operators use is `fsched ops <command>` (bin/fsched, tools/fsched.ts),
 * whose stdout is the command's output only. See docs/operating.md, and tools/ops/cli.ts for the
 * in-process entry point.
 */
import './quiet-sdk.js';
import { runOps } from './ops/cli.js';
import { runAsProcess } from './ops/io.js';

runAsProcess('ops', runOps);
