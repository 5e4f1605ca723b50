/**
 * One step of an index's backfill, under the index's lease (src/catalog/index-backfill.ts):
 *
 *   declared    → building      the move locks the table's partition rows, so every commit
 *                               after it carries the index's entries (src/catalog/indexes.ts)
 *   building    → backfilling   counts the files to do (files_total)
 *   backfilling                 one chunk: the next files without entries get them from Kafka
 *               → catching_up   once none is left
 *   catching_up                 the same sweep again: files committed without entries while
 *                               the backfill ran (none under the partition locks; checked)
 *               → active        once none is left; the lease is given back
 *
 * The cursor is the catalog's set of live files without entries, minus those given up on
 * (backfill_skipped): a step run twice, or by a new driver after a crash, does the next
 * chunk. Each step's writes are one short transaction that first checks the lease.
 */
import { inTransaction, type CatalogClient } from '../catalog/db.js';
import { addFileEntries, filesWithoutEntries, indexById, indexCoverage, moveIndexState, setIndexBackfillTotal, setIndexError } from '../catalog/indexes.js';
import { claimIndexBackfill, filesSkippedByBackfill, IndexBackfillLeaseLostError, lockOwnedIndex, releaseIndexBackfill, skipBackfillFiles, type IndexBackfillLease } from '../catalog/index-backfill.js';
import { findTableById } from '../catalog/tables.js';
import { faultPoint } from '../common/faults.js';
import type { IndexDefinition, IndexState } from '../indexes/definition.js';
import { chunkEntries } from './chunk.js';
import { defaultChunkBytes, defaultChunkFiles, type IndexBackfillDeps, type IndexBackfillOptions, type IndexBackfillStep } from './types.js';

const next: Partial<Record<IndexState, IndexState>> = { declared: 'building', building: 'backfilling', backfilling: 'catching_up', catching_up: 'active' };

function stepOf(indexId: bigint, outcome: IndexBackfillStep['outcome'], state: IndexState | null, extra: Partial<IndexBackfillStep> = {}): IndexBackfillStep {
  return { indexId: String(indexId), outcome, state, files: 0, skipped: [], granules: 0, bytesRead: 0, done: state === null || state === 'active', ...extra };
}

/** Runs the next step of the index's backfill (see the module comment). */
export async function indexBackfillStep(deps: IndexBackfillDeps, indexId: bigint, options: IndexBackfillOptions = {}): Promise<IndexBackfillStep> {
  const index = await indexById(deps.catalog, indexId);
  if (!index) return stepOf(indexId, 'dropped', null);
  if (index.state === 'active') return stepOf(indexId, 'done', 'active');
  const table = await findTableById(deps.catalog, index.tableId);
  const lease: IndexBackfillLease = { indexId, owner: deps.owner, ttlMs: options.leaseTtlMs ?? table.settings.lease_ttl };
  const claim = await claimIndexBackfill(deps.catalog, lease);
  if (!claim.claimed) return claim.state === null ? stepOf(indexId, 'dropped', null) : stepOf(indexId, 'held', claim.state, { holder: claim.holder, heldUntil: claim.expiresAt?.toISOString() ?? null, done: claim.state === 'active' });
  const state = claim.state;
  if (state === 'active') return stepOf(indexId, 'done', 'active');
  if (state === 'declared' || state === 'building') return move(deps, lease, index, state);

  const files = await filesWithoutEntries(deps.catalog, index, options.chunkFiles ?? defaultChunkFiles, { exceptSkipped: true });
  if (files.length === 0) return move(deps, lease, index, state);
  let renewed = Date.now();
  const chunk = await chunkEntries(deps, table, index, files, { bytes: options.chunkBytes ?? defaultChunkBytes }, async () => {
    // A long chunk keeps its lease: renewed every third of its TTL.
    if (Date.now() - renewed < lease.ttlMs / 3) return;
    if (!(await claimIndexBackfill(deps.catalog, lease)).claimed) throw new IndexBackfillLeaseLostError(indexId, lease.owner);
    renewed = Date.now();
  });
  const done = await owned(deps, lease, state, async (client) => {
    let files = 0;
    let granules = 0;
    for (const file of chunk.built) {
      if (await addFileEntries(client, indexId, file.dataFileId, file.entries, { granules: file.granules, bytesRead: file.bytesRead })) {
        files += 1;
        granules += file.granules;
      }
    }
    await skipBackfillFiles(client, indexId, chunk.skipped.map((skip) => skip.dataFileId));
    if (chunk.skipped.length > 0) await setIndexError(client, indexId, `file ${chunk.skipped.at(-1)!.dataFileId} was skipped: ${chunk.skipped.at(-1)!.reason}`);
    return { files, granules };
  });
  faultPoint('after-index-chunk');
  if (done === undefined) return stepOf(indexId, 'dropped', null);
  return stepOf(indexId, 'chunk', state, {
    files: done.files, granules: done.granules, bytesRead: chunk.bytesRead, done: false,
    skipped: chunk.skipped.map((skip) => ({ file: String(skip.dataFileId), reason: skip.reason })),
  });
}

/** The move out of `from`, in one transaction under the lease. */
async function move(deps: IndexBackfillDeps, lease: IndexBackfillLease, index: IndexDefinition, from: IndexState): Promise<IndexBackfillStep> {
  const to = next[from]!;
  const moved = await owned(deps, lease, from, async (client) => {
    // Counted in the move's transaction, after the partition locks of `building` made every new file carry entries.
    if (to === 'backfilling') await setIndexBackfillTotal(client, index.indexId, (await indexCoverage(client, index)).without);
    if (!(await moveIndexState(client, index.indexId, from, to))) return false;
    if (to === 'active') await activeNote(client, index.indexId);
    return true;
  });
  if (moved === undefined) return stepOf(index.indexId, 'dropped', null);
  if (to === 'active') await releaseIndexBackfill(deps.catalog, lease);
  const now = moved ? to : ((await indexById(deps.catalog, index.indexId))?.state ?? null);
  return stepOf(index.indexId, 'moved', now, { from });
}

/** An index active with files it could not give entries says so (reads scan those files). */
async function activeNote(client: CatalogClient, indexId: bigint): Promise<void> {
  const skipped = await filesSkippedByBackfill(client, indexId);
  if (skipped.length > 0) await setIndexError(client, indexId, `${skipped.length} file(s) could not be rebuilt from Kafka and have no entries (${skipped.join(', ')}): reads scan them`);
}

/**
 * `work` in a transaction that holds the index row under our live lease, while the index
 * is still in `state`; undefined when the index is gone. Another state (another driver
 * moved it under a lapsed lease of ours) commits nothing.
 */
async function owned<T>(deps: IndexBackfillDeps, lease: IndexBackfillLease, state: IndexState, work: (client: CatalogClient) => Promise<T>): Promise<T | undefined> {
  return inTransaction(deps.catalog, async (client) => {
    const now = await lockOwnedIndex(client, lease);
    if (now === undefined) return undefined;
    if (now !== state) throw new IndexBackfillLeaseLostError(lease.indexId, lease.owner);
    return work(client);
  });
}
