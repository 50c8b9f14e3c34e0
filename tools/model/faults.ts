/**
 * Faults at the SDK boundary, as client middleware on the real DynamoDB and SQS clients of each
 * actor, chosen per call: armed by a generated command ("the next claim of lane w1 loses its
 * response") or drawn from the scenario's fault profile (probabilities per call kind).
 *
 *  refused        the request fails before it reaches the store (ECONNREFUSED; the SDK retries)
 *  lost-response  the call commits, then the response is lost (ECONNRESET; the SDK retries, or,
 *                 with maxAttempts 1, the code sees the error and retries itself)
 *  throttled      ProvisionedThroughputExceededException / ThrottlingException (the SDK retries)
 *  conflict       TransactionCanceledException with TransactionConflict (transactions only)
 *  latency        the call lands `latencyMs` of virtual time later (a slow network, a GC pause)
 *
 * The middleware also holds every call at a gate until the scenario's fc.scheduler releases it,
 * one call at a time: the interleaving of concurrent actors is the scheduler's (seeded, replayable)
 * choice, not the emulators' timing.
 */
import { ProvisionedThroughputExceededException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { CallKind } from './ledger-view.js';

export const FaultKind = {
  REFUSED: 'refused',
  LOST_RESPONSE: 'lost-response',
  THROTTLED: 'throttled',
  CONFLICT: 'conflict',
  LATENCY: 'latency',
} as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];

/** Per-call-kind probabilities of each fault, for one scenario. */
export interface FaultProfile {
  /** Probability that a call gets any fault at all. */
  readonly rate: number;
  /** Relative weights of the fault kinds. */
  readonly weights: Readonly<Record<FaultKind, number>>;
  /** Call kinds the profile may hit (others are never faulted at random). */
  readonly kinds: readonly CallKind[];
  readonly latencyMs: number;
}

export const NO_FAULTS: FaultProfile = {
  rate: 0,
  weights: { refused: 0, 'lost-response': 0, throttled: 0, conflict: 0, latency: 0 },
  kinds: [],
  latencyMs: 0,
};

/** A fault armed by a command: the next `count` matching calls of `actor` get it. */
export interface ArmedFault {
  readonly actor: string;
  readonly kind: CallKind;
  readonly fault: FaultKind;
  count: number;
  readonly latencyMs?: number;
}

export interface CallInfo {
  readonly actor: string;
  readonly kind: CallKind;
  readonly command: string;
  readonly transactional: boolean;
}

export interface FaultDecision {
  readonly fault: FaultKind;
  readonly latencyMs: number;
}

/** A small deterministic PRNG (mulberry32): the fault stream of a scenario replays from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultPlan {
  readonly armed: ArmedFault[] = [];
  enabled = true;
  injected = 0;
  readonly byKind = new Map<string, number>();
  private readonly random: () => number;

  constructor(
    readonly profile: FaultProfile,
    seed: number,
  ) {
    this.random = prng(seed);
  }

  arm(fault: ArmedFault): void {
    this.armed.push(fault);
  }

  /**
   * The fault for a call, if any (armed faults first, then the profile): latency is decided once
   * per call (`phase: 'call'`), the others once per SDK attempt (`phase: 'attempt'`).
   */
  decide(call: CallInfo & { readonly phase: 'call' | 'attempt' }): FaultDecision | undefined {
    if (!this.enabled) return undefined;
    const fits = (fault: FaultKind) => (call.phase === 'call') === (fault === FaultKind.LATENCY) && applicable(fault, call);
    const armed = this.armed.find((a) => a.count > 0 && a.actor === call.actor && a.kind === call.kind && fits(a.fault));
    if (armed) {
      armed.count--;
      return this.count({ fault: armed.fault, latencyMs: armed.latencyMs ?? this.profile.latencyMs });
    }
    if (this.profile.rate <= 0 || !this.profile.kinds.includes(call.kind)) return undefined;
    const options = (Object.entries(this.profile.weights) as [FaultKind, number][]).filter(([fault, w]) => w > 0 && fits(fault));
    if (options.length === 0 || this.random() >= this.profile.rate) return undefined;
    const total = options.reduce((n, [, w]) => n + w, 0);
    if (total <= 0) return undefined;
    let pick = this.random() * total;
    for (const [fault, weight] of options) {
      pick -= weight;
      if (pick <= 0) return this.count({ fault, latencyMs: this.profile.latencyMs });
    }
    return this.count({ fault: options[options.length - 1]![0], latencyMs: this.profile.latencyMs });
  }

  private count(decision: FaultDecision): FaultDecision {
    this.injected++;
    this.byKind.set(decision.fault, (this.byKind.get(decision.fault) ?? 0) + 1);
    return decision;
  }
}

function applicable(fault: FaultKind, call: CallInfo): boolean {
  return fault !== FaultKind.CONFLICT || call.transactional;
}

const metadata = () => ({ $metadata: { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 } });

/** The error a fault throws, shaped like the one the SDK itself would raise. */
/** Whether an error is one the model injected (not an answer of the store). */
export function isModelFault(error: unknown): boolean {
  return error instanceof Error && /\(model fault( on \w+)?\)/.test(error.message);
}

export function faultError(fault: FaultKind, call: CallInfo): Error {
  switch (fault) {
    case FaultKind.REFUSED:
      return Object.assign(new Error(`connect ECONNREFUSED (model fault on ${call.command})`), { code: 'ECONNREFUSED', $metadata: {} });
    case FaultKind.LOST_RESPONSE:
      return Object.assign(new Error(`socket hang up after the request was sent (model fault on ${call.command})`), {
        name: 'TimeoutError',
        code: 'ECONNRESET',
        $metadata: {},
      });
    case FaultKind.THROTTLED:
      if (call.command.endsWith('Command') && !call.kind.startsWith('sqs')) {
        return new ProvisionedThroughputExceededException({
          message: `throughput exceeded (model fault on ${call.command})`,
          ...metadata(),
        });
      }
      return Object.assign(new Error(`rate exceeded (model fault on ${call.command})`), {
        name: 'ThrottlingException',
        $fault: 'client',
        ...metadata(),
      });
    case FaultKind.CONFLICT:
      return new TransactionCanceledException({
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict] (model fault)`,
        CancellationReasons: [{ Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }, { Code: 'None' }],
        ...metadata(),
      });
    case FaultKind.LATENCY:
      return new Error('latency is not an error');
  }
}

interface RetryToken {
  getRetryCount(): number;
  getRetryDelay(): number;
}

/**
 * The SDK's standard retry decisions (throttling and transient errors, up to maxAttempts) without
 * its real-time backoff sleeps: in virtual time a backoff costs nothing, and real sleeps would
 * only slow the scenarios down.
 */
export function immediateRetryStrategy(maxAttempts: number) {
  const token = (count: number): RetryToken => ({ getRetryCount: () => count, getRetryDelay: () => 0 });
  return {
    mode: 'standard',
    acquireInitialRetryToken: async () => token(0),
    refreshRetryTokenForRetry: async (previous: RetryToken, info: { errorType: string }) => {
      const retryable = info.errorType === 'THROTTLING' || info.errorType === 'TRANSIENT';
      if (!retryable || previous.getRetryCount() + 1 >= maxAttempts) throw new Error('No retry token available');
      return token(previous.getRetryCount() + 1);
    },
    recordSuccess: () => undefined,
  };
}
