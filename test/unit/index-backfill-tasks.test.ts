import { describe, expect, it } from 'vitest';
import { indexBackfillExecutionName, indexBackfillStart, maxStepsPerExecution, parseStepRequest } from '../../src/index-backfill/tasks.js';

describe('the index backfill state machine\'s task contract', () => {
  it('names execution n of index i index-i-n, its input carrying the number and the step budget (1,500 by default, at most 2,000)', () => {
    expect(indexBackfillExecutionName(42n, 7)).toBe('index-42-7');
    expect(indexBackfillStart(42n)).toEqual({ name: 'index-42-1', input: { indexId: '42', execution: 1, stepsPerExecution: 1500 } });
    expect(indexBackfillStart(9223372036854775807n, 3, maxStepsPerExecution).name).toBe('index-9223372036854775807-3');
    expect(() => indexBackfillStart(1n, 1, 2001)).toThrow('stepsPerExecution must be a whole number from 1 to 2000 (an execution holds at most 25,000 history events), got 2001');
  });

  it('reads a step request and names what is wrong with a bad one', () => {
    expect(parseStepRequest({ action: 'step', indexId: '5', execution: 2, step: 0 })).toEqual({ indexId: 5n, execution: 2, step: 0 });
    expect(() => parseStepRequest({ action: 'step', indexId: 5, execution: 1, step: 0 })).toThrow('indexId must be a decimal string such as "42", got 5');
    expect(() => parseStepRequest({ action: 'step', indexId: '5', execution: 0, step: 0 })).toThrow('execution must be a whole number ≥ 1, got 0');
    expect(() => parseStepRequest({ action: 'step', indexId: '5', execution: 1, step: 1.5 })).toThrow('step must be a whole number ≥ 0, got 1.5');
    expect(() => parseStepRequest(null)).toThrow('"action" must be "step", got undefined');
  });
});
