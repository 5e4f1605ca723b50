/**
 * `offsetlake serve` as a child process of a benchmark: started from this checkout's CLI,
 * ready once it says where it serves (so `--port 0` works, and a serve that exits at
 * start is said with its stderr), stopped with SIGTERM and, after a grace period, SIGKILL.
 * Every benchmark that measures through serve starts it here, one way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface ServeProcess {
  child: ChildProcess;
  /** The port it listens on (the one it said, also when asked for port 0). */
  port: number;
  /** What it wrote to stderr so far (the last 200 kB). */
  stderr(): string;
  /** SIGTERM, then SIGKILL if it has not ended within `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface ServeOptions {
  /** 0: any free port. */
  port: number;
  /** More flags (`--no-auth` is given unless `token` is: benchmarks talk to it without one). */
  args?: string[];
  /** Whether serve asks for a token (then give OFFSETLAKE_TOKEN in `env`): needed beside an S3 key pair. Default false. */
  token?: boolean;
  env?: NodeJS.ProcessEnv;
  /** In a process group of its own (a benchmark that ends its children's descendants with them). */
  detached?: boolean;
  /** How long it may take to say it serves (ms). */
  startMs?: number;
}

export async function startServe(options: ServeOptions): Promise<ServeProcess> {
  const child = spawn(process.execPath, [join(root, 'bin/offsetlake.js'), 'serve', ...(options.token ? [] : ['--no-auth']), '--port', String(options.port), ...(options.args ?? [])], {
    cwd: root, env: options.env ?? process.env, detached: options.detached ?? false, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  const exited = once(child, 'exit');
  const stop = async (graceMs = 15_000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    signal(child, 'SIGTERM', options.detached);
    const ended = await Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(resolve, graceMs, false).unref())]);
    if (!ended) signal(child, 'SIGKILL', options.detached);
    await exited;
  };
  const deadline = Date.now() + (options.startMs ?? 60_000);
  for (;;) {
    const said = /serving http:\/\/[^\s/]+:(\d+)\//.exec(stderr);
    if (said) return { child, port: Number(said[1]), stderr: () => stderr, stop };
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`offsetlake serve exited (${child.exitCode ?? child.signalCode}) before serving: ${stderr.slice(-2000)}`);
    if (Date.now() > deadline) {
      await stop(1000);
      throw new Error(`offsetlake serve did not say it serves within ${Math.round((options.startMs ?? 60_000) / 1000)} s: ${stderr.slice(-2000)}`);
    }
    await Promise.race([new Promise((resolve) => setTimeout(resolve, 100)), exited]);
  }
}

function signal(child: ChildProcess, name: NodeJS.Signals, group: boolean | undefined): void {
  try {
    if (group && child.pid !== undefined) process.kill(-child.pid, name);
    else child.kill(name);
  } catch {
    // already gone
  }
}
