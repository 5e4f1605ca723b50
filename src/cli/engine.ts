import { openEngine, type Engine } from '../runtime/engine.js';
import type { EngineFlags } from '../runtime/config.js';
import { useLocalStackDefaults } from '../stack/index.js';

/**
 * Opens the engine for one command and closes it whatever happens. Flags, then the
 * environment, then the local stack (README, "Configuration"); only commands that use
 * the engine take the local defaults: `stack` must see the environment as the user set it.
 */
export async function withEngine<T>(flags: EngineFlags, work: (engine: Engine) => Promise<T>): Promise<T> {
  useLocalStackDefaults();
  const engine = await openEngine(flags);
  try {
    return await work(engine);
  } finally {
    await engine.close();
  }
}
