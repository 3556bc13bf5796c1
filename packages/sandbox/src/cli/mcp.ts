/**
 * `aleph-sandbox mcp [run flags]`: the MCP server of `@aleph/mcp` on this process's stdio, with the same
 * arguments. `@aleph/mcp` carries the MCP SDK and its web-server dependencies, so it is a package of its
 * own that `@aleph/sandbox` does not install: without it, the subcommand says how to get it.
 */
import { delegate } from './delegate.js';
import { HELP } from './help.js';

export function mcp(argv: string[]): Promise<number> {
  // The help needs no server: it is printed even where @aleph/mcp is not installed.
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${HELP.mcp}\n`);
    return Promise.resolve(0);
  }
  return delegate('@aleph/mcp', argv, 'aleph-sandbox mcp');
}
