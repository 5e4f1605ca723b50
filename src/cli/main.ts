import { stopQuietlyWhenThePipeCloses, UsageError } from './output.js';
import { log } from '../common/log.js';
import { commandHelp, commandLineUsage, helpText, ownHelp } from './help.js';
import { latestCatalogVersion } from '../catalog/migrations.js';
import { compressions } from '../table/settings.js';
import project from '../../package.json' with { type: 'json' };

/**
 * Each command's module, imported only when the command runs: the Kafka client, pg,
 * DuckDB and the CDK app load in the commands that use them, and help loads none.
 */
const commands: Record<string, (args: string[]) => Promise<number>> = {
  stack: async (args) => (await import('./stack.js')).stackCommand(args),
  table: async (args) => (await import('./table.js')).tableCommand(args),
  topic: async (args) => (await import('./topic.js')).topicCommand(args),
  produce: async (args) => (await import('./produce.js')).produceCommand(args),
  files: async (args) => (await import('./inspect.js')).filesCommand(args),
  status: async (args) => (await import('./inspect.js')).statusCommand(args),
  run: async (args) => (await import('./run-commands.js')).runCommand(args),
  rebuild: async (args) => (await import('./run-commands.js')).rebuildCommand(args),
  check: async (args) => (await import('./run-commands.js')).checkCommand(args),
  backfill: async (args) => (await import('./backfill.js')).backfillCommand(args),
  retention: async (args) => (await import('./backfill.js')).retentionCommand(args),
  serve: async (args) => (await import('./serve.js')).serveCommand(args),
  query: async (args) => (await import('./query.js')).queryCommand(args),
  sql: async (args) => (await import('./sql.js')).sqlCommand(args),
  login: async (args) => (await import('./login.js')).loginCommand(args),
  attach: async (args) => (await import('./attach.js')).attachCommand(args),
  demo: async (args) => (await import('./demo.js')).demoCommand(args),
};

/**
 * What a bug report needs: this offsetlake, the catalog version it migrates to, the encoder
 * it builds new files with for each compression a table may choose (encoderOf).
 */
async function versionText(): Promise<string> {
  // the encoder's module loads the Parquet writer and compressors: only --version needs them here
  const { encoderOf } = await import('../parquet/encoder.js');
  const encoders = compressions.map((compression) => `${compression} ${encoderOf({ compression })}`).join(', ');
  return `offsetlake ${project.version} (catalog version ${latestCatalogVersion}, encoders: ${encoders}; Node ${process.versions.node})\n`;
}

/** Runs one command; errors become one line on stderr and a non-zero exit code. */
export async function main(argv: string[]): Promise<number> {
  stopQuietlyWhenThePipeCloses();
  const [name, ...args] = argv;
  if ((name === '--version' || name === '-V' || name === 'version') && args.length === 0) {
    process.stdout.write(await versionText());
    return 0;
  }
  if (name === undefined || ((name === 'help' || name === '--help' || name === '-h') && args.length === 0)) {
    process.stdout.write(`${commandLineUsage}\n\n\`offsetlake help COMMAND\` (or COMMAND --help) says more about one.\n`);
    return name === undefined ? 2 : 0;
  }
  // `help CMD`, `CMD --help`, `CMD -h`, `CMD SUBCOMMAND --help`, `stack help`: the command's help, and nothing else runs
  const asked = name === 'help' || name === '--help' || name === '-h' ? args[0]! : name;
  const flagsBeforeEnd = args.slice(0, args.includes('--') ? args.indexOf('--') : args.length);
  if (asked !== name || flagsBeforeEnd.some((a) => a === '--help' || a === '-h') || (args[0] === 'help' && Object.hasOwn(commandHelp, name))) {
    if (Object.hasOwn(ownHelp, asked)) process.stdout.write(`${ownHelp[asked]}\n`);
    else if (Object.hasOwn(commandHelp, asked)) process.stdout.write(helpText(asked));
    else {
      process.stderr.write(`offsetlake: unknown command "${asked}"\n${commandLineUsage}\n`);
      return 2;
    }
    return 0;
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  try {
    if (!command) throw new UsageError(`unknown command "${name}"\n${commandLineUsage}`);
    return await command(args);
  } catch (error) {
    const err = error as Error;
    log('error', `offsetlake ${name}: ${err.message}`);
    if (process.env.OFFSETLAKE_DEBUG && err.stack) log('debug', err.stack);
    return err instanceof UsageError ? 2 : 1;
  }
}
