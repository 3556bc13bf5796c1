import os from 'node:os';
import { parseParentProxy, parsePattern } from '@aleph/proxy';
import { DEFAULT_PROTECTED_PATHS, InvalidInputError } from '@aleph/sandbox-core';
import { z } from 'zod';
import { ChangesTableSchema } from './config-changes.js';
import { type AlephConfig, toConfig } from './config-shape.js';

const positiveInt = (what: string, example: number) =>
  z
    .number({ error: `must be a number of ${what}; e.g. ${example}` })
    .int({ message: `must be a whole number of ${what}; e.g. ${example}` })
    .positive({ message: `must be a positive number of ${what}; e.g. ${example}` });

/** The protected-path settings the Linux and macOS drivers share. */
const protectedPathFields = {
  protected_paths: z
    .array(z.string({ error: 'must be relative paths such as ".git/hooks"' }))
    .default([...DEFAULT_PROTECTED_PATHS])
    .describe('Sub-paths kept read-only inside writable roots.'),
  protect_all_git: z
    .boolean({ error: 'must be true or false' })
    .default(false)
    .describe('Protect all of .git.'),
};

const portSchema = z
  .number({ error: 'must be a port number; e.g. 3000' })
  .int({ message: 'must be a whole port number; e.g. 3000' })
  .min(1, { message: 'must be a port from 1 to 65535; e.g. 3000' })
  .max(65535, { message: 'must be a port from 1 to 65535; e.g. 3000' });

const absoluteOrHome = z
  .string({ error: 'must be a path string; e.g. "~/projects"' })
  .min(1, { message: 'is empty; give a path such as "~/projects"' });

/**
 * The config file, exactly as written in TOML (snake_case keys). Everything has the spec's default, so an
 * empty or missing file is a valid config.
 */
/** A host pattern, read by the managed proxy's own parser, so the file fails where the proxy would. */
const HostPatternSchema = z.string({ error: 'must be host patterns' }).superRefine((value, ctx) => {
  try {
    parsePattern(value);
  } catch (error) {
    // 'pattern "…" is not a valid host: …': the key and value are named already.
    const why = (error as Error).message.replace(/^pattern "[^"]*" /, '');
    ctx.addIssue({
      code: 'custom',
      message: why.includes('; ')
        ? why
        : `${why}; use name, *.suffix or an IP literal, optionally with :port`,
    });
  }
});

