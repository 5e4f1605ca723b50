/**
 * `offsetlake run` as a child process, as a user runs it: the scenarios kill it with
 * SIGKILL (no handler runs, leases stay held until they expire) and start another.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChaosStack } from './stack.js';

const cli = fileURLToPath(new URL('../../bin/offsetlake.js', import.meta.url));

export class IndexerProcess {
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  /** The last lines it wrote to stderr, for a report when something went wrong. */
  private tail: string[] = [];

  constructor(stack: ChaosStack, readonly label: string) {
    this.child = spawn(process.execPath, [cli, 'run', '--batch-window', '100ms'], {
      env: { ...process.env, ...stack.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.tail = [...this.tail, ...chunk.toString().split('\n').filter(Boolean)].slice(-20);
    });
    this.exited = new Promise((done) => this.child.on('exit', (code) => done(code)));
  }

  get output(): string {
    return this.tail.join('\n');
  }

  /** SIGKILL, and waits until it is gone. */
  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (run gives its leases back), then SIGKILL if it has not exited after `graceMs`; its exit code. */
  async stop(graceMs = 15_000): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
