/**
 * The folders show the pipeline: no module imports itself back through others. Every
 * relative import of src/, functions/ and infra/ counts, in every form: `import type`
 * (a type that goes round in a circle is a layering mistake too, even if nothing runs
 * it), re-exports, side-effect imports and `import()` (a lazy import is loaded all the
 * same, only later). TypeScript's own scanner finds them, so a form a pattern would miss,
 * or one inside a comment or a string, is judged as the compiler sees it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The module specifiers a module's text imports, in every form (see the top of this file). */
export function specifiersOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((file) => file.fileName);
}

/**
 * The module specifiers a module's text imports only as types: every import of them is
 * `import type` or `export type … from`, which the compiler erases (no module is loaded).
 * `import { type T }` is not one: under `verbatimModuleSyntax` it stays an import, and
 * the module is loaded.
 */
export function typeOnlySpecifiersOf(text: string): string[] {
  const source = ts.createSourceFile('module.ts', text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const typeOnly = new Map<string, number>();
  for (const statement of source.statements) {
    if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) || !statement.moduleSpecifier || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const erased = ts.isImportDeclaration(statement) ? statement.importClause?.isTypeOnly === true : statement.isTypeOnly;
    if (erased) typeOnly.set(statement.moduleSpecifier.text, (typeOnly.get(statement.moduleSpecifier.text) ?? 0) + 1);
  }
  // every import form counts (specifiersOf): a specifier imported as a type and in any other way is loaded
  const all = new Map<string, number>();
  for (const specifier of specifiersOf(text)) all.set(specifier, (all.get(specifier) ?? 0) + 1);
  return [...typeOnly].filter(([specifier, count]) => all.get(specifier) === count).map(([specifier]) => specifier);
}

const modulePath = (file: string, specifier: string): string => resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
const relativeSpecifier = (specifier: string): boolean => /^\.{1,2}\//.test(specifier);

/** Relative imports of a module, in every form, as module paths. */
function importsOf(file: string): string[] {
  return specifiersOf(readFileSync(file, 'utf8')).filter(relativeSpecifier).map((specifier) => modulePath(file, specifier));
}

/** The relative imports of a module that are types only (`typeOnlySpecifiersOf`), as module paths. */
function typeOnlyImportsOf(file: string): Set<string> {
  return new Set(typeOnlySpecifiersOf(readFileSync(file, 'utf8')).filter(relativeSpecifier).map((specifier) => modulePath(file, specifier)));
}

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
export function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexes = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    indexes.set(node, index);
    low.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!indexes.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, indexes.get(next)!));
      }
    }
    if (low.get(node) === indexes.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!indexes.has(node)) visit(node);
  return found;
}

