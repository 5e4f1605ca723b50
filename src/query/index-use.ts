/**
 * How one query of one table uses the table's secondary indexes: the WHERE tree bound to
 * the indexes, their entries fetched for the candidate files in a few catalog reads, and
 * per file the row groups they leave, with per index what it saved. An index that is not
 * `active`, whose columns no longer resolve, or whose entries for a file are missing or
 * unreadable is skipped for that file (counted), and its probes keep every row group.
 */
import type { Catalog } from '../catalog/db.js';
import type { CatalogFile } from '../catalog/file-reads.js';
import type { Granule } from '../catalog/file-writes.js';
import type { TableRecord } from '../table/record.js';
import { countIndexReads, indexEntryParts, indexEntryPartsOf, tableIndexes } from '../catalog/indexes.js';
import { answerProbes, bucketsFor, candidateRowGroups, probedIndexes, type FileAnswers, type FileEntries, type ProbeTree, type RowGroups } from '../indexes/candidates.js';
import { resolveIndexColumn } from '../indexes/columns.js';
import { BLOOM_PART } from '../indexes/bloom-entries.js';
import { HEADER_PART } from '../indexes/header.js';
import { defaultPostingBuckets, type IndexDefinition } from '../indexes/definition.js';
import type { TableSchema } from '../schema/table-schema.js';
import { bindIndexes, type BindableIndex } from './index-binding.js';
import type { Condition, Where } from '../sql/where.js';
import { missedUses } from './missed.js';

/** What `--plan` says of one index the WHERE clause could use. */
export interface IndexUse {
  index: string;
  kind: IndexDefinition['kind'];
  state: IndexDefinition['state'];
  /** Files whose row groups it chose among, and files it could not answer for. */
  files: { used: number; skipped: number };
  /** Row groups (the files' granules) of the files it answered for: all, left out by it, kept by it. */
  granules: { considered: number; skipped: number; read: number };
  /** Kafka bytes of the row groups that statistics alone would read and this index leaves out. */
  kafkaBytesAvoided: number;
  /** Why it was skipped, one line per distinct reason. */
  skippedBecause: string[];
}

export class TableIndexUse {
  private readonly uses = new Map<number, IndexUse>();
  private readonly entries = new Map<number, Map<bigint, FileEntries>>();
  private answered?: { file: bigint; answers: FileAnswers };

  private constructor(
    private readonly catalog: Catalog,
    private readonly indexes: BindableIndex[],
    private readonly tree: ProbeTree,
    private readonly leaves: ReadonlyMap<Condition, ProbeTree>,
    private readonly missedLines: string[],
  ) {
    for (const position of probedIndexes(tree)) {
      const { definition } = indexes[position]!;
      this.uses.set(position, { index: definition.name, kind: definition.kind, state: definition.state, files: { used: 0, skipped: 0 }, granules: { considered: 0, skipped: 0, read: 0 }, kafkaBytesAvoided: 0, skippedBecause: [] });
    }
  }

  /**
   * The table's indexes against the WHERE tree; an index whose columns do not resolve in
   * the current schema is left out. Also what the statistics and indexes missed of it.
   */
  static async bind(catalog: Catalog, table: TableRecord, schema: TableSchema, where: Where): Promise<TableIndexUse> {
    const bindable: BindableIndex[] = [];
    if (where.tree.kind !== 'any' || where.unread.length > 0) {
      for (const definition of await tableIndexes(catalog, table.tableId)) {
        try {
          bindable.push({ definition, columns: definition.columns.map((column) => resolveIndexColumn(schema.columns, table.format, column, definition.kind)) });
        } catch {
          // A column that does not resolve (or a kind it no longer accepts) cannot be matched to the SQL: no probe.
        }
      }
    }
    const tableColumns = new Set(schema.columns.map((column) => column.name.toLowerCase()));
    const leaves = new Map<Condition, ProbeTree>();
    const tree = bindable.length ? bindIndexes(where.tree, bindable, tableColumns, leaves) : ({ kind: 'any' } as const);
    return new TableIndexUse(catalog, bindable, tree, leaves, missedUses(where, bindable, tableColumns));
  }

  get used(): boolean {
    return this.uses.size > 0;
  }

