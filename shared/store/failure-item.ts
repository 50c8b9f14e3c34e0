/** Failed conditional writes: recognising them, and the item they return, as plain values. */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';

type Item = Record<string, unknown>;

/**
 * ReturnValuesOnConditionCheckFailure hands back the item in the low-level attribute-value
 * format even through the document client.
 *
 * Not `unmarshall` from @aws-sdk/util-dynamodb: its results differ where a caller can see them.
 * It turns a number beyond 2^53 into a BigInt (this gives the nearest Number, as the rules'
 * arithmetic expects) and decodes binary values (B, BS) that this hands back as they came, and
 * the fenced store passes the item to job handlers in ConditionFailedError.
 */
export function unmarshallFailureItem(item: Record<string, unknown>): Item {
  const out: Item = {};
  for (const [key, value] of Object.entries(item)) out[key] = fromAttributeValue(value);
  return out;
}

function fromAttributeValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  const av = value as Record<string, unknown>;
  if ('S' in av) return av.S;
  if ('N' in av) return Number(av.N);
  if ('BOOL' in av) return av.BOOL;
  if ('NULL' in av) return null;
  if ('M' in av) return unmarshallFailureItem(av.M as Record<string, unknown>);
  if ('L' in av) return (av.L as unknown[]).map(fromAttributeValue);
  if ('SS' in av) return new Set(av.SS as string[]);
  if ('NS' in av) return new Set((av.NS as string[]).map(Number));
  return value;
}

export function isConditionalCheckFailure(error: unknown): error is ConditionalCheckFailedException {
  return error instanceof ConditionalCheckFailedException || (error as { name?: string })?.name === 'ConditionalCheckFailedException';
}

/**
 * A request the store rejected as malformed (an invalid document path, an expression too
 * large): it fails the same way on every retry, so retrying it only burns the lease.
 */
export function isMalformedRequest(error: unknown): boolean {
  return (error as { name?: string })?.name === 'ValidationException';
}
