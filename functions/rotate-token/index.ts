/**
 * Secrets Manager's rotation function for the reader's bearer token (infra/stack.ts):
 * each of the four steps is the engine's (src/reader/token-rotation.ts), on the SDK's
 * client. It touches nothing but that secret, so it runs outside the VPC.
 */
import {
  DescribeSecretCommand, GetSecretValueCommand, PutSecretValueCommand, ResourceNotFoundException, SecretsManagerClient, UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import { rotateReaderToken, type RotationEvent, type TokenSecretStore } from '../../src/reader/token-rotation.js';
import { logger, observed } from '../observability.js';

const client = new SecretsManagerClient({});

const store: TokenSecretStore = {
  async describe(secretId) {
    const described = await client.send(new DescribeSecretCommand({ SecretId: secretId }));
    return { rotationEnabled: described.RotationEnabled === true, versions: described.VersionIdsToStages ?? {} };
  },
  async value(secretId, { versionId, stage }) {
    try {
      return (await client.send(new GetSecretValueCommand({ SecretId: secretId, VersionStage: stage, ...(versionId ? { VersionId: versionId } : {}) }))).SecretString;
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return undefined;
      throw error;
    }
  },
  async putPending(secretId, versionId, secretString) {
    await client.send(new PutSecretValueCommand({ SecretId: secretId, ClientRequestToken: versionId, SecretString: secretString, VersionStages: ['AWSPENDING'] }));
  },
  async makeCurrent(secretId, versionId, fromVersionId) {
    await client.send(new UpdateSecretVersionStageCommand({ SecretId: secretId, VersionStage: 'AWSCURRENT', MoveToVersionId: versionId, RemoveFromVersionId: fromVersionId }));
  },
};

export const handler = observed('rotate-token', async (event: RotationEvent): Promise<void> => {
  await rotateReaderToken(store, event);
  logger.info('reader token rotation', { step: event.Step, version: event.ClientRequestToken });
}, 'rotate-token');
