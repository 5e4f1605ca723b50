/**
 * The command line's flags, parsed by node:util's parseArgs, with its errors said in our
 * own words: an unknown flag names the nearest valid one, a value that looks like a flag
 * says how to write it, and every message points at `--help`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { progress, UsageError } from './output.js';
import { logFormats, setLogFormat, type LogFormat } from '../common/log.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Edit distance of two short strings (flags): insertions, deletions, substitutions. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/** The valid flag nearest to `flag`, if one is near enough to be what was meant. */
export function nearestFlag(flag: string, valid: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of valid) {
    const distance = editDistance(flag, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return bestDistance <= Math.max(2, Math.floor(flag.length / 4)) ? best : undefined;
}

/** `unknownHint`: said after an unknown flag (e.g. the table settings there are). */
export function parseCommandArgs<O extends Options>(command: string, args: string[], options: O, allowPositionals = true, unknownHint = '') {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (error) {
    throw usageError(command, options, error as Error & { code?: string }, unknownHint);
  }
}

function usageError(command: string, options: Options, error: Error & { code?: string }, unknownHint: string): Error {
  const help = `\`offsetlake ${command} --help\` lists them`;
  const flags = Object.entries(options).flatMap(([name, option]) => [`--${name}`, ...(option.short ? [`-${option.short}`] : [])]);
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = /'(-[^']*)'/.exec(error.message)?.[1] ?? 'that flag';
    const near = nearestFlag(flag, flags);
    return new UsageError(`unknown flag ${flag}${near ? `; did you mean ${near}?` : ''}${unknownHint ? `; ${unknownHint}` : ''} (${help})`);
  }
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const flag = /'(--?[^ ']+)/.exec(error.message)?.[1] ?? 'a flag';
    if (/ambiguous/.test(error.message)) {
      return new UsageError(`${flag} needs a value, and the next word starts with '-'; write a value that starts with '-' as ${flag}=VALUE (${help})`);
    }
    const boolean = options[flag.replace(/^-+/, '')]?.type === 'boolean';
    return new UsageError(boolean ? `${flag} takes no value (${help})` : `${flag} needs a value (${help})`);
  }
  if (error.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const word = /'([^']*)'/.exec(error.message)?.[1] ?? 'a word';
    return new UsageError(`unexpected argument "${word}" (${help})`);
  }
  return error;
}

/**
 * A flag that counts something: whole decimal digits, at least 1, at most `max` when there
 * is one; `fallback` when the flag is absent. Anything else is a usage error naming the flag.
 */
export function wholeNumberFlag(flag: string, text: string | undefined, fallback: number, max?: number): number {
  if (text === undefined) return fallback;
  const n = Number(text.trim());
  if (/^\d+$/.test(text.trim()) && Number.isSafeInteger(n) && n >= 1 && (max === undefined || n <= max)) return n;
  throw new UsageError(`--${flag} must be a whole number ${max === undefined ? 'of at least 1' : `from 1 to ${max}`}, got "${text}"`);
}

/** `--build-threads N`: worker threads that build, 0 to build on the calling thread; `fallback` when not given. */
export function buildThreadsFlag(text: string | undefined, fallback: number, onThread: string): number {
  if (text === undefined) return fallback;
  const n = Number(text.trim());
  if (/^\d+$/.test(text.trim()) && n <= 256) return n;
  throw new UsageError(`--build-threads must be a whole number from 0 (${onThread}) to 256, got "${text}"`);
}

/**
 * A secret (a token, a secret key): from its flag, which still works but shows in `ps` to
 * every user of the machine (so it is warned about), else from the environment variable
 * `env`, else from the file `env`_FILE names (its content, trimmed).
 */
export function secretValue(flag: string, given: string | undefined, env: string): string | undefined {
  if (given !== undefined) {
    progress(`warning: ${flag} on the command line shows in \`ps\` to every user of this machine; set ${env}, or ${env}_FILE to a file that holds it`);
    return given;
  }
  const value = process.env[env];
  if (value) return value;
  const file = process.env[`${env}_FILE`];
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch (error) {
    throw new UsageError(`${env}_FILE names ${file}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** `--log-format`, else OFFSETLAKE_LOG_FORMAT, else human lines; set for the rest of the process. */
export function useLogFormat(flag: string | undefined): LogFormat {
  const env = process.env.OFFSETLAKE_LOG_FORMAT || undefined;
  const chosen = flag ?? env ?? 'human';
  if (!(logFormats as readonly string[]).includes(chosen)) {
    throw new UsageError(`${flag === undefined ? 'OFFSETLAKE_LOG_FORMAT' : '--log-format'} must be ${logFormats.join(' or ')}, got "${chosen}"`);
  }
  setLogFormat(chosen as LogFormat);
  return chosen as LogFormat;
}

/** A port flag's value: a whole number from 0 (any free port) to 65535. */
export function portFlag(flag: string, text: string | undefined, fallback: number): number {
  const port = text === undefined ? fallback : Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535 || (text !== undefined && !/^\d+$/.test(text))) throw new UsageError(`${flag} must be a port number from 0 to 65535, got "${text}"`);
  return port;
}
