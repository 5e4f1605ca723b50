/**
 * A chain of local executions of one state machine definition, run by
 * aws-local-stepfunctions: every Task state overridden by name with a local handler (the
 * same task code the Lambda runs), and the ContinueAsNew state (StartExecution of this
 * machine, by name) turned into the next local execution with the name and input it gives,
 * under Step Functions' naming rules (LocalExecutions). The chain ends with the first
 * execution that does not continue.
 */
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { continueAsNewState, type LocalMachine } from './asl.js';
import type { ExecutionStart } from './chain.js';
import type { LocalExecutions } from './local-executions.js';

/** One event of a local execution: a state entered or exited (with its input and output), a Map iteration, … (the library does not export the type). */
export type LocalExecutionEvent = ReturnType<StateMachine['run']>['eventLogs'] extends AsyncIterable<infer E> ? E : never;

/** A Task state's local stand-in: the payload its Parameters built in, the task's result out. */
export type LocalTask = (payload: unknown) => Promise<unknown>;

export interface LocalChainOptions<Input> {
  /** Called when an execution starts (1 for the first of this chain), with its input and name. */
  onExecution?: (execution: number, input: Input, name: string) => void;
  /** Every event of every execution (states entered and exited, with their input and output). */
  onEvent?: (event: LocalExecutionEvent, executionName: string) => void;
  /**
   * Called after every Task state's handler ran (ContinueAsNew's included), with the
   * state's name, the payload and the result. An error it throws is the task's error, as
   * when Lambda's (or StartExecution's) answer is lost after the work was done: the
   * state's Retry then runs the task again.
   */
  afterTask?: (state: string, payload: unknown, result: unknown) => void | Promise<void>;
  /** Milliseconds before a state's retry, by state name, instead of the definition's intervals. */
  retryIntervalOverrides?: Record<string, number>;
  /** Milliseconds a Wait state waits, by state name, instead of the definition's. */
  waitTimeOverrides?: Record<string, number>;
}

/**
 * Runs `first` (already started in `executions`) and every execution it continues as.
 * `tasks` maps each Task state but ContinueAsNew to its handler. Returns the executions'
 * names, in order.
 */
export async function runLocalChain<Input>(
  machine: LocalMachine,
  executions: LocalExecutions,
  first: ExecutionStart<Input>,
  tasks: Record<string, LocalTask>,
  options: LocalChainOptions<Input> = {},
): Promise<string[]> {
  const { stateMachineArn, stateMachineName } = machine;
  // The library's types lack fields it runs (a Map's ItemProcessor.ProcessorConfig).
  const local = new StateMachine(machine.definition as unknown as StateMachineDefinition, { validationOptions: { checkPaths: true, checkArn: true } });
  const names: string[] = [];
  let next: ExecutionStart<Input> | undefined = first;
  while (next) {
    const { name, input } = next;
    names.push(name);
    options.onExecution?.(names.length, input, name);
    let continued: ExecutionStart<Input> | undefined;
    const continueAsNew: LocalTask = async (payload) => {
      const request = payload as { StateMachineArn?: unknown; Name?: unknown; Input?: Input };
      if (request.StateMachineArn !== stateMachineArn) {
        throw new Error(`ContinueAsNew names ${String(request.StateMachineArn)}, not this state machine (${stateMachineArn})`);
      }
      const { executionArn, started } = executions.start(String(request.Name), request.Input);
      if (started) continued = { name: String(request.Name), input: request.Input! };
      return { ExecutionArn: executionArn, StartDate: new Date().toISOString() };
    };
    const afterTask = options.afterTask;
    const handlers = Object.fromEntries(Object.entries({ ...tasks, [continueAsNewState]: continueAsNew }).map(([state, task]) => {
      const handler = async (payload: unknown): Promise<never> => {
        const result = await task(payload);
        await afterTask?.(state, payload, result);
        // The library types task results as JSON values; ours are plain JSON objects.
        return result as never;
      };
      return [state, handler];
    }));
    const execution = local.run(input as never, {
      overrides: {
        taskResourceLocalHandlers: handlers,
        ...(options.retryIntervalOverrides ? { retryIntervalOverrides: options.retryIntervalOverrides } : {}),
        ...(options.waitTimeOverrides ? { waitTimeOverrides: options.waitTimeOverrides } : {}),
      },
      context: {
        Execution: { Id: executions.arnOf(name), Name: name, Input: input as never, StartTime: new Date().toISOString() },
        StateMachine: { Id: stateMachineArn, Name: stateMachineName },
      },
    });
    const onEvent = options.onEvent;
    const observed = onEvent ? observe(execution.eventLogs, (event) => onEvent(event, name)) : Promise.resolve();
    try {
      await execution.result;
    } finally {
      executions.close(name);
      await observed;
    }
    next = continued;
  }
  return names;
}

async function observe(events: AsyncIterable<LocalExecutionEvent>, each: (event: LocalExecutionEvent) => void): Promise<void> {
  for await (const event of events) each(event);
}
