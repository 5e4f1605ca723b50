/**
 * Step Functions' execution names, as far as local runs of the state machines need them
 * (StartExecution, from ContinueAsNew or from the scheduled check): a name must be 1–80
 * letters, digits, - and _, and is used once. StartExecution with the name of a running
 * execution and the same input returns that execution; any other reuse of a name fails
 * with ExecutionAlreadyExists, as a Standard workflow's StartExecution does.
 */
import { executionAlreadyExists } from './asl.js';
import { executionNamePattern } from './chain.js';

export class LocalExecutions {
  private readonly byName = new Map<string, { input: string; running: boolean }>();

  constructor(private readonly stateMachineArn: string) {}

  arnOf(name: string): string {
    return `${this.stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
  }

  /**
   * Starts (records) an execution. `started` is false when a running execution of that
   * name and input is returned instead. Throws an error named as the service integration
   * names it (StepFunctions.ExecutionAlreadyExistsException) when the name is taken.
   */
  start(name: string, input: unknown): { executionArn: string; started: boolean } {
    if (!executionNamePattern.test(name)) {
      throw Object.assign(new Error(`Invalid Name: '${name}'`), { name: 'StepFunctions.InvalidNameException' });
    }
    const text = JSON.stringify(input);
    const known = this.byName.get(name);
    if (known?.running && known.input === text) return { executionArn: this.arnOf(name), started: false };
    if (known) throw Object.assign(new Error(`Execution Already Exists: '${this.arnOf(name)}'`), { name: executionAlreadyExists });
    this.byName.set(name, { input: text, running: true });
    return { executionArn: this.arnOf(name), started: true };
  }

  /** The execution ended (succeeded or failed): its name stays taken. */
  close(name: string): void {
    const known = this.byName.get(name);
    if (known) known.running = false;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }
}
