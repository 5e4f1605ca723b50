/**
 * `offsetlake backfill` locally: the backfill state machine's definition (definition.ts,
 * the JSON that deploys), executed by aws-local-stepfunctions as a chain of executions
 * (src/state-machines/local-chain.ts), its Task states mapped by name to the same task code
 * the Lambda runs (tasks.ts).
 */
import { localBackfillMachine, backfillStates } from './definition.js';
import { nextBackfillExecution, type BackfillStart } from './executions.js';
import type { BackfillPartition, BackfillRunner, BackfillSummary, ChunkResult } from './index.js';
import { toBackfillPartition } from './plan.js';
import type { BackfillStarter } from './resume.js';
import { chunkTask, planTask, type BackfillTaskDeps } from './tasks.js';
import { backfillStates as partitionStates } from '../catalog/backfill.js';
import { recordBackfillExecution } from '../catalog/backfill-executions.js';
import { findTable } from '../catalog/tables.js';
import { executionAlreadyExists, type LocalMachine } from '../state-machines/asl.js';
import { runLocalChain, type LocalChainOptions, type LocalTask } from '../state-machines/local-chain.js';
import { LocalExecutions } from '../state-machines/local-executions.js';

export interface LocalBackfillOptions extends Omit<LocalChainOptions<BackfillStart['input']>, 'waitTimeOverrides'> {
  /** The first execution's chunk budget (default: the plan's, 1,500). */
  chunksPerExecution?: number;
  /** Chunk options (claim TTL, build, history source) passed to the engine. */
  chunk?: BackfillTaskDeps['chunk'];
  /** The executions started so far (names are used once); default: one registry per process, as one account's. */
  executions?: LocalExecutions;
}

export interface LocalBackfillSummary extends BackfillSummary {
  /** Executions run: 1 + the continuations. */
  executions: number;
  /** Their names, in order. */
  executionNames: string[];
}

let machine: LocalMachine | undefined;
let processExecutions: LocalExecutions | undefined;

function backfillMachine(): LocalMachine {
  machine ??= localBackfillMachine();
  return machine;
}

/** The process's executions of the backfill machine (an account's, for names). */
export function localExecutions(): LocalExecutions {
  processExecutions ??= new LocalExecutions(backfillMachine().stateMachineArn);
  return processExecutions;
}

/**
 * Runs the backfill state machine for one table until no execution continues: the first
 * execution is the table's next (named as the scheduled check names it).
 */
export async function runBackfillStateMachine(
  engine: BackfillRunner,
  tableName: string,
  progress: (chunk: ChunkResult) => void = () => {},
  options: LocalBackfillOptions = {},
): Promise<LocalBackfillSummary> {
  const { tableId, execution, ...first } = await nextBackfillExecution(engine.catalog, tableName, options.chunksPerExecution);
  const executions = options.executions ?? localExecutions();
  executions.start(first.name, first.input);
  await recordBackfillExecution(engine.catalog, tableId, execution);
  return runChain(engine, first, progress, { ...options, executions });
}

/**
 * The scheduled check's StartExecution, locally. A name already used is answered
 * `exists` (ExecutionAlreadyExists) unless it is running with the same input, as Step
 * Functions answers it; a new one is recorded as started, and `onStarted`
 * gets the function that runs it (and the chain that continues it): the caller decides
 * when the started execution makes progress, e.g. at once, or after another execution's step.
 */
export function localBackfillStarter(
  engine: BackfillRunner,
  onStarted: (start: BackfillStart, run: () => Promise<LocalBackfillSummary>) => void,
  options: LocalBackfillOptions & { progress?: (chunk: ChunkResult) => void } = {},
): BackfillStarter {
  return async (start) => {
    const executions = options.executions ?? localExecutions();
    let started: boolean;
    try {
      // Not started: the running execution of this name and input is the answer (Step Functions returns it).
      ({ started } = executions.start(start.name, start.input));
    } catch (error) {
      if ((error as { name?: unknown }).name === executionAlreadyExists) return 'exists';
      throw error;
    }
    if (started) onStarted(start, () => runChain(engine, start, options.progress ?? (() => {}), { ...options, executions }));
    return 'started';
  };
}

async function runChain(
  engine: BackfillRunner,
  first: BackfillStart,
  progress: (chunk: ChunkResult) => void,
  options: LocalBackfillOptions & { executions: LocalExecutions },
): Promise<LocalBackfillSummary> {
  const started = performance.now();
  const deps: BackfillTaskDeps = { catalog: engine.catalog, kafka: engine.kafka, ...(options.chunk ? { chunk: options.chunk } : {}) };
  const summary: LocalBackfillSummary = { table: first.input.table, partitions: [], chunks: 0, records: 0, bytes: 0, files: 0, elapsedMs: 0, executions: 0, executionNames: [] };
  const plan: LocalTask = (payload) => planTask(deps, payload);
  const names = await runLocalChain(backfillMachine(), options.executions, first, {
    [backfillStates.plan]: plan,
    [backfillStates.replan]: plan,
    [backfillStates.chunk]: async (payload) => {
      const step = await chunkTask(deps, payload);
      if (step.result) {
        summary.chunks += 1;
        summary.records += step.result.records;
        summary.bytes += step.result.bytes;
        summary.files += step.result.files;
        progress(step.result);
      }
      return step;
    },
  }, {
    ...(options.onExecution ? { onExecution: options.onExecution } : {}),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    ...(options.afterTask ? { afterTask: options.afterTask } : {}),
    ...(options.retryIntervalOverrides ? { retryIntervalOverrides: options.retryIntervalOverrides } : {}),
  });
  summary.executions = names.length;
  summary.executionNames = names;
  const table = await findTable(engine.catalog, first.input.table);
  summary.partitions = (await partitionStates(engine.catalog, table.tableId)).map((state) => toBackfillPartition(table, state)) satisfies BackfillPartition[];
  summary.elapsedMs = Math.round(performance.now() - started);
  return summary;
}
