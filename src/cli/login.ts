/** `login`: DuckLake reader logins, one per person or tool, so that none can lock out another. */
import type { ParseArgsConfig } from 'node:util';
import { createDuckLakeReaderLogin, dropDuckLakeReaderLogin, duckLakeReaderLogins } from '../catalog/reader-login.js';
import { withCatalog } from './engine.js';
import { printJson, printTable, UsageError } from './output.js';
import { loginUsage } from './help.js';
import { parseCommandArgs } from './args.js';

const options = {
  json: { type: 'boolean' },
  'if-exists': { type: 'boolean' },
  'database-url': { type: 'string' },
} satisfies ParseArgsConfig['options'];

/** The catalog's URL as `login`: what `attach --database-url` takes. */
export function loginUrl(catalogUrl: string, login: { username: string; password: string }): string {
  const url = new URL(catalogUrl);
  url.username = login.username;
  url.password = login.password;
  return url.toString();
}

export async function loginCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('login', args, options);
  const [action, name, ...rest] = positionals;
  if (rest.length > 0) throw new UsageError(`login takes one NAME; usage: ${loginUsage}`);
  const flags = { databaseUrl: values['database-url'] };
  if (action === 'create') {
    if (!name) throw new UsageError(`login create needs a NAME; usage: ${loginUsage}`);
    const { url, created } = await withCatalog(flags, async (engine) => {
      const made = await createDuckLakeReaderLogin(engine.catalog, name);
      return { url: loginUrl(engine.config.databaseUrl, made.login), created: made.created };
    });
    if (values.json) printJson({ login: name, created, databaseUrl: url });
    else {
      process.stdout.write(`${created ? 'created' : 'set a new password for'} DuckLake reader login ${name}; its catalog URL (shown once, keep it as a password):\n${url}\n`
        + `the attach SQL with it: offsetlake attach --database-url '${url}'\n`);
    }
    return 0;
  }
  if (action === 'list') {
    if (name) throw new UsageError(`login list takes no NAME; usage: ${loginUsage}`);
    const logins = await withCatalog(flags, (engine) => duckLakeReaderLogins(engine.catalog));
    if (values.json) printJson(logins);
    else printTable(logins.map((l) => ({ login: l.name, connections: `${l.connections}/${l.connectionLimit}`, settings: l.settings.join(' ') })));
    return 0;
  }
  if (action === 'drop') {
    if (!name) throw new UsageError(`login drop needs a NAME; usage: ${loginUsage}`);
    const dropped = await withCatalog(flags, (engine) => dropDuckLakeReaderLogin(engine.catalog, name));
    if (!dropped && !values['if-exists']) throw new Error(`no login named ${name}`);
    if (values.json) printJson({ dropped });
    else process.stdout.write(dropped ? `dropped DuckLake reader login ${name} (its sessions ended)\n` : `no login named ${name}\n`);
    return 0;
  }
  throw new UsageError(`unknown login action "${action ?? ''}"; usage: ${loginUsage}`);
}
