/**
 * CPU a running process has used so far, as the kernel accounts it (every thread), for
 * benchmarks that charge work to processes they did not start or that keep running:
 * the local stack's broker, a `serve`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StackConfig } from '../src/stack/types.js';

/** USER_HZ: the unit of /proc's utime and stime on Linux. */
const clockTicks = 100;

/** User + system CPU seconds of process `pid` so far, from /proc/<pid>/stat (its utime and stime, fields 14 and 15). */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the command name, field 2, is in parentheses and may hold spaces: count from its end
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/** The process id of the local stack's Kafka broker, or undefined when this stack has none running here. */
export function localBrokerPid(config: Pick<StackConfig, 'paths'>): number | undefined {
  const file = join(config.paths.run, 'kafka.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && existsSync(`/proc/${pid}/stat`) ? pid : undefined;
}
