/**
 * The fault scenarios of `npm run chaos` (bench/chaos), each in its bounded (`--short`)
 * version, on a stack of their own (the scenarios kill its Postgres and restart its
 * broker; the shared stack other test files use is left alone). Asserted: the
 * invariants, judged by an independent read_committed reader and a rebuild of every
 * file. Times are reported by `npm run chaos`, never asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenario, scenarios } from '../../bench/chaos/scenarios.js';
import { startChaosStack, type ChaosStack } from '../../bench/chaos/stack.js';

let stack: ChaosStack;
beforeAll(async () => {
  stack = await startChaosStack(() => {});
});
afterAll(async () => {
  await stack?.down();
});

describe('faults (npm run chaos -- --short)', () => {
  for (const scenario of scenarios) {
    it(`${scenario.name}: ${scenario.does}; nothing lost or duplicated, every partition tiles, every file rebuilds`, async () => {
      const result = await runScenario(stack, scenario, { seed: 17, short: true, log: () => {} });
      expect(result.problems).toEqual([]);
      expect(result.produced).toBeGreaterThan(0);
      expect([result.indexed, result.lost, result.duplicated]).toEqual([result.produced, 0, 0]);
      expect(result.filesRebuilt).toBe(result.files);
      expect(result.faults).not.toMatch(/no fault met/);
    });
  }
});
