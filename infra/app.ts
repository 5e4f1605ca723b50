/**
 * The CDK app (`cdk synth`, `cdk deploy` run infra/main.ts through tsx). Settings come from
 * context: see infra/config.ts and the README's "Deploying to AWS".
 */
import { App } from 'aws-cdk-lib';
import { settingsFromContext } from './config.js';
import { OffsetlakeStack } from './stack.js';

export function offsetlakeApp(app = new App()): { app: App; stack: OffsetlakeStack } {
  const stack = new OffsetlakeStack(app, app.node.tryGetContext('stackName') ?? 'Offsetlake', {
    settings: settingsFromContext((key) => app.node.tryGetContext(key)),
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
    description: 'offsetlake: Kafka topics as lakehouse tables without copying them',
  });
  return { app, stack };
}
