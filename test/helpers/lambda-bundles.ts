/**
 * The Lambda bundles that deploy, exercised as the runtime loads them: `cdk synth` into a
 * folder of its own (never a cdk.out left from before), each function's asset found
 * through the synthesized template, copied into an empty folder with no node_modules on
 * its path, and imported by Node 22 in a child process that calls `handler` as the
 * nodejs22.x runtime would (one warm instance per run: the events in order).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../infra/root.js';

const run = promisify(execFile);
const root = projectRoot();

/** Node 22, the `node` devDependency: the version of the nodejs22.x runtime the bundles target. */
export const node22 = join(root, 'node_modules', '.bin', 'node');

export const deployedFunctions = ['Indexer', 'Backfill', 'Tick', 'Retention', 'Reader', 'Migrate'] as const;
export type DeployedFunction = (typeof deployedFunctions)[number];

export interface SynthesizedFunction {
  /** The asset folder in the cloud assembly: what `cdk deploy` uploads. */
  assetDir: string;
  /** `Handler` and `Runtime` of the template's function. */
  handler: string;
  runtime: string;
  /** The template's environment variables that are plain text (references to other resources left out). */
  environment: Record<string, string>;
}

interface TemplateResource {
  Type: string;
  Metadata?: Record<string, unknown>;
  Properties?: { Handler?: string; Runtime?: string; Environment?: { Variables?: Record<string, unknown> } };
}

/** `cdk synth` of the app in cdk.json into `outDir` (bundling with the local esbuild); the functions by construct id. */
export async function synthesizeFunctions(outDir: string): Promise<Map<DeployedFunction, SynthesizedFunction>> {
  await run(node22, [join(root, 'node_modules', 'aws-cdk', 'bin', 'cdk'), 'synth', '--quiet', '--no-notices', '-o', outDir], {
    cwd: root,
    // cdk.json's app is `npx tsx infra/main.ts`: Node 22 and tsx come from node_modules/.bin.
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true', PATH: `${dirname(node22)}:${process.env.PATH ?? ''}` },
    maxBuffer: 64 * 1024 * 1024,
    timeout: 240_000,
  }).catch((error: Error & { stderr?: string }) => {
    throw new Error(`cdk synth failed: ${error.stderr || error.message}`);
  });
  const manifest = JSON.parse(readFileSync(join(outDir, 'manifest.json'), 'utf8')) as { artifacts: Record<string, { type: string; properties?: { templateFile?: string } }> };
  const stacks = Object.entries(manifest.artifacts).filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack');
  if (stacks.length !== 1) throw new Error(`the cloud assembly holds ${stacks.length} stacks, expected one`);
  const [stackName, stack] = stacks[0]!;
  const template = JSON.parse(readFileSync(join(outDir, stack.properties!.templateFile!), 'utf8')) as { Resources: Record<string, TemplateResource> };
  const found = new Map<DeployedFunction, SynthesizedFunction>();
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const name = deployedFunctions.find((fn) => resource.Metadata?.['aws:cdk:path'] === `${stackName}/${fn}/Resource`);
    const assetPath = resource.Metadata?.['aws:asset:path'];
    if (!name || typeof assetPath !== 'string') continue;
    const variables = Object.entries(resource.Properties?.Environment?.Variables ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
    found.set(name, { assetDir: join(outDir, assetPath), handler: resource.Properties?.Handler ?? '', runtime: resource.Properties?.Runtime ?? '', environment: Object.fromEntries(variables) });
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

/** What one child process did: its Node version, every package it asked for beyond Node's builtins, and each event's outcome. */
export interface BundleRun {
  node: string;
  outsideModules: string[];
  outcomes: ({ result: unknown } | { error: string })[];
}

// The child: a module-resolution hook (require and import alike) records every specifier
// that is neither a Node builtin nor a file, then the bundle is imported as the runtime
// imports index.mjs and `handler` gets the events in order. It exits when done: the
// catalog and Kafka connections stay open across invocations, as in a warm instance.
const invoker = `
import { isBuiltin, registerHooks } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const [bundle, eventsFile, resultFile] = process.argv.slice(2);
const outsideModules = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (!isBuiltin(specifier) && !/^(file|data):/.test(specifier)) outsideModules.add(specifier);
    return nextResolve(specifier, context);
  },
});
function describe(error, depth = 0) {
  if (!(error instanceof Error) || depth > 8) return String(error);
  const nested = [error.cause, ...(Array.isArray(error.errors) ? error.errors : [])].filter((e) => e !== undefined);
  return [error.stack ?? String(error), ...nested.map((e) => 'caused by: ' + describe(e, depth + 1))].join('\\n');
}
const outcomes = [];
try {
  const { handler } = await import(pathToFileURL(bundle).href);
  for (const event of JSON.parse(readFileSync(eventsFile, 'utf8'))) {
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
writeFileSync(resultFile, JSON.stringify({ node: process.versions.node, outsideModules: [...outsideModules], outcomes }));
process.exit(0);
`;

/** Imports `<dir>/index.mjs` with Node 22 in a child process with exactly `env`, and calls its handler with each event. */
export async function invokeBundle(dir: string, events: unknown[], env: Record<string, string>): Promise<BundleRun> {
  writeFileSync(join(dir, 'invoke.mjs'), invoker);
  writeFileSync(join(dir, 'events.json'), JSON.stringify(events));
  const resultFile = join(dir, 'result.json');
  await run(node22, [join(dir, 'invoke.mjs'), join(dir, 'index.mjs'), join(dir, 'events.json'), resultFile], { cwd: dir, env, maxBuffer: 64 * 1024 * 1024, timeout: 180_000 })
    .catch((error: Error & { stderr?: string }) => {
      throw new Error(`the bundle in ${dir} did not run to the end: ${error.stderr || error.message}`);
    });
  return JSON.parse(readFileSync(resultFile, 'utf8')) as BundleRun;
}
