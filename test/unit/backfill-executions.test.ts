/**
 * Backfill execution names follow Step Functions' rules and are the same for whoever
 * starts an execution; the scheduled check's StartExecution takes a name already used as
 * an answer; locally, a name is used once, as in a Standard workflow.
 */
import { describe, expect, it } from 'vitest';
import { backfillExecutionName } from '../../src/backfill/executions.js';
import { executionNamePattern } from '../../src/state-machines/chain.js';
import { stepFunctionsStarter, type StartExecutionRequest } from '../../functions/retention/index.js';
import { LocalExecutions } from '../../src/state-machines/local-executions.js';
import { localBackfillStarter } from '../../src/backfill/local-execution.js';
import type { BackfillRunner } from '../../src/backfill/index.js';

describe('backfill execution names', () => {
  it('<table>-<table id>-<number>: 1–80 letters, digits, - and _, the same every time', () => {
    expect(backfillExecutionName('orders', 7n, 3)).toBe('orders-7-3');
    expect(backfillExecutionName('orders', '7', 3)).toBe(backfillExecutionName('orders', 7n, 3));
    // The longest table name (63), the largest table id and execution number still fit.
    const longest = backfillExecutionName('t'.repeat(63), 9_223_372_036_854_775_807n, Number.MAX_SAFE_INTEGER);
    expect(longest).toMatch(executionNamePattern);
    expect(longest.length).toBe(80);
    expect(longest.endsWith('-9223372036854775807-9007199254740991')).toBe(true);
    for (const table of ['a', '_x', 'orders_2026', 'x'.repeat(63)]) expect(backfillExecutionName(table, 1n, 1)).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
  });

  it('distinct for every table id and number, even where the table name is cut', () => {
    const cut = 'n'.repeat(63);
    const names = new Set<string>();
    for (const tableId of [1n, 12n, 123n, 9_223_372_036_854_775_807n]) {
      for (const execution of [1, 2, 12, 123, Number.MAX_SAFE_INTEGER]) names.add(backfillExecutionName(cut, tableId, execution));
    }
    expect(names.size).toBe(20);
    // '1-23' and '12-3' cannot meet: the table part never holds a '-'.
    expect(backfillExecutionName('t', 1n, 23)).not.toBe(backfillExecutionName('t', 12n, 3));
  });
});

describe('StartExecution of a backfill execution', () => {
  const arn = 'arn:aws:states:eu-west-1:123456789012:stateMachine:Lake-backfill';

  it('the scheduled check sends the name and input; ExecutionAlreadyExists is `exists`, any other error fails the check', async () => {
    const sent: StartExecutionRequest[] = [];
    const taken = new Set(['orders-7-2']);
    const start = stepFunctionsStarter(async (request) => {
      sent.push(request);
      if (taken.has(request.name)) throw Object.assign(new Error('Execution Already Exists'), { name: 'ExecutionAlreadyExists' });
      if (request.name === 'throttled-1-1') throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      return { executionArn: `${arn}:${request.name}` };
    }, arn);
    expect(await start({ name: 'orders-7-3', input: { table: 'orders', execution: 3 } })).toBe('started');
    expect(await start({ name: 'orders-7-2', input: { table: 'orders', execution: 2 } })).toBe('exists');
    await expect(start({ name: 'throttled-1-1', input: { table: 'throttled', execution: 1 } })).rejects.toThrow('Rate exceeded');
    expect(sent[0]).toEqual({ stateMachineArn: arn, name: 'orders-7-3', input: '{"table":"orders","execution":3}' });
  });

  it('locally, as in a Standard workflow: the same name and input while it runs is that execution; any other reuse is ExecutionAlreadyExists', () => {
    const executions = new LocalExecutions(arn);
    const input = { table: 'orders', execution: 2 };
    expect(executions.start('orders-7-2', input)).toEqual({ executionArn: 'arn:aws:states:eu-west-1:123456789012:execution:Lake-backfill:orders-7-2', started: true });
    expect(executions.start('orders-7-2', { ...input })).toEqual({ executionArn: 'arn:aws:states:eu-west-1:123456789012:execution:Lake-backfill:orders-7-2', started: false });
    const alreadyExists = expect.objectContaining({ name: 'StepFunctions.ExecutionAlreadyExistsException' });
    expect(() => executions.start('orders-7-2', { ...input, chunksPerExecution: 4 })).toThrow(alreadyExists);
    executions.close('orders-7-2');
    expect(() => executions.start('orders-7-2', input)).toThrow(alreadyExists);
    expect(() => executions.start('orders 7/2', input)).toThrow(expect.objectContaining({ name: 'StepFunctions.InvalidNameException' }));
  });

  it('the scheduled check\'s local StartExecution answers as the AWS one: started (new, or running with the same input) or exists', async () => {
    const executions = new LocalExecutions(arn);
    const runs: string[] = [];
    // No execution runs here (the test runs none of them), so no engine is needed.
    const start = localBackfillStarter({} as BackfillRunner, (started) => runs.push(started.name), { executions });
    const input = { table: 'orders', execution: 2 };
    expect(await start({ name: 'orders-7-2', input })).toBe('started');
    expect(await start({ name: 'orders-7-2', input })).toBe('started');
    expect(await start({ name: 'orders-7-2', input: { ...input, chunksPerExecution: 4 } })).toBe('exists');
    executions.close('orders-7-2');
    expect(await start({ name: 'orders-7-2', input })).toBe('exists');
    expect(runs).toEqual(['orders-7-2']);
  });
});
