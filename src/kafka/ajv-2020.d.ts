// ajv's 2020 module under a second specifier (src/kafka/lazy-ajv.ts imports it so; the
// bundles map 'ajv/dist/2020.js' itself to lazy-ajv.ts): the same file, the same types.
declare module 'ajv/dist/2020' {
  export * from 'ajv/dist/2020.js';
  export { default } from 'ajv/dist/2020.js';
}