describe('import circles', () => {
  it('reads every import form, and none inside a comment or a string', () => {
    const text = [
      "import a from './a.js';", "import './side.js';", "export * from './all.js';", "import type { T } from './t.js';",
      "export { x } from './x.js';", "const m = await import('./lazy.js');", 'const n = () => import(/* why */ `./template.js`);',
      "// import './comment.js'", "const s = \"import './string.js'\";",
    ].join('\n');
    expect(specifiersOf(text)).toEqual(['./a.js', './side.js', './all.js', './t.js', './x.js', './lazy.js', './template.js']);
  });

  it('tells imports of types only (erased) from imports that load the module', () => {
    const text = [
      "import type { T } from './t.js';", "export type { U } from './u.js';", "import type { V } from './v.js';", "import { type W } from './w.js';",
      "import type { X } from './x.js';", "import { y } from './x.js';", "import type { Z } from './z.js';", "const z = await import('./z.js');",
      "import { a } from './a.js';", "// import type { C } from './comment.js'",
    ].join('\n');
    expect(typeOnlySpecifiersOf(text).sort()).toEqual(['./t.js', './u.js', './v.js']);
  });

  it('finds a circle in a made-up graph, and none in a line', () => {
    expect(circles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']]);
    expect(circles(new Map([['a', ['b']], ['b', ['c']], ['c', []]]))).toEqual([]);
  });

  it('src/, functions/ and infra/ import no module back through others (import type included)', () => {
    expect(circles(graph()).map((component) => component.map((file) => relative(root, file)))).toEqual([]);
  });
});

describe('layers', () => {
  /** Every module `from` reaches through its imports, as paths relative to the repository. */
  const reachable = (from: string[]): string[] => {
    const edges = graph();
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const next of edges.get(file) ?? []) visit(next);
    };
    for (const file of from) visit(join(root, file));
    return [...seen].map((file) => relative(root, file));
  };

  it('no Lambda bundle reaches the local stack manager or the command line', () => {
    const entries = readdirSync(join(root, 'functions')).filter((name) => statSync(join(root, 'functions', name)).isDirectory()).map((name) => `functions/${name}/index.ts`);
    expect(entries.length).toBeGreaterThan(3);
    expect(reachable(entries).filter((file) => file.startsWith('src/stack/') || file.startsWith('src/cli/'))).toEqual([]);
  });

  it('the read path (reader, query) does not reach the indexer, the backfill or the local runner: they share the file builder', () => {
    const read = sources(join(root, 'src/reader')).concat(sources(join(root, 'src/query'))).map((file) => relative(root, file));
    expect(reachable(read).filter((file) => /^src\/(indexer|backfill|local)\//.test(file))).toEqual([]);
  });

  it('indexing, backfill and index backfill do not reach the reader: the rebuild engine they share with it is src/files', () => {
    const jobs = ['src/indexer', 'src/backfill', 'src/index-backfill', 'src/local', 'src/files'].flatMap((dir) => sources(join(root, dir))).map((file) => relative(root, file));
    expect(reachable(jobs).filter((file) => file.startsWith('src/reader/'))).toEqual([]);
  });

  it('the Iceberg catalog sits on the read path: neither the catalog nor the read API reaches src/iceberg (serve mounts it)', () => {
    const below = sources(join(root, 'src/catalog')).concat(sources(join(root, 'src/reader'))).map((file) => relative(root, file));
    expect(reachable(below).filter((file) => file.startsWith('src/iceberg/'))).toEqual([]);
  });

  it('the console sits on the read path: neither the catalog nor the read API reaches src/console (serve mounts it)', () => {
    const below = sources(join(root, 'src/catalog')).concat(sources(join(root, 'src/reader'))).map((file) => relative(root, file));
    expect(reachable(below).filter((file) => file.startsWith('src/console/'))).toEqual([]);
  });

  it('src/ has no loose modules: every module is in the folder of its stage or job', () => {
    expect(readdirSync(join(root, 'src')).filter((name) => name.endsWith('.ts'))).toEqual([]);
  });
});

describe('folder order', () => {
  const page = readFileSync(join(root, 'docs/development.md'), 'utf8');
  /** The rows of the markdown table that follows `marker` in docs/development.md, as cells. */
  const tableAfter = (marker: string): string[][] => {
    const at = page.indexOf(marker);
    expect(at, `docs/development.md has the table marked ${marker}`).toBeGreaterThanOrEqual(0);
    const rows = page.slice(at + marker.length).trimStart().split('\n');
    const end = rows.findIndex((line) => !line.startsWith('|'));
    return rows.slice(2, end).map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
  };
  const folderRows = tableAfter('<!-- folder-imports -->').map(([folder, may]) => ({ folder: folder!.replace(/`/g, ''), names: may === 'nothing' ? [] : may === 'every folder' ? ['*'] : may!.split(',').map((name) => name.trim()) }));
  /** `catalog (types only)`: the folder's types, never its values (`import type` only). */
  const typesOnly = /^(\S+) \(types only\)$/;
  const allowed = new Map(folderRows.map(({ folder, names }) => [folder, names.filter((name) => !typesOnly.test(name))]));
  const typesAllowed = new Map(folderRows.map(({ folder, names }) => [folder, names.flatMap((name) => typesOnly.exec(name)?.[1] ?? [])]));
  /** Whether the table lets `from`'s folder import `to`'s folder this way. */
  const allows = (from: string, to: string, typeOnly: boolean): boolean => {
    const may = allowed.get(folderOf(join(root, from))) ?? [];
    const target = folderOf(join(root, to));
    return may.includes('*') || may.includes(target) || (typeOnly && (typesAllowed.get(folderOf(join(root, from))) ?? []).includes(target));
  };
  const excepted = tableAfter('<!-- imports-against-the-order -->').map(([edge, why]) => {
    const [from, to] = edge!.split('→').map((side) => side.replace(/`/g, '').trim());
    return { from: from!, to: to!, why: why! };
  });
  const folderOf = (file: string): string => relative(join(root, 'src'), file).split('/')[0]!;
  /** Every import from one folder of src/ into another, as repository paths, and whether it imports types only. */
  const crossings = (): { from: string; to: string; typeOnly: boolean }[] => [...graph()].filter(([file]) => file.startsWith(join(root, 'src') + '/')).flatMap(([file, imports]) => {
    const types = typeOnlyImportsOf(file);
    return imports.filter((to) => to.startsWith(join(root, 'src') + '/') && folderOf(to) !== folderOf(file)).map((to) => ({ from: relative(root, file), to: relative(root, to), typeOnly: types.has(to) }));
  });

  it('docs/development.md names every folder of src/ once, and only folders that exist', () => {
    const folders = readdirSync(join(root, 'src')).filter((name) => statSync(join(root, 'src', name)).isDirectory()).sort();
    expect([...allowed.keys()].sort()).toEqual(folders);
    for (const names of [...allowed.values(), ...typesAllowed.values()]) for (const name of names) if (name !== '*') expect(folders).toContain(name);
  });

  it('every import between folders of src/ is one the table allows, or one written down below it with a reason', () => {
    const against = crossings().filter(({ from, to, typeOnly }) => !allows(from, to, typeOnly));
    const unexplained = against.filter((edge) => !excepted.some((e) => e.from === edge.from && e.to === edge.to && e.why.length > 0));
    expect(unexplained.map(({ from, to }) => `${from} → ${to}`)).toEqual([]);
  });

  it('every import written down against the order still exists and still runs against it (the list only shrinks with the code)', () => {
    const present = new Map(crossings().map((edge) => [`${edge.from} → ${edge.to}`, edge]));
    const stale = excepted.filter((e) => {
      const edge = present.get(`${e.from} → ${e.to}`);
      return !edge || allows(edge.from, edge.to, edge.typeOnly);
    });
    expect(stale.map((e) => `${e.from} → ${e.to}`)).toEqual([]);
  });

  it('every SQL statement lives in src/catalog: no other module of src/ names a table of the offsetlake schema, except those written down with a reason (and each of those still does)', () => {
    const listed = tableAfter('<!-- sql-outside-the-catalog -->').map(([module, why]) => ({ module: module!.replace(/`/g, ''), why: why! }));
    // the catalog's own tables and views, from its migrations (their names stand unqualified there)
    const migrations = readFileSync(join(root, 'src/catalog/migrations.ts'), 'utf8');
    const names = [...new Set([...migrations.matchAll(/CREATE (?:OR REPLACE )?(?:TABLE|VIEW|MATERIALIZED VIEW)(?: IF NOT EXISTS)? (?:offsetlake\.)?([a-z_]+)/g)].map((m) => m[1]!))];
    expect(names).toEqual(expect.arrayContaining(['lake_table', 'lake_partition', 'data_file']));
    const catalogTables = new RegExp(`\\boffsetlake\\.(${names.join('|')})\\b`);
    const naming = sources(join(root, 'src')).filter((file) => !file.startsWith(join(root, 'src/catalog') + '/') && catalogTables.test(readFileSync(file, 'utf8'))).map((file) => relative(root, file)).sort();
    expect(naming.filter((module) => !listed.some((l) => l.module === module && l.why.length > 0))).toEqual([]);
    expect(listed.map((l) => l.module).filter((module) => !naming.includes(module))).toEqual([]);
  });

  it('the allowed imports run one way: no two folders may import each other, directly or through others', () => {
    // a type that goes round in a circle is a layering mistake too: types-only imports count
    const folderGraph = new Map([...allowed].map(([folder, may]) => [folder, may.includes('*') ? [] : [...may, ...(typesAllowed.get(folder) ?? [])]]));
    expect(circles(folderGraph)).toEqual([]);
  });
});

function graph(): Map<string, string[]> {
  const files = ['src', 'functions', 'infra'].flatMap((dir) => sources(join(root, dir)));
  return new Map(files.map((file) => [file, importsOf(file)]));
}
