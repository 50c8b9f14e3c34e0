/**
 * Construct props are checked against a table of rules, so a bad value fails `cdk synth` with the
 * construct, the prop and the value named instead of an opaque CloudFormation error at deploy.
 */
import { Duration, Token } from 'aws-cdk-lib';

/** One row of a construct's validation table. */
export interface PropRule<P> {
  /** The prop the rule checks (after defaults are applied). */
  readonly prop: keyof P & string;
  /** Human description of the accepted values, e.g. "an integer in [1, 10]". */
  readonly must: string;
  /** True when the value is acceptable. Unresolved tokens are never passed in. */
  readonly ok: (value: never, all: P) => boolean;
}

/** One prop outside its rule. */
export interface PropProblem {
  /** The construct as named in the message, e.g. `WorkerFunction "Worker"`. */
  readonly construct: string;
  readonly prop: string;
  /** The rule's description of the accepted values. */
  readonly must: string;
  readonly value: unknown;
}

/** Thrown when a construct is given props outside its rules; the message names prop and value. */
export class InvalidPropsError extends Error {
  override readonly name = 'InvalidPropsError';
  constructor(readonly problems: readonly PropProblem[]) {
    super(problems.map((p) => `${p.construct}: prop "${p.prop}" must be ${p.must}, got ${describeValue(p.value)}`).join('\n'));
  }
}

/** A value as the messages show it: durations in words, strings quoted. */
export function describeValue(value: unknown): string {
  if (value instanceof Duration) return humanDuration(value);
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** CDK's toHumanString, except below a second ("1 milli" reads as a typo). */
function humanDuration(duration: Duration): string {
  const ms = duration.toMilliseconds();
  return ms < 1000 ? `${ms} ms` : duration.toHumanString();
}

function unresolved(value: unknown): boolean {
  if (value instanceof Duration) return value.isUnresolved();
  return Token.isUnresolved(value);
}

/**
 * Applies every rule to `props` and throws one error listing every violation, e.g.
 *   RunQueues "Queues": prop "visibilityTimeout" must be ≥ 6 × workerTimeout (6 minutes), got 1 minute
 */
export function validateProps<P extends object>(construct: string, props: P, rules: readonly PropRule<P>[]): void {
  const problems: PropProblem[] = [];
  for (const rule of rules) {
    const value = (props as Record<string, unknown>)[rule.prop];
    if (value === undefined || unresolved(value)) continue;
    if (!rule.ok(value as never, props)) problems.push({ construct, prop: rule.prop, must: rule.must, value });
  }
  if (problems.length > 0) throw new InvalidPropsError(problems);
}

/** Rule helper: an integer in [min, max]. */
export function integerIn(min: number, max: number): { must: string; ok: (value: never) => boolean } {
  return {
    must: `an integer in [${min}, ${max}]`,
    ok: (value: never) => Number.isInteger(value) && (value as number) >= min && (value as number) <= max,
  };
}

/** Rule helper: a Duration in [min, max]. */
export function durationIn(min: Duration, max: Duration): { must: string; ok: (value: never) => boolean } {
  return {
    must: `a duration in [${humanDuration(min)}, ${humanDuration(max)}]`,
    ok: (value: never) => {
      const ms = (value as Duration).toMilliseconds();
      return ms >= min.toMilliseconds() && ms <= max.toMilliseconds();
    },
  };
}
