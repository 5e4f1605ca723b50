/**
 * A standalone index's backfill (docs/design.md, "Secondary indexes"): declared → building →
 * backfilling → catching_up → active while the table stays readable and writable.
 * `indexBackfillStep` does one step (step.ts); `runIndexBackfill` runs steps in this
 * process until the index is active (the local runner, tests); the state machine
 * (src/index-backfill/definition.ts) runs the same step per Lambda task (tasks.ts). No deadline:
 * progress is in the catalog after every step, and a new driver goes on from there.
 */
import { setIndexError } from '../catalog/indexes.js';
import { releaseIndexBackfill } from '../catalog/index-backfill.js';
import { pause } from '../common/retry.js';
import { indexBackfillStep } from './step.js';
import type { IndexBackfillDeps, IndexBackfillOptions, IndexBackfillStep } from './types.js';

export * from './types.js';
export { indexBackfillStep } from './step.js';

export interface IndexBackfillRun extends IndexBackfillOptions {
  /** Another driver holds the lease: wait until it lapses or the index is active (true), or return `held` at once (false, default). */
  waitForLease?: boolean;
  /** How often at most a waiting driver looks again (default 10 s; sooner when the lease lapses sooner). */
  leasePollMs?: number;
  /** Stop after this many steps (a caller that shares its time). */
  maxSteps?: number;
  signal?: AbortSignal;
}

export interface IndexBackfillSummary {
  indexId: string;
  /** 'active' or null (dropped) when done; otherwise where it stopped (held, maxSteps, aborted). */
  state: IndexBackfillStep['state'];
  done: boolean;
  /** States this driver moved the index into, in order. */
  moves: string[];
  steps: number;
  files: number;
  skipped: number;
  granules: number;
  bytesRead: number;
  /** The lease's holder, when the run stopped because another driver holds it. */
  heldBy?: string | null;
}

/**
 * Drives the index to `active` in this process. An error of a step (Kafka or Postgres
 * away, the lease lost) is written to the index's last_error and thrown: nothing of that
 * step was committed, and the next run (or the runner's next round) goes on.
 */
export async function runIndexBackfill(deps: IndexBackfillDeps, indexId: bigint, options: IndexBackfillRun = {}): Promise<IndexBackfillSummary> {
  const summary: IndexBackfillSummary = { indexId: String(indexId), state: null, done: false, moves: [], steps: 0, files: 0, skipped: 0, granules: 0, bytesRead: 0 };
  try {
    await driveSteps(deps, indexId, options, summary);
  } finally {
    // Stopped before the end (aborted, maxSteps, an error): the next driver need not wait for the lease to lapse.
    if (!summary.done) await releaseIndexBackfill(deps.catalog, { indexId, owner: deps.owner, ttlMs: 0 }).catch(() => {});
  }
  return summary;
}

async function driveSteps(deps: IndexBackfillDeps, indexId: bigint, options: IndexBackfillRun, summary: IndexBackfillSummary): Promise<void> {
  while (!options.signal?.aborted && (options.maxSteps === undefined || summary.steps < options.maxSteps)) {
    let step: IndexBackfillStep;
    try {
      step = await indexBackfillStep(deps, indexId, options);
    } catch (error) {
      await setIndexError(deps.catalog, indexId, `backfill step failed, to be run again: ${(error as Error).message}`).catch(() => {});
      throw error;
    }
    summary.steps += 1;
    summary.state = step.state;
    summary.done = step.done;
    if (step.outcome === 'moved' && step.state) summary.moves.push(step.state);
    summary.files += step.files;
    summary.skipped += step.skipped.length;
    summary.granules += step.granules;
    summary.bytesRead += step.bytesRead;
    deps.progress?.(step);
    if (step.done) break;
    if (step.outcome === 'held') {
      summary.heldBy = step.holder ?? null;
      if (!options.waitForLease) break;
      const lapsesIn = step.heldUntil ? Date.parse(step.heldUntil) - Date.now() + 20 : 0;
      await pause(Math.max(20, Math.min(options.leasePollMs ?? 10_000, lapsesIn)), options.signal);
    }
  }
}
