/**
 * Running a synth from the command line (infra/app.ts): a configuration the app refuses (a bad
 * job, a bad or unknown `-c` key, a construct prop out of range) prints its message, one line per
 * problem and no stack trace, and exits 1. Anything else is a bug and keeps its stack trace.
 */
import type { App } from 'aws-cdk-lib';
import { JobConfigError } from '../shared/schedule/job-schema.js';
import { ContextError } from './scheduler-app.js';
import { InvalidJobConfigError } from './scheduler-stack.js';
import { InvalidPropsError } from './validation.js';

/** The errors that mean "the configuration is wrong", not "the code is wrong". */
export function isConfigurationError(error: unknown): error is Error {
  return (
    error instanceof ContextError ||
    error instanceof InvalidJobConfigError ||
    error instanceof JobConfigError ||
    error instanceof InvalidPropsError
  );
}

export interface SynthIo {
  readonly stderr: (text: string) => void;
  readonly exit: (code: number) => never;
}

const PROCESS_IO: SynthIo = {
  stderr: (text) => process.stderr.write(text),
  exit: (code) => process.exit(code),
};

/** Builds the app and synthesizes it; a configuration error ends the process with its message. */
export function synthOrExit(build: () => App, io: SynthIo = PROCESS_IO): void {
  let app: App;
  try {
    app = build();
  } catch (error) {
    if (!isConfigurationError(error)) throw error;
    io.stderr(`${error.message}\n`);
    return io.exit(1);
  }
  app.synth();
}
