/**
 * The operators' managed policy: exactly what the ops commands need against this stack
 * (OPS_ACCESS in infra/iam-access.ts, listed per command in docs/operating.md), on this stack's
 * resources only. Attach it to the role or group your operators use; its ARN is the stack output
 * OperatorPolicyArn.
 */
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { OPS_ACCESS, type OpsCommandAccess, type OpsResource } from '../iam-access.js';
import type { LedgerTable } from './ledger-table.js';
import type { RunQueues } from './run-queues.js';

export interface OperatorPolicyProps {
  readonly ledger: LedgerTable;
  readonly runQueues: RunQueues;
  /**
   * Commands to grant.
   * @default every command of OPS_ACCESS
   */
  readonly commands?: readonly (keyof typeof OPS_ACCESS)[];
}

/** Actions by resource over the given commands (calls and implied grants), sorted. */
export function operatorActions(commands: readonly (keyof typeof OPS_ACCESS)[]): Record<OpsResource, string[]> {
  const byResource: Record<OpsResource, Set<string>> = {
    stack: new Set(),
    ledgerTable: new Set(),
    openRunsIndex: new Set(),
    runQueue: new Set(),
    deadLetterQueue: new Set(),
  };
  for (const command of commands) {
    const access: OpsCommandAccess = OPS_ACCESS[command];
    for (const grants of [access.calls, access.implied?.grants ?? {}]) {
      for (const [resource, actions] of Object.entries(grants) as [OpsResource, readonly string[]][]) {
        for (const action of actions) byResource[resource].add(action);
      }
    }
  }
  const sorted = (set: Set<string>) => [...set].sort();
  return {
    stack: sorted(byResource.stack),
    ledgerTable: sorted(byResource.ledgerTable),
    openRunsIndex: sorted(byResource.openRunsIndex),
    runQueue: sorted(byResource.runQueue),
    deadLetterQueue: sorted(byResource.deadLetterQueue),
  };
}

export class OperatorPolicy extends Construct {
  readonly policy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: OperatorPolicyProps) {
    super(scope, id);
    const actions = operatorActions(props.commands ?? (Object.keys(OPS_ACCESS) as (keyof typeof OPS_ACCESS)[]));
    const arns: Record<OpsResource, string> = {
      // The stack's own ARN (AWS::StackId), so DescribeStacks reads this stack only.
      stack: Stack.of(this).stackId,
      ledgerTable: props.ledger.table.tableArn,
      openRunsIndex: props.ledger.openRunsIndexArn,
      runQueue: props.runQueues.runQueue.queueArn,
      deadLetterQueue: props.runQueues.deadLetterQueue.queueArn,
    };
    this.policy = new iam.ManagedPolicy(this, 'Policy', {
      description: `Fenced scheduler ops CLI (npm run ops) against stack ${Stack.of(this).stackName}`,
      statements: (Object.entries(actions) as [OpsResource, string[]][])
        .filter(([, list]) => list.length > 0)
        .map(
          ([resource, list]) =>
            new iam.PolicyStatement({
              sid: `Ops${resource[0]!.toUpperCase()}${resource.slice(1)}`,
              actions: list,
              resources: [arns[resource]],
            }),
        ),
    });
  }
}
