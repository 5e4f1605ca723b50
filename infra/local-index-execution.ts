/**
 * The index backfill state machine that CDK synthesizes (infra/index-backfill.ts),
 * executed locally by aws-local-stepfunctions: its Step state runs the Lambda's task code
 * (src/index-backfill/tasks.ts), its ContinueAsNew (StartExecution of itself, by name)
 * becomes the next local execution, under Step Functions' naming rules (LocalExecutions).
 */
import { StateMachine } from 'aws-local-stepfunctions';
import { synthesizeIndexBackfillDefinition, type SynthesizedBackfill } from './definition.js';
import { indexBackfillStates } from './index-backfill.js';
import { LocalExecutions } from './local-executions.js';
import { indexBackfillStart, indexBackfillTask, type IndexBackfillExecutionInput, type IndexBackfillStart, type IndexBackfillTaskDeps, type IndexBackfillTaskResult } from '../src/index-backfill/tasks.js';

export interface LocalIndexBackfillOptions {
  /** The first execution's step budget (default 1,500). */
  stepsPerExecution?: number;
  /** The first execution (default: the index's execution 1), e.g. the one the scheduled check started. */
  start?: IndexBackfillStart;
  /** Every step's event and result. */
  onStep?: (event: unknown, result: IndexBackfillTaskResult) => void;
  /** Runs after a step's work, before its answer: an error it throws is the task's error, as when Lambda's answer is lost (the Retry runs the step again). */
  afterStep?: (event: unknown, result: IndexBackfillTaskResult) => void | Promise<void>;
  /** Milliseconds before a state's retry or a Wait, by state name, instead of the definition's. */
  retryIntervalOverrides?: Record<string, number>;
  waitTimeOverrides?: Record<string, number>;
  executions?: LocalExecutions;
}

export interface LocalIndexBackfillSummary {
  executionNames: string[];
  steps: number;
}

let synthesized: SynthesizedBackfill | undefined;

function definition(): SynthesizedBackfill {
  synthesized ??= synthesizeIndexBackfillDefinition();
  return synthesized;
}

/** Runs the machine for one index from its first execution (or `start`) until no execution continues. */
export async function runIndexBackfillStateMachine(deps: IndexBackfillTaskDeps, indexId: bigint, options: LocalIndexBackfillOptions = {}): Promise<LocalIndexBackfillSummary> {
  const { definition: asl, stateMachineArn, stateMachineName } = definition();
  const executions = options.executions ?? new LocalExecutions(stateMachineArn);
  const machine = new StateMachine(asl as never, { validationOptions: { checkPaths: true, checkArn: true } });
  const summary: LocalIndexBackfillSummary = { executionNames: [], steps: 0 };
  const first = options.start ?? indexBackfillStart(indexId, 1, options.stepsPerExecution);
  executions.start(first.name, first.input);
  let next: IndexBackfillStart | undefined = first;
  while (next) {
    const { name, input } = next;
    summary.executionNames.push(name);
    let continued: IndexBackfillStart | undefined;
    const execution = machine.run(input as never, {
      overrides: {
        taskResourceLocalHandlers: {
          [indexBackfillStates.step]: async (event: unknown): Promise<never> => {
            const result = await indexBackfillTask(deps, event);
            summary.steps += 1;
            options.onStep?.(event, result);
            await options.afterStep?.(event, result);
            return result as never;
          },
          [indexBackfillStates.continueAsNew]: async (event: unknown): Promise<never> => {
            const request = event as { StateMachineArn?: unknown; Name?: unknown; Input?: IndexBackfillExecutionInput };
            if (request.StateMachineArn !== stateMachineArn) throw new Error(`ContinueAsNew names ${String(request.StateMachineArn)}, not this state machine (${stateMachineArn})`);
            const started = executions.start(String(request.Name), request.Input);
            if (started.started) continued = { name: String(request.Name), input: request.Input! };
            return { ExecutionArn: started.executionArn, StartDate: new Date().toISOString() } as never;
          },
        },
        ...(options.retryIntervalOverrides ? { retryIntervalOverrides: options.retryIntervalOverrides } : {}),
        ...(options.waitTimeOverrides ? { waitTimeOverrides: options.waitTimeOverrides } : {}),
      },
      context: {
        Execution: { Id: executions.arnOf(name), Name: name, Input: input as never, StartTime: new Date().toISOString() },
        StateMachine: { Id: stateMachineArn, Name: stateMachineName },
      },
    });
    try {
      await execution.result;
    } finally {
      executions.close(name);
    }
    next = continued;
  }
  return summary;
}
