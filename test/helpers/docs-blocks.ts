/**
 * The fenced blocks of a page that are marked `<!-- tested: NAME -->` on the line before:
 * what a test runs as written, so that every command a page shows is one a test ran.
 */
import { readFileSync } from 'node:fs';

export interface TestedBlock {
  /** The fence's language (sh, python, sql, …). */
  language: string;
  code: string;
}

/** The page's tested blocks by name; `page` is a path from the project's root (README.md, docs/engines.md). */
export function testedBlocks(page: string): Map<string, TestedBlock> {
  const text = readFileSync(new URL(`../../${page}`, import.meta.url), 'utf8');
  const found = new Map<string, TestedBlock>();
  for (const match of text.matchAll(/<!-- tested: ([a-z0-9-]+) -->\n```(\w+)\n([\s\S]*?)\n```/g)) found.set(match[1]!, { language: match[2]!, code: match[3]! });
  return found;
}

/** One tested block's code, undefined when the page does not mark it (the tests say so first). */
export function testedBlock(page: string, name: string): string | undefined {
  return testedBlocks(page).get(name)?.code;
}
