/**
 * Helpers for the infra tests: apps with the same feature flags as cdk.json, bundling skipped
 * unless a test asks for it (esbuild is the slow part of a synth), and IAM statement extraction.
 */
import { App, Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createSchedulerApp, type SchedulerApp } from '../../infra/scheduler-app.js';
import type { SchedulerStackProps } from '../../infra/scheduler-stack.js';

const CDK_JSON = fileURLToPath(new URL('../../cdk.json', import.meta.url));

/** The context of cdk.json (feature flags), so tests synthesize what `cdk synth` does. */
export function cdkJsonContext(): Record<string, unknown> {
  return (JSON.parse(readFileSync(CDK_JSON, 'utf8')) as { context?: Record<string, unknown> }).context ?? {};
}

/** Context for a test app; `bundle: false` skips esbuild (assets become placeholders). */
export function testContext(options: { bundle?: boolean; extra?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    ...cdkJsonContext(),
    ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
    ...options.extra,
  };
}

/**
 * App settings for fast unit synths: no construct stack traces and no built-in CloudFormation
 * rule validation (each costs seconds per test file). The bundled full-stack synth keeps both.
 */
export const FAST_APP = { stackTraces: false, builtinCloudFormationValidation: false } as const;

/** An app and an empty stack to put one construct in. */
export function constructStack(): Stack {
  const app = new App({ ...FAST_APP, context: testContext() });
  return new Stack(app, 'Test');
}

/**
 * The scheduler app as infra/app.ts builds it (cdk-nag plugin included). `bundle: true` is the
 * real thing: esbuild bundling, stack traces and CDK's built-in template validation.
 */
export function schedulerApp(
  overrides: SchedulerStackProps = {},
  options: { bundle?: boolean; context?: Record<string, unknown> } = {},
): SchedulerApp {
  const context = testContext({ bundle: options.bundle, extra: options.context });
  return createSchedulerApp({ appProps: options.bundle ? { context } : { ...FAST_APP, context }, overrides });
}

export interface Statement {
  readonly policy: string;
  readonly effect: string;
  readonly actions: readonly string[];
  readonly resources: readonly unknown[];
}

function asArray<T>(value: T | readonly T[] | undefined): readonly T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value as T];
}

/** Every statement of every IAM policy (AWS::IAM::Policy, AWS::IAM::ManagedPolicy and role inline policies) in the template. */
export function iamStatements(template: Template): Statement[] {
  const out: Statement[] = [];
  const push = (policy: string, document: { Statement?: unknown[] } | undefined) => {
    for (const raw of document?.Statement ?? []) {
      const s = raw as { Effect: string; Action?: string | string[]; Resource?: unknown };
      out.push({ policy, effect: s.Effect, actions: asArray(s.Action), resources: asArray(s.Resource) });
    }
  };
  for (const type of ['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy']) {
    for (const [id, resource] of Object.entries(template.findResources(type))) {
      push(id, (resource as { Properties: { PolicyDocument: { Statement: unknown[] } } }).Properties.PolicyDocument);
    }
  }
  for (const [id, resource] of Object.entries(template.findResources('AWS::IAM::Role'))) {
    const policies = (resource as { Properties: { Policies?: { PolicyDocument: { Statement: unknown[] } }[] } }).Properties.Policies ?? [];
    for (const policy of policies) push(id, policy.PolicyDocument);
  }
  return out;
}

/** Statements of the policies attached to the role whose logical id starts with `rolePrefix`. */
export function statementsOfRole(template: Template, rolePrefix: string): Statement[] {
  const policies = template.findResources('AWS::IAM::Policy');
  const ids = Object.entries(policies)
    .filter(([, resource]) =>
      asArray((resource as { Properties: { Roles?: { Ref: string }[] } }).Properties.Roles).some((role) => role.Ref.startsWith(rolePrefix)),
    )
    .map(([id]) => id);
  return iamStatements(template).filter((s) => ids.includes(s.policy));
}

/** Actions granted (Allow) to a role, sorted and de-duplicated. */
export function actionsOfRole(template: Template, rolePrefix: string): string[] {
  return [
    ...new Set(
      statementsOfRole(template, rolePrefix)
        .filter((s) => s.effect === 'Allow')
        .flatMap((s) => s.actions),
    ),
  ].sort();
}

/** True when a resource entry is `*` or contains a `*` anywhere (also inside Fn::Join parts). */
export function isWildcardResource(resource: unknown): boolean {
  return (typeof resource === 'string' ? resource : JSON.stringify(resource)).includes('*');
}
