/**
 * `offsetlake backfill` locally: the backfill state machine that CDK synthesizes
 * (infra/definition.ts), executed by aws-local-stepfunctions, its Task states mapped by
 * name to the same task code the Lambda runs (src/backfill/tasks.ts), and
 * its ContinueAsNew (StartExecution of itself) turned into the next local execution with
 * the input it names, as Step Functions would start it.
 */
import { StateMachine } from 'aws-local-stepfunctions';
import { synthesizeBackfillDefinition, type SynthesizedBackfill } from './definition.js';
import { backfillStates } from './backfill.js';
import type { BackfillPartition, BackfillRunner, BackfillSummary, ChunkResult } from '../src/backfill/index.js';
import { chunkTask, planTask, type BackfillTaskDeps } from '../src/backfill/tasks.js';

export interface LocalBackfillOptions {
  /** The execution input's chunk budget (default: the plan's, 1,500). */
  chunksPerExecution?: number;
  /** Chunk options (owner, claim TTL) passed to the engine. */
  chunk?: BackfillTaskDeps['chunk'];
  /** Called when a new execution starts (1 for the first). */
  onExecution?: (execution: number, input: unknown) => void;
}

export interface LocalBackfillSummary extends BackfillSummary {
  /** Executions run: 1 + the continuations. */
  executions: number;
}

let synthesized: SynthesizedBackfill | undefined;

/** The definition, synthesized once per process (a synthesis takes seconds; the definition does not change). */
function backfillDefinition(): SynthesizedBackfill {
  synthesized ??= synthesizeBackfillDefinition();
  return synthesized;
}

/** Runs the synthesized backfill state machine for one table until no execution continues. */
export async function runBackfillStateMachine(
  engine: BackfillRunner,
  tableName: string,
  progress: (chunk: ChunkResult) => void = () => {},
  options: LocalBackfillOptions = {},
): Promise<LocalBackfillSummary> {
  const started = performance.now();
  const { definition, stateMachineArn, stateMachineName } = backfillDefinition();
  const machine = new StateMachine(definition as never, { validationOptions: { checkPaths: true, checkArn: true } });
  const deps: BackfillTaskDeps = { catalog: engine.catalog, kafka: engine.kafka, ...(options.chunk ? { chunk: options.chunk } : {}) };
  const summary: LocalBackfillSummary = { table: tableName, partitions: [], chunks: 0, records: 0, bytes: 0, files: 0, elapsedMs: 0, executions: 0 };
  const latest = new Map<string, BackfillPartition>();
  const keep = (partition: BackfillPartition): void => {
    latest.set(`${partition.tableId}/${partition.partition}`, partition);
  };

  let input: Record<string, unknown> | undefined = { table: tableName, ...(options.chunksPerExecution !== undefined ? { chunksPerExecution: options.chunksPerExecution } : {}) };
  while (input) {
    summary.executions += 1;
    const executionName = `local-${Date.now()}-${summary.executions}`;
    options.onExecution?.(summary.executions, input);
    let next: Record<string, unknown> | undefined;
    // The library types task results as JSON values; ours are plain JSON objects.
    const plan = async (event: unknown): Promise<never> => {
      const state = await planTask(deps, event);
      state.partitions.forEach(keep);
      return state as never;
    };
    const execution = machine.run(input as never, {
      overrides: {
        taskResourceLocalHandlers: {
          [backfillStates.plan]: plan,
          [backfillStates.replan]: plan,
          [backfillStates.chunk]: async (event: unknown): Promise<never> => {
            const result = await chunkTask(deps, event);
            summary.chunks += 1;
            summary.records += result.records;
            summary.bytes += result.bytes;
            summary.files += result.files;
            keep(result);
            progress(result);
            return result as never;
          },
          [backfillStates.continueAsNew]: async (event: unknown): Promise<never> => {
            const request = event as { StateMachineArn?: unknown; Input?: Record<string, unknown> };
            if (request.StateMachineArn !== stateMachineArn) {
              throw new Error(`ContinueAsNew names ${String(request.StateMachineArn)}, not this state machine (${stateMachineArn})`);
            }
            next = request.Input;
            return { ExecutionArn: `arn:aws:states:us-east-1:000000000000:execution:${stateMachineName}:local-${summary.executions + 1}`, StartDate: new Date().toISOString() } as never;
          },
        },
      },
      context: {
        Execution: { Id: `arn:aws:states:us-east-1:000000000000:execution:${stateMachineName}:${executionName}`, Name: executionName, Input: input as never, StartTime: new Date().toISOString() },
        StateMachine: { Id: stateMachineArn, Name: stateMachineName },
      },
    });
    await execution.result;
    input = next;
  }
  summary.partitions = [...latest.values()].sort((a, b) => a.partition - b.partition);
  summary.elapsedMs = Math.round(performance.now() - started);
  return summary;
}
