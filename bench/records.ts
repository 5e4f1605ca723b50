/**
 * The records the parquet benches build files from: deterministic, shaped like
 * application events — ~1.1 KB of JSON (ASCII with some 2-, 3- and 4-byte UTF-8), a short
 * key, a header or two; one value in a thousand is truncated JSON (`{"truncated": `).
 */
import type { KafkaRecord } from '../src/kafka/record.js';

export function eventRecords(n: number): KafkaRecord[] {
  let seed = 1;
  const rnd = (): number => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  const words = ['alpha', 'beta', 'gamma', 'delta', 'checkout', 'cart', 'view', 'click', 'search', 'login', 'ünïcødé', '日本語', '😀emoji', 'shipping', 'payment'];
  const pick = (k: number): string => words[Math.floor(rnd() * k)]!;
  const utf8 = new TextEncoder();
  const t0 = 1_700_000_000_000;
  return Array.from({ length: n }, (_, i) => {
    const user = Math.floor(rnd() * 50_000);
    const event = {
      id: `evt-${i}-${Math.floor(rnd() * 1e9)}`,
      type: pick(10),
      user: { id: user, name: `user ${user}`, tier: ['free', 'pro', 'ent'][user % 3], country: ['DE', 'US', 'JP', 'BR'][user % 4] },
      ts: new Date(t0 + i * 10).toISOString(),
      amount: Math.round(rnd() * 100_000) / 100,
      items: Array.from({ length: 1 + Math.floor(rnd() * 5) }, (_, k) => ({ sku: `SKU-${Math.floor(rnd() * 10_000)}`, qty: 1 + (k % 3), price: Math.round(rnd() * 10_000) / 100 })),
      tags: [pick(words.length), pick(words.length), pick(words.length)],
      note: Array.from({ length: 80 + Math.floor(rnd() * 60) }, () => pick(words.length)).join(' '),
    };
    const headers: [string, Uint8Array | null][] =
      i % 4 === 0 ? [] : [['trace-id', utf8.encode(Math.floor(rnd() * 1e12).toString(16))], ...(i % 3 === 0 ? [['source', null] as [string, null]] : [])];
    return {
      offset: BigInt(1_000_000 + i),
      timestamp: t0 + i * 10 + Math.floor(rnd() * 50),
      key: i % 50 === 0 ? null : utf8.encode(`user-${user}`),
      value: utf8.encode(i % 1000 === 7 ? '{"truncated": ' : JSON.stringify(event)),
      headers,
    };
  });
}
