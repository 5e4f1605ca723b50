/**
 * The merge plan as docs/design.md ("Files that grow with age") states it, written from
 * that text without src/compaction's code, for test/unit/compaction-plan.test.ts to hold
 * the plan to. Files come in offset order; files of one range share their offsets.
 */
export interface ModelFile {
  id: bigint;
  start: bigint;
  end: bigint;
  bucket: number;
  bytes: number;
}

export interface ModelSettings {
  fileBytes: number;
  n: number;
  mergeAfterMs: number;
  bucketMs: number;
}

/** "its tier is t where N^t ≤ bytes < N^(t+1)" (a file of less than one byte counts as one). */
export function modelTier(bytes: number, n: number): number {
  const b = Math.max(1, Math.floor(bytes));
  let t = 0;
  while (n ** (t + 1) <= b) t += 1;
  return t;
}

/** "consecutive ranges of one file each, all in one time bucket": what ends a run is a two-file range, a gap, or another bucket. */
function runsOf(files: readonly ModelFile[]): ModelFile[][] {
  const ranges = new Map<string, ModelFile[]>();
  for (const f of files) ranges.set(`${f.start}`, [...(ranges.get(`${f.start}`) ?? []), f]);
  const runs: ModelFile[][] = [[]];
  for (const range of ranges.values()) {
    const current = runs[runs.length - 1]!;
    const previous = current[current.length - 1];
    const joins = range.length === 1 && previous !== undefined && previous.end === range[0]!.start && previous.bucket === range[0]!.bucket;
    if (joins) current.push(range[0]!);
    else runs.push(range.length === 1 ? [range[0]!] : []);
  }
  return runs.filter((run) => run.length >= 2);
}

const total = (files: readonly ModelFile[]) => files.reduce((sum, f) => sum + f.bytes, 0);

/** The merges, as lists of files, in offset order. */
export function modelPlan(files: readonly ModelFile[], s: ModelSettings, now: number): ModelFile[][] {
  if (s.n < 2) return [];
  const out: ModelFile[][] = [];
  for (const run of runsOf(files)) {
    const aged = now >= run[0]!.bucket + s.bucketMs + s.mergeAfterMs;
    if (aged) {
      // "cut greedily from its start into pieces of at most file_bytes (a file that would pass it starts the next piece); every piece of two files or more"
      let piece: ModelFile[] = [];
      for (const f of run) {
        if (piece.length && total(piece) + f.bytes > s.fileBytes) {
          if (piece.length >= 2) out.push(piece);
          piece = [];
        }
        piece.push(f);
      }
      if (piece.length >= 2) out.push(piece);
    } else {
      // "each maximal group of consecutive files of one tier in a run is cut from its start into pieces of N files; each whole piece of at most file_bytes"
      const groups: ModelFile[][] = [];
      for (const f of run) {
        const last = groups[groups.length - 1];
        if (last && modelTier(last[0]!.bytes, s.n) === modelTier(f.bytes, s.n)) last.push(f);
        else groups.push([f]);
      }
      for (const group of groups) {
        for (let i = 0; i + s.n <= group.length; i += s.n) {
          const piece = group.slice(i, i + s.n);
          if (total(piece) <= s.fileBytes) out.push(piece);
        }
      }
    }
  }
  return out;
}
