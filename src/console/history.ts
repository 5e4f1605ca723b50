/**
 * The console's memory of the recent past, pure: a bounded ring of samples (per partition
 * its indexed end and its LSO, taken every few seconds by the sampler), the series the
 * page plots from it, and each partition's lag in seconds.
 *
 * Lag in seconds is how long ago the LSO passed the partition's indexed end: the oldest
 * committed offset not yet in a file became readable then. The time is interpolated
 * between the two samples whose LSOs lie on either side of it (as Lightbend's
 * kafka-lag-exporter does with its table of sampled latest offsets), so it depends on no
 * producer's clock; a lag older than the history is a lower bound.
 */

export interface PartitionPoint {
  /** `table` NUL `partition`. */
  key: string;
  indexedStart: bigint;
  indexedEnd: bigint;
  /** Null while Kafka gives none. */
  lastStableOffset: bigint | null;
}

export interface Sample {
  /** Epoch milliseconds. */
  at: number;
  partitions: readonly PartitionPoint[];
}

export function partitionKey(table: string, partition: number): string {
  return `${table}\u0000${partition}`;
}

/** The last `capacity` samples, oldest first. */
export class SampleHistory {
  private readonly ring: Sample[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 2) throw new Error(`a history needs room for at least 2 samples, got ${capacity}`);
  }

  add(sample: Sample): void {
    const last = this.ring.at(-1);
    if (last && sample.at < last.at) throw new Error(`samples go forward in time: ${sample.at} comes before ${last.at}`);
    this.ring.push(sample);
    if (this.ring.length > this.capacity) this.ring.shift();
  }

  get samples(): readonly Sample[] {
    return this.ring;
  }
}

/** One point of the charts: the lag of every partition added up, and the offsets indexed per second since the sample before. */
export interface ChartPoint {
  at: number;
  /** Σ max(LSO − indexed end, 0) over the partitions whose LSO is known. */
  lagRecords: number;
  /** Offsets added to indexed ranges (live and backfill) per second since the previous sample; null for the first. */
  offsetsPerSecond: number | null;
}

function indexedOffsets(sample: Sample): Map<string, bigint> {
  return new Map(sample.partitions.map((p) => [p.key, p.indexedEnd - p.indexedStart]));
}

export function chartPoints(samples: readonly Sample[]): ChartPoint[] {
  let before: { at: number; indexed: Map<string, bigint> } | undefined;
  return samples.map((sample) => {
    const indexed = indexedOffsets(sample);
    let lag = 0n;
    for (const p of sample.partitions) if (p.lastStableOffset !== null && p.lastStableOffset > p.indexedEnd) lag += p.lastStableOffset - p.indexedEnd;
    let rate: number | null = null;
    if (before && sample.at > before.at) {
      // only partitions in both samples: one that appeared (a new table) did not index its first offsets in between
      let added = 0n;
      for (const [key, offsets] of indexed) {
        const earlier = before.indexed.get(key);
        if (earlier !== undefined && offsets > earlier) added += offsets - earlier;
      }
      rate = Number(added) / ((sample.at - before.at) / 1000);
    }
    before = { at: sample.at, indexed };
    return { at: sample.at, lagRecords: Number(lag), offsetsPerSecond: rate };
  });
}

export interface LagSeconds {
  seconds: number;
  /** The lag began before the oldest sample: `seconds` is how far back the history reaches. */
  atLeast: boolean;
}

/**
 * How long ago the LSO of partition `key` passed `indexedEnd`, seen from `now`; 0 when
 * nothing committed waits; null while Kafka gives no LSO.
 */
export function lagSeconds(samples: readonly Sample[], key: string, indexedEnd: bigint, lastStableOffset: bigint | null, now: number): LagSeconds | null {
  if (lastStableOffset === null) return null;
  if (lastStableOffset <= indexedEnd) return { seconds: 0, atLeast: false };
  const points = samples.flatMap((s) => {
    const p = s.partitions.find((q) => q.key === key);
    return p && p.lastStableOffset !== null && s.at <= now ? [{ at: s.at, lso: p.lastStableOffset }] : [];
  });
  points.push({ at: now, lso: lastStableOffset });
  // the offset indexedEnd became stable when the LSO went from ≤ indexedEnd to > indexedEnd
  const passed = points.findIndex((p) => p.lso > indexedEnd);
  if (passed === 0) return { seconds: Math.max(0, (now - points[0]!.at) / 1000), atLeast: true };
  const before = points[passed - 1]!;
  const after = points[passed]!;
  const fraction = Number(indexedEnd + 1n - before.lso) / Number(after.lso - before.lso);
  const at = before.at + fraction * (after.at - before.at);
  return { seconds: Math.max(0, (now - at) / 1000), atLeast: false };
}
