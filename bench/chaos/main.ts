/**
 * `npm run chaos [-- --short] [--seed N] [--only name,name]`: every fault scenario
 * (bench/chaos/scenarios.ts) against a stack of its own (one broker; the cluster
 * scenarios then on a three-broker stack, started only for them), then a table of what
 * each found. Exit 1 if any scenario lost, duplicated or could not rebuild anything.
 */
import { parseArgs } from 'node:util';
import { runScenario, scenarios, type ScenarioResult } from './scenarios.js';
import { startChaosStack } from './stack.js';
import { useProjectPython } from '../../test/helpers/project-python.js';

const { values } = parseArgs({ options: { short: { type: 'boolean' }, seed: { type: 'string' }, only: { type: 'string' } } });
const seed = Number(values.seed ?? 17);
const chosen = values.only ? values.only.split(',').map((name) => name.trim()) : scenarios.map((s) => s.name);
const unknown = chosen.filter((name) => !scenarios.some((s) => s.name === name));
if (!Number.isInteger(seed) || unknown.length > 0) {
  process.stderr.write(`usage: npm run chaos -- [--short] [--seed N] [--only ${scenarios.map((s) => s.name).join(',')}]${unknown.length ? `\nunknown scenario: ${unknown.join(', ')}` : ''}\n`);
  process.exit(2);
}

const log = (line: string) => process.stderr.write(`${line}\n`);
// the audit's independent reader (confluent-kafka) is the project's pinned Python
useProjectPython();
const results: ScenarioResult[] = [];
let failed = false;
// One stack at a time, each only if a chosen scenario needs it: a cluster is four JVMs.
for (const brokers of [1, 3]) {
  const here = scenarios.filter((s) => chosen.includes(s.name) && (s.brokers ?? 1) === brokers);
  if (here.length === 0) continue;
  const stack = await startChaosStack(log, { brokers });
  // Interrupted: the stack's daemons go down with the run.
  const interrupted = () => void stack.down().finally(() => process.exit(130));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, interrupted);
  try {
    for (const scenario of here) {
      log(`${scenario.name}: ${scenario.does}`);
      try {
        const result = await runScenario(stack, scenario, { seed, short: values.short ?? false, log });
        results.push(result);
        for (const problem of result.problems) log(`  ${problem}`);
        failed ||= result.problems.length > 0;
      } catch (error) {
        log(`  failed: ${(error as Error).message}`);
        failed = true;
      }
    }
  } finally {
    await stack.down();
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.off(signal, interrupted);
  }
}

const header = ['scenario', 'brokers', 'faults injected', 'produced (committed)', 'indexed', 'lost', 'duplicated', 'files rebuilt', 'recovery', 'serve: files read, errors, wrong'];
const rows = results.map((r) => [
  r.scenario,
  String(scenarios.find((s) => s.name === r.scenario)?.brokers ?? 1),
  `${r.faults}${r.cleanPass ? `; vs one clean pass: ${r.cleanPass.differing === 0 ? `all ${r.cleanPass.files} files equal` : `${r.cleanPass.differing} files differ`}` : ''}`,
  String(r.produced),
  String(r.indexed),
  String(r.lost),
  String(r.duplicated),
  `${r.filesRebuilt}/${r.files}${r.expired ? ` (+${r.expired} expired)` : ''}`,
  `${(r.recoveryMs / 1000).toFixed(1)} s`,
  r.reads ? `${r.reads.served}, ${r.reads.errors}, ${r.reads.wrong}${r.reads.said.length ? ` (${r.reads.said[0]})` : ''}` : '-',
]);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
process.stdout.write([line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n') + '\n');
process.stdout.write(`seed ${seed}${values.short ? ', short' : ''}; transactions committed/aborted/failed: ${results.map((r) => `${r.scenario} ${r.transactions.committed}/${r.transactions.aborted}/${r.transactions.failed}`).join(', ')}\n`);
process.exit(failed ? 1 : 0);
