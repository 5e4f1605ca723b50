import { stackConfig } from '../stack/config.js';
import { stackEnvironment, stackUp } from '../stack/index.js';
import { openEngine } from '../engine.js';
import { printTable, progress } from './output.js';

/** From nothing: the local stack with embedded defaults, and the catalog migrated. */
export async function demoCommand(_args: string[]): Promise<number> {
  const config = stackConfig();
  const statuses = await stackUp(config, progress);
  for (const [name, value] of Object.entries(stackEnvironment(config))) process.env[name] ??= value;
  const engine = await openEngine();
  await engine.close();
  printTable(statuses.map((s) => ({ service: s.name, state: s.state, endpoint: s.endpoint })));
  process.stdout.write('the local stack is up and the catalog is migrated\n');
  return 0;
}
