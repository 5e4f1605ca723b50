/**
 * README "Your own topic in three commands": the block marked `<!-- tested: own-topic -->`
 * is run by bash as written, with one string changed: the name `clicks` (topic and table)
 * becomes the test's own, since every test file shares the broker. The catalog is a fresh
 * database, so `run --once` indexes this table alone. What `query` prints is checked
 * against the two records the README's own lines write, not against anything of ours.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/database.js';
import { testedBlock } from '../helpers/docs-blocks.js';

const block = testedBlock('README.md', 'own-topic');

let database: { url: string; drop: () => Promise<void> };

beforeAll(async () => {
  database = await freshDatabase('readme_topic');
}, 60_000);

afterAll(async () => {
  await database?.drop();
});

function bash(script: string, env: Record<string, string>): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile('bash', ['-euo', 'pipefail', '-s'], { env: { ...process.env, ...env }, timeout: 300_000, cwd: new URL('../..', import.meta.url).pathname }, (error, stdout, stderr) =>
      error ? reject(new Error(`${stderr || error.message}\n${script}`)) : resolve({ stdout, stderr }),
    );
    child.stdin!.end(script);
  });
}

describe('README "Your own topic in three commands", as written', () => {
  it('is marked in the README', () => {
    expect(block).toContain('npx offsetlake topic create clicks --partitions 3');
  });

  it('topic create, table create, produce, run --once and query: the query prints the two records the README writes, with their page and the timestamp given', async () => {
    const name = `clicks_${randomUUID().replaceAll('-', '').slice(0, 8)}`;
    const { stdout } = await bash(block!.replace(/\bclicks\b/g, name), { DATABASE_URL: database.url });
    const lines = stdout.trim().split('\n');
    const header = lines.findIndex((line) => /^_key\s+page\s+_timestamp$/.test(line));
    expect(header).toBeGreaterThanOrEqual(0);
    const rows = lines.slice(header + 1).sort();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(/^u1\s+\/home\s+2025-06-01 12:00:00\+00$/);
    // written without a timestamp: the time it was produced, in UTC
    expect(rows[1]).toMatch(/^u2\s+\/cart\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?\+00$/);
  }, 300_000);
});