  /** Fetches the entries the probes need for these files: header, Bloom filters, the postings buckets the keys fall in. */
  async fetch(files: readonly CatalogFile[]): Promise<void> {
    const ids = files.map((file) => file.dataFileId);
    if (ids.length === 0) return;
    for (const position of this.uses.keys()) {
      const { definition } = this.indexes[position]!;
      if (definition.state !== 'active') continue;
      const buckets = definition.postingBuckets ?? defaultPostingBuckets;
      const headers = await indexEntryParts(this.catalog, definition.indexId, 'history', HEADER_PART, ids);
      const blooms = definition.kind === 'bloom' ? await indexEntryParts(this.catalog, definition.indexId, 'history', BLOOM_PART, ids) : new Map<bigint, Uint8Array>();
      const postings = definition.kind === 'postings' ? await indexEntryPartsOf(this.catalog, definition.indexId, 'history', [...bucketsFor(this.tree, position, buckets)], ids) : new Map<bigint, Map<number, Uint8Array>>();
      const byFile = new Map<bigint, FileEntries>();
      for (const id of ids) {
        byFile.set(id, { header: headers.get(id) ?? null, bloom: definition.kind === 'bloom' ? (blooms.get(id) ?? null) : null, postings: postings.get(id) ?? new Map(), postingBuckets: buckets });
      }
      this.entries.set(position, byFile);
    }
  }

  /** What the indexes answer for one file (the last file's answers are kept: a read asks twice). */
  private answersFor(file: CatalogFile, granules: readonly Granule[]): FileAnswers {
    if (this.answered?.file === file.dataFileId) return this.answered.answers;
    const entries = new Map<number, FileEntries>();
    const reasons = new Map<number, string>();
    for (const position of this.uses.keys()) {
      const { definition } = this.indexes[position]!;
      const found = this.entries.get(position)?.get(file.dataFileId);
      if (definition.state !== 'active') reasons.set(position, `it is ${definition.state}, not active`);
      else if (found) entries.set(position, found);
    }
    const answers = answerProbes(this.tree, entries, granules.map((granule) => granule.rowCount));
    for (const [position, reason] of reasons) answers.unusable.set(position, reason);
    this.answered = { file: file.dataFileId, answers };
    return answers;
  }

  /**
   * Per condition of the WHERE tree, the row groups of the file its own index probes keep
   * (null: every one, as for a condition no index answers): what lets a read weigh the
   * indexes with the statistics branch by branch, so an OR of an indexed column and a
   * statistic's column prunes too.
   */
  conditionRowGroups(file: CatalogFile, granules: readonly Granule[]): (condition: Condition) => RowGroups {
    if (!this.used) return () => null;
    const answers = this.answersFor(file, granules);
    return (condition) => {
      const leaf = this.leaves.get(condition);
      return leaf ? candidateRowGroups(leaf, answers) : null;
    };
  }

  /**
   * Of `chosen` (the row groups statistics keep), those the indexes keep too; counts what
   * each index did for the file.
   */
  choose(file: CatalogFile, granules: readonly Granule[], chosen: readonly number[]): number[] {
    if (!this.used || chosen.length === 0) return [...chosen];
    const answers = this.answersFor(file, granules);
    const kept = candidateRowGroups(this.tree, answers);
    for (const [position, use] of this.uses) {
      const unusable = answers.unusable.get(position);
      if (unusable !== undefined) {
        use.files.skipped += 1;
        if (!use.skippedBecause.includes(unusable)) use.skippedBecause.push(unusable);
        continue;
      }
      const own = candidateRowGroups(this.tree, answers, position);
      use.files.used += 1;
      use.granules.considered += granules.length;
      const read = own === null ? granules.length : own.size;
      use.granules.read += read;
      use.granules.skipped += granules.length - read;
      if (own) use.kafkaBytesAvoided += chosen.filter((g) => !own.has(g)).reduce((sum, g) => sum + granules[g]!.kafkaBytes, 0);
    }
    return kept === null ? [...chosen] : chosen.filter((g) => kept.has(g));
  }

  /** What the statistics and the indexes could not use of the WHERE clause, for the plan. */
  missed(): string[] {
    return [...this.missedLines];
  }

  /** What each index did, for the plan. */
  report(): IndexUse[] {
    return [...this.uses.values()];
  }

  /** Adds this read's uses and skips to the indexes' counters. */
  async count(): Promise<void> {
    const counts = new Map<bigint, { used: number; skipped: number }>();
    for (const [position, use] of this.uses) counts.set(this.indexes[position]!.definition.indexId, { used: use.files.used, skipped: use.files.skipped });
    await countIndexReads(this.catalog, counts);
  }
}
