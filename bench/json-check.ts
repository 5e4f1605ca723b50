/**
 * The JSON check of indexing a `json` table, old against new in one run, in MB/s of
 * value bytes (CPU time), on the values bench/parquet.ts builds files from (~1.1 KB of
 * event JSON, some of it multi-byte UTF-8; one value in a thousand not JSON).
 *
 *   node_modules/.bin/node --import tsx bench/json-check.ts [values=100000] [rounds=8] [escaped]
 *
 *   old         jsonValueReason: a fatal TextDecoder and JSON.parse (what indexing did before)
 *   new         jsonValueError: the byte-level isJsonText, the old check only for a refused value
 *   json-parse  jsonValueError by the rules of encoders before v4: any \uXXXX escape taken,
 *               surrogates not looked at twice (what `new` was before issue 46)
 *
 * `escaped`: every character above U+007F written as a \u escape (a pair for one above
 * U+FFFF), as Python's json.dumps writes by default: the path that looks at surrogates.
 * Rounds alternate the checks, so all see the same machine; best of `rounds` each.
 */
import { isJsonText, jsonValueError, jsonValueReason } from '../src/parquet/index.js';
import { eventRecords } from './records.js';

const count = Number(process.argv[2] ?? 100_000);
const rounds = Number(process.argv[3] ?? 8);

const escaped = process.argv[4] === 'escaped';
const escapeText = (text: string): string => text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const values = eventRecords(count)
  .map((r) => r.value)
  .filter((v): v is Uint8Array => v !== null)
  .map((v) => (escaped ? Buffer.from(escapeText(Buffer.from(v).toString('utf8'))) : v));
const bytes = values.reduce((n, v) => n + v.byteLength, 0);

function run(check: (value: Uint8Array) => unknown): { cpuMs: number; refused: number } {
  let refused = 0;
  const cpu0 = process.cpuUsage();
  for (const value of values) {
    const result = check(value);
    if (result !== null && result !== true) refused++;
  }
  const cpu = process.cpuUsage(cpu0);
  return { cpuMs: (cpu.user + cpu.system) / 1000, refused };
}

const checks = {
  old: jsonValueReason,
  'json-parse': (value: Uint8Array) => jsonValueError(value, 'json-parse'),
  new: jsonValueError,
  'isJsonText alone': isJsonText,
} as const;
const best = new Map<string, number>();
const refused = new Map<string, number>();
for (let round = 0; round < rounds; round++) {
  for (const [name, check] of Object.entries(checks)) {
    const r = run(check);
    best.set(name, Math.min(best.get(name) ?? Infinity, r.cpuMs));
    refused.set(name, r.refused);
  }
}

const mb = bytes / 1e6;
const rate = (name: string): number => mb / (best.get(name)! / 1000);
console.log(`${values.length} values${escaped ? ' (non-ASCII as \\u escapes)' : ''}, ${mb.toFixed(1)} MB (${(bytes / values.length).toFixed(0)} B each), best of ${rounds}`);
for (const name of Object.keys(checks)) {
  console.log(`${name.padEnd(17)} ${rate(name).toFixed(0).padStart(6)} MB/s cpu  (${best.get(name)!.toFixed(0)} ms, ${refused.get(name)} refused)`);
}
console.log(`new / old: ${(rate('new') / rate('old')).toFixed(2)}x; new / json-parse: ${(rate('new') / rate('json-parse')).toFixed(3)}x`);
if (new Set(refused.values()).size !== 1) {
  console.log('NOT the same decisions: the checks refused different numbers of values');
  process.exitCode = 1;
}
