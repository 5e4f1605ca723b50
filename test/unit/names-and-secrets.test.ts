/** Issue 26.6: what is stored and printed is checked, and what is secret stays hidden. */
import { describe, expect, it } from 'vitest';
import { parseIndexStatement, parseInlineIndex } from '../../src/indexes/ddl.js';
import { redact } from '../../src/runtime/engine.js';

describe('redacted URLs', () => {
  it('hide a password with an unencoded @ whole, and keep the user, host and query', () => {
    expect(redact('postgres://admin:p@ss@word@db.example:5432/catalog?sslmode=require')).toBe('postgres://admin:***@db.example:5432/catalog?sslmode=require');
    expect(redact('postgres://admin:plain@db.example/catalog')).toBe('postgres://admin:***@db.example/catalog');
    expect(redact('postgres://db.example/catalog')).toBe('postgres://db.example/catalog');
  });
});

describe('index names', () => {
  const refusal = /^index name .* must start with a lowercase letter or _, then lowercase letters, digits or _ \(at most 63\), as table names do$/;
  it.each([
    ['empty', '""'],
    ['100 KB long', 'a'.repeat(100_000)],
    ['a terminal escape', '"\u001b[2J\u001b[31mowned"'],
    ['a C1 control', '"x\u009by"'],
    ['capitals and spaces', '"My Index"'],
  ])('%s: refused in our words, the name shown escaped and short', (_, name) => {
    let message = '';
    try {
      parseIndexStatement(`CREATE INDEX ${name} ON clicks (_key) USING BLOOM`);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(refusal);
    expect(message.length).toBeLessThan(200);
    expect(message).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(() => parseInlineIndex(`${name} (_key) USING BLOOM`)).toThrow(refusal);
  });
  it('takes a name as table names are written', () => {
    expect(parseInlineIndex('by_key_2 (_key) USING BLOOM').name).toBe('by_key_2');
  });
});
