/**
 * Write ids (DESIGN §12: every SDK call can commit and then fail). Each conditional write we may
 * retry stamps a fresh id on the item; when a retry fails its condition against the item as our
 * own earlier commit left it, the id returned with the failure (ReturnValuesOnConditionCheckFailure)
 * tells that the write is ours and landed, not someone else's.
 */
import { randomBytes } from 'node:crypto';

/** 12 URL-safe characters (72 random bits): short, because every byte of a run item is paid on every write. */
export function newWriteId(): string {
  return randomBytes(9).toString('base64url');
}
