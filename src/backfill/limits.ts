/**
 * How many backfill chunks one state machine execution may run. An execution holds at
 * most 25,000 history events and writes ≤ 30 + 13 × chunksPerExecution of them
 * (infra/backfill.ts has the count; test/unit/backfill-history.test.ts counts them):
 * 19,530 for the default 1,500, leaving room for retries; 23,430 for the maximum 1,800.
 */
export const defaultChunksPerExecution = 1_500;
export const maxChunksPerExecution = 1_800;
