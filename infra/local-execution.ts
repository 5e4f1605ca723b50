/**
 * `offsetlake backfill` locally: the backfill state machine that CDK synthesizes
 * (infra/definition.ts), executed by aws-local-stepfunctions, its Task states mapped by
 * name to the same task code the Lambda runs (src/backfill/tasks.ts), and its
 * ContinueAsNew (StartExecution of itself, by name) turned into the next local execution
 * with the name and input it gives, under Step Functions' naming rules (LocalExecutions).
 */
import { StateMachine } from 'aws-local-stepfunctions';
import { synthesizeBackfillDefinition, type SynthesizedBackfill } from './definition.js';
import { backfillStates, executionAlreadyExists } from './backfill.js';
import { LocalExecutions } from './local-executions.js';
import type { BackfillPartition, BackfillRunner, BackfillSummary, ChunkResult } from '../src/backfill/index.js';
import { nextBackfillExecution, type BackfillStart } from '../src/backfill/executions.js';
import { toBackfillPartition } from '../src/backfill/plan.js';
import type { BackfillStarter } from '../src/backfill/resume.js';
import { chunkTask, planTask, type BackfillTaskDeps } from '../src/backfill/tasks.js';
import { backfillStates as partitionStates } from '../src/catalog/backfill.js';
import { recordBackfillExecution } from '../src/catalog/backfill-executions.js';
import { findTable } from '../src/catalog/tables.js';

/** One event of a local execution: a state entered or exited (with its input and output), a Map iteration, … (the library does not export the type). */
export type LocalExecutionEvent = ReturnType<StateMachine['run']>['eventLogs'] extends AsyncIterable<infer E> ? E : never;

export interface LocalBackfillOptions {
  /** The first execution's chunk budget (default: the plan's, 1,500). */
  chunksPerExecution?: number;
  /** Chunk options (claim TTL, build, history source) passed to the engine. */
  chunk?: BackfillTaskDeps['chunk'];
  /** Called when an execution starts (1 for the first of this run), with its input and name. */
  onExecution?: (execution: number, input: unknown, name: string) => void;
  /** Every event of every execution (states entered and exited, with their input and output). */
  onEvent?: (event: LocalExecutionEvent, executionName: string) => void;
  /**
   * Called after every Lambda task ran, with its state's name, the payload it was invoked
   * with and what it returned. An error it throws is the task's error, as when Lambda's
   * answer is lost after the work was done (the state's Retry then runs the task again).
   */
  afterTask?: (state: string, payload: unknown, result: unknown) => void | Promise<void>;
  /** Milliseconds before a state's retry, by state name, instead of the definition's intervals. */
  retryIntervalOverrides?: Record<string, number>;
  /** The executions started so far (names are used once); default: one registry per process, as one account's. */
  executions?: LocalExecutions;
}

export interface LocalBackfillSummary extends BackfillSummary {
  /** Executions run: 1 + the continuations. */
  executions: number;
  /** Their names, in order. */
  executionNames: string[];
}

let synthesized: SynthesizedBackfill | undefined;
let processExecutions: LocalExecutions | undefined;

/** The definition, synthesized once per process (a synthesis takes seconds; the definition does not change). */
function backfillDefinition(): SynthesizedBackfill {
  synthesized ??= synthesizeBackfillDefinition();
  return synthesized;
}

/** The process's executions of the backfill machine (an account's, for names). */
export function localExecutions(): LocalExecutions {
  processExecutions ??= new LocalExecutions(backfillDefinition().stateMachineArn);
  return processExecutions;
}

/**
 * Runs the synthesized backfill state machine for one table until no execution continues:
 * the first execution is the table's next (named as the scheduled check names it).
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
  const { definition, stateMachineArn, stateMachineName } = backfillDefinition();
  const machine = new StateMachine(definition as never, { validationOptions: { checkPaths: true, checkArn: true } });
  const deps: BackfillTaskDeps = { catalog: engine.catalog, kafka: engine.kafka, ...(options.chunk ? { chunk: options.chunk } : {}) };
  const summary: LocalBackfillSummary = { table: first.input.table, partitions: [], chunks: 0, records: 0, bytes: 0, files: 0, elapsedMs: 0, executions: 0, executionNames: [] };
  const { executions } = options;
  // The library types task payloads and results as JSON values; ours are plain JSON objects.
  const task = (state: string, run: (event: unknown) => Promise<unknown>) => async (event: unknown): Promise<never> => {
    const result = await run(event);
    await options.afterTask?.(state, event, result);
    return result as never;
  };

  let next: BackfillStart | undefined = first;
  while (next) {
    const { name, input } = next;
    summary.executions += 1;
    summary.executionNames.push(name);
    options.onExecution?.(summary.executions, input, name);
    let continued: BackfillStart | undefined;
    const plan = (event: unknown) => planTask(deps, event);
    const execution = machine.run(input as never, {
      overrides: {
        taskResourceLocalHandlers: {
          [backfillStates.plan]: task(backfillStates.plan, plan),
          [backfillStates.replan]: task(backfillStates.replan, plan),
          [backfillStates.chunk]: task(backfillStates.chunk, async (event) => {
            const step = await chunkTask(deps, event);
            if (step.result) {
              summary.chunks += 1;
              summary.records += step.result.records;
              summary.bytes += step.result.bytes;
              summary.files += step.result.files;
              progress(step.result);
            }
            return step;
          }),
          [backfillStates.continueAsNew]: task(backfillStates.continueAsNew, async (event) => {
            const request = event as { StateMachineArn?: unknown; Name?: unknown; Input?: BackfillStart['input'] };
            if (request.StateMachineArn !== stateMachineArn) {
              throw new Error(`ContinueAsNew names ${String(request.StateMachineArn)}, not this state machine (${stateMachineArn})`);
            }
            const { executionArn, started: isNew } = executions.start(String(request.Name), request.Input);
            if (isNew) continued = { name: String(request.Name), input: request.Input! };
            return { ExecutionArn: executionArn, StartDate: new Date().toISOString() };
          }),
        },
        ...(options.retryIntervalOverrides ? { retryIntervalOverrides: options.retryIntervalOverrides } : {}),
      },
      context: {
        Execution: { Id: executions.arnOf(name), Name: name, Input: input as never, StartTime: new Date().toISOString() },
        StateMachine: { Id: stateMachineArn, Name: stateMachineName },
      },
    });
    const observed = options.onEvent ? observe(execution.eventLogs, (event) => options.onEvent!(event, name)) : Promise.resolve();
    try {
      await execution.result;
    } finally {
      executions.close(name);
      await observed;
    }
    next = continued;
  }
  const table = await findTable(engine.catalog, first.input.table);
  summary.partitions = (await partitionStates(engine.catalog, table.tableId)).map((state) => toBackfillPartition(table, state)) satisfies BackfillPartition[];
  summary.elapsedMs = Math.round(performance.now() - started);
  return summary;
}

async function observe(events: AsyncIterable<LocalExecutionEvent>, each: (event: LocalExecutionEvent) => void): Promise<void> {
  for await (const event of events) each(event);
}
