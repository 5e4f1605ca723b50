/**
 * Where a bench's CPU time goes, for the part it measures only: set BENCH_PROFILE=1 and
 * the bench prints the functions with the most self time (V8's sampling profiler through
 * node:inspector, so loading the data is not counted).
 */
import { Session } from 'node:inspector/promises';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

export async function profiled<T>(label: string, work: () => Promise<T>, top = 20): Promise<T> {
  if (!process.env.BENCH_PROFILE) return work();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    session.disconnect();
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    let total = 0;
    profile.samples.forEach((id, i) => {
      const frame = byId.get(id)!.callFrame;
      const name = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber + 1}`;
      const dt = profile.timeDeltas[i] ?? 0;
      self.set(name, (self.get(name) ?? 0) + dt);
      total += dt;
    });
    process.stderr.write(`${label}: self time, top ${top}\n`);
    for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      process.stderr.write(`${((100 * us) / total).toFixed(1).padStart(6)} %  ${name}\n`);
    }
  }
}
