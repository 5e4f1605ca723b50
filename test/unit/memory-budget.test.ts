import { describe, expect, it } from 'vitest';
import { defaultDeliveriesAtOnce, measuredCosts, planMemory, type MemoryCosts } from '../../src/local/memory-budget.js';

const MiB = 1024 * 1024;
const costs: MemoryCosts = { baseBytes: 100 * MiB, perDeliveryBytes: 10 * MiB, perPartitionBytes: 0, holdFactor: 2, buildFactor: 1.5, minRangeBytes: MiB, batchFactor: 4 };
const demand = (partitions: number, builds: number, largestFileBytes: number, deliveries = Infinity) => ({ partitions, builds, largestFileBytes, deliveries });

describe('run --memory: the split of the budget', () => {
  it('the worst case of the split (fixed + held ranges + every build of a full range) fits in the budget', () => {
    for (const budget of [200, 256, 512, 1024, 4096]) {
      for (const partitions of [1, 3, 12]) {
        for (const builds of [1, 2, 4]) {
          const plan = planMemory(budget * MiB, demand(partitions, builds, 128 * MiB), costs);
          if ('problem' in plan) continue;
          const worst = plan.fixedBytes + costs.holdFactor * plan.heldBytes + builds * costs.buildFactor * plan.rangeBytes;
          expect(worst).toBeLessThanOrEqual(budget * MiB);
          // a range sealed by capacity leaves room for the next one while it is built
          expect(plan.heldBytes).toBeGreaterThanOrEqual(2 * plan.rangeBytes - 1);
        }
      }
    }
  });

  it('one record batch, read, held and built alone at its batch factor, fits in what the fixed parts leave', () => {
    for (const budget of [200, 512, 4096]) {
      const plan = planMemory(budget * MiB, demand(3, 2, 128 * MiB), costs);
      if ('problem' in plan) continue;
      expect(plan.fixedBytes + costs.batchFactor * plan.batchBytes).toBeLessThanOrEqual(budget * MiB);
      expect(plan.fixedBytes + costs.batchFactor * (plan.batchBytes + 1)).toBeGreaterThan(budget * MiB);
    }
  });

  it('ranges are never made larger than the largest file_bytes of the tables', () => {
    const plan = planMemory(4096 * MiB, demand(3, 2, 32 * MiB), costs);
    expect('problem' in plan ? plan.problem : plan.rangeBytes).toBe(32 * MiB);
  });

  it('tables of small files are not refused for ranges smaller than the smallest worth a file: they need no more', () => {
    const plan = planMemory(1024 * MiB, demand(3, 2, 64 * 1024), costs);
    expect('problem' in plan ? plan.problem : plan.rangeBytes).toBe(64 * 1024);
  });

  it('a budget below the process and its partitions is refused with what it would need', () => {
    const plan = planMemory(120 * MiB, demand(3, 2, 128 * MiB), costs);
    expect('problem' in plan && plan.problem).toMatch(/--memory 120 MiB is too small for 3 partition\(s\) and 2 build\(s\) at once: the process needs about 100 MiB \+ 10 MiB per delivery in flight \(3 at once\) \+ 0\.0 MiB per partition before any range, .* give at least 137 MiB/);
  });

  it('the budget a refusal asks for is accepted: run without --memory plans with it (24 partitions of the measured costs had been refused at 1107 MiB, "give at least 1107 MiB")', () => {
    for (const c of [costs, measuredCosts]) {
      for (let partitions = 1; partitions <= 200; partitions++) {
        for (const builds of [1, 2, 3, 4, 8]) {
          for (const largest of [64 * 1024, 128 * MiB]) {
            const refused = planMemory(64 * MiB, demand(partitions, builds, largest, defaultDeliveriesAtOnce), c);
            expect('problem' in refused, `${partitions} partitions, ${builds} builds`).toBe(true);
            if (!('problem' in refused)) continue;
            const plan = planMemory(refused.neededBytes, demand(partitions, builds, largest, defaultDeliveriesAtOnce), c);
            expect('problem' in plan ? plan.problem : plan.rangeBytes, `${partitions} partitions, ${builds} builds`).toBe(Math.min(largest, c.minRangeBytes));
            expect(refused.problem).toContain(`give at least ${Math.round(refused.neededBytes / MiB)} MiB`);
          }
        }
      }
    }
  });

  it('deliveries in flight are bounded, so partitions beyond them cost only their own share: the measured costs give 120 partitions at the default 1 GiB ranges of tens of MiB, not a refusal', () => {
    const plan = (partitions: number) => planMemory(1024 * MiB, demand(partitions, 2, 128 * MiB, defaultDeliveriesAtOnce), measuredCosts);
    const three = plan(3);
    const many = plan(120);
    if ('problem' in three || 'problem' in many) throw new Error(`refused: ${'problem' in three ? three.problem : ''} ${'problem' in many ? many.problem : ''}`);
    // fixed: base + min(partitions, deliveries) × per delivery + partitions × per partition
    expect(three.fixedBytes).toBe(measuredCosts.baseBytes + 3 * measuredCosts.perDeliveryBytes + 3 * measuredCosts.perPartitionBytes);
    expect(many.fixedBytes).toBe(measuredCosts.baseBytes + defaultDeliveriesAtOnce * measuredCosts.perDeliveryBytes + 120 * measuredCosts.perPartitionBytes);
    expect(many.rangeBytes).toBeGreaterThanOrEqual(32 * MiB);
  });
});
