/**
 * docs/observability.md, "Scraping serve and run": the block marked
 * `<!-- tested: observability-scrape -->` is run by bash as written, with its two ports
 * (8642, 9464) changed to free ones, on a catalog of its own. Its two processes stay in
 * the background as the page says; the test ends them by their process group. What curl
 * printed is read by prometheus_client's parser and JSON.parse, and every line the
 * processes logged must be a JSON object.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../helpers/database.js';
import { testedBlock } from '../helpers/docs-blocks.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { closedPort } from '../helpers/ports.js';

const block = testedBlock('docs/observability.md', 'observability-scrape');

let database: { url: string; drop: () => Promise<void> };

beforeAll(async () => {
  database = await freshDatabase('docs_observability');
}, 60_000);

afterAll(async () => {
  await database?.drop();
});

describe('docs/observability.md "Scraping serve and run", as written', () => {
  it('serve and run --metrics-port in the background, scraped by curl: Prometheus text, JSON on Accept, run\'s rounds, and JSON log lines', async () => {
    expect(block).toContain('npx offsetlake run --metrics-port 9464 --log-format json &');
    const [servePort, runPort] = [await closedPort(), await closedPort()];
    const script = block!.replaceAll('8642', String(servePort)).replaceAll('9464', String(runPort));
    const child = spawn('bash', ['-euo', 'pipefail', '-s'], { env: { ...process.env, DATABASE_URL: database.url }, cwd: new URL('../..', import.meta.url).pathname, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin!.end(script);
    try {
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code, stderr).toBe(0);
      const [requests, json, rounds] = stdout.trimEnd().split('\n');
      // the readiness probe and this scrape: two requests, counted before the answer
      expect(sampleValue(parseExposition(`${requests}\n`), 'offsetlake_read_requests_total')).toBe(2);
      expect(JSON.parse(json!)).toMatchObject({ requests: 3, bytesServed: 0, lostOffsets: [] });
      expect(sampleValue(parseExposition(`${rounds}\n`), 'offsetlake_run_rounds_total')).toBeGreaterThan(0);
    } finally {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // the group is gone already
      }
    }
    // what the two processes logged until now: JSON objects, time, level and message first
    const lines = stderr.trimEnd().split('\n').filter((line) => line !== '' && !line.startsWith('npm '));
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(Object.keys(JSON.parse(line) as object).slice(0, 3), line).toEqual(['time', 'level', 'message']);
    expect(lines.some((line) => line.includes('"message":"serving http://'))).toBe(true);
    expect(lines.some((line) => line.includes(`metrics at http://127.0.0.1:${runPort}/metrics`))).toBe(true);
  }, 180_000);
});
