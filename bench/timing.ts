import { performance } from 'node:perf_hooks';
import type { RangeBuilder } from '../src/build/files.js';

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
