/**
 * What the stack downloads from Maven Central (Kafka's jars, Apicurio Registry; the
 * tests' Iceberg jars too, test/helpers/iceberg-jars.ts) is used
 * only once every file of it has the sha256 pinned in the repository: `downloads.sha256`
 * beside this file, in sha256sum's format (`<sha256>  <path>`, the path relative to the
 * download cache), one line for each file of each fetched folder, so `sha256sum -c`
 * checks a cache too. A fetch is verified before it is marked complete, and a complete
 * folder again before a service starts from it: a file changed, missing or added (a jar
 * more on Kafka's classpath) is refused, naming the file with both sums.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, lstatSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DaemonStartError } from './process.js';

/** Beside this source file; from the CLI's bundle in dist/<name>/ the same path reaches it. */
export const pinsFile = fileURLToPath(new URL('../../src/stack/downloads.sha256', import.meta.url));

export class DownloadVerificationError extends DaemonStartError {
  override name = 'DownloadVerificationError';
}

/** Each pinned path (relative to the download cache) and its sha256, as hex. */
export function readPins(file = pinsFile): Map<string, string> {
  const pins = new Map<string, string>();
  readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    if (line === '') return;
    const match = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!match) throw new Error(`${file}:${i + 1}: expected "<sha256>  <path>", got ${JSON.stringify(line.slice(0, 80))}`);
    pins.set(match[2]!, match[1]!);
  });
  return pins;
}

export function sha256Of(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** Every file under `folder`, as paths relative to it, `skip` left out. */
function filesUnder(folder: string, skip: ReadonlySet<string>, relative = ''): { files: string[]; odd: string[] } {
  const files: string[] = [];
  const odd: string[] = [];
  for (const entry of readdirSync(join(folder, relative), { withFileTypes: true })) {
    const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
    if (skip.has(path)) continue;
    if (entry.isDirectory()) {
      const below = filesUnder(folder, skip, path);
      files.push(...below.files);
      odd.push(...below.odd);
    } else if (entry.isFile()) files.push(path);
    else odd.push(path);
  }
  return { files, odd };
}

/**
 * Checks that `folder` holds exactly the files pinned under `name` (its path in the
 * download cache, e.g. `kafka-4.1.1/libs`), each with its pinned sha256. `skip`: files
 * of our own (the fetch's completion marker). Throws DownloadVerificationError naming
 * every file that differs.
 */
export function verifyDownload(folder: string, name: string, options: { skip?: readonly string[]; pins?: ReadonlyMap<string, string> } = {}): void {
  const pins = options.pins ?? readPins();
  const prefix = `${name}/`;
  const expected = new Map([...pins].filter(([path]) => path.startsWith(prefix)).map(([path, sum]) => [path.slice(prefix.length), sum]));
  if (expected.size === 0) {
    throw new DownloadVerificationError(`no sha256 is pinned for ${name} in ${pinsFile}: check the download, then pin each of its files there (cd <download cache> && find ${name} -type f ! -name .complete | sort | xargs sha256sum)`);
  }
  if (lstatSync(folder, { throwIfNoEntry: false })?.isDirectory() !== true) throw new DownloadVerificationError(`${folder} is not a folder: nothing of ${name} to verify`);
  const { files, odd } = filesUnder(folder, new Set(options.skip ?? []));
  const problems: string[] = odd.map((path) => `${join(folder, path)}: not a regular file (pinned downloads hold only files and folders)`);
  for (const path of files) {
    const pinned = expected.get(path);
    const actual = sha256Of(join(folder, path));
    if (pinned === undefined) problems.push(`${join(folder, path)}: not pinned (sha256 ${actual}), but the download holds it`);
    else if (pinned !== actual) problems.push(`${join(folder, path)}: sha256 ${actual}, expected ${pinned}`);
  }
  const present = new Set(files);
  for (const [path, pinned] of expected) if (!present.has(path)) problems.push(`${join(folder, path)}: missing (expected sha256 ${pinned})`);
  if (problems.length > 0) {
    const shown = problems.slice(0, 10).join('; ');
    throw new DownloadVerificationError(
      `${name} does not match the sha256 sums pinned in ${pinsFile}, so it is not used: ${shown}${problems.length > 10 ? `; and ${problems.length - 10} more` : ''}. ` +
        `A changed download is not trusted: remove ${folder} (and Maven's copy under ~/.m2/repository) and run \`stack up\` again to fetch it anew; if it still differs, the pins or the source changed.`,
    );
  }
}
