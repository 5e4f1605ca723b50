/**
 * A gzip or zstd batch read whole through `zlibDecompress` (src/kafka/unreadable-batch.ts:
 * every frame, counted against its limit) against Node's `gunzipSync` / `zstdDecompressSync`
 * with `maxOutputLength`, which the read used before issue 48 (and which stops at the end of
 * the first zstd frame that leaves room in its 16 KiB chunk), on one frame of JSON lines of
 * 16 KiB, 256 KiB and ~1 MiB, in one process, alternating:
 *
 *   npx node --import tsx bench/zlib-decompress.ts [rounds=15]
 *
 * Prints, per codec and size, the median (and range) over the rounds of ours / Node's in
 * CPU time of this process (user + system), which a loaded machine disturbs less than wall time.
 */
import * as zlib from 'node:zlib';
import { zlibDecompress } from '../src/kafka/batch-codecs.js';

const rounds = Number(process.argv[2] ?? 15);
const json = Buffer.from(Array.from({ length: 16000 }, (_, i) => `{"id":${i},"name":"user ${i % 977}","score":${(i * 7919) % 10007},"tags":["a","b${i % 13}"]}`).join('\n'));
const cpu = (work: () => void): number => {
  const before = process.cpuUsage();
  work();
  const used = process.cpuUsage(before);
  return used.user + used.system;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const codecs = [['zstd', 4, zlib.zstdCompressSync, zlib.zstdDecompressSync], ['gzip', 1, zlib.gzipSync, zlib.gunzipSync]] as const;

for (const size of [16 << 10, 256 << 10, json.length]) {
  for (const [name, codec, compress, nodeDecompress] of codecs) {
    const compressed = compress(json.subarray(0, size));
    const calls = Math.max(10, Math.floor(20e6 / size));
    const ratios: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const node = cpu(() => { for (let i = 0; i < calls; i++) nodeDecompress(compressed, { maxOutputLength: 2 ** 31 - 1 }); });
      const ours = cpu(() => { for (let i = 0; i < calls; i++) zlibDecompress(codec, compressed, 2 ** 31 - 1); });
      ratios.push(ours / node);
    }
    console.log(`${name} ${size} bytes: ours / Node's CPU time, median ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}) over ${rounds} rounds of ${calls} calls`);
  }
}
