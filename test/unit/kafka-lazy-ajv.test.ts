/**
 * The Kafka client's option validators compiled on first call (src/kafka/lazy-ajv.ts):
 * nothing is compiled when a validator is made, and a validator that is called answers
 * as ajv's own compiled at load time. The reference is the client unbundled (ajv's eager
 * compile); the lazy one is the client bundled by esbuild with 'ajv/dist/2020.js' mapped
 * to the shim, as bin/offsetlake.js and infra/stack.ts bundle it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { Ajv2020 as EagerAjv2020 } from 'ajv/dist/2020.js';
import * as eagerClient from '@platformatic/kafka';
import { Ajv2020 as LazyAjv2020 } from '../../src/kafka/lazy-ajv.js';
import { bundleAliases } from '../../bin/bundle-aliases.js';

type Validator = ((data: unknown) => boolean) & { errors?: unknown[] | null };
type Client = Record<string, unknown> & { ajv: { errorsText(errors: unknown): string } };

const scratch = mkdtempSync(join(tmpdir(), 'offsetlake-lazy-ajv-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function lazyClient(): Promise<Client> {
  const outfile = join(scratch, 'client.mjs');
  const root = resolve(import.meta.dirname, '../..');
  writeFileSync(join(scratch, 'entry.mjs'), "export * from '@platformatic/kafka';");
  await build({
    entryPoints: [join(scratch, 'entry.mjs')],
    bundle: true, platform: 'node', format: 'esm', target: 'node22', logLevel: 'silent', outfile,
    nodePaths: [join(root, 'node_modules')],
    // wasm-utils' bundled entry carries its wasm inline, as the Lambda bundles take it
    alias: { ...bundleAliases(root), '@platformatic/wasm-utils': '@platformatic/wasm-utils/bundled' },
    banner: { js: "import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url);" },
  });
  return (await import(pathToFileURL(outfile).href)) as Client;
}

describe('the Kafka client validators, compiled on first call', () => {
  it('makes a validator without compiling its schema: a schema ajv refuses fails only when the validator is first called, with ajv\'s own message', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, notAKeyword: true };
    let eagerMessage = '';
    try {
      new EagerAjv2020({ strict: true }).compile(schema);
    } catch (error) {
      eagerMessage = (error as Error).message;
    }
    expect(eagerMessage).toContain('notAKeyword');
    const validate = new LazyAjv2020({ strict: true }).compile(schema) as unknown as Validator;
    expect(() => validate({ a: 'x' })).toThrow(eagerMessage);
  });

  it('answers every option validator of the client as ajv compiled at load time does, verdicts and error texts', async () => {
    const lazy = await lazyClient();
    const eager = eagerClient as unknown as Client;
    // the bundle's ajv is the shim (its class has a compile of its own), the reference ajv's
    expect(Object.hasOwn(Object.getPrototypeOf(lazy.ajv), 'compile')).toBe(true);
    expect(Object.hasOwn(Object.getPrototypeOf(eager.ajv), 'compile')).toBe(false);
    const names = Object.keys(eager).filter((name) => name.endsWith('Validator') && typeof eager[name] === 'function');
    expect(names.length).toBeGreaterThan(30);
    const inputs: unknown[] = [
      {}, null, 42, 'text', [],
      { clientId: 'offsetlake', bootstrapBrokers: ['127.0.0.1:9092'], retries: 3, retryDelay: 250, timeout: 1000 },
      { clientId: 'has space', bootstrapBrokers: [{ host: 'h', port: 70000 }], retries: -1 },
      { topics: ['t'], partitions: 1, replicas: 1 }, { topics: [1] },
      { groupId: 'g', topics: ['t'], maxWaitTime: 10 }, { groupId: '' },
    ];
    for (const name of names) {
      const reference = eager[name] as Validator;
      const validate = lazy[name] as Validator;
      expect(typeof validate, name).toBe('function');
      for (const input of inputs) {
        const verdict = validate(input);
        expect(verdict, `${name} on ${JSON.stringify(input)}`).toBe(reference(input));
        expect(lazy.ajv.errorsText(validate.errors), `${name} on ${JSON.stringify(input)}`).toBe(eager.ajv.errorsText(reference.errors));
      }
    }
  });
});
