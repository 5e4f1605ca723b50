/**
 * A chain of executions: how both backfills (a table's, an index's) run longer than one
 * execution's history allows. Execution n + 1 of a chain is started by execution n's
 * ContinueAsNew, or by the scheduled check when no execution is working on the chain (the
 * last failed or timed out); either way under one name, derived from the chain and the
 * number, so whoever starts it starts one execution. Step Functions uses an execution
 * name once (a Standard workflow's name for 90 days): StartExecution with a name already
 * used succeeds while that execution runs with the same input, and fails with
 * ExecutionAlreadyExists otherwise: the name taken means the chain went on.
 *
 * The catalog keeps each chain's highest number that ran or was started (recorded once
 * StartExecution answered, so that an execution that dies before its first task is not
 * named again); this module names, starts and resumes, the catalog records.
 */

/** Step Functions' rule for execution names (the subset we use): 1–80 letters, digits, - and _. */
export const executionNamePattern = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * `<prefix>-<id>-<execution>`: the prefix (a table's name, or `index`) in letters, digits
 * and _, cut to fit 80 characters; the id and the number never are, so names stay distinct
 * (the prefix holds no '-', so '1-23' and '12-3' cannot meet).
 */
export function chainExecutionName(prefix: string, id: bigint | string, execution: number): string {
  const suffix = `-${id}-${execution}`;
  return `${prefix.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 80 - suffix.length)}${suffix}`;
}

/** An execution to start: its name and its input. */
export interface ExecutionStart<Input> {
  name: string;
  input: Input;
}

/**
 * `started`: StartExecution succeeded (a new execution, or the running one of that name and
 * input). `exists`: ExecutionAlreadyExists, an execution of that name was started before.
 */
export type StartOutcome = 'started' | 'exists';

/** StartExecution of a state machine (on AWS: the SDK, functions/retention; locally: a local execution). */
export type ExecutionStarter<Input> = (start: ExecutionStart<Input>) => Promise<StartOutcome>;

/** A chain that no execution is working on, as the catalog says: its highest number that ran or was started. */
export interface UnattendedChain {
  lastExecution: number;
}

export interface ResumedChain<Chain> {
  chain: Chain;
  /** The started execution's name. */
  execution: string;
  outcome: StartOutcome;
}

/**
 * The scheduled check's part: starts, for every chain no execution is working on, the
 * execution numbered one above its last, under the very name the last would have
 * continued as, and records the number. So the check never forks a live chain.
 */
export async function resumeChains<Chain extends UnattendedChain, Input>(
  chains: Chain[],
  startOf: (chain: Chain, execution: number) => ExecutionStart<Input>,
  start: ExecutionStarter<Input>,
  record: (chain: Chain, execution: number) => Promise<void>,
): Promise<ResumedChain<Chain>[]> {
  const resumed: ResumedChain<Chain>[] = [];
  for (const chain of chains) {
    const execution = chain.lastExecution + 1;
    const next = startOf(chain, execution);
    const outcome = await start(next);
    // Recorded after the start: a check that fails in between names the same execution next
    // time (and finds it); an execution that died before its first task is not named again.
    await record(chain, execution);
    resumed.push({ chain, execution: next.name, outcome });
  }
  return resumed;
}
