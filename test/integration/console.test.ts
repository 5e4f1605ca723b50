/**
 * The console (`serve`'s /console) in a real browser: headless Chromium (Debian's package)
 * driven by playwright-core, against `offsetlake serve` and `offsetlake run` as a user
 * starts them, on the real stack. What the page must show comes from outside our code: the
 * offsets and counts from confluent-kafka's own delivery reports, the files from the
 * catalog's rows read here with SQL, the bytes served from what this test received.
 * Screenshots go to .offsetlake/artifacts/console/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import pg from 'pg';
import type { Engine } from '../../src/runtime/engine.js';
import { resolveSettings } from '../../src/table/settings.js';
import { createTableFromTopic } from '../../src/table-topic/create-table.js';
import { newTopic, testEngine } from '../helpers/engine.js';
import { produceWithLibrdkafka, type Delivered } from '../helpers/independent-producers.js';
import { runCli } from '../helpers/cli.js';

const consolePage = readFileSync(new URL('../../docs/console.md', import.meta.url), 'utf8');
/** docs/console.md's way to start serve for the console, run as written (the port made free, the token the test's own). */
const serveBlock = /<!-- tested: console-serve -->\n```sh\n([\s\S]*?)\n```/.exec(consolePage)?.[1];
const chromiumPath = process.env.OFFSETLAKE_CHROMIUM ?? '/usr/bin/chromium';
const artifacts = new URL('../../.offsetlake/artifacts/console/', import.meta.url).pathname;
const token = 'console-token-7f3a9c';
const table = 'console_clicks';

let engine: Engine;
let topic: string;
let browser: Browser;
let serve: ChildProcess | undefined;
let run: ChildProcess | undefined;
let url: string;
/** Every URL any page of the test asked for. */
const requested: string[] = [];

/**
 * A long-lived child on the test's catalog (`offsetlake ARGS…`, or a bash script in a
 * process group of its own); resolves with it and what it said once `ready` matches its stderr.
 */
async function start(args: string[] | { bash: string }, ready: RegExp): Promise<{ child: ChildProcess; said: string }> {
  const env = { ...process.env, DATABASE_URL: engine.config.databaseUrl };
  const child = Array.isArray(args)
    ? spawn(process.execPath, ['bin/offsetlake.js', ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn('bash', ['-euo', 'pipefail', '-c', args.bash], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let said = '';
  for await (const chunk of child.stderr!) {
    said += String(chunk);
    if (ready.test(said)) break;
  }
  if (!ready.test(said)) throw new Error(`${Array.isArray(args) ? `offsetlake ${args[0]}` : args.bash} stopped before it was ready: ${said}`);
  child.stderr!.resume();
  return { child, said };
}

/** Stops a child from `start`: its whole process group when it has one (bash, npx, then serve). */
async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = once(child, 'exit');
  if (child.spawnargs[0] === 'bash') process.kill(-child.pid!, 'SIGTERM');
  else child.kill('SIGTERM');
  await exited;
}

/** Records stamped now, `count` of them, for one partition. */
function records(count: number, from: number) {
  return Array.from({ length: count }, (_, i) => ({ key: Buffer.from(`u${(from + i) % 7}`), value: Buffer.from(JSON.stringify({ page: `/p/${(from + i) % 5}`, n: from + i })), timestamp: Date.now() }));
}

async function produce(partition: number, count: number, from: number): Promise<Delivered> {
  return produceWithLibrdkafka(engine.config.kafkaBrokers, topic, partition, 'none', records(count, from));
}

/** Polls `check` every 250 ms until it holds, for at most `seconds` (a bound on waiting, not a timed assertion). */
async function until(what: string, check: () => Promise<boolean>, seconds = 90): Promise<void> {
  for (const deadline = Date.now() + seconds * 1000; Date.now() < deadline;) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`waited ${seconds} s for ${what}`);
}

/** A browser context that records every URL it requests, and what went wrong: console errors, failed requests, answers of 400 and above. */
async function watchedPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1500, height: 1100 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => { if (message.type() === 'error') problems.push(`console error: ${message.text()}`); });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  context.on('request', (request) => requested.push(request.url()));
  context.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`));
  context.on('response', (response) => { if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`); });
  return { context, page, problems };
}

