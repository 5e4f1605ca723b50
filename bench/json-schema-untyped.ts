/**
 * Decoding JSON Schema payloads whose value is one untyped field (`"doc": {}`, JSON text in
 * its column), by the rules of encoders before v4 (`json-parse`: JSON.stringify of the
 * parsed value) and by v4's (`engines`: the same once the value is known to nest at most
 * JSON_NESTING_LIMIT deep and to hold no lone surrogate; a payload that is short and has no
 * backslash is known so without a walk), in MB/s of payload (CPU time), on the values
 * bench/parquet.ts builds files from (~1.1 KB of event JSON).
 *
 *   node_modules/.bin/node --import tsx bench/json-schema-untyped.ts [values=50000] [rounds=8] [escaped]
 *
 * `escaped`: every character above U+007F written as a \u escape, so every payload has a
 * backslash and every value is walked. Rounds alternate the rules; best of `rounds` each.
 */
import { jsonSchemaWriter } from '../src/schema/decode-json-schema.js';
import { eventRecords } from './records.js';

const count = Number(process.argv[2] ?? 50_000);
const rounds = Number(process.argv[3] ?? 8);
const escaped = process.argv[4] === 'escaped';
const escapeText = (text: string): string => text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

const schema = { id: 1, type: 'JSON' as const, references: [], schema: JSON.stringify({ type: 'object', properties: { n: { type: 'integer' }, doc: {} } }) };
const payloads = eventRecords(count)
  .map((r) => r.value)
  .filter((v): v is Uint8Array => v !== null)
  .map((v) => Buffer.from(`{"n":1,"doc":${escaped ? escapeText(Buffer.from(v).toString('utf8')) : Buffer.from(v).toString('utf8')}}`));
const mb = payloads.reduce((n, p) => n + p.byteLength, 0) / 1e6;

const writers = { 'json-parse': jsonSchemaWriter(schema, 'json-parse'), engines: jsonSchemaWriter(schema, 'engines') };
const best = new Map<string, number>();
const refused = new Map<string, number>();
for (let round = 0; round < rounds; round++) {
  for (const [name, writer] of Object.entries(writers)) {
    let errors = 0;
    const cpu0 = process.cpuUsage();
    for (const payload of payloads) {
      try {
        writer.decode(payload, 0);
      } catch {
        errors++;
      }
    }
    const cpu = process.cpuUsage(cpu0);
    best.set(name, Math.min(best.get(name) ?? Infinity, (cpu.user + cpu.system) / 1000));
    refused.set(name, errors);
  }
}
const rate = (name: string): number => mb / (best.get(name)! / 1000);
console.log(`${payloads.length} payloads${escaped ? ' (non-ASCII as \\u escapes)' : ''}, ${mb.toFixed(1)} MB, best of ${rounds}`);
for (const name of Object.keys(writers)) console.log(`${name.padEnd(10)} ${rate(name).toFixed(0).padStart(5)} MB/s cpu  (${best.get(name)!.toFixed(0)} ms, ${refused.get(name)} refused)`);
console.log(`engines / json-parse: ${(rate('engines') / rate('json-parse')).toFixed(3)}x`);
