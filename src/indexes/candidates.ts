/**
 * Which row groups of one data file may hold a row that passes a WHERE clause, from the
 * file's index entries. Pure: the entries are fetched by the caller.
 *
 * The clause comes as a tree whose leaves are probes of one index each:
 *   range  MINMAX, one column: [low, high] (either side open or missing)
 *   keys   BLOOM or POSTINGS: the encoded keys a matching row must have (every column
 *          of the index fixed by = or IN)
 * A probe answers with the row groups covering the index granules that may match; AND
 * intersects, OR unites, and a probe whose index cannot answer for the file (no entries,
 * unreadable entries, entries that do not describe the file's rows) answers "every row
 * group", so reading falls back to scanning. Nothing here may drop a row group that
 * holds a match: an unknown value, a NaN where NaN can pass, a granule outside what an
 * entry describes — each keeps the row group.
 */
import type { KeyType, KeyValue } from './columns.js';
import { bloomFilterCount, bloomGranules } from './bloom-entries.js';
import { decodeHeader, rowGroupsOf, type FileIndexHeader } from './header.js';
import { compareValues, postingBucket } from './keys.js';
import { postingGranules } from './postings.js';

export interface Bound {
  value: KeyValue;
  inclusive: boolean;
}

export type Probe =
  | { kind: 'range'; column: number; keyType: KeyType; low?: Bound; high?: Bound }
  | { kind: 'keys'; keys: Uint8Array[] };

export type ProbeTree =
  | { kind: 'any' }
  | { kind: 'and'; items: ProbeTree[] }
  | { kind: 'or'; items: ProbeTree[] }
  | { kind: 'probe'; index: number; probe: Probe };

/** What the catalog holds of one index for one file (null parts: absent). */
export interface FileEntries {
  header: Uint8Array | null;
  bloom: Uint8Array | null;
  /** POSTINGS: the parts asked for, by bucket (a bucket without keys has no part). */
  postings: Map<number, Uint8Array>;
  postingBuckets: number;
}

/** Row groups (indices), or null: every row group. */
export type RowGroups = Set<number> | null;

/** The indexes of the tree's probes. */
export function probedIndexes(tree: ProbeTree): Set<number> {
  if (tree.kind === 'probe') return new Set([tree.index]);
  if (tree.kind === 'any') return new Set();
  return new Set(tree.items.flatMap((item) => [...probedIndexes(item)]));
}

/** The POSTINGS buckets the tree's key probes of `index` read. */
export function bucketsFor(tree: ProbeTree, index: number, buckets: number): Set<number> {
  const out = new Set<number>();
  const walk = (node: ProbeTree): void => {
    if (node.kind === 'probe') {
      if (node.index === index && node.probe.kind === 'keys') for (const key of node.probe.keys) out.add(postingBucket(key, buckets));
    } else if (node.kind !== 'any') node.items.forEach(walk);
  };
  walk(tree);
  return out;
}

/** Why an index could not answer for a file, in our words. */
export class UnusableEntries extends Error {
  override name = 'UnusableEntries';
}

/**
 * One index's answers for one file, decoded once: per probe, the index granules that may
 * match. Throws UnusableEntries when the entries cannot be trusted for this file.
 */
export class IndexAnswers {
  private readonly header: FileIndexHeader;

  constructor(private readonly entries: FileEntries, private readonly rowGroupRows: readonly number[]) {
    if (!entries.header) throw new UnusableEntries('the file has no header entry for the index');
    this.header = guard(() => decodeHeader(entries.header!));
    const rows = rowGroupRows.reduce((sum, n) => sum + n, 0);
    if (this.header.rows !== rows) throw new UnusableEntries(`the index's entries describe ${this.header.rows} rows, the file has ${rows}`);
  }

  /** The row groups that may hold a row the probe accepts. */
  rowGroups(probe: Probe): Set<number> {
    return new Set(rowGroupsOf(guard(() => this.granules(probe)), this.header.granuleRows, this.rowGroupRows));
  }

