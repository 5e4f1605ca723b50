import { describe, expect, it } from 'vitest';
import { readerTokens } from '../../functions/connections.js';
import { newReaderToken, readerTokenGraceMs, rotateReaderToken, type RotationEvent, type TokenSecretStore } from '../../src/reader/token-rotation.js';

/** Secrets Manager's versions and stages of one secret, in memory. */
function memoryStore(current: string) {
  const values = new Map<string, string>([['v1', JSON.stringify({ token: current })]]);
  const stages = new Map<string, string[]>([['v1', ['AWSCURRENT']]]);
  let rotationEnabled = true;
  const store: TokenSecretStore = {
    async describe() { return { rotationEnabled, versions: Object.fromEntries(stages) }; },
    async value(_id, { versionId, stage }) {
      const id = versionId ?? [...stages].find(([, s]) => s.includes(stage))?.[0];
      return id !== undefined && stages.get(id)?.includes(stage) ? values.get(id) : undefined;
    },
    async putPending(_id, versionId, secretString) { values.set(versionId, secretString); },
    async makeCurrent(_id, versionId, from) {
      for (const [id, s] of stages) stages.set(id, s.filter((x) => x !== 'AWSPREVIOUS'));
      stages.set(from, [...stages.get(from)!.filter((x) => x !== 'AWSCURRENT'), 'AWSPREVIOUS']);
      stages.set(versionId, [...stages.get(versionId)!.filter((x) => x !== 'AWSPENDING'), 'AWSCURRENT']);
    },
  };
  // What Secrets Manager does before calling createSecret: the new version id is AWSPENDING.
  const begin = (versionId: string) => stages.set(versionId, ['AWSPENDING']);
  return { store, values, stages, begin, disable: () => { rotationEnabled = false; } };
}

const step = (Step: RotationEvent['Step'], ClientRequestToken = 'v2'): RotationEvent => ({ Step, SecretId: 'arn:token', ClientRequestToken });

describe('the reader token\'s rotation (src/reader/token-rotation.ts)', () => {
  it('the four steps make a new 40-character token current and the old one previous; each step run again changes nothing', async () => {
    const { store, values, stages, begin } = memoryStore('old-token');
    begin('v2');
    for (const s of ['createSecret', 'createSecret', 'setSecret', 'testSecret', 'finishSecret', 'finishSecret'] as const) await rotateReaderToken(store, step(s));
    const token = (JSON.parse(values.get('v2')!) as { token: string }).token;
    expect(token).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(token).not.toBe('old-token');
    expect(Object.fromEntries(stages)).toEqual({ v1: ['AWSPREVIOUS'], v2: ['AWSCURRENT'] });
  });

  it('refuses a secret without rotation, a version it was not given, and a version that is not pending', async () => {
    const disabled = memoryStore('t');
    disabled.begin('v2');
    disabled.disable();
    await expect(rotateReaderToken(disabled.store, step('createSecret'))).rejects.toThrow('does not have rotation enabled');
    const { store, stages } = memoryStore('t');
    await expect(rotateReaderToken(store, step('createSecret'))).rejects.toThrow('has no version v2');
    stages.set('v2', []);
    await expect(rotateReaderToken(store, step('createSecret'))).rejects.toThrow('is not AWSPENDING');
  });

  it('testSecret refuses a pending version that is no token', async () => {
    const { store, values, begin } = memoryStore('t');
    begin('v2');
    values.set('v2', JSON.stringify({ token: 'short' }));
    await expect(rotateReaderToken(store, step('testSecret'))).rejects.toThrow('is not a 40-character token');
  });

  it('new tokens are letters and digits, and differ', () => {
    expect(newReaderToken()).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(newReaderToken()).not.toBe(newReaderToken());
  });
});

describe('the tokens the reader accepts (functions/connections.ts readerTokens)', () => {
  const now = Date.parse('2026-06-01T12:00:00Z');
  const secret = (currentAge: number, previous = true) => async (_arn: string, stage: 'AWSCURRENT' | 'AWSPREVIOUS') =>
    stage === 'AWSCURRENT' ? { value: { token: 'new' }, created: new Date(now - currentAge) } : previous ? { value: { token: 'old' }, created: new Date(now - 40 * 86_400_000) } : undefined;

  it('the current token and, within a day of its rotation, the one before; after that the current one only', async () => {
    const env = { OFFSETLAKE_TOKEN_SECRET_ARN: 'arn:token' };
    expect(await readerTokens(env, readerTokenGraceMs, secret(60_000), () => now)).toEqual(['new', 'old']);
    expect(await readerTokens(env, readerTokenGraceMs, secret(readerTokenGraceMs), () => now)).toEqual(['new']);
    expect(await readerTokens(env, readerTokenGraceMs, secret(60_000, false), () => now)).toEqual(['new']);
  });

  it('OFFSETLAKE_TOKEN as it is; neither set: null', async () => {
    expect(await readerTokens({ OFFSETLAKE_TOKEN: 'fixed' }, readerTokenGraceMs)).toEqual(['fixed']);
    expect(await readerTokens({}, readerTokenGraceMs)).toBeNull();
  });
});

describe('the reader\'s token check with more than one token accepted (src/reader/http.ts)', () => {
  it('authorizationRefusal passes any of the tokens and refuses another, before any I/O', async () => {
    const { authorizationRefusal } = await import('../../src/reader/http.js');
    const request = (token: string) => ({ method: 'GET', path: '/tables', headers: { authorization: `Bearer ${token}` } });
    expect(authorizationRefusal(request('new'), ['new', 'old'])).toBeNull();
    expect(authorizationRefusal(request('old'), ['new', 'old'])).toBeNull();
    expect(authorizationRefusal(request('other'), ['new', 'old'])?.status).toBe(401);
    expect(authorizationRefusal(request('other'), [])?.status).toBe(401);
    expect(authorizationRefusal(request('new'), 'new')).toBeNull();
  });
});
