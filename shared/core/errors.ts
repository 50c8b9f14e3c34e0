/**
 * The errors a handler throws to say how its attempt ended (DESIGN §8; shared/handler-api.ts
 * explains the classification and re-exports them for job authors), and the outbox's refusal of
 * an event name. They live in core because core's rules (the outbox row's shape) throw them too.
 */
export interface ErrorOptions {
  readonly cause?: unknown;
  /** A short machine-readable code recorded as `lastError.code`. */
  readonly code?: string;
}

export class RetryableError extends Error {
  override readonly name: string = 'RetryableError';
  readonly code: string;
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.code = options.code ?? 'RETRYABLE';
  }
}

export class PermanentError extends Error {
  override readonly name: string = 'PermanentError';
  readonly code: string;
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.code = options.code ?? 'PERMANENT';
  }
}

export class ResultUnknownError extends Error {
  override readonly name: string = 'ResultUnknownError';
  readonly code: string;
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.code = options.code ?? 'RESULT_UNKNOWN';
  }
}

/**
 * `outboxPut` refused an event name: empty, or containing `#`. The event key is `runKey#name` and
 * a sharded run's key ends in `#<shard>`, so a `#` in a name could give two runs' events one key
 * (`j@…Z#1` + `x` and `j@…Z` + `1#x`), and the second row would overwrite the first: an event lost.
 * A handler's own bug, so permanent: retrying would write the same name again.
 */
export class OutboxEventNameError extends PermanentError {
  override readonly name: string = 'OutboxEventNameError';
  constructor(
    readonly runKey: string,
    readonly eventName: string,
    why: string,
  ) {
    super(`outbox event of ${runKey}: name ${JSON.stringify(eventName)} ${why}`, { code: 'OUTBOX_EVENT_NAME' });
  }
}
