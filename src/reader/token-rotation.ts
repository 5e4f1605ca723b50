/**
 * Rotation of the reader's bearer token (AWS: the secret ReaderToken, every 30 days,
 * functions/rotate-token), in Secrets Manager's four steps. The token is held by the
 * reader and the engines only, so there is nothing to set anywhere: the new token is
 * made (createSecret), checked to be one (testSecret) and made current (finishSecret).
 * The reader accepts the previous token for a grace period after (readerTokenGraceMs),
 * so engines have that long to take the new one from the secret.
 */
import { randomInt } from 'node:crypto';

export type RotationStep = 'createSecret' | 'setSecret' | 'testSecret' | 'finishSecret';

export interface RotationEvent {
  Step: RotationStep;
  SecretId: string;
  ClientRequestToken: string;
}

/** The parts of Secrets Manager a rotation uses (functions/rotate-token gives the SDK's). */
export interface TokenSecretStore {
  /** Whether rotation is on, and each version's stages. */
  describe(secretId: string): Promise<{ rotationEnabled: boolean; versions: Record<string, string[]> }>;
  /** The version's SecretString, or undefined when there is no such version at that stage. */
  value(secretId: string, version: { versionId?: string; stage: string }): Promise<string | undefined>;
  putPending(secretId: string, versionId: string, secretString: string): Promise<void>;
  /** Moves AWSCURRENT to `versionId` from `fromVersionId` (which becomes AWSPREVIOUS). */
  makeCurrent(secretId: string, versionId: string, fromVersionId: string): Promise<void>;
}

/** What infra/shared-resources.ts generates at first: 40 letters and digits. */
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const readerTokenLength = 40;

/** The time after a rotation during which the reader still accepts the token before it. */
export const readerTokenGraceMs = 24 * 60 * 60 * 1000;

export function newReaderToken(): string {
  // randomInt draws without modulo bias.
  return Array.from({ length: readerTokenLength }, () => alphabet[randomInt(alphabet.length)]).join('');
}

/** The `token` of a reader token secret's SecretString, or an error naming what is wrong. */
export function tokenOf(secretString: string | undefined, what: string): string {
  const token = secretString === undefined ? undefined : (JSON.parse(secretString) as { token?: unknown }).token;
  if (typeof token !== 'string' || token === '') throw new Error(`${what} has no "token"`);
  return token;
}

export async function rotateReaderToken(store: TokenSecretStore, event: RotationEvent): Promise<void> {
  const { Step: step, SecretId: secretId, ClientRequestToken: versionId } = event;
  const { rotationEnabled, versions } = await store.describe(secretId);
  if (!rotationEnabled) throw new Error(`secret ${secretId} does not have rotation enabled`);
  const stages = versions[versionId];
  if (!stages) throw new Error(`secret ${secretId} has no version ${versionId} to rotate to`);
  // A step Secrets Manager calls again after it was done changes nothing.
  if (stages.includes('AWSCURRENT')) return;
  if (!stages.includes('AWSPENDING')) throw new Error(`version ${versionId} of secret ${secretId} is not AWSPENDING`);

  if (step === 'createSecret') {
    tokenOf(await store.value(secretId, { stage: 'AWSCURRENT' }), `the current version of ${secretId}`);
    if (await store.value(secretId, { versionId, stage: 'AWSPENDING' }) !== undefined) return;
    await store.putPending(secretId, versionId, JSON.stringify({ token: newReaderToken() }));
  } else if (step === 'setSecret') {
    // Nothing else holds the token: the reader reads it from the secret.
  } else if (step === 'testSecret') {
    const token = tokenOf(await store.value(secretId, { versionId, stage: 'AWSPENDING' }), `version ${versionId} of ${secretId}`);
    if (!/^[A-Za-z0-9]+$/.test(token) || token.length < readerTokenLength) throw new Error(`version ${versionId} of ${secretId} is not a ${readerTokenLength}-character token`);
  } else if (step === 'finishSecret') {
    const current = Object.entries(versions).find(([, s]) => s.includes('AWSCURRENT'))?.[0];
    if (!current) throw new Error(`secret ${secretId} has no AWSCURRENT version`);
    await store.makeCurrent(secretId, versionId, current);
  } else {
    throw new Error(`unknown rotation step "${String(step)}"`);
  }
}
