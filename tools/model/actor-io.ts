/**
 * The real SDK clients of one actor (planner, worker lane, operator), with the model's middleware:
 *  - initialize step (once per call): the gate — the call waits until the scenario's scheduler
 *    releases it (one call at a time), a latency fault holds it in virtual time first, and a
 *    frozen or killed actor's call is held or dropped; SQS inputs are rewritten so the real queue
 *    keeps no real-time delays (see model-queue.ts);
 *  - deserialize step (once per attempt, inside the SDK's retry loop): faults (refused before
 *    the store, response lost after commit, throttling, transaction conflict), and the queue's
 *    bookkeeping of what SQS accepted.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../local-stack.js';
import { faultError, FaultKind, immediateRetryStrategy, isModelFault, type CallInfo, type FaultPlan } from './faults.js';
import { classifyCall, type CallKind } from './ledger-view.js';
import { HIDDEN_SECONDS, type ModelQueue } from './model-queue.js';

export interface Gate {
  /** A call was sent (it is on its way to the gate). */
  started(): void;
  /** A call's promise settled. */
  finished(): void;
  /** Resolves when the call may go to the store; never resolves for a dead actor. */
  enter(actor: string, call: CallInfo, latencyMs: number): Promise<void>;
  /** A call finished its attempt with a fault injected: reported to the story. */
  note(actor: string, call: CallInfo, fault: FaultKind): void;
  /**
   * A call failed for its caller although one of its attempts committed (every answer after the
   * commit was lost, the SDK's retries spent): the caller cannot know its write landed.
   */
  unanswered(actor: string, call: CallInfo, input: Record<string, unknown>): void;
}

export interface ActorClients {
  readonly dynamo: DynamoDBClient;
  readonly doc: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  destroy(): void;
}

export interface ActorIoOptions {
  readonly dynamoEndpoint: string;
  readonly sqsEndpoint: string;
  /** SDK attempts per call (1: the code sees every fault and retries itself). */
  readonly maxAttempts: number;
  readonly runQueueUrl: string;
}

type Args = { input: Record<string, unknown> };
type Ctx = { commandName?: string; __model?: ModelCallState };

interface ModelCallState {
  readonly call: CallInfo;
  /** An attempt of this call reached the store and its answer was lost. */
  committed?: boolean;
  delays?: Map<string, { delaySeconds: number; body: string }>;
  visibility?: number;
}

export function actorClients(actor: string, options: ActorIoOptions, gate: Gate, faults: FaultPlan, queue: ModelQueue): ActorClients {
  const common = {
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: options.maxAttempts,
    retryStrategy: immediateRetryStrategy(options.maxAttempts),
  };
  const dynamo = new DynamoDBClient({ ...common, endpoint: options.dynamoEndpoint });
  const sqs = new SQSClient({ ...common, endpoint: options.sqsEndpoint });

  for (const client of [dynamo, sqs] as const) {
    const stack = client.middlewareStack as unknown as {
      add(
        mw: (next: (args: Args) => Promise<unknown>, context: Ctx) => (args: Args) => Promise<unknown>,
        options: { step: string; name: string; priority?: string },
      ): void;
    };
    stack.add(
      (next, context) => async (args) => {
        const command = context.commandName ?? 'UnknownCommand';
        const { kind, transactional } = classifyCall(command, args.input);
        const call: CallInfo = { actor, kind, command, transactional };
        const state: ModelCallState = { call };
        context.__model = state;
        let input = args.input;
        if (input.QueueUrl === options.runQueueUrl) input = rewriteSqsInput(command, input, state);
        const latency = faults.decide({ ...call, phase: 'call' });
        await gate.enter(actor, call, latency?.fault === FaultKind.LATENCY ? latency.latencyMs : 0);
        try {
          return await next({ ...args, input });
        } catch (error) {
          // The store's own answer (a failed condition, say) reached the caller: it can judge.
          if (state.committed && isModelFault(error)) gate.unanswered(actor, call, args.input);
          throw error;
        }
      },
      { step: 'initialize', name: 'modelGate', priority: 'high' },
    );
    stack.add(
      (next, context) => async (args) => {
        const state = context.__model;
        if (!state) return next(args);
        const decision = faults.decide({ ...state.call, phase: 'attempt' });
        if (decision && decision.fault !== FaultKind.LOST_RESPONSE) {
          gate.note(actor, state.call, decision.fault);
          throw faultError(decision.fault, state.call);
        }
        const result = (await next(args)) as { output?: Record<string, unknown> };
        if (args.input.QueueUrl === options.runQueueUrl) recordSqs(state, args.input, result.output ?? {}, queue);
        if (decision?.fault === FaultKind.LOST_RESPONSE) {
          state.committed = true;
          gate.note(actor, state.call, decision.fault);
          throw faultError(decision.fault, state.call);
        }
        return result;
      },
      { step: 'deserialize', name: 'modelFaults', priority: 'high' },
    );
  }
  const doc = DynamoDBDocumentClient.from(dynamo, { marshallOptions: { removeUndefinedValues: true } });
  // Count every call from the moment it is sent: the SDK does asynchronous work before the gate,
  // and the world must not mistake a call on its way for an idle actor.
  for (const client of [dynamo, sqs, doc] as const) {
    const send = client.send.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as unknown as { send: (...args: unknown[]) => Promise<unknown> }).send = (...args: unknown[]) => {
      gate.started();
      return send(...args).finally(() => gate.finished());
    };
  }
  return {
    dynamo,
    doc,
    sqs,
    destroy: () => {
      dynamo.destroy();
      sqs.destroy();
    },
  };
}

