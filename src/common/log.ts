/**
 * The one way processes print what they are doing (stderr, so stdout stays for results):
 * human lines by default, or with `json` one object per line, `{time, level, message}`
 * plus `table`, `partition` and a request's `trace` where they apply. Fields given to
 * `withLogFields` (an HTTP request's trace id) go to every line logged inside it,
 * across awaits. Lambda entries send the lines to their own logger with `setLogSink`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export type LogFormat = 'human' | 'json';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export const logFormats: readonly LogFormat[] = ['human', 'json'];

export interface LogFields {
  table?: string;
  topic?: string;
  partition?: number;
  trace?: string;
  [name: string]: unknown;
}

export type LogSink = (level: LogLevel, message: string, fields: LogFields) => void;

let format: LogFormat = 'human';

function stderrSink(level: LogLevel, message: string, fields: LogFields): void {
  if (format === 'human') process.stderr.write(`${message}\n`);
  else process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
}

let sink: LogSink = stderrSink;
const context = new AsyncLocalStorage<LogFields>();

export function setLogFormat(chosen: LogFormat): void {
  format = chosen;
}

export function logFormat(): LogFormat {
  return format;
}

/** Where lines go instead of stderr (a Lambda's Powertools logger); none puts stderr back. */
export function setLogSink(chosen?: LogSink): void {
  sink = chosen ?? stderrSink;
}

/** Runs `work` with `fields` added to every line it logs, its awaits included. */
export function withLogFields<T>(fields: LogFields, work: () => T): T {
  return context.run({ ...context.getStore(), ...fields }, work);
}

export function log(level: LogLevel, message: string, fields: LogFields = {}): void {
  sink(level, message, { ...context.getStore(), ...fields });
}
