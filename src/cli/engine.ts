import { openEngine, type Engine } from '../runtime/engine.js';
import type { EngineFlags } from '../runtime/config.js';

/** Opens the engine for one command and closes it whatever happens. */
export async function withEngine<T>(flags: EngineFlags, work: (engine: Engine) => Promise<T>): Promise<T> {
  const engine = await openEngine(flags);
  try {
    return await work(engine);
  } finally {
    await engine.close();
  }
}
