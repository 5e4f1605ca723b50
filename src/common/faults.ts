/**
 * Fault hooks at named points of the commit path, for the fault scenarios (bench/chaos):
 * `OFFSETLAKE_FAULT=<point>[:<n>[:<action>]]` makes the process, the nth time it passes
 * `point` (1 by default), SIGKILL itself (`kill`, the default: no handler runs, as a
 * crash or an OOM kill) or SIGSTOP itself (`stop`: paused until someone sends SIGCONT, as
 * a long GC pause or a frozen VM). Points:
 *
 * - `after-build`: a range's files are built, nothing of them is in the catalog yet;
 * - `before-commit`: inside the commit transaction, everything inserted and `indexed_end`
 *   moved, before COMMIT (the partition row is locked);
 * - `after-commit`: COMMIT returned, the indexer's memory has not moved on yet;
 * - `after-index-chunk`: an index backfill's chunk is committed, the driver has not gone on;
 * - `before-merge-commit`: inside a merge's transaction (src/catalog/merges.ts), the merged
 *   file inserted and its sources marked replaced, before COMMIT.
 *
 * Unset (always, outside the scenarios), `faultPoint` is a function that does nothing.
 */
export const faultPoints = ['after-build', 'before-commit', 'after-commit', 'after-index-chunk', 'before-merge-commit'] as const;
export type FaultPoint = (typeof faultPoints)[number];
/** The points every indexer passes when it commits ranges (the last one only an index backfill passes). */
export const commitFaultPoints: readonly FaultPoint[] = ['after-build', 'before-commit', 'after-commit'];

export interface FaultSpec {
  point: FaultPoint;
  /** The occurrence that triggers it, from 1. */
  nth: number;
  action: 'kill' | 'stop';
}

/** `after-build:3:stop` → its parts; throws on anything else, so a typo in a scenario is not a silent no-op. */
export function parseFault(text: string): FaultSpec {
  const [point, nth = '1', action = 'kill', ...rest] = text.split(':');
  const n = Number(nth);
  if (!faultPoints.includes(point as FaultPoint) || !Number.isInteger(n) || n < 1 || (action !== 'kill' && action !== 'stop') || rest.length > 0) {
    throw new Error(`OFFSETLAKE_FAULT must be <point>[:<n>[:kill|stop]] with point one of ${faultPoints.join(', ')}, got "${text}"`);
  }
  return { point: point as FaultPoint, nth: n, action };
}

/** The hook for `spec` (each call counts when its point matches); `signal` is how it acts on the process. */
export function faultHook(spec: FaultSpec | undefined, signal: (name: 'SIGKILL' | 'SIGSTOP') => void = (name) => process.kill(process.pid, name)): (point: FaultPoint) => void {
  if (!spec) return () => {};
  let seen = 0;
  return (point) => {
    if (point !== spec.point) return;
    seen += 1;
    if (seen === spec.nth) signal(spec.action === 'kill' ? 'SIGKILL' : 'SIGSTOP');
  };
}

const configured = process.env.OFFSETLAKE_FAULT;

/** Passes a named point of the commit path: acts only when OFFSETLAKE_FAULT names it. */
export const faultPoint: (point: FaultPoint) => void = configured ? faultHook(parseFault(configured)) : () => {};
