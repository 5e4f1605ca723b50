/**
 * The definitions the local runner executes are the ones that deploy: what `cdk synth`
 * (the CDK CLI, run on the app in cdk.json) writes into the template as each state
 * machine's DefinitionString, its tokens resolved to the local run's placeholders (each
 * function's `Fn::GetAtt [id, Arn]` to the placeholder of the function it is, `Ref
 * AWS::Partition` to `aws`), equals src/'s definition with those placeholders, compared
 * as parsed JSON. A change to the definition that only the local runner sees, or to the
 * stack's wrapping that only the deployment sees, fails here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localBackfillMachine } from '../../src/backfill/definition.js';
import { localIndexBackfillMachine } from '../../src/index-backfill/definition.js';
import { localTargets } from '../../src/state-machines/asl.js';
import { cdkSynth, resolveDefinitionString, type SynthesizedStack } from '../helpers/template-definitions.js';

const outDir = mkdtempSync(join(tmpdir(), 'offsetlake-synth-'));
let synthesized: SynthesizedStack;

beforeAll(async () => {
  synthesized = await cdkSynth(outDir);
}, 300_000);

afterAll(() => rmSync(outDir, { recursive: true, force: true }));

/** The template's state machine `<stack>-<suffix>`: its definition with the function `functionId` (a logical id `<functionId><hash>`) as `placeholder`. */
function deployedDefinition(suffix: string, functionId: string, placeholder: string): unknown {
  const machines = Object.values(synthesized.template.Resources)
    .filter((resource) => resource.Type === 'AWS::StepFunctions::StateMachine' && resource.Properties.StateMachineName === `${synthesized.stackName}-${suffix}`);
  expect(machines).toHaveLength(1);
  const functionArn = (logicalId: string): string => {
    if (!new RegExp(`^${functionId}[0-9A-F]{8}$`).test(logicalId)) throw new Error(`the ${suffix} machine invokes ${logicalId}, not the ${functionId} function`);
    return placeholder;
  };
  return JSON.parse(resolveDefinitionString(machines[0]!.Properties.DefinitionString, { functionArn }));
}

describe('the state machines that deploy are the ones the local runner executes', () => {
  it('backfill: the template\'s definition is src/backfill/definition.ts\'s', () => {
    const local = localBackfillMachine();
    expect(local.stateMachineName).toBe(`${synthesized.stackName}-backfill`);
    expect(deployedDefinition('backfill', 'Backfill', localTargets(['backfill']).functionArns.backfill)).toEqual(local.definition);
  });

  it('index backfill: the template\'s definition is src/index-backfill/definition.ts\'s', () => {
    const local = localIndexBackfillMachine();
    expect(local.stateMachineName).toBe(`${synthesized.stackName}-index-backfill`);
    expect(deployedDefinition('index-backfill', 'IndexBackfill', localTargets(['indexBackfill']).functionArns.indexBackfill)).toEqual(local.definition);
  });
});
