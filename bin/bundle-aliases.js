/**
 * Modules every bundle of offsetlake maps to others: the CLI's (bin/offsetlake.js), the
 * Lambda functions' (infra/stack.ts) and the test that holds the mapping to the original
 * (test/unit/kafka-lazy-ajv.test.ts). One list, so that they cannot drift apart.
 * Plain JavaScript: bin/offsetlake.js runs before anything is compiled.
 */
import { join } from 'node:path';

/** esbuild's `alias` for a bundle made from the repository at `root`. */
export function bundleAliases(root) {
  return {
    // the Kafka client's option validators compiled when first called, not at every start
    'ajv/dist/2020.js': join(root, 'src', 'kafka', 'lazy-ajv.ts'),
  };
}