  private granules(probe: Probe): Iterable<number> {
    const { header } = this;
    if (probe.kind === 'range') {
      const columns = header.minmax;
      const bounds = columns?.[probe.column];
      if (!bounds || bounds.length !== header.granules) throw new UnusableEntries('the index has no bounds of that column for every granule');
      const out: number[] = [];
      bounds.forEach((b, g) => {
        if (b.unknown) return void out.push(g);
        // DuckDB orders NaN above every number: it passes a range with no upper end.
        if (b.nans > 0 && !probe.high) return void out.push(g);
        if (b.min === null || b.max === null) return;
        const { low, high } = probe;
        const aboveLow = !low || (low.inclusive ? compareValues(probe.keyType, b.max, low.value) >= 0 : compareValues(probe.keyType, b.max, low.value) > 0);
        const belowHigh = !high || (high.inclusive ? compareValues(probe.keyType, b.min, high.value) <= 0 : compareValues(probe.keyType, b.min, high.value) < 0);
        if (aboveLow && belowHigh) out.push(g);
      });
      return out;
    }
    const out = new Set<number>(header.unknown);
    if (this.entries.bloom) {
      if (bloomFilterCount(this.entries.bloom) !== header.granules) throw new UnusableEntries('the Bloom entry has another number of granules than the header');
      for (const g of bloomGranules(this.entries.bloom, probe.keys)) out.add(g);
      return out;
    }
    if (header.minmax) throw new UnusableEntries('a MINMAX index has no keys to look up');
    for (const key of probe.keys) {
      const part = this.entries.postings.get(postingBucket(key, this.entries.postingBuckets));
      if (!part) continue; // no key of the file falls in that bucket
      for (const g of postingGranules(part, key)) {
        if (!Number.isInteger(g) || g < 0 || g >= header.granules) throw new UnusableEntries(`a posting names granule ${g}, which the file does not have`);
        out.add(g);
      }
    }
    return out;
  }
}

/** Runs `decode`; any error in it is the entries being unreadable, never a failed read. */
function guard<T>(decode: () => T): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof UnusableEntries) throw error;
    throw new UnusableEntries(`the index's entries are unreadable: ${(error as Error).message}`);
  }
}

function probesOf(tree: ProbeTree): { index: number; probe: Probe }[] {
  if (tree.kind === 'probe') return [tree];
  return tree.kind === 'any' ? [] : tree.items.flatMap(probesOf);
}

/** Each probe's row groups for one file, and the indexes that cannot answer for it (with why). */
export interface FileAnswers {
  byProbe: Map<Probe, Set<number>>;
  unusable: Map<number, string>;
}

/**
 * Asks every probe of the tree against one file's entries (`entries`: by index; an index
 * without an item there has none for the file). An index any of whose probes fails is
 * unusable for the file as a whole: its other answers are dropped too.
 */
export function answerProbes(tree: ProbeTree, entries: ReadonlyMap<number, FileEntries>, rowGroupRows: readonly number[]): FileAnswers {
  const byProbe = new Map<Probe, Set<number>>();
  const unusable = new Map<number, string>();
  const answers = new Map<number, IndexAnswers>();
  for (const { index, probe } of probesOf(tree)) {
    if (unusable.has(index)) continue;
    try {
      let answer = answers.get(index);
      if (!answer) {
        const found = entries.get(index);
        if (!found) throw new UnusableEntries('the file has no entries of the index');
        answer = new IndexAnswers(found, rowGroupRows);
        answers.set(index, answer);
      }
      byProbe.set(probe, answer.rowGroups(probe));
    } catch (error) {
      if (!(error instanceof UnusableEntries)) throw error;
      unusable.set(index, error.message);
    }
  }
  for (const { index, probe } of probesOf(tree)) if (unusable.has(index)) byProbe.delete(probe);
  return { byProbe, unusable };
}

/**
 * The row groups the tree leaves for a file (null: every one), from the probes' answers;
 * with `only`, from that index's probes alone (what that one index saves).
 */
export function candidateRowGroups(tree: ProbeTree, answers: FileAnswers, only?: number): RowGroups {
  switch (tree.kind) {
    case 'any':
      return null;
    case 'probe':
      if (only !== undefined && tree.index !== only) return null;
      return answers.byProbe.get(tree.probe) ?? null;
    case 'and': {
      let out: Set<number> | undefined;
      for (const item of tree.items) {
        const groups = candidateRowGroups(item, answers, only);
        if (groups === null) continue;
        out = out === undefined ? new Set(groups) : new Set([...out].filter((g) => groups.has(g)));
      }
      return out ?? null;
    }
    case 'or': {
      const out = new Set<number>();
      for (const item of tree.items) {
        const groups = candidateRowGroups(item, answers, only);
        if (groups === null) return null;
        for (const g of groups) out.add(g);
      }
      return out;
    }
  }
}
