/**
 * `fsched`: the project's command line, run by bin/fsched (`npx fsched …` in the project); the
 * dispatch and usage are tools/fsched-cli.ts.
 *
 *   fsched ops <command> [options]   the ops CLI (tools/ops/cli.ts; docs/operating.md)
 *   fsched console [options]         the operator console (tools/console/; README Console)
 *
 * stdout carries only the command's output (with --json exactly one JSON document), so it pipes
 * into jq as it is; errors are one line on stderr; the exit code is the command's.
 */
import './quiet-sdk.js';
import { runFsched } from './fsched-cli.js';
import { runAsProcess } from './ops/io.js';

// A reader that closes the pipe early (`| head`) ends the output, not with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

runAsProcess('fsched', runFsched);
