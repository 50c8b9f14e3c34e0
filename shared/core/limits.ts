/**
 * Size bounds on what a run item stores (DESIGN §12: 400 KB per item, and every write of an item
 * costs one write unit per KB of it). A handler's evidence or error message that grew without
 * bound would first make every heartbeat expensive and then make the outcome write itself fail,
 * after the handler succeeded. So evidence and error messages are truncated with a visible marker,
 * and a checkpoint too large to store is refused to the handler while it can still react.
 * Pure: sizes are measured on the JSON text, a close upper bound of DynamoDB's item size.
 */

/** Largest evidence stored as given (JSON characters). */
export const MAX_EVIDENCE_CHARS = 8_192;
/** Largest checkpoint `ctx.checkpoint` accepts (JSON characters). */
export const MAX_CHECKPOINT_CHARS = 16_384;
/** Longest error message stored (characters). */
export const MAX_ERROR_MESSAGE_CHARS = 1_000;
/** Longest error message kept per attempt in the run's history. */
export const MAX_HISTORY_MESSAGE_CHARS = 240;
/** Attempts the run item remembers. */
export const ATTEMPT_HISTORY_LIMIT = 10;
/**
 * Deepest nesting of lists and maps a handler's value (evidence, checkpoint, reconcile evidence) is
 * stored with as given. DynamoDB refuses a write whose item nests more than 32 levels, and the
 * run's history keeps reconcile evidence three levels down: a deeper value would make the outcome
 * write fail on every attempt after the work was done.
 */
export const MAX_STORED_DEPTH = 16;

/** What is stored instead of evidence that was too large. */
export interface TruncatedEvidence {
  readonly truncated: true;
  /** Size of the evidence as given, in JSON characters. */
  readonly chars: number;
  /** Its first characters, as JSON text. */
  readonly head: string;
}

export function jsonChars(value: unknown): number {
  if (value === undefined) return 0;
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** Whether `value` nests lists and maps more than `limit` levels (it looks no deeper than that). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (limit <= 0) return true;
  const children: readonly unknown[] = Array.isArray(value) ? value : Object.values(value);
  return children.some((child) => nestsDeeperThan(child, limit - 1));
}

/** Evidence as stored: as given, or a marker with its first characters when too large or too deeply nested. */
export function boundEvidence(evidence: unknown): unknown {
  if (evidence === undefined) return undefined;
  const chars = jsonChars(evidence);
  if (chars <= MAX_EVIDENCE_CHARS && !nestsDeeperThan(evidence, MAX_STORED_DEPTH)) return evidence;
  let head = '';
  try {
    head = (JSON.stringify(evidence) ?? '').slice(0, 512);
  } catch {
    head = '(not serializable)';
  }
  const marker: TruncatedEvidence = { truncated: true, chars: Number.isFinite(chars) ? chars : -1, head };
  return marker;
}

export function boundMessage(message: string, max: number = MAX_ERROR_MESSAGE_CHARS): string {
  if (message.length <= max) return message;
  const suffix = ` … (truncated: ${message.length} characters)`;
  return message.slice(0, Math.max(0, max - suffix.length)) + suffix;
}

export function boundError(error: { readonly code: string; readonly message: string }): { code: string; message: string } {
  return { code: error.code.slice(0, 64), message: boundMessage(error.message) };
}

/** Why a checkpoint cannot be stored, if so. */
export function checkpointProblem(cursor: unknown): string | undefined {
  const chars = jsonChars(cursor);
  if (!Number.isFinite(chars)) return 'the checkpoint is not JSON-serializable';
  if (chars > MAX_CHECKPOINT_CHARS)
    return `the checkpoint is ${chars} JSON characters; at most ${MAX_CHECKPOINT_CHARS} are stored (keep a cursor, not the data)`;
  if (nestsDeeperThan(cursor, MAX_STORED_DEPTH))
    return `the checkpoint nests lists and objects more than ${MAX_STORED_DEPTH} levels deep; at most ${MAX_STORED_DEPTH} are stored (keep a flat cursor)`;
  return undefined;
}
