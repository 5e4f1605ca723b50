/**
 * The CDK app (`cdk synth`, `cdk deploy` run infra/main.ts through tsx). Settings come from
 * context: see infra/config.ts and docs/aws.md, "Deploying to AWS". With
 * `-c localstackCore=true` the app is the part LocalStack runs without Docker or its paid
 * tier (infra/localstack.ts), under the same stack name.
 */
import { App } from 'aws-cdk-lib';
import { localstackCoreFromContext, settingsFromContext } from './config.js';
import { LocalstackCoreStack } from './localstack.js';
import { OffsetlakeStack } from './stack.js';

export function offsetlakeApp(app = new App()): { app: App; stack: OffsetlakeStack | LocalstackCoreStack } {
  const context = (key: string): unknown => app.node.tryGetContext(key);
  const props = {
    settings: settingsFromContext(context),
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
    description: 'offsetlake: Kafka topics as lakehouse tables without copying them',
  };
  const stackName = app.node.tryGetContext('stackName') ?? 'Offsetlake';
  const stack = localstackCoreFromContext(context) ? new LocalstackCoreStack(app, stackName, props) : new OffsetlakeStack(app, stackName, props);
  return { app, stack };
}
