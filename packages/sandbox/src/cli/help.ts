/** What `aleph-sandbox --help` and `<command> --help` print, and the usage error every subcommand throws. */
import { CHANGES_HELP, UNDO_HELP } from './changes-help.js';

export const HELP: Record<string, string> = {
  main: `aleph-sandbox: run commands inside the Aleph sandbox

Usage:
  aleph-sandbox run [run flags] -- PROGRAM [ARGS...]     run a command in a session workspace
  aleph-sandbox profile [run flags] -- PROGRAM [ARGS...] print the sandbox plan, run nothing
  aleph-sandbox mcp [run flags]                          an MCP server on stdio (needs @aleph/mcp)
  aleph-sandbox undo RUN_ID | --last N --workspace DIR   take back what a run changed
  aleph-sandbox changes [RUN_ID] [--workspace DIR]       what runs changed (kept change sets)
  aleph-sandbox doctor [--json] [--workspace DIR]        what a run will get here, and fixes
  aleph-sandbox gc [--dry-run] [--json]                  prune old sandbox state now (also hourly by itself)
  aleph-sandbox policy check ...                         the command filter (see aleph-policy --help)
  aleph-sandbox proxy ...                                the egress proxy (see aleph-proxy --help)
  aleph-sandbox build-helper                             build the Linux helper from source (no prebuilt one fits)

Run "aleph-sandbox <command> --help" for the flags of a command.`,
  run: `aleph-sandbox run [flags] -- PROGRAM [ARGS...]

Runs PROGRAM in the session's workspace under the sandbox, streaming its output, and exits with its code
(124 on timeout, 128+N when killed by signal N). Piped stdin is read to its end and given to PROGRAM (the
command filter reads it too, for \`bash -s\`); a stdin pipe on which nothing arrives within 0.25 s is
left alone.

Flags:
  --workspace DIR      use DIR as the session workspace (created if missing)
  --session ID         session id (default "cli"); the workspace is <workspace_root>/<hash of ID>
  --cwd DIR            working directory inside the workspace (relative to it, or absolute inside it)
  --allow-read PATH    grant read access (repeatable)
  --allow-write PATH   grant write access (repeatable)
  --net none|all|HOST,HOST...   network: none (default), everything, or only these hosts (through the proxy)
  --publish PORT       make the command's 127.0.0.1:PORT reachable on the host's 127.0.0.1:PORT while it
                       runs (repeatable; a dev server to show)
  --allow-spawn        allow the command to start subprocesses (needed by most shell scripts)
  --memory MB          memory limit (above a max_memory_mb the config sets, it is asked for)
  --timeout S          wall-clock timeout in seconds
  --approve prompt|all|none   how requests beyond the baseline and these flags are approved
                       (default: prompt on a terminal, none otherwise)
  --json               print the result as JSON instead of streaming; a failure too, as
                       {"error": {"code", "message", "field", "value", "fix"}} (the exit code is the same)
  --config FILE        config file (default ~/.aleph/config.toml)

A capability flag (--allow-read, --allow-write, --net, --publish, --allow-spawn) is granted for this run
without asking: typing it is the approval. A grant inside a hidden path (the vault, a session's HOME,
~/.aleph/run, the audit log's directory) stays refused whatever the flag, and protected paths (git hooks
and config, agent settings) stay read-only.

What the sandbox refused while the command ran (a host, a port, a name, a private address) is printed on
stderr after its output, each with what would allow it (in --json: details.denials). A run that changed
files says so on stderr too, with its run id and how to take it back ("changes: 3 created, 1 modified
(run r…; undo: aleph-sandbox undo r…)"; in --json: details.runId and details.changes).

Exit codes: the command's own; 124 timeout; 128+N signal; 2 usage or config error;
125 the sandbox could not run it; 126 denied (command policy, capability, rate limit).`,
  mcp: `aleph-sandbox mcp [run flags]

Serves MCP on stdin/stdout for an MCP client (Claude Desktop, Claude Code, Cursor, VS Code, ...): the
tools execute, read_file, write_file, edit_file, list_directory, stat and delete_file run in one sandbox
session per connection (undo and changes take back or show what a command changed); the resources aleph://audit and aleph://doctor show its audit records and what
this host enforces. Commands may start subprocesses (a shell command runs on the first call); requests
that widen the ceiling (files outside the workspace, the network) are asked of the
user through the client (MCP elicitation); a client that cannot ask gets a result naming the flag or
config line that would allow it.
Needs the @aleph/mcp package (npm install @aleph/mcp); \`npx -y @aleph/mcp [run flags]\` is the same server.

Flags (those of run, with these meanings):
  --workspace DIR      work in DIR (created if missing); without it and --session, the connection gets
                       a scratch workspace that is removed when the client disconnects
  --session ID         the connection's session id: its workspace is kept across restarts (what the
                       user approves for the session lasts until the server exits)
  --cwd DIR            default working directory of commands, inside the workspace
  --allow-read PATH    every command may read PATH (repeatable), without asking
  --allow-write PATH   every command may write PATH (repeatable), without asking
  --net none|all|HOST,HOST...   every command may reach these hosts, without asking
  --allow-spawn        accepted; subprocesses are allowed already (a shell tool needs them, and they stay
                       inside the sandbox)
  --memory MB          memory limit of every command
  --timeout S          default timeout of a command (a call may pass timeoutSeconds)
  --approve prompt|all|none   requests beyond that: ask the user through the client (prompt, the
                       default), allow them all, or refuse them all
  --config FILE        config file (default ~/.aleph/config.toml)

It exits when the client closes stdin, after killing what still runs.`,
  profile: `aleph-sandbox profile [run flags] [--json] -- PROGRAM [ARGS...]

Prints the plan the sandbox would apply to this command (mounts, Landlock rules, seccomp rules in words,
limits, network), without running anything, and the allowed names that resolve to a loopback, private or
reserved address (the proxy refuses those unless the address is allowed too). --json prints the whole
profile, with privateNames.`,
  doctor: `aleph-sandbox doctor [--json] [--config FILE] [--workspace DIR]

Reports the driver for this host, each enforcement mechanism as it behaved when used (the helper, seccomp,
Landlock, user namespaces, cgroups, each tier running a sandboxed \`true\`), and runs \`true\` sandboxed in
DIR (default: a scratch workspace in workspace_root, on the filesystem of the session workspaces): the
tier and what it does not enforce are the ones that run reported, a weaker tier for that workspace
included, so they are what a run there gets. For anything missing, the exact command that fixes it, and
the names of [sandbox.network] allow that resolve to a private address. "ready" only after that command
ran sandboxed.`,
  undo: UNDO_HELP,
  changes: CHANGES_HELP,
  gc: `aleph-sandbox gc [--dry-run] [--json] [--config FILE]

Prunes the sandbox's host state now and prints what it removed (--dry-run: what it would remove):
git-directory registries and tier caches unused for [sandbox.state] max_age_days (14), and registries
beyond max_registry_files (1000); quarantined sessions, kept changes and private temporary directories
older than that, then the oldest while the quarantine is above max_quarantine_mb (512) and the change
store above [sandbox.changes] max_mb. Never a live run's record or files, and never a dead run's record
while a root it names is still there (the next run there checks it). The CLI and the MCP server do the
same by themselves at most once an hour (auto_gc = false turns that off).`,
  'build-helper': `aleph-sandbox build-helper

Builds the Linux sandbox helper from the C source @aleph/driver-linux ships, for a machine no prebuilt
helper fits (no @aleph/driver-linux-<arch> package for it, or optional dependencies left out), into
~/.aleph/helper/<version>-<arch>/, where the driver finds it. Needs a C compiler (apt-get install -y gcc
libc6-dev). Exit codes: 0 built and answering --probe; 1 could not be built (the fix is printed).`,
};

/** What a {@link UsageError} names, for `--json` (`{"error": {"code": "ALEPH_USAGE", …}}`). */
export interface UsageProblem {
  /** The flag or argument at fault: `--timeout`, `PROGRAM`, `COMMAND`. */
  readonly field?: string;
  /** The value given, as typed. */
  readonly value?: string;
  /** What to do instead. */
  readonly fix?: string;
}

/** Bad flags or arguments: reported on one line (with `--json`, as JSON on stdout too), exit code 2. */
export class UsageError extends Error {
  readonly code = 'ALEPH_USAGE';
  readonly field: string | undefined;
  readonly value: string | undefined;
  readonly fix: string | undefined;
  constructor(message: string, problem: UsageProblem = {}) {
    super(message);
    this.field = problem.field;
    this.value = problem.value;
    this.fix = problem.fix;
  }
}

/** What a subcommand throws for `--help`: its text is printed on stdout, exit code 0. */
export function helpRequested(command: string): Error {
  return Object.assign(new Error(HELP[command]), { help: true });
}
