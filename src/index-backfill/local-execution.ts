/**
 * The index backfill state machine's definition (definition.ts, the JSON that deploys),
 * executed locally by aws-local-stepfunctions as a chain of executions
 * (src/state-machines/local-chain.ts): its Step state runs the Lambda's task code (tasks.ts).
 */
import { indexBackfillStates, localIndexBackfillMachine } from './definition.js';
import { indexBackfillStart, indexBackfillTask, type IndexBackfillStart, type IndexBackfillTaskDeps, type IndexBackfillTaskResult } from './tasks.js';
import type { LocalMachine } from '../state-machines/asl.js';
import { runLocalChain, type LocalChainOptions } from '../state-machines/local-chain.js';
import { LocalExecutions } from '../state-machines/local-executions.js';

export interface LocalIndexBackfillOptions extends Pick<LocalChainOptions<IndexBackfillStart['input']>, 'retryIntervalOverrides' | 'waitTimeOverrides'> {
  /** The first execution's step budget (default 1,500). */
  stepsPerExecution?: number;
  /** The first execution (default: the index's execution 1), e.g. the one the scheduled check started. */
  start?: IndexBackfillStart;
  /** Every step's event and result. */
  onStep?: (event: unknown, result: IndexBackfillTaskResult) => void;
  /** Runs after a step's work, before its answer: an error it throws is the task's error, as when Lambda's answer is lost (the Retry runs the step again). */
  afterStep?: (event: unknown, result: IndexBackfillTaskResult) => void | Promise<void>;
  executions?: LocalExecutions;
}

export interface LocalIndexBackfillSummary {
  executionNames: string[];
  steps: number;
}

let machine: LocalMachine | undefined;

function indexBackfillMachine(): LocalMachine {
  machine ??= localIndexBackfillMachine();
  return machine;
}

/** Runs the machine for one index from its first execution (or `start`) until no execution continues. */
export async function runIndexBackfillStateMachine(deps: IndexBackfillTaskDeps, indexId: bigint, options: LocalIndexBackfillOptions = {}): Promise<LocalIndexBackfillSummary> {
  const executions = options.executions ?? new LocalExecutions(indexBackfillMachine().stateMachineArn);
  const first = options.start ?? indexBackfillStart(indexId, 1, options.stepsPerExecution);
  executions.start(first.name, first.input);
  let steps = 0;
  const executionNames = await runLocalChain(indexBackfillMachine(), executions, first, {
    [indexBackfillStates.step]: async (event) => {
      const result = await indexBackfillTask(deps, event);
      steps += 1;
      options.onStep?.(event, result);
      return result;
    },
  }, {
    ...(options.afterStep ? { afterTask: (state: string, event: unknown, result: unknown) => (state === indexBackfillStates.step ? options.afterStep!(event, result as IndexBackfillTaskResult) : undefined) } : {}),
    ...(options.retryIntervalOverrides ? { retryIntervalOverrides: options.retryIntervalOverrides } : {}),
    ...(options.waitTimeOverrides ? { waitTimeOverrides: options.waitTimeOverrides } : {}),
  });
  return { executionNames, steps };
}
