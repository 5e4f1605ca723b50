/**
 * What a fault scenario of bench/chaos must hold to pass in CI (chaos.test.ts,
 * chaos-cluster.test.ts): the audit's invariants, a fault actually met, and, where it read
 * through `serve`, files served and none wrong.
 */
import { expect } from 'vitest';
import type { Scenario, ScenarioResult } from '../../bench/chaos/scenarios.js';

export function expectScenarioHeld(scenario: Scenario, result: ScenarioResult): void {
  expect(result.problems).toEqual([]);
  expect(result.produced).toBeGreaterThan(0);
  expect([result.indexed, result.lost, result.duplicated]).toEqual([result.produced, 0, 0]);
  expect(result.filesRebuilt).toBe(result.files);
  expect(result.faults).not.toMatch(/no fault met/);
  if (scenario.cleanPassTwin) {
    expect(result.cleanPass?.files).toBeGreaterThan(0);
    expect(result.cleanPass?.differing).toBe(0);
  }
  if (result.reads) {
    expect(result.reads.served).toBeGreaterThan(0);
    expect(result.reads.wrong).toBe(0);
  }
}
