/**
 * One `npm start` per endpoints file, and nothing it started left behind after a hard crash.
 *
 * The runtime takes a lock file beside its endpoints file (`<endpoints>.lock`, created exclusively)
 * holding its own pid and, once Java is spawned, DynamoDB Local's pid and port. A second start
 * that finds the lock held by a live `npm start` refuses, naming that pid: two runtimes on one
 * endpoints file would overwrite each other's endpoints, and the one stopping first would remove
 * the file under the other. A lock left by a runtime that is gone (killed with SIGKILL: no handler
 * ran, and DynamoDB Local runs in a session of its own, so it outlives it) is taken over, and the
 * DynamoDB Local it names is stopped when /proc shows that pid is still that DynamoDB Local (the
 * jar and the port on its command line), never a process that only reuses the pid. Where /proc
 * cannot tell (not Linux), the pid is named for the operator to stop.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the lock file says. */
export interface RuntimeLockRecord {
  readonly pid: number;
  readonly startedAt: string;
  readonly dynamoPid?: number;
  readonly dynamoPort?: number;
}

/** The lock file of the runtime that publishes `endpointsFile`. */
export function lockPathFor(endpointsFile: string): string {
  return `${endpointsFile}.lock`;
}

/** Thrown when a live `npm start` holds the lock; its message is the one line to print. */
export class RuntimeAlreadyRunningError extends Error {
  override readonly name = 'RuntimeAlreadyRunningError';
  constructor(
    readonly pid: number,
    lockFile: string,
    verified: boolean,
  ) {
    super(
      `npm start is already running for this endpoints file (pid ${pid}, lock ${lockFile}): stop it first (Ctrl-C in its terminal, or kill ${pid}), ` +
        `or start another one with its own --endpoints FILE` +
        (verified ? '' : ` (if pid ${pid} is not npm start, delete ${lockFile})`),
    );
  }
}

/** A process's command line from /proc; undefined when there is no such process or no /proc (not Linux). */
export function commandLineOf(pid: number): readonly string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((arg) => arg !== '');
  } catch {
    return undefined;
  }
}

const procReadable = (): boolean => existsSync(`/proc/${process.pid}/cmdline`);

/** Whether a process with this pid exists (EPERM: it does, owned by someone else). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The runtime's own command line names its entry point (node … tools/local.ts …). */
export function isRuntimeCommand(args: readonly string[]): boolean {
  return args.some((arg) => arg === 'tools/local.ts' || arg.endsWith('/tools/local.ts'));
}

/** DynamoDB Local on that port: the jar and `-port <port>` on its command line. */
export function isDynamoLocalCommand(args: readonly string[], port: number | undefined): boolean {
  if (!args.some((arg) => arg.endsWith('DynamoDBLocal.jar'))) return false;
  const at = args.indexOf('-port');
  return port === undefined || (at >= 0 && args[at + 1] === String(port));
}

function readLock(path: string): RuntimeLockRecord | undefined {
  try {
    const value = JSON.parse(readFileSync(path, 'utf8')) as Partial<RuntimeLockRecord>;
    return typeof value.pid === 'number' && Number.isInteger(value.pid) && value.pid > 0 ? (value as RuntimeLockRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** Stops the DynamoDB Local a dead runtime left, or names it; says what it did through `say`. */
async function reclaim(previous: RuntimeLockRecord, say: (line: string) => void): Promise<void> {
  const { dynamoPid, dynamoPort } = previous;
  if (dynamoPid === undefined || !pidAlive(dynamoPid)) return;
  const args = commandLineOf(dynamoPid);
  if (args === undefined) {
    say(
      `DynamoDB Local (pid ${dynamoPid}) of an npm start that ended without stopping it (pid ${previous.pid}) may still be running: stop it with kill ${dynamoPid}`,
    );
    return;
  }
  // The pid was reused by another process: it is not ours to stop.
  if (!isDynamoLocalCommand(args, dynamoPort)) return;
  process.kill(dynamoPid, 'SIGTERM');
  for (let waited = 0; pidAlive(dynamoPid) && waited < 5_000; waited += 100) await sleep(100);
  if (pidAlive(dynamoPid)) process.kill(dynamoPid, 'SIGKILL');
  say(
    `stopped DynamoDB Local (pid ${dynamoPid}, port ${dynamoPort ?? '?'}) left running by an npm start that ended without stopping it (pid ${previous.pid})`,
  );
}

/** The lock a running `npm start` holds. */
export class RuntimeLock {
  private record: RuntimeLockRecord;

  constructor(
    readonly path: string,
    record: RuntimeLockRecord,
  ) {
    this.record = record;
  }

  /** Records DynamoDB Local's pid and port as soon as it is spawned (written whole: a rename). */
  noteDynamo(pid: number, port: number): void {
    this.record = { ...this.record, dynamoPid: pid, dynamoPort: port };
    const temporary = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(this.record));
    renameSync(temporary, this.path);
  }

  /** Removes the lock file if it is still this runtime's. */
  release(): void {
    if (readLock(this.path)?.pid === this.record.pid) rmSync(this.path, { force: true });
  }
}

/**
 * Takes the lock, or throws RuntimeAlreadyRunningError. A lock whose runtime is gone is taken
 * over after its DynamoDB Local is stopped (or named).
 */
export async function acquireRuntimeLock(path: string, say: (line: string) => void): Promise<RuntimeLock> {
  mkdirSync(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 20; attempt++) {
    const record: RuntimeLockRecord = { pid: process.pid, startedAt: new Date().toISOString() };
    try {
      writeFileSync(path, JSON.stringify(record), { flag: 'wx' });
      return new RuntimeLock(path, record);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const previous = readLock(path);
    if (previous === undefined) {
      // Created by a start that has not written it yet: give it a moment before calling it junk.
      const age = Date.now() - (statSafe(path) ?? 0);
      if (age < 2_000) {
        await sleep(200);
        continue;
      }
    } else if (pidAlive(previous.pid)) {
      const args = commandLineOf(previous.pid);
      if (args === undefined && !procReadable()) throw new RuntimeAlreadyRunningError(previous.pid, path, false);
      if (args !== undefined && isRuntimeCommand(args)) throw new RuntimeAlreadyRunningError(previous.pid, path, true);
    }
    if (previous !== undefined) await reclaim(previous, say);
    rmSync(path, { force: true });
  }
  throw new Error(`could not take the lock file ${path}: it keeps coming back; is another npm start starting?`);
}

function statSafe(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}
