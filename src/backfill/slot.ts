/**
 * One step of a slot of the backfill state machine (src/backfill/definition.ts). An execution runs
 * a few slots at once (the Map's items, at most its concurrency); each slot loops over
 * steps, and each step:
 *   - if this very step ran before (its answer was lost and Step Functions retried it),
 *     reports the partition it ran, outcome `skipped`, and changes nothing;
 *   - else claims the next partition with work (the one of its last step first, then the
 *     free one with the lowest id), runs that partition's next chunk, and records the
 *     step in the chunk's commit (backfill_step);
 *   - reports `idle` when no partition with work is free: the slot's loop ends.
 * No cursor travels through the state machine: each chunk reads the partition's cursor
 * from the catalog and commits the next one there, under a claim fenced by its epoch.
 *
 * A slot keeps its claim between its steps (it stays on one partition and no other slot
 * takes it in between) and hands it back after the partition's last chunk, after the
 * slot's last step (so the next execution finds every partition free) and when a step
 * fails (its retry may come minutes later; the claim is free for others meanwhile). A
 * failed or timed-out execution's claims expire after the table's lease_ttl; the
 * scheduled check then resumes the backfill (src/backfill/resume.ts).
 */
import { backfillState, claimNextBackfill, lastSlotStep, releaseSlotClaims, type SlotStep } from '../catalog/backfill.js';
import type { Catalog } from '../catalog/db.js';
import { findTableById } from '../catalog/tables.js';
import type { KafkaConnection } from '../kafka/connect.js';
import { ChunkRequestError, ChunkRun, chunkResult, noWork, type ChunkOptions } from './chunk.js';
import type { ChunkResult } from './types.js';

export interface SlotStepRequest {
  /** lake_table.table_id, as a decimal string. */
  tableId: string;
  /** The execution's name: with `slot`, it names the owner of the slot's claims. */
  executionName: string;
  /** The slot's number in its execution (0, 1, …). */
  slot: number;
  /** The slot's steps before this one (0 for its first). */
  step: number;
  /** The slot's step budget: step budget − 1 is its last. */
  budget: number;
}

export interface SlotStepResult {
  /** No partition with work was free: the slot's loop ends. */
  idle: boolean;
  /** The chunk this step ran (a retried step: the partition its first attempt ran, outcome `skipped`); null when idle. */
  result: ChunkResult | null;
}

/** The owner of a slot's claims, and the key of its step records. */
export function slotOwner(executionName: string, slot: number): string {
  return `${executionName}/${slot}`;
}

function wholeField(request: Record<string, unknown>, name: string, min: number): number {
  const value = request[name];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new ChunkRequestError(`backfill slot step: ${name} must be a whole number ≥ ${min}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Checks a slot step request from the state machine and names what is wrong. */
export function parseSlotStepRequest(request: unknown): { tableId: bigint; executionName: string; slot: number; step: number; budget: number } {
  if (typeof request !== 'object' || request === null) {
    throw new ChunkRequestError(`backfill slot step: the request must be an object {tableId, executionName, slot, step, budget}, got ${JSON.stringify(request)}`);
  }
  const fields = request as Record<string, unknown>;
  const { tableId, executionName } = fields;
  if (typeof tableId !== 'string' || !/^\d{1,19}$/.test(tableId)) throw new ChunkRequestError(`backfill slot step: tableId must be a decimal string such as "42", got ${JSON.stringify(tableId)}`);
  if (typeof executionName !== 'string' || executionName === '') throw new ChunkRequestError(`backfill slot step: executionName must name the execution, got ${JSON.stringify(executionName)}`);
  return { tableId: BigInt(tableId), executionName, slot: wholeField(fields, 'slot', 0), step: wholeField(fields, 'step', 0), budget: wholeField(fields, 'budget', 1) };
}

/** Runs one step of a slot (see the module comment). */
export async function backfillSlotStep(catalog: Catalog, kafka: KafkaConnection, request: SlotStepRequest, options: ChunkOptions = {}): Promise<SlotStepResult> {
  const started = performance.now();
  const { tableId, executionName, slot, step, budget } = parseSlotStepRequest(request);
  const table = await findTableById(catalog, tableId);
  const ttlMs = options.claimTtlMs ?? table.settings.lease_ttl;
  const mark: SlotStep = { slot: slotOwner(executionName, slot), step };
  const last = step + 1 >= budget;

  const before = await lastSlotStep(catalog, tableId, mark.slot);
  let result: ChunkResult;
  if (before?.step === step) {
    result = chunkResult(table, await backfillState(catalog, tableId, before.partition), 'skipped', noWork, started);
  } else {
    const claimed = await claimNextBackfill(catalog, tableId, mark.slot, ttlMs, before?.partition);
    if (!claimed) return { idle: true, result: null };
    try {
      result = await new ChunkRun(catalog, table, claimed.claim, ttlMs, kafka, options, mark).run(claimed.state, undefined, started);
    } catch (error) {
      await releaseSlotClaims(catalog, tableId, mark.slot).catch(() => {});
      throw error;
    }
  }
  if (result.done || last) await releaseSlotClaims(catalog, tableId, mark.slot);
  return { idle: false, result };
}
