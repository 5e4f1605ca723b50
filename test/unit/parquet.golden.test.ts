/**
 * Files in a catalog are rebuilt with the encoder version they name, possibly years
 * later: an encoder version must never change its output. These hashes pin
 * `hyparquet-writer@0.17.0/v1` and every encoder of our own writer (v2 to v6, LZ4_RAW and Snappy; v4 to v6 also ZSTD and uncompressed). If this test fails, the change (a dependency upgrade,
 * a schema mapping, value normalization, writer options) belongs in a new encoder
 * version in src/parquet/encoder.ts, never in an existing one.
 */
import { execFileSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { KafkaRecord } from '../../src/kafka/record.js';
import { type Column, encodeParquet, encoders, kafkaColumnArrays, kafkaTableColumns, leaves, prepare, ownWriterSettings, encoderOf } from '../../src/parquet/index.js';
import { innerNodePaths } from '../../src/parquet/schema.js';
import { fieldIds } from '../../src/schema/table-schema.js';
import { joinParts } from '../../src/parquet/file-parts.js';
import { assembleParquet, encodeRowGroup, writeParquet } from '../../src/parquet/writer.js';
import { encodeFile } from '../../src/files/files.js';
import { mergeRegistrySchemas } from '../../src/schema/evolve.js';
import { initialSchema } from '../../src/schema/table-schema.js';
import type { RegistrySchema } from '../../src/schema/registry.js';
import type { TableRecord } from '../../src/table/record.js';
import { resolveSettings, defaultSettings } from '../../src/table/settings.js';
import { avro, wire, zigzag } from '../helpers/spec-encoding.js';

/** The encoder a table of the default compression builds new files with. */
const encoderVersion = encoderOf(defaultSettings);

const utf8 = new TextEncoder();

const kafkaRecords: KafkaRecord[] = Array.from({ length: 2_500 }, (_, i) => ({
  offset: 10_000_000_000n + BigInt(i),
  timestamp: 1_700_000_000_000 + i * 13,
  key: i % 7 === 0 ? null : utf8.encode(`customer-${i % 97}`),
  value: i % 101 === 0 ? null : utf8.encode(i % 53 === 0 ? '{"a":' : JSON.stringify({ i, kind: ['buy', 'sell', 'hold'][i % 3], note: 'ü😀'.repeat(i % 5), price: i / 8 })),
  headers: i % 3 === 0 ? [] : [['trace-id', utf8.encode(`${i * 7919}`)], ['flag', i % 2 ? null : utf8.encode('x')]],
}));

const typed: Column[] = [
  { name: 'i32', type: { kind: 'int32' }, nullable: true },
  { name: 'i64', type: { kind: 'int64' }, nullable: false },
  { name: 'f32', type: { kind: 'float' }, nullable: true },
  { name: 'f64', type: { kind: 'double' }, nullable: true },
  { name: 'flag', type: { kind: 'boolean' }, nullable: true },
  { name: 'text', type: { kind: 'string' }, nullable: true },
  { name: 'blob', type: { kind: 'binary' }, nullable: true },
  { name: 'us', type: { kind: 'timestamp', unit: 'micros', utc: true }, nullable: true },
  { name: 'ns', type: { kind: 'timestamp', unit: 'nanos', utc: false }, nullable: true },
  { name: 'day', type: { kind: 'date' }, nullable: true },
  { name: 'd9', type: { kind: 'decimal', precision: 9, scale: 2 }, nullable: true },
  { name: 'd18', type: { kind: 'decimal', precision: 18, scale: 6 }, nullable: true },
  { name: 'd38', type: { kind: 'decimal', precision: 38, scale: 10 }, nullable: true },
  { name: 'nums', type: { kind: 'list', element: { type: { kind: 'int32' }, nullable: true } }, nullable: true },
  {
    name: 'obj',
    type: { kind: 'struct', fields: [{ name: 'x', type: { kind: 'double' }, nullable: true }, { name: 's', type: { kind: 'string' }, nullable: false }] },
    nullable: true,
  },
];

const typedRows = Array.from({ length: 1_000 }, (_, i) => ({
  i32: i % 10 === 0 ? null : i * 1_000_003 - 2 ** 30,
  i64: 2n ** 62n - BigInt(i) * 9_999_999_967n,
  f32: i % 17 === 0 ? NaN : i / 3,
  f64: i % 19 === 0 ? -0 : i % 23 === 0 ? null : Math.sin(i) * 1e6,
  flag: i % 4 === 0 ? null : i % 3 === 0,
  text: i % 9 === 0 ? null : `row ${i} ${'\u{1F600}'.repeat(i % 3)}\uffff`,
  blob: i % 8 === 0 ? null : Uint8Array.from({ length: i % 6 }, (_, k) => (i * 31 + k * 7) & 0xff),
  us: BigInt(i) * 1_000_001n,
  ns: i % 5 === 0 ? null : BigInt(i) * 1_000_000_007n,
  day: i - 500,
  d9: BigInt(i * 12_345 - 6_000_000),
  d18: i % 2 ? null : BigInt(i) * 10n ** 12n + 1n,
  d38: -(10n ** 37n) + BigInt(i) * 10n ** 30n,
  nums: i % 6 === 0 ? null : Array.from({ length: i % 4 }, (_, k) => (k === 1 ? null : i + k)),
  obj: i % 7 === 0 ? null : { x: i % 2 ? null : i / 7, s: `s${i % 11}` },
}));

const golden = (bytes: Uint8Array, sha: Uint8Array) => ({ byteLength: bytes.byteLength, sha256: Buffer.from(sha).toString('hex') });

describe('encoder hyparquet-writer@0.17.0/v1 keeps its output', () => {
  const v1 = encoders['hyparquet-writer@0.17.0/v1']!;
  it('for a json table file', () => {
    const f = encodeParquet(kafkaTableColumns('json'), kafkaColumnArrays(5, kafkaRecords, 'json'), { rowGroupRows: 1_000, encoderVersion: v1.version });
    expect(golden(f.bytes, f.sha256)).toEqual({
      byteLength: 83507,
      sha256: '1147ed095be467365196bf4452e664a7e9dfa4f65d4fdfa194a35e7670387b61',
    });
  });
  it('for a raw table file', () => {
    const f = encodeParquet(kafkaTableColumns('raw'), kafkaColumnArrays(0, kafkaRecords, 'raw'), { rowGroupRows: 2_500, encoderVersion: v1.version });
    expect(golden(f.bytes, f.sha256)).toEqual({
      byteLength: 77662,
      sha256: 'af524eb0353e3a31e30af4c50c5e20aaecca008ff8a6e163126fa266672e01f3',
    });
  });
  it('for every column kind', () => {
    const f = encodeParquet(typed, typedRows, { rowGroupRows: 300, encoderVersion: v1.version, keyValueMetadata: { 'offsetlake.table': 'golden' } });
    expect(golden(f.bytes, f.sha256)).toEqual({
      byteLength: 83094,
      sha256: 'cae3c5f6a05ef354ccc78d6b6c607d53878da685f7c12c9e4ed29dc4899e8c52',
    });
  });
});

/**
 * Column ids as a table schema gives them: every top-level column and nested leaf, in
 * order, and every nested group node (which encoders before v5 leave without an id).
 */
function idsFor(columns: readonly Column[]): Record<string, number> {
  const schema = initialSchemaLike(columns);
  return fieldIds(schema);
}
function initialSchemaLike(columns: readonly Column[]) {
  const numbered = columns.map((column, id) => ({ ...column, id: 100 + id }));
  const leafIds: Record<string, number> = {};
  let next = 1_000;
  for (const leaf of leaves(numbered)) if (leaf.path.length > 1) leafIds[leaf.path.join('.')] = next++;
  const nodeIds: Record<string, number> = {};
  for (const path of innerNodePaths(numbered)) nodeIds[path.join('.')] = next++;
  return { columns: numbered, leafIds, nodeIds };
}

const V2_LZ4 = 'offsetlake-parquet@2/lz4-napi@2.10.0';
const V2_SNAPPY = 'offsetlake-parquet@2/snappy@7.4.3';
const V3_LZ4 = 'offsetlake-parquet@3/lz4-napi@2.10.0';
const V3_SNAPPY = 'offsetlake-parquet@3/snappy@7.4.3';
const V4_LZ4 = 'offsetlake-parquet@4/lz4-napi@2.10.0';
const V4_SNAPPY = 'offsetlake-parquet@4/snappy@7.4.3';
const V5_LZ4 = 'offsetlake-parquet@5/lz4-napi@2.10.0';
const V5_SNAPPY = 'offsetlake-parquet@5/snappy@7.4.3';
const V6_LZ4 = 'offsetlake-parquet@6/lz4-napi@2.10.0';
const V6_SNAPPY = 'offsetlake-parquet@6/snappy@7.4.3';
const V4_ZSTD = 'offsetlake-parquet@4/node-zstd@2.0.0/level-1';
const V5_ZSTD = 'offsetlake-parquet@5/node-zstd@2.0.0/level-1';
const V6_ZSTD = 'offsetlake-parquet@6/node-zstd@2.0.0/level-1';
const V4_NONE = 'offsetlake-parquet@4/uncompressed';
const V5_NONE = 'offsetlake-parquet@5/uncompressed';
const V6_NONE = 'offsetlake-parquet@6/uncompressed';

it(`new files of a table with the default compression are built with ${V6_ZSTD}`, () => {
  expect(encoderVersion).toBe(V6_ZSTD);
});

const pinned: Record<string, { json: object; raw: object; typed: object }> = {
  [V2_LZ4]: {
    json: { byteLength: 84765, sha256: '5eb958529aa319e8cda6c1f2fa02dce4b14ff4e22a9d636a6e071d9bb1c223c3' },
    raw: { byteLength: 81957, sha256: '35a0618d3175e3e0797bb0d3e3745eda77347ccaed0a5f9708a4e9066625a99c' },
    typed: { byteLength: 84745, sha256: '5f2f05c215caf358c8897357614bd7a2ae5b52e8e4c0887b83dcc5dda4df5b7e' },
  },
  [V2_SNAPPY]: {
    json: { byteLength: 86355, sha256: '29df885c479bccebbe2b2bc2ea5a1de0bd097b183d91cb525468f15d80a09967' },
    raw: { byteLength: 83333, sha256: '1ea009c6636b97c20257cae08588098bd9246ac21f252ab9586b4ab8de7ececd' },
    typed: { byteLength: 84576, sha256: 'a342fa28c4f94d0d359872bba8fcc63cfeea4b0482b1fc33fc16c57527dacce3' },
  },
  [V3_LZ4]: {
    json: { byteLength: 84765, sha256: '914626be6855cdf2d863ea53ffbdf6333724a881fec69453d62f369edbf47f1a' },
    raw: { byteLength: 81957, sha256: '6aa602400a1ba19eeb5a2fe0464c4620a9b8fc5240936b9ee6e2e7ade41f6729' },
    typed: { byteLength: 84745, sha256: '7e0ce9468942897a5361402258082d1ba36235f6a3838ff4c16b9604c4566831' },
  },
  [V3_SNAPPY]: {
    json: { byteLength: 86355, sha256: '6134d66289845c4689106813da7aec926470cb3af517326c2baf346e55e2f682' },
    raw: { byteLength: 83333, sha256: '032477ed3d19c6c49bc625ccdeb213e47aa746d88647f11eb8c7eeb162811478' },
    typed: { byteLength: 84576, sha256: 'cca2e5657e92487d8f63e02d52adc8a7e6b7057770792563655511591777f33b' },
  },
  // v4 is v3 with other JSON rules: the same pages for these rows (no lone surrogate), its own version in the footer
  [V4_LZ4]: {
    json: { byteLength: 84765, sha256: '8d34a33c0a417be8cf7a04e426f4372e23c2c4428149215d1db5e6ba847a6b41' },
    raw: { byteLength: 81957, sha256: '844459a7cbbac1725249c994467e94b6710a64508bd2022bf85f358caf4fe7bd' },
    typed: { byteLength: 84745, sha256: 'd2e09e4c0db4dd2f4b92330d958b1bafa388b8cd14a154632af49e4b103048b0' },
  },
  [V4_SNAPPY]: {
    json: { byteLength: 86355, sha256: '882b2f15ffe606fd74af2e562f1d4878d216352c03028ab12ed249abf9e376c2' },
    raw: { byteLength: 83333, sha256: 'c7fdffa5594599cfc1012990cf65ebf058640b2efa742be8e6608a539f2891c2' },
    typed: { byteLength: 84576, sha256: 'd5b6bad25dccdef32d00b4c0ef9d068a852ed6cda808250c5dae2fe7b071d7b0' },
  },
  // v5: field ids on nested groups (`_headers.list.element`) and `_timestamp` in micros; `typed` has neither a nested group nor a UTC millis column
  [V5_LZ4]: {
    json: { byteLength: 87635, sha256: '04ef2a35df6d91d226a8b4b231fcc3df3b54f775a774aa499f4926c40eece7e4' },
    raw: { byteLength: 84824, sha256: 'b2eba6aa329e3049daaceecb1bca803f2a8f13a6dc68462f89252c6af0300106' },
    typed: { byteLength: 84745, sha256: 'ba8788fac58eecce2f509eae12df351768b878bfaa343d69b42143df1c63717e' },
  },
  [V5_SNAPPY]: {
    json: { byteLength: 89232, sha256: '112d03bedbcea137374e9952e55c25f17b62df91c1a7384b851defe9e91c0ae6' },
    raw: { byteLength: 86210, sha256: 'eb9f7b7854157e0fb8c0e79f9056165f7cde7b62ac8e3cb6c9a8d8682f7bc278' },
    typed: { byteLength: 84576, sha256: 'dcd016a95974e067fe7ffa5be43cf7164c724d1ff654e15090aaf559d9bdd760' },
  },
  // v6: `_value` (JSON text) as STRING; `typed` has neither a JSON nor a local millis column, so it is v5's file but for the encoder's name
  [V6_LZ4]: {
    json: { byteLength: 87635, sha256: 'ab38b936e19927769411270558cc28c2af89b3711ed0524fe4846617d0b29b20' },
    raw: { byteLength: 84824, sha256: 'bef70ffd7dd82b457a448a5acd94839429c1c3bddc72e0b9862cf0a889a22671' },
    typed: { byteLength: 84745, sha256: '4ee403d459e9be101e13ff9fb316a012b5b296213f38561dd6ac66125c15cd85' },
  },
  [V6_SNAPPY]: {
    json: { byteLength: 89232, sha256: '949972e25104c374f95521f12a3b29ca6a3cfa97aa61342e01a624654d9f9a4b' },
    raw: { byteLength: 86210, sha256: 'db5fdf41f5d66bf0b02dfb94354acb044f89d0f2f79dc57f7690a8a728fe8ac7' },
    typed: { byteLength: 84576, sha256: '57865c0993e2d54246403a8b323d64a859fca1064493e2b74e16b992e34bef48' },
  },
  // ZSTD (level 1) and uncompressed pages (issue 47): v4's and v5's writers only as v6's fallback for values beyond micros
  [V4_ZSTD]: {
    json: { byteLength: 33778, sha256: '6844abfe3ea4244edc53cbab132c0e22aa3be3f4508f5c409dac157a66b5d6c2' },
    raw: { byteLength: 30923, sha256: 'fafb62327c12a4b9727f99e82dd3e9c28817ec65b2e55aabd455f5486b9614bd' },
    typed: { byteLength: 67382, sha256: '7e4c2da42b8d8f181c2cf536dbedcdc0cc9acb72c569c55706ad962c7b605cc0' },
  },
  [V5_ZSTD]: {
    json: { byteLength: 44149, sha256: '0a2202877398c05b718e7624897d8f2ec8ffc5eba836726bbccff1322c63ff09' },
    raw: { byteLength: 41305, sha256: 'f254fb805f787b9d8eba0756aa588dfcc6ca71a132f67e92c2056b7fd68ef424' },
    typed: { byteLength: 67382, sha256: 'af50f3a93c4326e271a0aa1a4f432a6cf6c4ad58a72eb6e94c157324e2be842b' },
  },
  [V4_NONE]: {
    json: { byteLength: 325412, sha256: 'aa03861a03c789dee26d3bacbab1589ac90d63a7a83aa901c6076d71dbd71fb5' },
    raw: { byteLength: 320386, sha256: 'c3ebfdfed6334888432f84de5ae6822303b1263c4b3bd920322be2923281efe3' },
    typed: { byteLength: 122574, sha256: '463a311326b9baa28a1951de79a6774465c473498df999d7401f71492be388af' },
  },
  [V5_NONE]: {
    json: { byteLength: 325415, sha256: 'ed57e9f75b4e70c664f19610f6474673485d84bc89f913e9f5836a7f094d347c' },
    raw: { byteLength: 320389, sha256: '1531706c5b434725dce3c5e21a10282ecc403c48c00f26fb97930505823a82e2' },
    typed: { byteLength: 122574, sha256: '52bea794157e920c92836664cd7ad47c4467c7c47072165c301e5a19634c4a6d' },
  },
  // v6 with ZSTD and uncompressed pages (the sizes of v5's: STRING's annotation takes JSON's bytes), pinned from their first build
  [V6_ZSTD]: {
    json: { byteLength: 44149, sha256: '752a8e589180437e2742bdc11b90a022271cac448e0ed5950d2b52ee9051f091' },
    raw: { byteLength: 41305, sha256: 'fce5f523a446b1c6f1020ad301d8faa0f6361b800497cb87a52217fd46288bae' },
    typed: { byteLength: 67382, sha256: 'a07a4dcf7737f4f9ab1db53482be9b67ea5815c705c48c676520f8a2169ecf6c' },
  },
  [V6_NONE]: {
    json: { byteLength: 325415, sha256: 'abc2bc7e004c9600d26354a99e6b76fad50942a9f96df66610d2c6170ecf90d1' },
    raw: { byteLength: 320389, sha256: '3f94ebcfb2d64e04185bb5b229ee0c01db53dd41c0cdd17a9e334cef840d0223' },
    typed: { byteLength: 122574, sha256: 'c6c70c0dbc3cae9577f26df1f3ff479bf7f11b8f612184f968dd8709f02f5727' },
  },
};

describe.each(Object.keys(pinned))('encoder %s keeps its output', (version) => {
  const json = () => encodeParquet(kafkaTableColumns('json'), kafkaColumnArrays(5, kafkaRecords, 'json'), {
    rowGroupRows: 1_000, encoderVersion: version, fieldIds: idsFor(kafkaTableColumns('json')),
  });
  it('for a json table file', () => {
    const f = json();
    expect(golden(f.bytes, f.sha256)).toEqual(pinned[version]!.json);
  });
  it('for a raw table file', () => {
    const f = encodeParquet(kafkaTableColumns('raw'), kafkaColumnArrays(0, kafkaRecords, 'raw'), {
      rowGroupRows: 2_500, encoderVersion: version, fieldIds: idsFor(kafkaTableColumns('raw')),
    });
    expect(golden(f.bytes, f.sha256)).toEqual(pinned[version]!.raw);
  });
  it('for every column kind', () => {
    const f = encodeParquet(typed, typedRows, {
      rowGroupRows: 300, encoderVersion: version, keyValueMetadata: { 'offsetlake.table': 'golden' }, fieldIds: idsFor(typed),
    });
    expect(golden(f.bytes, f.sha256)).toEqual(pinned[version]!.typed);
  });
  it.each([
    ['in another process', process.execPath],
    // test/prerequisites.sh fetches it: another V8, another TextEncoder, the same N-API binary
    ['in another process under Node 22.12.0', join(process.env.OFFSETLAKE_CACHE ?? join(homedir(), '.cache', 'offsetlake'), `node-linux-${process.arch}-22.12.0`, 'bin', 'node')],
  ])('%s', (_, node) => {
    // a fresh process: no state of this one (module caches, the compressor's, the reused page buffer) shapes the bytes
    const script = `
      import { readFileSync } from 'node:fs';
      import { encodeParquet, kafkaColumnArrays, kafkaTableColumns } from './src/parquet/index.ts';
      const input = JSON.parse(readFileSync(0, 'utf8'), (k, v) => (v && v.$bytes !== undefined ? Uint8Array.from(v.$bytes) : v && v.$bigint !== undefined ? BigInt(v.$bigint) : v));
      const f = encodeParquet(kafkaTableColumns('json'), kafkaColumnArrays(5, input.records, 'json'), input.options);
      process.stdout.write(Buffer.from(f.sha256).toString('hex'));`;
    const input = JSON.stringify(
      { records: kafkaRecords, options: { rowGroupRows: 1_000, encoderVersion: version, fieldIds: idsFor(kafkaTableColumns('json')) } },
      (_, v) => (v instanceof Uint8Array ? { $bytes: [...v] } : typeof v === 'bigint' ? { $bigint: String(v) } : v),
    );
    const out = execFileSync(node, ['--import', 'tsx', '--input-type=module', '-e', script], { input, encoding: 'utf8', maxBuffer: 1 << 20 });
    expect(out).toBe(Buffer.from(json().sha256).toString('hex'));
  });
});

/** The column types encoder v6 stores otherwise than v5 (JSON text, local millisecond timestamps), at the top level and nested. */
const v6Typed: Column[] = [
  { name: 'doc', type: { kind: 'json' }, nullable: true },
  { name: 'local_ms', type: { kind: 'timestamp', unit: 'millis', utc: false }, nullable: true },
  { name: 'utc_ms', type: { kind: 'timestamp', unit: 'millis', utc: true }, nullable: false },
  {
    name: 'inner',
    type: { kind: 'list', element: { nullable: true, type: { kind: 'struct', fields: [{ name: 'at', type: { kind: 'timestamp', unit: 'millis', utc: false }, nullable: true }, { name: 'raw', type: { kind: 'json' }, nullable: true }] } } },
    nullable: true,
  },
];
const v6TypedRows = Array.from({ length: 700 }, (_, i) => ({
  doc: i % 6 === 0 ? null : JSON.stringify({ i, s: 'ü😀'.repeat(i % 3) }),
  local_ms: i % 5 === 0 ? null : -1_000_000_000_000 + i * 7_777_777,
  utc_ms: 1_700_000_000_000 + i * 13,
  inner: i % 4 === 0 ? null : Array.from({ length: i % 3 }, (_, k) => (k === 1 ? null : { at: i % 2 ? null : i * 1000 + k, raw: `[${i},${k}]` })),
}));
const pinnedV6Types: Record<string, object> = {
  [V5_LZ4]: { byteLength: 17436, sha256: '06f136060c742fd84b3fff0aae520182095d2319259a99089e234159bc65d183' },
  [V5_SNAPPY]: { byteLength: 16870, sha256: 'a247fd4833f6caeb7ed3902d058009eb13bf7ab747ff2da5155aad9e27e18a4d' },
  [V6_LZ4]: { byteLength: 18264, sha256: 'a5e4637acf4281c970e05ff19006d834e00ea765658bd8e0010a88f7af554a8e' },
  [V6_SNAPPY]: { byteLength: 17668, sha256: 'febe1e18fc50df660b56bfea048797be6ffb1761eac70ec3f98ec29b176d86d6' },
};
/** The file of `rows` each pinned encoder builds, against its pin (row groups of 250 rows, the table schema's ids). */
function keepsOutput(what: string, test: string, columns: Column[], rows: Record<string, unknown>[], pins: Record<string, object>): void {
  describe.each(Object.keys(pins))(`encoder %s keeps its output for ${what}`, (version) => {
    it(test, () => {
      const f = encodeParquet(columns, rows, { rowGroupRows: 250, encoderVersion: version, fieldIds: idsFor(columns) });
      expect(golden(f.bytes, f.sha256)).toEqual(pins[version]);
    });
  });
}
keepsOutput('JSON text and local millisecond timestamps', 'top level and nested', v6Typed, v6TypedRows, pinnedV6Types);

/**
 * A decimal above precision 38 (only Avro `decimal` makes one; Iceberg declares it
 * `fixed[L]`), at the top level and in a struct: v6 stores it as a plain fixed column
 * without bounds, v5 as DECIMAL-annotated fixed bytes with them (its pins were taken from
 * the code before v6 changed that, and must not move).
 */
const wideDecimals: Column[] = [
  { name: 'd50', type: { kind: 'decimal', precision: 50, scale: 5 }, nullable: true },
  { name: 'outer', type: { kind: 'struct', fields: [{ name: 'd39', type: { kind: 'decimal', precision: 39, scale: 0 }, nullable: false }] }, nullable: true },
];
const wideDecimalRows = Array.from({ length: 600 }, (_, i) => ({
  d50: i % 7 === 0 ? null : (BigInt(i) * 7_919n ** 12n + BigInt(i)) * (i % 2 ? -1n : 1n),
  outer: i % 5 === 0 ? null : { d39: (10n ** 39n - 1n - BigInt(i) * 10n ** 35n) * (i % 3 ? 1n : -1n) },
}));
const pinnedWideDecimals: Record<string, object> = {
  [V5_LZ4]: { byteLength: 19362, sha256: 'c3835fd1e84ce7d1bd2533fb8e78951ea1984b03959edb51372afa87fcc32fd1' },
  [V5_SNAPPY]: { byteLength: 19379, sha256: 'd17d500e9747dadad8b6e084f798115b29dc4af6fd737f44f6556ae38b46dc16' },
  [V5_ZSTD]: { byteLength: 19607, sha256: 'e540e5f4df937c97afbf9e3e470b646e966dbb19d0270f1b12aee61daf24174c' },
  [V5_NONE]: { byteLength: 21169, sha256: 'd0d46440da96adfadcd537a505906b29c1ac57c0d6cb27ba56048447cd0c4573' },
  // v6: 646 bytes less than v5's, the same pages: no DECIMAL annotation, no footer min/max, no ColumnIndex for these chunks
  [V6_LZ4]: { byteLength: 18716, sha256: '655a94850bcfee5584682cddbfa6e72b64906a7b5fc1e5aaeb2f14eacd22a60f' },
  [V6_SNAPPY]: { byteLength: 18733, sha256: '658334dc78f9ab12a5aaded4140213c18fe131f76554222a8205ec1f2f1407ad' },
  [V6_ZSTD]: { byteLength: 18961, sha256: '504e1ac78543e61b585eb7d31c030939db1fbcb3efe8edacc39d75398e3a33f8' },
  [V6_NONE]: { byteLength: 20523, sha256: '70683331207ead9fe7787f3186586d5bcc37307ef4d0bb4e5bcbf58a31cf51df' },
};
keepsOutput('decimals above precision 38', 'top level and in a struct', wideDecimals, wideDecimalRows, pinnedWideDecimals);

/**
 * Kafka hands records over as Node Buffers, whose `slice` is a view: encoder 2 raised its
 * cut max bounds inside such values (issue 25). Values longer than the 64-byte bound
 * limit, sharing their first 64 bytes; a file of the one value the issue reports.
 */
function longBufferRecords(): KafkaRecord[] {
  const prefix = Buffer.alloc(64, 0x61);
  return Array.from({ length: 1_500 }, (_, i) => ({
    offset: 500n + BigInt(i),
    timestamp: 1_700_000_000_000 + i,
    key: i % 5 === 0 ? null : Buffer.concat([prefix, Buffer.from(`k${i % 37}`)]),
    value: i % 11 === 0 ? null : Buffer.concat([Buffer.alloc(60 + (i % 9), (i * 7) & 0xff), Buffer.from([0xfe, 0xff, 0xff, i & 0xff])]),
    headers: [['h', Buffer.concat([prefix, Buffer.from([i & 0xff])])]],
  }));
}
const issueValue = '007ffffff0feffffffffffffffff010af09f98807802403a1416a5fcc83f00000080ffffffff0f01020604c3a90278027800ee81b2b9c668c48c030817a4ae4d000800';
const issueRecords = (): KafkaRecord[] => [{ offset: 7n, timestamp: 1_700_000_000_000, key: null, value: Buffer.from(issueValue, 'hex'), headers: [] }];
const bufferFiles = { long: [longBufferRecords, 400], one: [issueRecords, 10] } as const;

// Hashes of encoder 2 as it was before issue 25's fix (taken from that code): its files keep rebuilding to them.
const pinnedBuffers: Record<string, Record<keyof typeof bufferFiles, object>> = {
  [V2_LZ4]: {
    long: { byteLength: 43865, sha256: '3ef64bf2d98fe7f2c9eaf7de61ccefb43013baf0333b937a921386de4b515642' },
    one: { byteLength: 1493, sha256: '9ae23dff56f46c71b26ca4a00277c7062cb8c9ecbd3278abf2c91b4264f2c8ef' },
  },
  [V2_SNAPPY]: {
    long: { byteLength: 50488, sha256: '677dcd0f7e86abd161514d032d03b87a0e2753b75707e089b8b49991a2989e2f' },
    one: { byteLength: 1492, sha256: 'b16f372a55d6a37754533fa20e035b215c134034b1c29d1c5475d8a464ddc243' },
  },
};

describe.each(Object.keys(pinnedBuffers))('encoder %s keeps its output for Buffer values past the bound limit', (version) => {
  it.each(Object.keys(bufferFiles) as (keyof typeof bufferFiles)[])('%s', (name) => {
    const [records, rowGroupRows] = bufferFiles[name];
    const f = encodeParquet(kafkaTableColumns('raw'), kafkaColumnArrays(3, records(), 'raw'), { rowGroupRows, encoderVersion: version });
    expect(golden(f.bytes, f.sha256)).toEqual(pinnedBuffers[version]![name]);
  });
});

describe.each(Object.keys(encoders))('encoder %s', (version) => {
  it('leaves the values it encodes as they were (Buffer keys, values and headers past the bound limit)', () => {
    for (const [records, rowGroupRows] of Object.values(bufferFiles)) {
      const given = records();
      const before = given.map((r) => [r.key && Buffer.from(r.key), r.value && Buffer.from(r.value), r.headers.map(([, v]) => v && Buffer.from(v))]);
      encodeParquet(kafkaTableColumns('raw'), kafkaColumnArrays(3, given, 'raw'), { rowGroupRows, encoderVersion: version });
      expect(given.map((r) => [r.key, r.value, r.headers.map(([, v]) => v)])).toEqual(before);
    }
  });
});

describe('row groups of our writer encoded apart (as on worker threads)', () => {
  it('assemble into the very bytes of one pass, whatever order they were encoded in', () => {
    const settings = ownWriterSettings.lz4_raw;
    const columns = kafkaTableColumns('json');
    const data = prepare(columns, kafkaColumnArrays(5, kafkaRecords, 'json'));
    const options = { rowGroupRows: 700, fieldIds: idsFor(columns), keyValueMetadata: [], createdBy: 'test' };
    const whole = joinParts(writeParquet(data, options, settings));
    const starts = Array.from({ length: Math.ceil(data.rowCount / 700) }, (_, g) => g * 700);
    const apart = new Map(starts.toReversed().map((start) => [start, encodeRowGroup(data, start, Math.min(start + 700, data.rowCount), settings)]));
    const assembled = joinParts(assembleParquet(data, starts.map((start) => structuredClone(apart.get(start)!)), options, settings));
    expect(Buffer.from(assembled).equals(Buffer.from(whole))).toBe(true);
  });
});

/**
 * A registry table's file goes through the decoder before the writer: its string and
 * bytes fields reach the writer as places in the records' bytes, its longs as numbers, a
 * record of scalars as a vector per field (issue 27), other values as arrays. The bytes were pinned by the build before spans (8904a7c), which gave every
 * value as an array: how values reach the writer must not change a file.
 */
const float32 = (v: number): number[] => [...new Uint8Array(Float32Array.of(v).buffer)];
const float64 = (v: number): number[] => [...new Uint8Array(Float64Array.of(v).buffer)];

describe('an avro table file, decoded from the wire format, keeps its bytes', () => {
  const fields = [
    { name: 'id', type: 'string' }, { name: 'blob', type: 'bytes' }, { name: 'n', type: 'long' },
    { name: 'maybe', type: ['null', 'string'] }, { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['BUY', 'SELL'] } },
    { name: 'dev', type: { type: 'record', name: 'Dev', fields: [{ name: 'os', type: 'string' }] } }, { name: 'note', type: 'string' },
    {
      name: 'every', type: { type: 'record', name: 'Every', fields: [
        { name: 's', type: 'string' }, { name: 'b', type: 'bytes' }, { name: 'l', type: 'long' }, { name: 'i', type: 'int' }, { name: 'f', type: 'float' },
        { name: 'd', type: 'double' }, { name: 'ok', type: 'boolean' }, { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
      ] },
    },
  ];
  const registered: RegistrySchema = { id: 7, type: 'AVRO', schema: JSON.stringify({ type: 'record', name: 'Trade', fields }), references: [] };
  const schema = mergeRegistrySchemas(initialSchema('avro'), 'avro', [{ schema: registered, sides: new Set(['value'] as const) }]);
  const payload = (i: number): number[] => [
    ...avro.string(`trade-${i % 211}`), ...zigzag(BigInt(i % 5)), ...Array.from({ length: i % 5 }, (_, k) => (i * 7 + k) & 0xff), ...avro.long(BigInt(i) * 1_000_003n - 500_000n),
    ...(i % 3 === 0 ? zigzag(0n) : [...zigzag(1n), ...avro.string(`maybe ü${'😀'.repeat(i % 3)}`)]), ...zigzag(BigInt(i % 2)), ...avro.string(`os${i % 4}`),
    ...avro.string(i % 13 === 0 ? '' : `note ${'x'.repeat(i % 40)} ${i}`),
    // every: a long beyond 2^53 in every 29th row
    ...avro.string(`é${i % 7}`), ...zigzag(BigInt(i % 3)), ...Array.from({ length: i % 3 }, () => i & 0xff), ...avro.long(i % 29 === 0 ? 2n ** 60n + BigInt(i) : BigInt(i * 7 - 900)),
    ...zigzag(BigInt(i - 1000)), ...float32(i / 3), ...float64(Math.sin(i) * 1e3), i % 2, ...avro.long(1_700_000_000_000n + BigInt(i)),
  ];
  // every 17th value is not in the wire format, every 19th is cut short, every 23rd a tombstone: error rows and nulls
  const records: KafkaRecord[] = Array.from({ length: 2_000 }, (_, i) => {
    const bytes = Buffer.from(wire(7, payload(i)));
    const value = i % 23 === 0 ? null : i % 17 === 0 ? Buffer.from('plain') : i % 19 === 0 ? bytes.subarray(0, bytes.length - 1) : bytes;
    return { offset: 5_000n + BigInt(i), timestamp: 1_700_000_000_000 + i, key: Buffer.from(`k${i % 9}`), value, headers: [] };
  });
  const table = { tableId: 1n, name: 't', topic: 't', format: 'avro', settings: resolveSettings({ row_group_rows: '700' }) } as unknown as TableRecord;
  const pinnedAvro: Record<string, { byteLength: number; sha256: string }> = {
    [V4_LZ4]: { byteLength: 131023, sha256: '55d8fa5d24055b7cebdaea106e0be95b36330421b7780ee70a98701e87dc041f' },
    [V3_LZ4]: { byteLength: 131023, sha256: '4fbf6af29a212260b65eb43d7bdad826ffedb6272505c393458dc2bb8bbd02e7' },
    [V2_LZ4]: { byteLength: 131023, sha256: '07810e19031f48810c1703fec763dd6903a2452bb57a5092455ebb02c4edb877' },
  };
  it.each([V4_LZ4, V3_LZ4, V2_LZ4])('%s', (version) => {
    const f = encodeFile(table, schema, 2, records, version);
    expect(golden(f.bytes, f.sha256)).toEqual(pinnedAvro[version]);
  });
});
