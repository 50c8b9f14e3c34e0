/**
 * The planner's cold-start duty for the ops CLI: record the job config this process runs in the
 * ledger (shared/store/deployed-config.ts), once per process. The CLI then acts on what
 * runs, whatever the operator's checkout holds.
 */
import type { DeployedConfigStore } from '../store/deployed-config.js';
import type { Job } from '../schedule/job-schema.js';
import type { RunLogger } from '../runtime/observability.js';

export class ConfigRecorder {
  private recorded = false;

  constructor(
    private readonly store: Pick<DeployedConfigStore, 'recordIfChanged'>,
    private readonly jobs: readonly Job[],
    private readonly logger: RunLogger,
  ) {}

  /**
   * Records the config unless this process already did. A failure does not stop the tick (planning
   * matters more than what the CLI shows): it is logged, and the next tick tries again.
   */
  async ensureRecorded(now: number): Promise<void> {
    if (this.recorded) return;
    try {
      const result = await this.store.recordIfChanged(this.jobs, now);
      this.recorded = true;
      this.logger.info(result.written ? 'deployed config recorded' : 'deployed config already recorded', {
        hash: result.hash,
        jobs: this.jobs.length,
        chunks: result.chunks,
      });
    } catch (error) {
      this.logger.error('deployed config not recorded: the ops CLI reads the previous one until a tick records this one', {
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
    }
  }
}
