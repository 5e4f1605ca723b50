import { openCatalog } from '../catalog/db.js';
import { migrateCatalog } from '../catalog/migrate.js';
import { parseBrokerCount, parseBrokerPorts, parsePort, stackConfig } from '../stack/config.js';
import { stackDown, stackEnvironment, stackStatus, stackUp } from '../stack/index.js';
import type { ServiceStatus, StackConfig } from '../stack/types.js';
import { ensureStackReaderLogin } from '../stack/postgres.js';
import { printJson, printTable, progress, UsageError } from './output.js';
import { stackUsage } from './help.js';
import { redact } from '../runtime/engine.js';
import { parseCommandArgs } from './args.js';

const options = {
  json: { type: 'boolean' },
  wide: { type: 'boolean' },
  home: { type: 'string' },
  'kafka-port': { type: 'string' },
  'controller-port': { type: 'string' },
  'registry-port': { type: 'string' },
  'postgres-port': { type: 'string' },
  brokers: { type: 'string' },
  'broker-ports': { type: 'string' },
} as const;

export async function stackCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('stack', args, options);
  const port = (flag: keyof typeof values) => (typeof values[flag] === 'string' ? parsePort(`--${flag}`, values[flag]) : undefined);
  const config = stackConfig({
    home: values.home,
    kafkaPort: port('kafka-port'),
    controllerPort: port('controller-port'),
    registryPort: port('registry-port'),
    postgresPort: port('postgres-port'),
    brokers: values.brokers === undefined ? undefined : parseBrokerCount('--brokers', values.brokers),
    brokerPorts: values['broker-ports'] === undefined ? undefined : parseBrokerPorts('--broker-ports', values['broker-ports']),
  });
  const action = positionals[0];
  let statuses: ServiceStatus[];
  let catalogVersion: number | undefined;
  let migrated: number[] = [];
  if (action === 'up') {
    statuses = await stackUp(config, progress);
    ({ version: catalogVersion, applied: migrated } = await migrateStackCatalog(config, stackEnvironment(config).DATABASE_URL));
  } else if (action === 'down') {
    statuses = await stackDown(config);
  } else if (action === 'status') {
    statuses = await stackStatus(config);
  } else {
    throw new UsageError(`unknown stack action "${action ?? ''}"; usage: ${stackUsage}`);
  }
  if (values.json) {
    printJson({ services: statuses, environment: action === 'down' ? undefined : stackEnvironment(config), catalogVersion });
  } else {
    // 100 columns: no log paths and no password in the endpoint; --wide shows the log
    printTable(statuses.map((s) => ({ service: s.name, state: s.state, pid: s.pid, endpoint: s.endpoint && redact(s.endpoint).replace(':***@', '@'), ...(values.wide ? { log: s.log } : {}), detail: values.wide ? s.detail : s.detail?.split(', ')[0] })));
    if (migrated.length > 0) process.stdout.write(`catalog migrated to version ${catalogVersion}\n`);
  }
  return action === 'status' || statuses.every((s) => s.state !== 'stopped') || action === 'down' ? 0 : 1;
}

async function migrateStackCatalog(config: StackConfig, databaseUrl: string): Promise<{ version: number; applied: number[] }> {
  const catalog = openCatalog(databaseUrl, 1);
  try {
    const result = await migrateCatalog(catalog);
    await ensureStackReaderLogin(config, catalog);
    return result;
  } finally {
    await catalog.end();
  }
}
