import { describe, expect, it } from 'vitest';
import { indexColumnText, parseIndexColumn } from '../../src/indexes/definition.js';

describe('index columns as the DDL writes them', () => {
  it('reads columns, nested leaves, headers and json fields by dotted path, quoted segments included', () => {
    expect(parseIndexColumn('city')).toEqual({ kind: 'column', path: ['city'] });
    expect(parseIndexColumn('who.addr.zip')).toEqual({ kind: 'column', path: ['who', 'addr', 'zip'] });
    expect(parseIndexColumn('_headers.trace_id')).toEqual({ kind: 'header', name: 'trace_id' });
    expect(parseIndexColumn('_headers."a.b"')).toEqual({ kind: 'header', name: 'a.b' });
    expect(parseIndexColumn('_value.user."the id"')).toEqual({ kind: 'json', path: ['user', 'the id'] });
    for (const text of ['who.addr.zip', '_headers."a.b"', '_value.user."the id"']) expect(indexColumnText(parseIndexColumn(text))).toBe(text);
  });

  it('refuses empty segments and a trailing dot, naming the column', () => {
    expect(() => parseIndexColumn('a..b')).toThrow('index column a..b: "" is not a name');
    expect(() => parseIndexColumn('a.')).toThrow('index column a. ends with a dot');
  });
});
