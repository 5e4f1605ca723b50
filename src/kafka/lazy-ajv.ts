/**
 * ajv's Ajv2020 for the Kafka client's bundles, compiling each schema when its validator
 * is first called instead of when it is made.
 *
 * @platformatic/kafka makes a validator for every option of every client (about 40
 * schemas) when its modules load, and calls one only for a client created with
 * `strict: true`; offsetlake never passes `strict`, so none is ever called. Compiling
 * them cost ~0.7 CPU s at each start of a CLI process that reads Kafka (`run`, `serve`):
 * an eighth of indexing a 0.2 GiB topic (docs/measurements.md, "Cost"). The bundles (bin/offsetlake.js, infra/stack.ts) put this module in place of
 * `ajv/dist/2020.js` for the client's import; a validator that is called behaves as
 * ajv's own, errors included (test/unit/kafka-lazy-ajv.test.ts).
 *
 * Pinned with the client (ajv 8.20.0, @platformatic/kafka 2.12.1): `compile` is ajv's
 * public API, but that nothing else compiles at load time is the client's internals.
 */
// Not 'ajv/dist/2020.js', the specifier the bundles map to this module (src/kafka/ajv-2020.d.ts)
import { Ajv2020 as EagerAjv2020 } from 'ajv/dist/2020';
import type { AnySchema, AnyValidateFunction } from 'ajv/dist/core.js';

export class Ajv2020 extends EagerAjv2020 {
  // `never` stands for every overload's return type: the validator is ajv's own kind, made lazily
  override compile(schema: AnySchema, meta?: boolean): never {
    let compiled: AnyValidateFunction | undefined;
    const eager = (): AnyValidateFunction => (compiled ??= super.compile(schema, meta));
    const validate = function (this: unknown, ...args: unknown[]): unknown {
      const inner = eager();
      const verdict = (inner as (...a: unknown[]) => unknown).apply(this, args);
      validate.errors = inner.errors;
      return verdict;
    } as unknown as AnyValidateFunction & { errors: AnyValidateFunction['errors'] };
    validate.errors = null;
    Object.defineProperty(validate, 'schema', { value: schema, enumerable: true });
    return validate as never;
  }
}

export default Ajv2020;
