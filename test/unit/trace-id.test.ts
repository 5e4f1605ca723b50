/**
 * A request's trace id, from the headers as W3C Trace Context (traceparent:
 * version-traceid-parentid-flags, lowercase hex, an all-zero trace id invalid) and the
 * common x-request-id define them; the examples are the specification's.
 */
import { describe, expect, it } from 'vitest';
import { traceId } from '../../src/reader/node-server.js';

describe('a request\'s trace id', () => {
  it('is the trace-id of a valid traceparent, before any x-request-id', () => {
    expect(traceId({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'x-request-id': 'other' })).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('falls back to x-request-id when traceparent is malformed or its trace id all zeros', () => {
    expect(traceId({ traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01', 'x-request-id': 'req-1' })).toBe('req-1');
    expect(traceId({ traceparent: 'garbage', 'x-request-id': 'a.b:c_d-9' })).toBe('a.b:c_d-9');
  });

  it('is new and random (32 hex digits) without either, or when x-request-id holds characters a log line should not carry', () => {
    const made = [traceId({}), traceId({ 'x-request-id': 'has space' }), traceId({ 'x-request-id': 'x'.repeat(129) })];
    for (const id of made) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(made).size).toBe(3);
  });
});
