/**
 * `fsched <tool> …` as a function (tools/fsched.ts is the process entry that calls it): the tools
 * and their usage. The ops line lists the ops CLI's commands from its own table (COMMANDS), so a
 * command added there is never missing from `fsched --help`.
 */
import { runConsole } from './console/cli.js';
import { COMMANDS, runOps } from './ops/cli.js';
import type { OpsIo } from './ops/io.js';

export function fschedUsage(): string[] {
  return [
    'usage: fsched <tool> [options]',
    '',
    `  ops      the ops CLI: ${Object.keys(COMMANDS).join(', ')} (fsched ops --help)`,
    '  console  the operator console in a browser, on 127.0.0.1 (fsched console --help)',
  ];
}

/** Dispatches `fsched <tool> …`; returns the exit code (2: no or unknown tool). */
export async function runFsched(argv: readonly string[], io: OpsIo): Promise<number> {
  const [tool, ...rest] = argv;
  if (tool === 'ops') return runOps(rest, io);
  if (tool === 'console') return runConsole(rest, io);
  if (tool === undefined || tool === '--help' || tool === '-h') {
    for (const line of fschedUsage()) (tool === undefined ? io.stderr : io.stdout)(line);
    return tool === undefined ? 2 : 0;
  }
  io.stderr(`fsched: unknown tool "${tool}"; one of: ops, console (fsched --help)`);
  return 2;
}
