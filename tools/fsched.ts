/**
 * `fsched`: the project's command line, run by bin/fsched (`npx fsched …` in the project).
 *
 *   fsched ops <command> [options]   the ops CLI (tools/ops/cli.ts; docs/operating.md)
 *   fsched console [options]         the operator console (tools/console/; README Console)
 *
 * stdout carries only the command's output (with --json exactly one JSON document), so it pipes
 * into jq as it is; errors are one line on stderr; the exit code is the command's.
 */
import './quiet-sdk.js';
import { runConsole } from './console/cli.js';
import { runOps } from './ops/cli.js';
import type { OpsIo } from './ops/io.js';

export const FSCHED_USAGE = ['usage: fsched <tool> [options]', '', '  ops  the ops CLI: status, jobs, runs, show, pause, resume, backfill, preview, redrive, retry, resolve (fsched ops --help)',
  '  console  the operator console in a browser, on 127.0.0.1 (fsched console --help)',
];

/** Dispatches `fsched <tool> …`; returns the exit code (2: no or unknown tool). */
export async function runFsched(argv: readonly string[], io: OpsIo): Promise<number> {
  const [tool, ...rest] = argv;
  if (tool === 'ops') return runOps(rest, io);
  if (tool === 'console') return runConsole(rest, io);
  if (tool === undefined || tool === '--help' || tool === '-h') {
    for (const line of FSCHED_USAGE) (tool === undefined ? io.stderr : io.stdout)(line);
    return tool === undefined ? 2 : 0;
  }
  io.stderr(`fsched: unknown tool "${tool}"; one of: ops, console (fsched --help)`);
  return 2;
}

// A reader that closes the pipe early (`| head`) ends the output, not with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

runFsched(process.argv.slice(2), {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`fsched: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n`);
    process.exitCode = 1;
  },
);
