/**
 * The local runner's index backfills: every index that is not active (created with a
 * no-wait option, or left behind by a crash) is driven in the background, one driver
 * per index, beside live indexing, which never waits for it. `drain` (run --once) drives
 * them all to active, waiting out a lease another driver still holds.
 */
import type { Catalog } from '../catalog/db.js';
import { unfinishedIndexes } from '../catalog/index-backfill.js';
import type { CommittedSource } from '../kafka/source.js';
import { runIndexBackfill, type IndexBackfillSummary } from '../index-backfill/index.js';

/** `drain`: tries per index before it is reported as failed. */
const drainTries = 5;

export class IndexDrivers {
  private readonly running = new Map<string, Promise<void>>();
  private readonly stop = new AbortController();

  constructor(private readonly catalog: Catalog, private readonly source: CommittedSource, private readonly owner: string, private readonly log: (line: string) => void) {}

  /** Starts a background driver for each unfinished index without one; returns at once. */
  async poll(): Promise<void> {
    for (const { indexId, label } of await unfinishedIndexes(this.catalog)) {
      const key = String(indexId);
      if (this.running.has(key)) continue;
      const run = this.drive(indexId, label, false)
        .then(() => {}, (error: Error) => this.log(`${label}: backfill step failed, trying again later: ${error.message}`))
        .finally(() => this.running.delete(key));
      this.running.set(key, run);
    }
  }

  /** Drives every unfinished index to active (or gone); the indexes it could not finish, with why. */
  async drain(): Promise<{ index: string; error: string }[]> {
    await Promise.all(this.running.values());
    const failed: { index: string; error: string }[] = [];
    for (const { indexId, label } of await unfinishedIndexes(this.catalog)) {
      for (let attempt = 1; ; attempt++) {
        try {
          await this.drive(indexId, label, true);
          break;
        } catch (error) {
          this.log(`${label}: backfill step failed (try ${attempt} of ${drainTries}): ${(error as Error).message}`);
          if (attempt === drainTries) {
            failed.push({ index: label, error: (error as Error).message });
            break;
          }
        }
      }
    }
    return failed;
  }

  /** Stops the background drivers after their current step (its work is committed or not at all). */
  async close(): Promise<void> {
    this.stop.abort();
    await Promise.allSettled(this.running.values());
  }

  private async drive(indexId: bigint, label: string, waitForLease: boolean): Promise<IndexBackfillSummary> {
    const summary = await runIndexBackfill({ catalog: this.catalog, source: this.source, owner: this.owner }, indexId, { waitForLease, signal: this.stop.signal });
    if (summary.moves.length > 0 || summary.files > 0) {
      this.log(`${label}: ${summary.moves.length ? `moved to ${summary.moves.join(' → ')}, ` : ''}${summary.files} file(s) given entries, ${summary.skipped} skipped`);
    }
    return summary;
  }
}
