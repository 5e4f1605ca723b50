/**
 * The console's routes on the read API (`serve` mounts them; src/reader/http.ts checks
 * the bearer token first for all but the page):
 *
 *   GET /console, /console/             the page (open: it holds no data, and a browser
 *   GET /console/console.js, .css        cannot send a bearer token when it opens a page)
 *   GET /console/api/access              open too: whether the token is required (all it tells a stranger)
 *   GET /console/api/overview            tables, partitions, indexes, reader counters, the charts' history
 *   GET /console/api/tables/:t/files     a table's live files, without column statistics
 *   GET /console/api/tables/:t/files/:id one file with its column statistics
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TableRecord } from '../table/record.js';
import { fileEntry, json, servedTable, type ConsoleRoutes } from '../reader/http.js';
import { HttpError, type ReaderRequest, type ReaderResponse } from '../reader/file-response.js';
import type { ReaderParts } from '../reader/read-api.js';
import { overview } from './overview.js';
import type { ConsoleSampler } from './sampler.js';

/**
 * The page's files, read from the sources: two folders up is the checkout both from this
 * module (src/console/) and from the CLI's bundle (dist/build-…/), which esbuild does not
 * give the files to.
 */
const assetsFolder = new URL('../../src/console/assets/', import.meta.url);

const assets: Record<string, { file: string; type: string }> = {
  '/console': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console/console.js': { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  '/console/console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
};

/** Nothing but this server's own script, style and JSON: the page works offline, and an injected tag could not load or send anything. */
const pageHeaders = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-cache',
};

const accessPath = '/console/api/access';
/** Files listed at most per table (the newest). */
const filesShown = 500;
const fileId = /^[0-9]{1,19}$/;

export class ConsoleFace implements ConsoleRoutes {
  private readonly loaded = new Map<string, Buffer>();

  constructor(private readonly reader: Pick<ReaderParts, 'records' | 'status'>, private readonly sampler: ConsoleSampler, private readonly options: { tokenRequired: boolean }) {}

  claims(request: ReaderRequest): boolean {
    const path = pathOf(request);
    return path === '/console' || path.startsWith('/console/');
  }

  open(request: ReaderRequest): boolean {
    const path = pathOf(request);
    return path in assets || path === accessPath;
  }

  async answer(request: ReaderRequest): Promise<ReaderResponse> {
    const path = pathOf(request);
    if (request.method !== 'GET' && request.method !== 'HEAD') throw new HttpError(405, `${request.method} is not allowed on ${path}; the console only reads: use GET`, { allow: 'GET, HEAD' });
    const asset = assets[path];
    if (asset) return { status: 200, headers: { 'content-type': asset.type, ...pageHeaders }, body: this.asset(asset.file) };
    if (path === accessPath) return json(200, { token: this.options.tokenRequired ? 'required' : 'none' }, { 'cache-control': 'no-store' });
    const parts = path.split('/').slice(3);
    if (path === '/console/api/overview') return json(200, await this.overview(), { 'cache-control': 'no-store' });
    if (parts[0] === 'tables' && parts[2] === 'files' && (parts.length === 3 || parts.length === 4)) {
      const table = await this.table(parts[1]!);
      if (parts.length === 3) {
        const files = await this.reader.records.files(table);
        // a page redrawn every few seconds: the newest files, not a table's whole history
        const shown = files.length <= filesShown ? files : [...files].sort((a, b) => (a.dataFileId < b.dataFileId ? 1 : -1)).slice(0, filesShown);
        return json(200, { table: table.name, total: files.length, files: shown.map((f) => ({ ...fileEntry(table, f), columns: undefined })) }, { 'cache-control': 'no-store' });
      }
      if (!fileId.test(parts[3]!)) throw new HttpError(400, `"${parts[3]}" is not a file id: give the number the file list shows`);
      const file = await this.reader.records.file(table, BigInt(parts[3]!));
      if (!file) throw new HttpError(404, `table ${table.name} has no live file ${parts[3]}`);
      return json(200, fileEntry(table, file), { 'cache-control': 'no-store' });
    }
    throw new HttpError(404, `no such console path: ${path} (the console is at /console; its data at /console/api/overview and /console/api/tables/:table/files[/:id])`);
  }

  private asset(file: string): Buffer {
    let bytes = this.loaded.get(file);
    if (!bytes) {
      const path = fileURLToPath(new URL(file, assetsFolder));
      try {
        bytes = readFileSync(path);
      } catch (error) {
        throw new Error(`the console's file ${path} cannot be read (${(error as Error).message}): serve runs from a checkout of offsetlake, whose src/console/assets/ holds it`, { cause: error });
      }
      this.loaded.set(file, bytes);
    }
    return bytes;
  }

  private async table(name: string): Promise<TableRecord> {
    let decoded: string;
    try {
      decoded = decodeURIComponent(name);
    } catch {
      throw new HttpError(400, `"${name}" is not valid percent-encoding`);
    }
    return servedTable(this.reader.records, decoded);
  }

  private async overview() {
    let sample;
    try {
      sample = await this.sampler.latest();
    } catch (error) {
      throw new HttpError(503, `status could not be taken: ${(error as Error).message}; the console tries again every ${this.sampler.everyMs / 1000} s`);
    }
    const [tables, lost, indexes] = await Promise.all([this.reader.records.tables(), this.reader.status.lostOffsets(), this.reader.status.indexes()]);
    return overview({
      sampledAt: sample.at,
      sampleEveryMs: this.sampler.everyMs,
      historySamples: this.sampler.history.capacity,
      rows: sample.rows,
      tables,
      lost,
      indexes,
      reader: this.reader.status.metrics,
      history: this.sampler.history.samples,
    });
  }
}

function pathOf(request: ReaderRequest): string {
  return request.path.split('?')[0]!;
}
