/**
 * The host's TLS trust, for the command: the CA files that the host's environment and package-manager
 * settings name are mounted read-only at `/run/aleph/ca-N-NAME` (tier 3: readable where they are), and
 * the same variables are set inside, naming them there, so a host that the host's tools trust (a company's TLS-inspecting proxy, a private
 * registry) is trusted inside. Read from the driver's own process (its environment and the user's
 * `~/.npmrc` / `~/.yarnrc.yml`), never from a command's `env`; nothing else of that environment passes.
 *
 * Honoured: `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`,
 * `GIT_SSL_CAINFO`, `PIP_CERT`, `CARGO_HTTP_CAINFO`, `DENO_CERT`, `AWS_CA_BUNDLE`, `NIX_SSL_CERT_FILE`,
 * `HTTPLIB2_CA_CERTS`, `GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`, npm's `cafile` (`NPM_CONFIG_CAFILE`, `npm_config_cafile`, `cafile=` in
 * `~/.npmrc`; set inside as `NPM_CONFIG_CAFILE`, which pnpm reads too), Yarn's `caFilePath`
 * (`YARN_CA_FILE_PATH`, `caFilePath:` in `~/.yarnrc.yml`), and `SSL_CERT_DIR` when it names a directory
 * under /etc or /usr (visible inside as it is). A file is taken only when it holds certificates and
 * nothing else (no private key), at most 8 MiB, outside every hidden path.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';

/** Where the CA files are mounted inside. */
export const TRUST_DIR = '/run/aleph';
const MAX_BYTES = 8 * 1024 * 1024;
/** Variables that name one CA file, set inside under the same name. */
const FILE_VARIABLES = [
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'GIT_SSL_CAINFO',
  'PIP_CERT',
  'CARGO_HTTP_CAINFO',
  'DENO_CERT',
  'AWS_CA_BUNDLE',
  'NIX_SSL_CERT_FILE',
  'HTTPLIB2_CA_CERTS',
  'GRPC_DEFAULT_SSL_ROOTS_FILE_PATH',
] as const;

/** One CA file of the host, and the variables that name it inside. */
export interface TrustFile {
  /** The file on the host (its real path). */
  readonly src: string;
  /** Where it is inside. */
  readonly dest: string;
  readonly variables: readonly string[];
}

/** What the command gets of the host's trust. */
export interface HostTrust {
  readonly files: readonly TrustFile[];
  /** The variables set inside (before the command's own `env`). */
  readonly env: Readonly<Record<string, string>>;
}

/** Whether `text` is certificates (or CRLs) and nothing else, at least one certificate. */
export function certificatesOnly(text: string): boolean {
  const labels = [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].map((m) => m[1]);
  if (!labels.some((l) => l === 'CERTIFICATE' || l === 'TRUSTED CERTIFICATE')) return false;
  return labels.every((l) => l === 'CERTIFICATE' || l === 'TRUSTED CERTIFICATE' || l === 'X509 CRL');
}

/** The real path of `file` when it is a certificate bundle the command may read, else undefined. */
function acceptable(file: string, hidden: readonly string[]): string | undefined {
  if (!path.isAbsolute(file)) return undefined;
  let real: string;
  let fd: number;
  try {
    real = realpathSync(file);
    fd = openSync(real, 'r');
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_BYTES) return undefined;
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < st.size) {
      const n = readSync(fd, buf, got, st.size - got, got);
      if (n === 0) break;
      got += n;
    }
    if (!certificatesOnly(buf.subarray(0, got).toString('latin1'))) return undefined;
  } finally {
    closeSync(fd);
  }
  const under = (p: string, root: string) => p === root || p.startsWith(`${root.replace(/\/$/, '')}/`);
  return hidden.some((h) => under(real, h)) ? undefined : real;
}

/** `key=value` / `key: value` of `file` in the user's home (unquoted, `~/` expanded), or undefined. */
function configValue(home: string, file: string, key: RegExp): string | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(home, file), 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const m = key.exec(line);
    const v = m?.[1]?.trim().replace(/^(["'])(.*)\1$/, '$2');
    if (v !== undefined && v !== '') return v.startsWith('~/') ? path.join(home, v.slice(2)) : v;
  }
  return undefined;
}

/** Which inside variable each host file is named by: `[inside variable, host path]`. */
function named(env: NodeJS.ProcessEnv, home: string): [string, string][] {
  const out: [string, string][] = [];
  for (const v of FILE_VARIABLES) {
    const value = env[v];
    if (value !== undefined && value !== '') out.push([v, value]);
  }
  const npm =
    env.NPM_CONFIG_CAFILE || env.npm_config_cafile || configValue(home, '.npmrc', /^\s*cafile\s*=(.*)$/);
  if (npm) out.push(['NPM_CONFIG_CAFILE', npm]);
  const yarn = env.YARN_CA_FILE_PATH || configValue(home, '.yarnrc.yml', /^caFilePath\s*:(.*)$/);
  if (yarn) out.push(['YARN_CA_FILE_PATH', yarn]);
  return out;
}

/**
 * The host's trust as the command gets it: `env` is the driver's own process environment, `home` the
 * user's home, `hidden` the paths no command may see.
 */
export function findHostTrust(env: NodeJS.ProcessEnv, home: string, hidden: readonly string[]): HostTrust {
  const files = new Map<string, { dest: string; variables: string[] }>();
  const inside: Record<string, string> = {};
  for (const [variable, file] of named(env, home)) {
    const real = acceptable(file, hidden);
    if (real === undefined) continue;
    let entry = files.get(real);
    if (entry === undefined) {
      entry = { dest: `${TRUST_DIR}/ca-${files.size}-${path.basename(real)}`, variables: [] };
      files.set(real, entry);
    }
    entry.variables.push(variable);
    inside[variable] = entry.dest;
  }
  const dir = env.SSL_CERT_DIR;
  if (dir !== undefined && /^\/(etc|usr)\//.test(dir) && !dir.includes('..') && isDirectory(dir))
    inside.SSL_CERT_DIR = dir;
  return {
    files: [...files].map(([src, e]) => ({ src, dest: e.dest, variables: e.variables })),
    env: inside,
  };
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
