/**
 * The state machines' definitions (backfill, index backfill) exactly as CDK synthesizes them, for running
 * locally: the app is synthesized in-process (from cdk.json's context, asset bundling
 * skipped: the definition does not depend on the code), and the template's
 * DefinitionString (an Fn::Join of text and tokens) is resolved with local values:
 * each Lambda's `Fn::GetAtt [id, Arn]` becomes a local function ARN named after the
 * resource, `Ref AWS::Partition` becomes `aws`. The local runner overrides every Task by
 * state name, so these ARNs are never called.
 */
import { App } from 'aws-cdk-lib';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offsetlakeApp } from './app.js';
import { projectRoot } from './root.js';

const root = projectRoot();
const localRegion = 'us-east-1';
const localAccount = '000000000000';

export interface SynthesizedBackfill {
  /** The Amazon States Language definition, parsed. */
  definition: Record<string, unknown>;
  /** The deployed machine's ARN, with the local region and account. */
  stateMachineArn: string;
  stateMachineName: string;
}

type Token = string | { 'Fn::GetAtt'?: [string, string]; Ref?: string };

function resolvePart(part: Token): string {
  if (typeof part === 'string') return part;
  if (part['Fn::GetAtt']) return `arn:aws:lambda:${localRegion}:${localAccount}:function:${part['Fn::GetAtt'][0]}`;
  if (part.Ref === 'AWS::Partition') return 'aws';
  if (part.Ref === 'AWS::Region') return localRegion;
  if (part.Ref === 'AWS::AccountId') return localAccount;
  throw new Error(`backfill definition: cannot resolve the token ${JSON.stringify(part)} locally`);
}

/** DefinitionString is either a string or {"Fn::Join": ["", [parts…]]}. */
export function resolveDefinitionString(value: unknown): string {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, Token[]] })['Fn::Join'];
  if (!join) throw new Error(`backfill definition: DefinitionString is neither a string nor an Fn::Join: ${JSON.stringify(value).slice(0, 200)}`);
  return join[1].map(resolvePart).join(join[0]);
}

/** Synthesizes the app and returns the backfill state machine's definition. */
export function synthesizeBackfillDefinition(): SynthesizedBackfill {
  return synthesizeDefinition('BackfillMachine');
}

/** Synthesizes the app and returns the index backfill state machine's definition. */
export function synthesizeIndexBackfillDefinition(): SynthesizedBackfill {
  return synthesizeDefinition('IndexBackfillMachine');
}

/** The definition of the state machine made by the stack's construct `constructId` (its resource's logical id starts with it). */
function synthesizeDefinition(constructId: string): SynthesizedBackfill {
  const cdkJson = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
  const outdir = mkdtempSync(join(tmpdir(), 'offsetlake-cdk-'));
  try {
    const app = new App({ outdir, context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
    const { stack } = offsetlakeApp(app);
    const template = app.synth().getStackByName(stack.stackName).template as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
    const machines = Object.entries(template.Resources)
      .filter(([logicalId, resource]) => resource.Type === 'AWS::StepFunctions::StateMachine' && logicalId.startsWith(`${constructId}StateMachine`));
    if (machines.length !== 1) throw new Error(`state machine definition: expected one state machine of ${constructId} in the template, found ${machines.length}`);
    const properties = machines[0]![1].Properties;
    const stateMachineName = String(properties.StateMachineName);
    return {
      definition: JSON.parse(resolveDefinitionString(properties.DefinitionString)) as Record<string, unknown>,
      stateMachineName,
      stateMachineArn: `arn:aws:states:${localRegion}:${localAccount}:stateMachine:${stateMachineName}`,
    };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
