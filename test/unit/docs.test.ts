/**
 * The docs as a reader meets them: a short README, pages that say what they are for and
 * are all listed in docs/README.md, links between them that lead somewhere, and no file of
 * the project pointing outside the repository (a path that works on one machine only).
 * The commands in the pages are run by the tests that read them (test/integration/
 * docs-engines.test.ts, readme-own-topic.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const docs = join(root, 'docs');
const pages = readdirSync(docs)
  .filter((name) => name.endsWith('.md'))
  .map((name) => join(docs, name));
const markdownFiles = [join(root, 'README.md'), ...pages];

/** The lines of a Markdown text outside fenced code blocks (their numbers kept). */
function proseLines(text: string): Array<{ line: string; number: number }> {
  const out: Array<{ line: string; number: number }> = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) out.push({ line, number: i + 1 });
  });
  return out;
}

/**
 * The anchor GitHub gives a heading: its text in lower case, every character that is
 * not a letter, mark, digit, connector (`_`), hyphen or space dropped, spaces made
 * hyphens; a repeated anchor gets `-1`, `-2`, ….
 */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(readFileSync(file, 'utf8'))) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replaceAll(' ', '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The relative link targets of a Markdown file (code spans and fenced blocks left out). */
function relativeLinks(file: string): Array<{ target: string; number: number }> {
  const links: Array<{ target: string; number: number }> = [];
  for (const { line, number } of proseLines(readFileSync(file, 'utf8'))) {
    const prose = line.replace(/`[^`]*`/g, 'code');
    for (const match of prose.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
      const target = match[1]!;
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ target, number });
    }
  }
  return links;
}

/** Where a link leads that leads nowhere, or undefined. */
function brokenLink(from: string, target: string): string | undefined {
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
  if (!existsSync(file)) return `${relative(root, file)} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!file.endsWith('.md') || statSync(file).isDirectory()) return `${relative(root, file)} has no headings to link to`;
  return anchorsOf(file).has(anchor) ? undefined : `${relative(root, file)} has no heading #${anchor}`;
}

describe('the docs', () => {
  it('README.md is at most 300 lines, and its first commands are `npm install && npm run demo` and `npm install && npm test`', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const firstBlock = /```sh\n([\s\S]*?)\n```/.exec(readme)![1]!.split('\n').map((line) => line.replace(/\s+#.*$/, ''));
    expect(firstBlock).toEqual(['npm install && npm run demo', 'npm install && npm test']);
  });

  it('every page of docs/ opens with its title and then a paragraph, not a heading, list, table or code', () => {
    const wrong = pages.filter((page) => {
      const [title, blank, first] = readFileSync(page, 'utf8').split('\n');
      return !/^# \S/.test(title!) || blank !== '' || !/^[\p{L}`[*(]/u.test(first ?? '') || /^\*\s/.test(first!);
    });
    expect(wrong.map((page) => relative(root, page))).toEqual([]);
  });

  it('docs/README.md links every page of docs/', () => {
    const linked = new Set(relativeLinks(join(docs, 'README.md')).map(({ target }) => resolve(docs, target.split('#')[0]!)));
    const unlisted = pages.filter((page) => !page.endsWith('README.md') && !linked.has(page));
    expect(unlisted.map((page) => relative(root, page))).toEqual([]);
  });

  it('every relative link in README.md and docs/*.md leads to a file that exists, and its #anchor to a heading of that file', () => {
    const broken = markdownFiles.flatMap((file) =>
      relativeLinks(file).flatMap(({ target, number }) => {
        const why = brokenLink(file, target);
        return why ? [`${relative(root, file)}:${number}: (${target}): ${why}`] : [];
      }),
    );
    expect(markdownFiles.flatMap((file) => relativeLinks(file)).length).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });

  it('no tracked file names a path outside the repository: neither the parent folder\'s shared folder nor the machine\'s work folder', () => {
    // Spelled in pieces so that this file does not name them itself.
    const outside = [['..', 'shared'].join('/'), ['', 'work', ''].join('/')];
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
    expect(tracked.length).toBeGreaterThan(100);
    const mentions = tracked.flatMap((name) => {
      const path = join(root, name);
      if (!existsSync(path) || statSync(path).isDirectory()) return [];
      const text = readFileSync(path, 'utf8');
      if (text.includes('\0')) return []; // binary
      return text.split('\n').flatMap((line, i) => (outside.some((path) => line.includes(path)) ? [`${name}:${i + 1}: ${line.trim().slice(0, 120)}`] : []));
    });
    expect(mentions).toEqual([]);
  });
});