/** No real-time delays or visibility in the real queue: the model queue keeps them in virtual time. */
function rewriteSqsInput(command: string, input: Record<string, unknown>, state: ModelCallState): Record<string, unknown> {
  if (command === 'SendMessageBatchCommand') {
    const entries = (input.Entries ?? []) as { Id: string; DelaySeconds?: number; MessageBody?: string }[];
    state.delays = new Map(entries.map((e) => [e.Id, { delaySeconds: e.DelaySeconds ?? 0, body: e.MessageBody ?? '' }]));
    return { ...input, Entries: entries.map((e) => ({ ...e, DelaySeconds: 0 })) };
  }
  if (command === 'SendMessageCommand') {
    state.delays = new Map([['single', { delaySeconds: Number(input.DelaySeconds ?? 0), body: String(input.MessageBody ?? '') }]]);
    return { ...input, DelaySeconds: 0 };
  }
  if (command === 'ChangeMessageVisibilityCommand') {
    state.visibility = Number(input.VisibilityTimeout ?? 0);
    return { ...input, VisibilityTimeout: HIDDEN_SECONDS };
  }
  return input;
}

function recordSqs(state: ModelCallState, input: Record<string, unknown>, output: Record<string, unknown>, queue: ModelQueue): void {
  const command = state.call.command;
  if (command === 'SendMessageBatchCommand' && state.delays) {
    const ok = (output.Successful ?? []) as { Id: string; MessageId: string }[];
    queue.onSent(
      ok.map((s) => ({
        messageId: s.MessageId,
        delaySeconds: state.delays!.get(s.Id)?.delaySeconds ?? 0,
        body: state.delays!.get(s.Id)?.body,
      })),
    );
  } else if (command === 'SendMessageCommand' && state.delays && typeof output.MessageId === 'string') {
    const single = state.delays.get('single')!;
    queue.onSent([{ messageId: output.MessageId, delaySeconds: single.delaySeconds, body: single.body }]);
  } else if (command === 'ChangeMessageVisibilityCommand') {
    queue.onVisibility(String(input.ReceiptHandle), state.visibility ?? 0);
  } else if (command === 'DeleteMessageCommand') {
    queue.onDeleted(String(input.ReceiptHandle));
  } else if (command === 'DeleteMessageBatchCommand') {
    const entries = (input.Entries ?? []) as { Id: string; ReceiptHandle: string }[];
    const ok = new Set(((output.Successful ?? []) as { Id: string }[]).map((s) => s.Id));
    for (const entry of entries) if (ok.has(entry.Id)) queue.onDeleted(entry.ReceiptHandle);
  }
}

export type { CallKind };
