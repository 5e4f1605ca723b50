/**
 * CPU a running process has used so far, as the kernel accounts it (every thread), for
 * benchmarks that charge work to processes they did not start or that keep running:
 * the local stack's broker (its pid: src/stack/process.ts `runningPid`), a `serve`.
 */
import { readFileSync } from 'node:fs';

/** USER_HZ: the unit of /proc's utime and stime on Linux. */
const clockTicks = 100;

/** User + system CPU seconds of process `pid` so far, from /proc/<pid>/stat (its utime and stime, fields 14 and 15). */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the command name, field 2, is in parentheses and may hold spaces: count from its end
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

