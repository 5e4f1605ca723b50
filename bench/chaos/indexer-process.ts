/**
 * `offsetlake run` (or another indexer: the msk-handler scenario's bench/chaos/handler-process.ts) as a child process, as a user runs it: the scenarios kill it with
 * SIGKILL (no handler runs, leases stay held until they expire) and start another.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sleep } from '../../src/stack/process.js';
import type { ChaosStack } from './stack.js';

const cli = fileURLToPath(new URL('../../bin/offsetlake.js', import.meta.url));

export class IndexerProcess {
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  /** The last lines it wrote to stderr, for a report when something went wrong. */
  private tail: string[] = [];
  /** Every line it wrote to stderr that matched `watch`. */
  readonly matched: string[] = [];

  /** `env`: more environment (OFFSETLAKE_FAULT, a skewed clock); `watch`: lines of stderr to keep in `matched`. */
  constructor(stack: ChaosStack, readonly label: string, env: Record<string, string> = {}, private readonly watch?: RegExp, args: string[] = [cli, 'run', '--batch-window', '100ms']) {
    this.child = spawn(process.execPath, args, {
      env: { ...process.env, ...stack.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      const lines = chunk.toString().split('\n').filter(Boolean);
      if (this.watch) this.matched.push(...lines.filter((line) => this.watch!.test(line)));
      this.tail = [...this.tail, ...lines].slice(-20);
    });
    this.exited = new Promise((done) => this.child.on('exit', (code) => done(code)));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The signal that ended it (SIGKILL: it killed itself at a fault point, or was killed), or null. */
  get signal(): NodeJS.Signals | null {
    return this.child.signalCode;
  }

  /** Waits until it has exited, or `timeoutMs`; whether it has. */
  async exitedWithin(timeoutMs: number): Promise<boolean> {
    return Promise.race([this.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
  }

  /** Waits until it is stopped (SIGSTOP: state T in /proc), or `timeoutMs`; whether it is. */
  async stoppedWithin(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return false;
      // Gone between the check and the read (exited, not yet reaped by Node): not stopped.
      const stat = (() => {
        try {
          return readFileSync(`/proc/${this.pid}/stat`, 'utf8');
        } catch {
          return '';
        }
      })();
      if (/^\d+ \(.*\) T /.test(stat)) return true;
      await sleep(50);
    }
    return false;
  }

  /** SIGCONT: a stopped process goes on where it was. */
  resume(): void {
    this.child.kill('SIGCONT');
  }

  get output(): string {
    return this.tail.join('\n');
  }

  /** SIGKILL, and waits until it is gone. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
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
