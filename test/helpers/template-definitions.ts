/**
 * State machine definitions as a CloudFormation template holds them: DefinitionString is a
 * string or an Fn::Join of text and tokens, which these helpers resolve as a deployment
 * would, with values of the caller's (a Lambda's `Fn::GetAtt [id, Arn]`, `Ref
 * AWS::Partition`, AWS::Region, AWS::AccountId). `cdkSynth` runs the real `cdk synth` (the
 * CDK CLI, the app in cdk.json).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../infra/root.js';

const run = promisify(execFile);
const root = projectRoot();

type Token = string | { 'Fn::GetAtt'?: [string, string]; Ref?: string };

export interface TokenValues {
  /** The ARN of the function whose logical id is `logicalId` (default: a local function ARN named after it). */
  functionArn?: (logicalId: string) => string;
  partition?: string;
  region?: string;
  account?: string;
}

/** DefinitionString (a string or {"Fn::Join": ["", [parts…]]}) with its tokens replaced by `values`. */
export function resolveDefinitionString(value: unknown, values: TokenValues = {}): string {
  const region = values.region ?? 'us-east-1';
  const account = values.account ?? '000000000000';
  const resolvePart = (part: Token): string => {
    if (typeof part === 'string') return part;
    const getAtt = part['Fn::GetAtt'];
    if (getAtt && getAtt[1] === 'Arn') return values.functionArn ? values.functionArn(getAtt[0]) : `arn:aws:lambda:${region}:${account}:function:${getAtt[0]}`;
    if (part.Ref === 'AWS::Partition') return values.partition ?? 'aws';
    if (part.Ref === 'AWS::Region') return region;
    if (part.Ref === 'AWS::AccountId') return account;
    throw new Error(`state machine definition: cannot resolve the token ${JSON.stringify(part)}`);
  };
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, Token[]] })['Fn::Join'];
  if (!join) throw new Error(`state machine definition: DefinitionString is neither a string nor an Fn::Join: ${JSON.stringify(value).slice(0, 200)}`);
  return join[1].map(resolvePart).join(join[0]);
}

export interface TemplateResource {
  Type: string;
  Properties: Record<string, unknown>;
}

export interface SynthesizedStack<Resource = TemplateResource> {
  stackName: string;
  template: { Resources: Record<string, Resource> };
}

/** `cdk synth` of the app in cdk.json (its context, plus `context` as `-c key=value`) into `outDir` (bundling with the local esbuild): the one stack and its template. */
export async function cdkSynth<Resource = TemplateResource>(outDir: string, context: Record<string, string> = {}): Promise<SynthesizedStack<Resource>> {
  const node22 = join(root, 'node_modules', '.bin', 'node');
  const contextArgs = Object.entries(context).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
  await run(node22, [join(root, 'node_modules', 'aws-cdk', 'bin', 'cdk'), 'synth', '--quiet', '--no-notices', ...contextArgs, '-o', outDir], {
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
  return { stackName, template: JSON.parse(readFileSync(join(outDir, stack.properties!.templateFile!), 'utf8')) as SynthesizedStack<Resource>['template'] };
}
