#!/usr/bin/env node
// The CLI runs the TypeScript sources directly through tsx, so there is no build step
// between a change and the command a user types.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
