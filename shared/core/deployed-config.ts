/**
 * The deployed job config as the planner records it in the ledger on each cold start, so that the
 * ops CLI acts on what runs, not on the operator's working copy: the validated jobs (defaults
 * applied, calendars expanded) as one JSON document, and a hash that says whether two configs are
 * the same. Pure: the adapter (shared/store/deployed-config.ts) compresses, chunks and
 * stores it.
 */
import { createHash } from 'node:crypto';
import type { Job } from '../schedule/job-schema.js';

/** The document's format; a reader refuses another one rather than guess. */
export const DEPLOYED_CONFIG_VERSION = 1;

export interface DeployedConfigDocument {
  readonly version: typeof DEPLOYED_CONFIG_VERSION;
  /** The jobs in config order. */
  readonly jobs: readonly Job[];
}

/** A deployed config read back from the ledger. */
export interface DeployedConfig {
  readonly hash: string;
  readonly jobs: readonly Job[];
  /** When the planner recorded it (ms). */
  readonly recordedAt: number;
}

/** JSON with object keys sorted at every level, so the same config always gives the same text. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const record = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(record)
        .sort()
        .map((k) => [k, record[k]]),
    );
  });
}

/**
 * The config's identity: sha-256 of the canonical JSON of the jobs in name order. The order jobs
 * are written in, or the order of an object's keys, changes nothing that runs, so neither changes
 * the hash; any field's value does.
 */
export function configHash(jobs: readonly Job[]): string {
  const byName = [...jobs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return createHash('sha256').update(canonicalJson(byName)).digest('hex');
}

/** The document's text, as recorded. */
export function configDocumentJson(jobs: readonly Job[]): string {
  const document: DeployedConfigDocument = { version: DEPLOYED_CONFIG_VERSION, jobs };
  return canonicalJson(document);
}

/** The recorded config is not one this code can read; the message says what is wrong with it. */
export class DeployedConfigError extends Error {
  override readonly name = 'DeployedConfigError';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The shape every recorded job has; the rest of its fields are the planner's validated values. */
function isRecordedJob(value: unknown): value is Job {
  return isRecord(value) && typeof value.name === 'string' && typeof value.handler === 'string';
}

/**
 * The jobs of a recorded document, checked against the hash recorded beside it (a config whose
 * pieces were read from two different recordings does not pass).
 */
export function parseConfigDocument(json: string, expectedHash: string): readonly Job[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new DeployedConfigError(`the recorded config is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isRecord(parsed) || parsed.version !== DEPLOYED_CONFIG_VERSION) {
    const version = isRecord(parsed) ? JSON.stringify(parsed.version) : 'none';
    throw new DeployedConfigError(
      `the recorded config has format version ${version}; this CLI reads version ${DEPLOYED_CONFIG_VERSION} (update your checkout)`,
    );
  }
  const entries: unknown = parsed.jobs;
  if (!Array.isArray(entries)) throw new DeployedConfigError('the recorded config has no list of jobs');
  const recorded: Job[] = [];
  for (const [index, entry] of (entries as readonly unknown[]).entries()) {
    // The planner recorded what it validated; the hash check below proves this text is that record.
    if (!isRecordedJob(entry)) throw new DeployedConfigError(`the recorded config's job #${index} has no name or no handler`);
    recorded.push(entry);
  }
  const hash = configHash(recorded);
  if (hash !== expectedHash)
    throw new DeployedConfigError(
      `the recorded config's jobs hash to ${hash.slice(0, 12)}, not to the recorded ${expectedHash.slice(0, 12)}`,
    );
  return recorded;
}