export const ConfigFileSchema = z
  .object({
    sandbox: z
      .object({
        workspace_root: absoluteOrHome
          .default('~/.aleph/workspaces')
          .describe('Directory holding one workspace per session.'),
        enabled: z
          .boolean({ error: 'must be true or false' })
          .default(true)
          .describe('false: every execute fails fast ("sandbox disabled").'),
        default_timeout_seconds: z
          .number({ error: 'must be a number of seconds; e.g. 60' })
          .positive({ message: 'must be a positive number of seconds; e.g. 60' })
          .default(60)
          .describe('Wall-clock timeout when the command does not set one.'),
        max_output_bytes: positiveInt('bytes', 1048576)
          .default(1024 * 1024)
          .describe('Output budget, split between stdout and stderr.'),
        baseline: z
          .object({
            fs_read: z.array(absoluteOrHome).default([]).describe('Paths readable without approval.'),
            fs_write: z
              .array(absoluteOrHome)
              .default([])
              .describe('Paths writable without approval (the workspace always is).'),
            spawn_subprocess: z
              .boolean({ error: 'must be true or false' })
              .default(false)
              .describe('Allow subprocesses without approval.'),
            max_memory_mb: positiveInt('MiB', 1024)
              .optional()
              .describe('Memory ceiling; requests above it need approval.'),
          })
          .strict()
          .prefault({})
          .describe('What a session may do without asking (default: strict).'),
        command_policy: z
          .object({
            enabled: z
              .boolean({ error: 'must be true or false' })
              .default(true)
              .describe('Run the filter at all.'),
            enforcement: z
              .enum(['block', 'warn', 'off'], { error: 'must be "block", "warn" or "off"' })
              .default('block')
              .describe('block: stop matches; warn: run and audit; off: audit only.'),
            use_default_rules: z
              .boolean({ error: 'must be true or false' })
              .default(true)
              .describe('Include the curated rules.'),
            custom_rules: z
              .array(
                z
                  .object({
                    name: z.string({ error: 'must be a string' }),
                    regex: z.string({ error: 'must be an RE2 pattern string' }),
                    action: z
                      .enum(['block', 'warn'], { error: 'must be "block" or "warn"' })
                      .default('block'),
                    description: z.string().default(''),
                    platform: z
                      .enum(['posix', 'windows', 'any'], { error: 'must be "posix", "windows" or "any"' })
                      .default('any'),
                  })
                  .strict(),
              )
              .default([])
              .describe(
                '{ name, regex (RE2), action, description, platform } tables; a malformed regex is skipped and reported.',
              ),
          })
          .strict()
          .prefault({})
          .describe('The dangerous-command filter in front of the sandbox.'),
        rate_limit: z
          .object({
            capacity: positiveInt('executions', 30).default(30).describe('Executions a session may burst.'),
            refill_per_second: z
              .number({ error: 'must be a number; e.g. 2' })
              .nonnegative({ message: 'must be 0 or more; e.g. 2' })
              .default(2)
              .describe('Tokens added back per second.'),
          })
          .strict()
          .prefault({})
          .describe('Token bucket per session, after the command policy.'),
        approval: z
          .object({
            timeout_seconds: z
              .number({ error: 'must be a number of seconds; e.g. 300' })
              .positive({ message: 'must be a positive number of seconds; e.g. 300' })
              .default(300)
              .describe('How long an approval prompt waits before it counts as denied.'),
          })
          .strict()
          .prefault({})
          .describe('Approval of requests beyond the baseline.'),
        network: z
          .object({
            allow: z
              .array(HostPatternSchema)
              .default([])
              .describe('Hosts reachable without approval (name, *.suffix, IP, optional :port).'),
            deny: z
              .array(HostPatternSchema)
              .default([])
              .describe('Hosts never reachable; wins over any allow.'),
            publish: z
              .array(portSchema)
              .max(16, { message: 'lists more than 16 ports; publish at most 16' })
              .default([])
              .describe(
                "Loopback ports a command may publish on the host's 127.0.0.1 without approval (aleph-sandbox run --publish PORT).",
              ),
            egress_ports: z
              .array(portSchema)
              .default([80, 443])
              .describe(
                "Linux: ports on which a connection to an allowed name's address, or to any address, reaches the proxy for clients that ignore the proxy variables (transparent egress); every port an allow entry names is added. A connection to another port is refused inside and recorded as a denial.",
              ),
            parent_proxy: z
              .string({ error: 'must be a proxy address such as "proxy.example.com:3128"' })
              .superRefine((value, ctx) => {
                try {
                  parseParentProxy(value);
                } catch (error) {
                  // "parent proxy "…" must be HOST:PORT; e.g. …": the key and value are named already.
                  ctx.addIssue({
                    code: 'custom',
                    message: (error as Error).message.replace(/^parent proxy "[^"]*":? /, ''),
                  });
                }
              })
              .optional()
              .describe(
                'A parent HTTP proxy (host:port or http://host:port, accepting CONNECT) the managed proxy reaches allowed hosts through, e.g. a corporate proxy.',
              ),
          })
          .strict()
          .prefault({})
          .describe(
            'Defaults for every session: allow makes those hosts the baseline network; deny applies to every proxy.',
          ),
        linux: z
          .object({
            cpu_quota_percent: z
              .number({ error: 'must be a percentage of one core; e.g. 50' })
              .positive({ message: 'must be a positive percentage; e.g. 50' })
              .optional()
              .describe('CPU limit in percent of one core (cgroup v2 only).'),
            max_pids: positiveInt('processes', 200).default(200).describe('Process limit per execution.'),
            max_open_files: positiveInt('files', 1024)
              .optional()
              .describe(
                'Open files per process (RLIMIT_NOFILE). Default 1024, at most fs.file-max / (4 × max_pids).',
              ),
            max_file_mb: positiveInt('MiB', 1024)
              .optional()
              .describe(
                'Largest file a command may write (RLIMIT_FSIZE; EFBIG or SIGXFSZ past it), on disk, tmpfs or memfd. Default: no limit.',
              ),
            tmpfs_size_mb: positiveInt('MiB', 512)
              .optional()
              .describe(
                'Size of each of the private /tmp and /dev/shm. Default 512; a command with a memory limit gets at most half of it for each.',
              ),
            quarantine_run_mb: positiveInt('MiB', 64)
              .default(64)
              .describe(
                'What the quarantine keeps of one run at most (allocated bytes: sparse files and hard links as they cost the disk); what does not fit is removed all the same and the run says so (details.quarantineNotKept).',
              ),
            quarantine_session_mb: positiveInt('MiB', 512)
              .default(512)
              .describe("What one session's quarantine holds at most (allocated bytes)."),
            ...protectedPathFields,
            landlock: z
              .enum(['best-effort', 'required'], { error: 'must be "best-effort" or "required"' })
              .default('best-effort')
              .describe('required: refuse to run without Landlock.'),
            sandbox_uid: positiveInt('uid', 65533)
              .optional()
              .describe(
                'When the host runs as root, every command runs as this one uid. Default: each running command gets a uid of its own from sandbox_uid_range.',
              ),
            sandbox_uid_range: z
              .tuple([positiveInt('uid', 1879048192), positiveInt('uid', 1879049215)], {
                error: 'must be [first, last]; e.g. [1879048192, 1879049215]',
              })
              .refine(([lo, hi]) => hi >= lo, { message: 'the last uid must not be below the first' })
              .default([1879048192, 1879049215])
              .describe(
                'When the host runs as root: the uids (and gids) running commands get, one each, so per-uid limits, signals and file access are per command. Idmapped mounts keep them out of your files.',
              ),
            home_root: z
              .string({ error: 'must be a directory path; e.g. "~/.aleph/homes"' })
              .optional()
              .describe(
                "Where each session's HOME lives on the host (inside it is /run/aleph/home; it holds a .gitconfig with your user.name and user.email, and the XDG cache, config and data directories). Default ~/.aleph/homes.",
              ),
            minimum_tier: z
              .union([z.literal(1), z.literal(2), z.literal(3)], {
                error:
                  'must be 1 (bubblewrap namespaces), 2 (bubblewrap in a user namespace) or 3 (no namespaces: Landlock, seccomp and limits only)',
              })
              .default(3)
              .describe(
                'The weakest enforcement tier a command may run in: 1 bubblewrap namespaces (root with CAP_SYS_ADMIN), 2 bubblewrap in a user namespace, 3 no namespaces (the helper alone: Landlock, seccomp, limits; only where Landlock works). A host where no tier at least this strong runs is an error; `aleph-sandbox doctor` says which tier applies and what it leaves unenforced.',
              ),
            allow_loader_env: z
              .array(z.string().regex(/^LD_[A-Z0-9_]+$/, { message: 'must be an LD_* variable name' }))
              .default([])
              .describe(
                "Dynamic loader variables (LD_PRELOAD, LD_LIBRARY_PATH, …) a command's env may set; any other LD_* is refused.",
              ),
          })
          .strict()
          .prefault({})
          .describe('The Linux driver.'),
        macos: z
          .object({
            ...protectedPathFields,
            collect_violations: z
              .boolean({ error: 'must be true or false' })
              .default(true)
              .describe("Attach a failed command's Seatbelt denials (from the unified log) to its output."),
          })
          .strict()
          .prefault({})
          .describe('The macOS driver.'),
        windows: z
          .object({
            protected_paths: z
              .array(z.string())
              .default(['.git', '.aleph', '.codex', '.agents'])
              .describe('Sub-paths of writable roots denied to the sandbox (DENY ACEs; stubs when missing).'),
            require_appcontainer: z
              .boolean({ error: 'must be true or false' })
              .default(false)
              .describe('Refuse to run when the AppContainer tier cannot be set up, instead of degrading.'),
            max_processes: positiveInt('processes', 200)
              .default(200)
              .describe('JobObject process limit when subprocesses are allowed.'),
          })
          .strict()
          .prefault({})
          .describe('The Windows driver.'),
        audit: z
          .object({
            jsonl_path: absoluteOrHome
              .optional()
              .describe('Append every audit record (ledger, policy, proxy) to this JSONL file.'),
          })
          .strict()
          .prefault({}),
        changes: ChangesTableSchema,
        // The housekeeping of ~/.aleph/run, the quarantine and the change store (aleph-sandbox gc).
        state: z
          .object({
            max_age_days: positiveInt('days', 14)
              .default(14)
              .describe(
                'State entries (git-directory registries, tier caches, quarantined sessions, kept changes, dead run records whose roots are gone) untouched for longer are removed.',
              ),
            max_quarantine_mb: positiveInt('MiB', 512)
              .default(512)
              .describe('The quarantine is kept under this size: its oldest sessions go first.'),
            max_registry_files: positiveInt('files', 1000)
              .default(1000)
              .describe('At most this many gitdirs-* registries are kept (the least recently used go).'),
            auto_gc: z
              .boolean({ error: 'must be true or false' })
              .default(true)
              .describe(
                'Prune at most once an hour when the CLI or the MCP server starts (false: only aleph-sandbox gc).',
              ),
          })
          .strict()
          .prefault({})
          .describe('Pruning of the sandbox state (aleph-sandbox gc).'),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/** The line (1-based) where `key` is set in table `table` of a TOML text, if it can be found. */
function lineOf(text: string, table: readonly string[], key: string | undefined): number | undefined {
  const lines = text.split('\n');
  const want = table.join('.');
  let current = '';
  let tableLine: number | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    const header = /^\[\[?\s*([^\]]+?)\s*\]\]?/.exec(line);
    if (header) {
      current = (header[1] as string).replace(/\s+/g, '');
      if (current === want) tableLine ??= i + 1;
      // The key may be a table of its own (`[sandbx]`, `[sandbox.linx]`).
      if (key !== undefined && current === (want === '' ? key : `${want}.${key}`)) return i + 1;
      continue;
    }
    if (
      key !== undefined &&
      current === want &&
      new RegExp(`^"?${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"?\\s*=`).test(line)
    )
      return i + 1;
  }
  return tableLine;
}

/** The keys the config file's schema has at `path` (a table), for an unknown key's message. */
function knownKeys(path: readonly string[]): string[] | undefined {
  type Node = { shape?: Record<string, Node>; _zod?: { def?: { innerType?: Node } } } | undefined;
  const unwrap = (node: Node): Node => {
    let n = node;
    while (n !== undefined && n.shape === undefined && n._zod?.def?.innerType !== undefined) {
      n = n._zod.def.innerType;
    }
    return n;
  };
  let node = unwrap(ConfigFileSchema as unknown as Node);
  for (const key of path) node = unwrap(node?.shape?.[key]);
  return node?.shape === undefined ? undefined : Object.keys(node.shape);
}

/**
 * Validates a config object (as TOML gives it) and returns the camelCase config.
 *
 * @throws {InvalidInputError} `ALEPH_CONFIG_INVALID` naming the key (`sandbox.linux.max_pids`), the value,
 *   the line when `text` is given, and the expected value.
 */
export function parseConfig(
  input: unknown,
  options: { text?: string; source?: string; home?: string } = {},
): AlephConfig {
  const result = ConfigFileSchema.safeParse(input ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    const keys = [...(issue?.path ?? []).map(String)];
    if (issue?.code === 'unrecognized_keys') keys.push(issue.keys[0] ?? '?');
    let value: unknown = input;
    for (const k of keys) value = (value as Record<string, unknown> | undefined)?.[k];
    const field = keys.join('.');
    const line =
      options.text === undefined
        ? undefined
        : lineOf(
            options.text,
            keys.filter((k) => !/^\d+$/.test(k)).slice(0, -1),
            keys.filter((k) => !/^\d+$/.test(k)).at(-1),
          );
    const where = `${options.source ?? 'config'}${line === undefined ? '' : `:${line}`}`;
    const known = issue?.code === 'unrecognized_keys' ? knownKeys(issue.path.map(String)) : undefined;
    const message =
      issue?.code === 'unrecognized_keys'
        ? `is not a known key; remove it or check its spelling${known === undefined ? '' : ` (the keys here: ${known.join(', ')})`}`
        : (issue?.message ?? 'is invalid');
    const [problem, ...fix] = message.split('; ');
    throw new InvalidInputError(
      'ALEPH_CONFIG_INVALID',
      `${where}: ${field}`,
      value,
      problem ?? 'is invalid',
      fix.length > 0 ? fix.join('; ') : 'see the configuration reference in the @aleph/sandbox README',
      { details: { key: field, ...(line === undefined ? {} : { line }) } },
    );
  }
  return toConfig(result.data.sandbox, options.home ?? os.homedir(), options.source);
}
