/**
 * How many backfill steps one state machine execution may run, and over how many slots
 * at once. An execution holds at most 25,000 history events and writes at most
 * 30 + 9 × chunksPerExecution + 4 × slots of them (src/backfill/definition.ts has the count;
 * test/unit/backfill-history.test.ts counts them): 13,570 for the default 1,500 steps
 * over 10 slots, 16,270 for the maximum 1,800 (16,390 over 40 slots), leaving room for
 * retries (3 events each).
 */
export const defaultChunksPerExecution = 1_500;
export const maxChunksPerExecution = 1_800;

/** Slots (the Map's concurrency): chunks of different partitions that run at once. An inline Map runs at most 40 iterations at once. */
export const defaultSlots = 10;
export const maxSlots = 40;
