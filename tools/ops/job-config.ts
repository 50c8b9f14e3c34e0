/**
 * The jobs an ops command acts on: the config the target's planner recorded on its last cold start
 * (shared/store/deployed-config.ts), not the operator's checkout, which may hold a job
 * the running workers do not know. Loaded once per command, before it runs:
 *
 * - recorded, same hash as this checkout: silent;
 * - recorded, another hash: the deployed jobs, and ONE warning line on stderr saying how the
 *   checkout differs;
 * - nothing recorded yet (no planner has started since a version that records was deployed):
 *   this checkout's jobs, with one warning line saying so.
 */
import { DeployedConfigStore } from '../../shared/store/deployed-config.js';
import { configHash, DeployedConfigError, type DeployedConfig } from '../../shared/core/deployed-config.js';
import type { Job } from '../../shared/schedule/job-schema.js';
import { jobsOf } from './args.js';
import { iso, OpsFailure, type OpsIo } from './io.js';
import type { Target } from './target.js';

/**
 * The io a command runs with on `target`: the target says whether it runs the example jobs
 * (npm start's endpoints file, the stack's ExampleJobs output), and the checkout's config compared
 * with the deployed one follows it. Given (tests), `io.exampleJobs` stands.
 */
export function ioForTarget(io: OpsIo, target: Target): OpsIo {
  return io.exampleJobs === undefined && target.exampleJobs !== undefined ? { ...io, exampleJobs: target.exampleJobs } : io;
}

/** Where the jobs a command acts on came from (unknown-job errors name it). */
export const JobSource = {
  DEPLOYED: 'the deployed config',
  CHECKOUT: "this checkout's config",
} as const;
export type JobSource = (typeof JobSource)[keyof typeof JobSource];

export interface LoadedJobConfig {
  readonly jobs: readonly Job[];
  readonly source: JobSource;
  /** The one line to print on stderr, when there is something to warn about. */
  readonly warning?: string;
  /** The checkout's jobs, when they could be loaded (an unknown-job error says a job is only here). */
  readonly checkoutJobs?: readonly Job[];
}

const NAMES_LISTED = 5;

function names(list: readonly string[]): string {
  return list.length > NAMES_LISTED ? `${list.slice(0, NAMES_LISTED).join(', ')} … (${list.length})` : list.join(', ');
}

/** How the checkout's jobs differ from the deployed ones, by job name. */
export function describeDifference(deployed: readonly Job[], checkout: readonly Job[]): string {
  const deployedByName = new Map(deployed.map((j) => [j.name, j]));
  const checkoutByName = new Map(checkout.map((j) => [j.name, j]));
  const onlyHere = checkout.filter((j) => !deployedByName.has(j.name)).map((j) => j.name);
  const onlyDeployed = deployed.filter((j) => !checkoutByName.has(j.name)).map((j) => j.name);
  const changed = checkout
    .filter((j) => deployedByName.has(j.name) && configHash([j]) !== configHash([deployedByName.get(j.name)!]))
    .map((j) => j.name);
  const parts = [
    onlyHere.length > 0 ? `only in this checkout: ${names(onlyHere)}` : undefined,
    onlyDeployed.length > 0 ? `only deployed: ${names(onlyDeployed)}` : undefined,
    changed.length > 0 ? `changed here: ${names(changed)}` : undefined,
  ].filter((p) => p !== undefined);
  return parts.join('; ');
}

/** This checkout's jobs, or why they cannot be read (an invalid config being edited, say). */
function checkoutJobsOf(io: OpsIo): { jobs?: readonly Job[]; problem?: string } {
  try {
    return { jobs: jobsOf(io) };
  } catch (error) {
    return { problem: (error instanceof Error ? error.message : String(error)).split('\n')[0] };
  }
}

/** What to act on, given what the ledger holds (pure, so each case reads plainly). */
export function chooseJobConfig(
  recorded: DeployedConfig | undefined,
  checkout: { jobs?: readonly Job[]; problem?: string },
  where: string,
): LoadedJobConfig {
  if (recorded === undefined) {
    if (checkout.jobs === undefined)
      throw new OpsFailure(`no deployed config is recorded in ${where} and this checkout's config does not load: ${checkout.problem}`);
    return {
      jobs: checkout.jobs,
      source: JobSource.CHECKOUT,
      checkoutJobs: checkout.jobs,
      warning: `ops: warning: no deployed config is recorded in ${where} yet (its planner records one on its next cold start): using this checkout's jobs, which may not be what runs`,
    };
  }
  const deployed = { jobs: recorded.jobs, source: JobSource.DEPLOYED, checkoutJobs: checkout.jobs };
  const stamp = `${recorded.hash.slice(0, 12)}, recorded ${iso(recorded.recordedAt)}`;
  if (checkout.jobs === undefined) {
    return {
      ...deployed,
      warning: `ops: warning: using the deployed config (${stamp}); this checkout's config does not load: ${checkout.problem}`,
    };
  }
  const localHash = configHash(checkout.jobs);
  if (localHash === recorded.hash) return deployed;
  const difference = describeDifference(recorded.jobs, checkout.jobs);
  return {
    ...deployed,
    warning: `ops: warning: this checkout's job config (${localHash.slice(0, 12)}) differs from the deployed one (${stamp})${difference ? `: ${difference}` : ''}; acting on the deployed one`,
  };
}

/** Reads the target's recorded config and decides what the command acts on. */
export async function loadJobConfig(target: Target, io: OpsIo): Promise<LoadedJobConfig> {
  let recorded: DeployedConfig | undefined;
  try {
    recorded = await DeployedConfigStore.of(target.ledger).readRecorded();
  } catch (error) {
    if (error instanceof DeployedConfigError)
      throw new OpsFailure(`cannot read the deployed config of ${target.description}: ${error.message}`);
    throw error;
  }
  return chooseJobConfig(recorded, checkoutJobsOf(io), target.description);
}
