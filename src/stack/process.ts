/**
 * Daemons of the local stack: started detached so they outlive the CLI that started
 * them, remembered by a pid file, stopped by that pid and nothing else.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ServiceStatus, StackPaths } from './types.js';

export class MissingPrerequisiteError extends Error {
  override name = 'MissingPrerequisiteError';
  constructor(what: string, howToInstall: string) {
    super(`${what} not found: ${howToInstall}`);
  }
}

export class DaemonStartError extends Error {
  override name = 'DaemonStartError';
}

export function stackPaths(
  home = process.env.OFFSETLAKE_HOME ?? resolve('.offsetlake'),
  cache = process.env.OFFSETLAKE_CACHE ?? join(homedir(), '.cache', 'offsetlake'),
): StackPaths {
  const paths = { home: resolve(home), logs: join(resolve(home), 'logs'), run: join(resolve(home), 'run'), cache: resolve(cache) };
  for (const dir of Object.values(paths)) mkdirSync(dir, { recursive: true });
  return paths;
}

/** Throws MissingPrerequisiteError unless `command` runs (`command --version` or the given probe args). */
export function requireCommand(command: string, howToInstall: string, probeArgs = ['--version']): void {
  const probe = spawnSync(command, probeArgs, { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) throw new MissingPrerequisiteError(command, howToInstall);
}

export function pidFile(paths: StackPaths, name: string): string {
  return join(paths.run, `${name}.pid`);
}

export function logFile(paths: StackPaths, name: string): string {
  return join(paths.logs, `${name}.log`);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid this checkout started for `name`, if that process still runs; a stale pid file is removed. */
export function runningPid(paths: StackPaths, name: string): number | undefined {
  const file = pidFile(paths, name);
  if (!existsSync(file)) return undefined;
  const pid = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid) && !isZombie(pid)) return pid;
  rmSync(file, { force: true });
  return undefined;
}

export function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

export interface DaemonSpec {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Run as another user (Postgres refuses root). */
  uid?: number;
  gid?: number;
}

/** Starts the daemon detached with stdout and stderr appended to its log; returns its pid. */
export function startDaemon(paths: StackPaths, spec: DaemonSpec): number {
  const log = openSync(logFile(paths, spec.name), 'a');
  try {
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: { ...process.env, ...spec.env },
      detached: true,
      stdio: ['ignore', log, log],
      uid: spec.uid,
      gid: spec.gid,
    });
    if (child.pid === undefined) throw new DaemonStartError(`${spec.name}: could not start ${spec.command}`);
    child.unref();
    writeFileSync(pidFile(paths, spec.name), `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(log);
  }
}

/** `stopSignal` (SIGTERM unless given), then SIGKILL after `graceMs`; true when the process this checkout started is gone. */
export async function stopDaemon(paths: StackPaths, name: string, graceMs = 20_000, stopSignal: NodeJS.Signals = 'SIGTERM'): Promise<boolean> {
  const pid = runningPid(paths, name);
  if (pid === undefined) return false;
  signal(pid, stopSignal);
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && !isZombie(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid) && !isZombie(pid)) {
    signal(pid, 'SIGKILL');
    while (isAlive(pid) && !isZombie(pid)) await sleep(50);
  }
  rmSync(pidFile(paths, name), { force: true });
  return true;
}

/** A daemon of this checkout that does not run, as `status` and `down` give it: its name and where its log is. */
export function stoppedStatus(paths: StackPaths, name: string): ServiceStatus {
  return { name, state: 'stopped', log: logFile(paths, name) };
}

/** `status` of one daemon: `running` of its pid while the process this checkout started for `name` runs, stopped otherwise. */
export function daemonStatus(paths: StackPaths, name: string, running: (pid: number) => ServiceStatus): ServiceStatus {
  const pid = runningPid(paths, name);
  return pid === undefined ? stoppedStatus(paths, name) : running(pid);
}

/** `down` of one daemon: stops it as stopDaemon does and gives its status, stopped. */
export async function downDaemon(paths: StackPaths, name: string, graceMs?: number, stopSignal?: NodeJS.Signals): Promise<ServiceStatus> {
  await stopDaemon(paths, name, graceMs, stopSignal);
  return stoppedStatus(paths, name);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

export function portAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((answer) => {
    const socket = createConnection({ host, port });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      answer(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      answer(false);
    });
    socket.once('error', () => answer(false));
  });
}

/** The log's last lines that name an error, so that the reason is in the message itself. */
function lastErrors(log: string | undefined): string {
  if (!log || !existsSync(log)) return '';
  const lines = readFileSync(log, 'utf8').split('\n').filter((line) => /ERROR|Exception|FATAL|Address already in use/.test(line));
  return lines.length === 0 ? '' : `\n${lines.slice(-3).join('\n')}`;
}

/**
 * Polls `ready` until it returns true. Gives up after `timeoutMs`, or at once when the
 * daemon `pid` has exited, with an error that points at the daemon's log.
 */
export async function waitUntil(
  what: string,
  ready: () => Promise<boolean>,
  options: { timeoutMs: number; pid?: number; log?: string },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const seeLog = options.log ? `; see ${options.log}` : '';
  for (;;) {
    if (await ready().catch(() => false)) return;
    if (options.pid !== undefined && (!isAlive(options.pid) || isZombie(options.pid))) {
      throw new DaemonStartError(`${what} exited while starting${seeLog}${lastErrors(options.log)}`);
    }
    if (Date.now() > deadline) throw new DaemonStartError(`${what} did not become ready within ${options.timeoutMs} ms${seeLog}`);
    await sleep(250);
  }
}
