/**
 * `run --memory SIZE` as a budget for the process's resident memory, not only its open
 * ranges. What the process holds, measured (bench/build-memory.ts, bench/load-run.ts):
 *
 *   resident ≈ base + deliveries × per-delivery + partitions × per-partition
 *              + hold factor × held ranges + builds × build factor × range
 *
 * - base: Node, the modules, the catalog pool and the Kafka client, idle;
 * - per delivery: a partition's delivery in flight (the handler's committed read of up to
 *   one event's worth, 4.5 MiB of record bytes, give or take a Fetch, and what reading and
 *   indexing it stirs up); at most `deliveries` run at once, whatever the partitions;
 * - per partition: its indexer, lease and event source, idle or not;
 * - held ranges: open ranges and sealed ones not yet committed (records in memory);
 * - a build holds, besides its range's records, rows, column buffers, pages and the file
 *   for a while: `buildFactor` times the range's counted bytes at its peak.
 *
 * The budget less the fixed parts is split so that the worst case fits: held ranges in
 * all at most `heldBytes`, one range at most `rangeBytes` (sealed with reason `capacity`
 * when it reaches it, or at `file_bytes` if that is smaller), and `builds` builds of such
 * a range at once. A budget whose split leaves ranges smaller than `minRangeBytes` is
 * refused: files that small would make the catalog, not the budget, the bottleneck.
 */

export interface MemoryCosts {
  baseBytes: number;
  /** A delivery in flight: its Fetch, its records until they join their range, and the heap's slack over them. */
  perDeliveryBytes: number;
  /** A partition's indexer, lease and event source, and what its open range costs beyond its records. */
  perPartitionBytes: number;
  /** Resident bytes of a held range per counted byte (key + value + headers): the records' objects and the heap's slack. */
  holdFactor: number;
  /** A build's transient peak per counted byte of its range. */
  buildFactor: number;
  /** Below this a range is too small to be worth a file: such a budget is refused. */
  minRangeBytes: number;
  /** Resident bytes at the peak of reading, holding and building one record batch, per byte it decompresses to: the batch limit is the room over this. */
  batchFactor: number;
}

const MiB = 1024 * 1024;

/**
 * Measured on the 2-core development machine (docs/operations.md, "The memory budget of
 * `run`"): idle `run` RSS 100–135 MiB, and 0.1 MiB more per idle partition (3, 30 and 120
 * partitions); under 12 MiB/s over 3 partitions, 406 MiB at peak of which ranges and builds
 * explain ~150, so ~40 MiB per delivery in flight (each of the 3 had one); 30 partitions of
 * clickstream JSON with ranges of 1 MiB and 4 deliveries at once, 400 MiB at peak, so
 * ~3 MiB per partition under load beside them (1, 2, 8 and 30 deliveries at once: 329,
 * 347, 439, 522 MiB); a held range 1.05–1.84× its counted bytes and a build's peak
 * 0.7–1.3× more, in a fresh process (bench/build-memory.ts: JSON, ~1.1 KB records,
 * 4–32 MiB ranges). One batch of a single 95 MiB value (a raw table, gzip) peaked at
 * 966 MiB under `--memory 1GiB`, 8.2× its bytes beyond the fixed parts
 * (test/integration/compressed-bomb.test.ts): a batch factor of 9. Rounded up: these
 * make a budget, not a forecast.
 */
export const measuredCosts: MemoryCosts = { baseBytes: 140 * MiB, perDeliveryBytes: 40 * MiB, perPartitionBytes: 4 * MiB, holdFactor: 1.9, buildFactor: 1.5, minRangeBytes: MiB, batchFactor: 9 };

/**
 * Deliveries `run` indexes at once, over all its partitions. Each reads Kafka and indexes
 * on the one JavaScript thread, so more than a few only hold more Fetches in memory: 1 to
 * 30 at once over 30 partitions took the same CPU and time here (3.7–4.5 s), and peak RSS
 * grew from 329 to 522 MiB.
 */
export const defaultDeliveriesAtOnce = 4;

/** What the budget is split for. */
export interface MemoryDemand {
  partitions: number;
  /** File builds at once. */
  builds: number;
  /** Deliveries at once (`defaultDeliveriesAtOnce` unless told). */
  deliveries: number;
  /** The largest `file_bytes` of the tables: no range is made larger. */
  largestFileBytes: number;
}

export interface MemoryPlan {
  budgetBytes: number;
  fixedBytes: number;
  heldBytes: number;
  rangeBytes: number;
  /**
   * The most one record batch may decompress to: a batch that large, read, held and built
   * alone, fills the room the fixed parts leave (`batchFactor`). A larger one waits (BatchTooLargeError).
   */
  batchBytes: number;
  builds: number;
  partitions: number;
}

/**
 * The split of `budgetBytes` for `demand`; ranges never exceed its `largestFileBytes`, so a
 * budget with room to spare is not split more finely than the tables need.
 */
export function planMemory(budgetBytes: number, demand: MemoryDemand, costs: MemoryCosts = measuredCosts): MemoryPlan | { problem: string; neededBytes: number } {
  const { partitions, builds, largestFileBytes } = demand;
  const deliveries = Math.min(Math.max(1, partitions), demand.deliveries);
  const fixedBytes = costs.baseBytes + deliveries * costs.perDeliveryBytes + Math.max(1, partitions) * costs.perPartitionBytes;
  const room = budgetBytes - fixedBytes;
  // room = hold × held + builds × build × range, with held at least 2 × range (two
  // ranges' worth while one is built): a range sealed by capacity leaves room for the next.
  const perRange = 2 * costs.holdFactor + builds * costs.buildFactor;
  const rangeBytes = Math.min(largestFileBytes, Math.floor(room / perRange));
  // Tables whose files are small anyway need no more than their file_bytes.
  const smallest = Math.min(costs.minRangeBytes, largestFileBytes);
  if (rangeBytes < smallest) {
    // Whole bytes, and one more: `run` without --memory plans again with exactly this
    // budget, and a fractional or float-rounded product would leave room / perRange a
    // hair below `smallest`, refusing the budget this message asks for.
    const needed = fixedBytes + Math.ceil(perRange * smallest) + 1;
    return {
      neededBytes: needed,
      problem: `--memory ${mib(budgetBytes)} is too small for ${partitions} partition(s) and ${builds} build(s) at once: the process needs about ${mib(costs.baseBytes)} + ${mib(costs.perDeliveryBytes)} per delivery in flight (${deliveries} at once) + ${mib(costs.perPartitionBytes)} per partition before any range, each range ${costs.holdFactor}× its bytes held and ${costs.buildFactor}× more while built; give at least ${mib(needed)} (or fewer --builds)`,
    };
  }
  const heldBytes = Math.floor((room - builds * costs.buildFactor * rangeBytes) / costs.holdFactor);
  const batchBytes = Math.floor(room / costs.batchFactor);
  return { budgetBytes, fixedBytes, heldBytes, rangeBytes, batchBytes, builds, partitions };
}

export function describePlan(plan: MemoryPlan): string {
  return `memory ${mib(plan.budgetBytes)}: ${mib(plan.fixedBytes)} for the process and ${plan.partitions} partition(s), ranges held ${mib(plan.heldBytes)} in all, one range at most ${mib(plan.rangeBytes)} (then sealed: capacity), ${plan.builds} build(s) at once, one record batch at most ${mib(plan.batchBytes)} decompressed`;
}

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(bytes < 10 * MiB ? 1 : 0)} MiB`;
}
