import { performance } from 'node:perf_hooks';
import type { RangeBuilder } from '../src/files/files.js';
import type { CommittedSource } from '../src/kafka/source.js';

/** The builder, with the wall time of its calls added to `into.build` (ms). */
export function timedBuild(build: RangeBuilder, into: { build: number }): RangeBuilder {
  return async (...args) => {
    const started = performance.now();
    try {
      return await build(...args);
    } finally {
      into.build += performance.now() - started;
    }
  };
}

/**
 * The source, with the wall time of its reads added to `into.read` and of its LSO
 * look-ups to `into.lso` (ms). `onFetch`, if given, hears each Fetch a read made: where
 * it started (the first at `from`, each next one at the previous batch's `nextOffset`)
 * and the bytes it asked for, when the caller said.
 */
export function timedSource(source: CommittedSource, into: { read: number; lso?: number }, onFetch?: (fetch: { from: bigint; fetchBytes: number | undefined }) => void): CommittedSource {
  return {
    async lastStableOffset(topic, partition) {
      const started = performance.now();
      try {
        return await source.lastStableOffset(topic, partition);
      } finally {
        if (into.lso !== undefined) into.lso += performance.now() - started;
      }
    },
    async *read(topic, partition, from, until, options) {
      const iterator = source.read(topic, partition, from, until, options)[Symbol.asyncIterator]();
      let fetchFrom = from;
      for (;;) {
        const started = performance.now();
        const next = await iterator.next();
        into.read += performance.now() - started;
        if (next.done) return;
        onFetch?.({ from: fetchFrom, fetchBytes: options?.fetchBytes });
        fetchFrom = next.value.nextOffset;
        yield next.value;
      }
    },
  };
}