async function giveToken(page: Page, value: string): Promise<void> {
  await page.locator('#token-input').fill(value);
  await page.locator('#token-form button[type=submit]').click();
}

/** The text of one partition's cell, as the page shows it. */
function cell(page: Page, partition: number, field: string): Promise<string> {
  return page.locator(`article[data-table="${table}"] tr[data-partition="${partition}"] td[data-field="${field}"]`).innerText();
}

/** Rows of the test's catalog, read with plain SQL. */
async function catalogRows<Row extends pg.QueryResultRow>(sql: string, values: unknown[]): Promise<Row[]> {
  const client = new pg.Client({ connectionString: engine.config.databaseUrl });
  await client.connect();
  try {
    return (await client.query<Row>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The lag chart as drawn: its points' y coordinates (SVG units, top is 0). */
async function lagChart(page: Page): Promise<number[]> {
  const points = (await page.locator('#lag-chart polyline').getAttribute('points')) ?? '';
  return points.split(' ').filter(Boolean).map((pair) => Number(pair.split(',')[1]));
}

beforeAll(async () => {
  if (!existsSync(chromiumPath)) {
    throw new Error(`the console test drives a headless Chromium at ${chromiumPath}, which is missing: install Debian's package (as root: apt-get install -y chromium), or point OFFSETLAKE_CHROMIUM at a Chromium binary`);
  }
  mkdirSync(artifacts, { recursive: true });
  engine = await testEngine('console');
  topic = await newTopic(engine, 2, 'console');
  // a short file_window: the open ranges of `run` seal by age within a second or two
  await createTableFromTopic(engine, { name: table, topic, format: 'json', settings: resolveSettings({ file_window: '1s', file_bytes: '4KiB' }) });
  // root cannot run Chromium's sandbox; the page is our own, on loopback
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });
  expect(serveBlock).toContain('npx offsetlake serve --port 8642');
  const served = await start({ bash: serveBlock!.replace('--port 8642', '--port 0').replace('OFFSETLAKE_TOKEN=secret', `OFFSETLAKE_TOKEN=${token}`) }, /Ctrl-C stops/);
  serve = served.child;
  url = /the console (http:\/\/127\.0\.0\.1:\d+\/console)/.exec(served.said)![1]!;
}, 180_000);

afterAll(async () => {
  await Promise.all([stop(run), stop(serve)]);
  await browser?.close();
  await engine?.close();
});

describe('the console in a real browser (headless Chromium)', () => {
  it('asks for the token, refuses a wrong one and says so, accepts the right one; the token is kept in the tab, not in the page address', async () => {
    const { context, page } = await watchedPage();
    try {
      await page.goto(url);
      await expect.poll(() => page.locator('#token-form').isVisible()).toBe(true);
      expect(await page.locator('#content').isVisible()).toBe(false);
      await giveToken(page, 'not-the-token');
      await expect.poll(() => page.locator('#token-error').innerText()).toContain('the token was refused: the bearer token is not valid for this server');
      expect(await page.locator('#content').isVisible()).toBe(false);
      await giveToken(page, token);
      await expect.poll(() => page.locator('#content').isVisible()).toBe(true);
      await expect.poll(() => page.locator(`article[data-table="${table}"]`).count()).toBe(1);
      expect(await page.evaluate(() => sessionStorage.getItem('offsetlake-token'))).toBe(token);
      expect(page.url()).toBe(url);
      await page.screenshot({ path: `${artifacts}token-accepted.png` });
      // the same requests without the page: the API itself refuses a wrong token
      expect((await fetch(`${url}/api/overview`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      expect((await fetch(`${url}/api/overview`)).status).toBe(401);
      expect((await fetch(`${url}/api/overview`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      // the page itself needs no token, and may load nothing but this server's own files
      const opened = await fetch(url);
      expect([opened.status, opened.headers.get('content-security-policy')]).toEqual([200, expect.stringContaining("default-src 'none'; script-src 'self'")]);
      const posted = await fetch(`${url}/api/overview`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      expect([posted.status, ((await posted.json()) as { error: string }).error]).toEqual([405, 'POST is not allowed on /console/api/overview; the console only reads: use GET']);
    } finally {
      await context.close();
    }
  });

  it('shows each partition as the producer\'s delivery reports and the catalog have it, the lag chart moving while run indexes, files and their column statistics on click, without an error or a failed request', async () => {
    const { context, page, problems } = await watchedPage();
    try {
      await page.goto(url);
      await giveToken(page, token);
      await expect.poll(() => page.locator(`article[data-table="${table}"] tr[data-partition]`).count()).toBe(2);

      // records before any indexer runs: the page sees the lag, sample after sample
      const first = [await produce(0, 120, 0), await produce(1, 80, 1000)];
      for (const [partition, delivered] of first.entries()) {
        await until(`the page's LSO of partition ${partition}`, async () => (await cell(page, partition, 'lso')) === String(delivered.partitions[partition]!.last + 1));
        expect(await cell(page, partition, 'lag')).toBe(String(delivered.partitions[partition]!.count));
      }
      await until('two samples of the lag', async () => (await lagChart(page)).length >= 2);
      const before = await lagChart(page);
      await page.screenshot({ path: `${artifacts}lagging.png`, fullPage: true });

      run = (await start(['run'], /memory \d+ MiB/)).child;
      const second = [await produce(0, 60, 120), await produce(1, 90, 1080)];
      const delivered = [0, 1].map((p) => ({
        first: first[p]!.partitions[p]!.first,
        last: second[p]!.partitions[p]!.last,
        count: first[p]!.partitions[p]!.count + second[p]!.partitions[p]!.count,
      }));
      for (const [partition, d] of delivered.entries()) {
        // an idempotent producer's offsets are the records': the table started at 0 and indexes up to the last one
        expect([d.first, d.last + 1]).toEqual([0, d.count]);
        await until(`partition ${partition} indexed on the page`, async () => (await cell(page, partition, 'indexed')) === `[0, ${d.count})`);
        await until(`partition ${partition}'s lag back to 0`, async () => (await cell(page, partition, 'lag')) === '0' && (await cell(page, partition, 'lagSeconds')) === '0');
        expect(await cell(page, partition, 'lso')).toBe(String(d.last + 1));
      }
      await until('the lag chart at 0 again', async () => (await lagChart(page)).at(-1) === (await lagChart(page)).reduce((a, b) => Math.max(a, b), 0));
      const after = await lagChart(page);
      expect(after.length).toBeGreaterThan(before.length);
      // it went up while nothing indexed (y grows downwards) and came down to the axis
      expect(new Set(after).size).toBeGreaterThan(1);
      expect(Math.min(...after)).toBeLessThan(after.at(-1)!);

      // files: the page's against the catalog's rows, read here with SQL
      const rows = await catalogRows<{ data_file_id: string; partition_id: number; start_offset: string; end_offset: string; record_count: string }>(`SELECT f.data_file_id::text, f.partition_id,
          f.start_offset::text, f.end_offset::text, f.record_count::text
        FROM offsetlake.data_file f JOIN offsetlake.lake_table t USING (table_id) WHERE t.table_name = $1 AND f.expired_at IS NULL ORDER BY f.data_file_id`, [table]);
      for (const partition of [0, 1]) {
        expect(await cell(page, partition, 'files')).toBe(String(rows.filter((r) => r.partition_id === partition).length));
        // every record the producer wrote is in exactly one file
        expect(rows.filter((r) => r.partition_id === partition).reduce((n, r) => n + Number(r.record_count), 0)).toBe(delivered[partition]!.count);
      }
      await page.locator(`article[data-table="${table}"] h3 button`).click();
      await expect.poll(() => page.locator('#file-list tr[data-file]').count()).toBe(rows.length);
      const shown = await page.locator('#file-list tr[data-file]').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
      expect(shown.map(([id, partition, offsets, , , , records]) => ({ id, partition: Number(partition), offsets, records })).sort((a, b) => Number(a.id) - Number(b.id)))
        .toEqual(rows.map((r) => ({ id: r.data_file_id, partition: r.partition_id, offsets: `[${r.start_offset}, ${r.end_offset})`, records: r.record_count })));

      const chosen = rows.find((r) => r.partition_id === 1)!;
      await page.locator(`#file-list tr[data-file="${chosen.data_file_id}"]`).click();
      const offsetColumn = page.locator('#file-columns tr[data-column="_offset"] td');
      await expect.poll(() => offsetColumn.count()).toBe(6);
      const [, values, nulls, , min, max] = await offsetColumn.allInnerTexts();
      // a file of an idempotent producer's records: one row per offset of its range
      expect({ values, nulls, min, max }).toEqual({ values: chosen.record_count, nulls: '0', min: chosen.start_offset, max: String(Number(chosen.end_offset) - 1) });

      // an index built over the files while run drives it: the page shows the catalog's state and backfill
      const created = await runCli(engine.config.databaseUrl, ['sql', `CREATE INDEX by_page ON ${table} (_value.page) USING BLOOM`, '--no-wait']);
      expect(created.code, created.stderr).toBe(0);
      const indexRow = page.locator(`#indexes tr[data-index="${table}.by_page"]`);
      await until('the index active on the page and in the catalog', async () => {
        const state = (await catalogRows<{ state: string; files_done: string; files_total: string }>(`SELECT i.state, i.files_done::text, i.files_total::text FROM offsetlake.secondary_index i
          JOIN offsetlake.lake_table t USING (table_id) WHERE t.table_name = $1 AND i.index_name = 'by_page'`, [table]))[0];
        return state?.state === 'active' && (await indexRow.locator('td[data-field="state"]').innerText().catch(() => '')) === 'active'
          && (await indexRow.locator('td[data-field="backfill"]').innerText()).includes(state.files_total === '0' ? '–' : `${state.files_done}/${state.files_total} files`);
      });

      // a read through the HTTP face: the page's reader figures count what this test received
      const file = await fetch(`${url.replace('/console', '')}/tables/${table}/files/${chosen.data_file_id}.parquet`, { headers: { authorization: `Bearer ${token}` } });
      const bytes = (await file.arrayBuffer()).byteLength;
      expect(file.status).toBe(200);
      await until('the read on the page', async () => (await page.locator('#reader-figures dd[data-field="bytesServed"]').getAttribute('data-value')) === String(bytes));
      expect(Number(await page.locator('#reader-figures dd[data-field="kafkaBytesPerServedByte"]').innerText())).toBeGreaterThan(0);
      await page.mouse.move(0, 0); // no row highlighted by the pointer in the picture
      await page.screenshot({ path: `${artifacts}console.png`, fullPage: true });

      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 300_000);

  it('with serve --no-auth the page asks for no token and shows the tables', async () => {
    const open = await start(['serve', '--port', '0', '--no-auth'], /Ctrl-C stops/);
    const { context, page, problems } = await watchedPage();
    try {
      await page.goto(/the console (http:\/\/127\.0\.0\.1:\d+\/console)/.exec(open.said)![1]!);
      await expect.poll(() => page.locator(`article[data-table="${table}"]`).count()).toBe(1);
      expect(await page.locator('#token-form').isVisible()).toBe(false);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      await stop(open.child);
    }
  });

  it('never puts the token in a URL the page asks for', () => {
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((address) => address.includes(token))).toEqual([]);
  });
});
