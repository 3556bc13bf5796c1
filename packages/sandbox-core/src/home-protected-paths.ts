/**
 * The one list of what a home directory holds that the host runs or trusts next — startup files, tool
 * configuration that runs commands or names credentials, directories on PATH or loaded as code — with the
 * kind of each entry (file or directory). Every driver and the file API take `DEFAULT_HOME_PROTECTED_PATHS`
 * from here; `protectedEntryKind` says what kind a protected entry is where a driver needs to know it
 * without looking (a mount point or a stub of the right type).
 *
 * Directories that grow large (caches, plugin managers' checkouts, toolchains) are left out on purpose:
 * protecting one costs a snapshot or a walk per run where mounts are unavailable (Linux tier 3), so only
 * the files and small directories that carry configuration are listed.
 */

/** A protected entry's kind: a `file` or a `dir`ectory. */
export type ProtectedEntryKind = 'file' | 'dir';

const F = 'file';
const D = 'dir';
/** Also on Windows (its driver stubs a missing entry; see `defaultHomeProtectedPaths`). */
const W = true;

/** The home list, in groups; each entry relative to the home directory. */
const HOME_ENTRIES: readonly (readonly [string, ProtectedEntryKind, boolean?])[] = [
  // Shells: bash (Debian's .bashrc sources .bash_aliases; Fedora's, ~/.bashrc.d), readline, sh, zsh, fish,
  // csh/tcsh, and bash-completion's user completions (sourced on a tab).
  ['.bashrc', F, W],
  ['.bash_profile', F, W],
  ['.bash_login', F, W],
  ['.bash_logout', F, W],
  ['.bash_aliases', F],
  ['.bashrc.d', D],
  ['.bash_completion', F],
  ['.local/share/bash-completion', D],
  ['.inputrc', F],
  ['.profile', F, W],
  ['.zshrc', F, W],
  ['.zshenv', F, W],
  ['.zprofile', F, W],
  ['.zlogin', F, W],
  ['.zlogout', F, W],
  ['.config/fish', D, W],
  ['.cshrc', F],
  ['.tcshrc', F],
  ['.login', F],
  ['.logout', F],
  // The login session: PAM and systemd environments, X session scripts, autostart, user units, KDE's
  // login scripts.
  ['.pam_environment', F],
  ['.config/environment.d', D],
  ['.xprofile', F],
  ['.xsession', F],
  ['.xsessionrc', F],
  ['.xinitrc', F],
  ['.config/autostart', D, W],
  ['.config/systemd', D, W],
  ['.config/plasma-workspace', D],
  // Directories on PATH (Debian's .profile adds ~/bin and ~/.local/bin; rustup's env, ~/.cargo/bin) and
  // Python's user site-packages (a .pth file there runs on every python start).
  ['.local/bin', D, W],
  ['bin', D],
  ['.cargo/bin', D],
  ['.cargo/env', F],
  ['.local/lib', D],
  // Version control and keys.
  ['.gitconfig', F, W],
  ['.config/git', D, W],
  ['.hgrc', F],
  ['.ssh', D, W],
  ['.gnupg', D],
  // Package managers and build tools: registries, credentials, scripts, init scripts, JVM options.
  ['.npmrc', F, W],
  ['.yarnrc', F, W],
  ['.yarnrc.yml', F, W],
  ['.bunfig.toml', F],
  ['.pypirc', F, W],
  ['.config/pip', D, W],
  ['.pip', D, W],
  ['.config/uv', D],
  ['.condarc', F],
  ['.gemrc', F],
  ['.cargo/config', F],
  ['.cargo/config.toml', F],
  ['.m2/settings.xml', F],
  ['.mavenrc', F],
  ['.gradle/gradle.properties', F],
  ['.gradle/init.gradle', F],
  ['.gradle/init.gradle.kts', F],
  ['.gradle/init.d', D],
  // Cloud and network clients: exec credential plugins, credential helpers and CLI plugins, aliases
  // that run commands, credentials.
  ['.kube/config', F],
  ['.docker/config.json', F],
  ['.docker/cli-plugins', D],
  ['.aws', D],
  ['.config/gcloud/configurations', D],
  ['.config/gh', D],
  ['.terraformrc', F],
  ['.terraform.d/plugins', D],
  ['.ansible.cfg', F],
  ['.ansible/plugins', D],
  ['.netrc', F],
  ['.curlrc', F],
  ['.wgetrc', F],
  ['.config/direnv', D],
  ['.local/share/direnv', D],
  // Editors and terminal tools.
  ['.vimrc', F],
  ['.gvimrc', F],
  ['.exrc', F],
  ['.vim', D],
  ['.config/vim', D],
  ['.config/nvim', D],
  ['.local/share/nvim/site', D],
  ['.emacs', F],
  ['.emacs.el', F],
  ['.emacs.d', D],
  ['.config/emacs', D],
  ['.tmux.conf', F],
  ['.config/tmux', D],
  ['.screenrc', F],
  ['.lesskey', F],
  ['.config/lesskey', F],
  // Interpreters, database shells and debuggers that run their rc file's commands.
  ['.sqliterc', F],
  ['.psqlrc', F],
  ['.my.cnf', F],
  ['.irbrc', F],
  ['.pryrc', F],
  ['.Rprofile', F],
  ['.ghci', F],
  ['.ipython', D],
  ['.jupyter', D],
  ['.gdbinit', F],
  ['.config/gdb', D],
  ['.lldbinit', F],
  // Editor and agent settings, and the sandbox's own.
  ['.vscode', D, W],
  ['.config/Code/User/settings.json', F],
  ['.idea', D, W],
  ['.claude', D, W],
  ['.claude.json', F],
  ['.cursor', D, W],
  ['.mcp.json', F, W],
  ['.codex', D, W],
  ['.agents', D, W],
  ['.gemini', D],
  ['.aleph', D, W],
];

/**
 * Paths of a home directory the host executes or reads as configuration, kept read-only (and impossible to
 * create) in every home directory a writable root holds: shell startup files (bash, sh, zsh, fish, csh),
 * the login session's (PAM, systemd, X, autostart, user units), directories on PATH and Python's user
 * site, git/hg config, `~/.ssh` and `~/.gnupg`, package-manager and build-tool config (npm, yarn, bun, pip,
 * uv, conda, gem, cargo, maven, gradle), cloud and network clients' (kubectl, docker, aws, gcloud, gh,
 * terraform, ansible, netrc, curl, wget, direnv), editors' (vim, neovim, emacs, VS Code) and terminal
 * tools' (tmux, screen, less), REPLs', database shells' and debuggers' rc files, agent settings, and
 * `~/.aleph` itself.
 */
export const DEFAULT_HOME_PROTECTED_PATHS: readonly string[] = HOME_ENTRIES.map(([rel]) => rel);

/**
 * The default home list of a platform: on `posix`, `DEFAULT_HOME_PROTECTED_PATHS`; on `windows`, its
 * entries that the same tools read under `%USERPROFILE%` and that an empty stub leaves working (the Windows
 * driver creates a missing entry so it can carry a deny ACE, and leaves it in place).
 */
export function defaultHomeProtectedPaths(platform: 'posix' | 'windows'): readonly string[] {
  return platform === 'posix'
    ? DEFAULT_HOME_PROTECTED_PATHS
    : HOME_ENTRIES.filter((e) => e[2]).map(([rel]) => rel);
}

/** Kinds of the default entries of writable roots (`DEFAULT_PROTECTED_PATHS`) that are files. */
const ROOT_FILES = ['.git/config', '.git/config.worktree', '.git/commondir', '.mcp.json', '.envrc'];

const KINDS = new Map<string, ProtectedEntryKind>([
  ...HOME_ENTRIES.map(([rel, kind]) => [rel, kind] as const),
  ...ROOT_FILES.map((rel) => [rel, F] as const),
]);
const FILE_BASENAMES = new Set([...KINDS].filter(([, k]) => k === F).map(([rel]) => rel.split('/').pop()));

/**
 * What a protected entry is when it exists: the kind the default lists give it; for another entry, a file
 * when its last component is named like one of theirs or has an extension (`x.conf`, `x.gradle`), else a
 * directory.
 *
 * @example
 * protectedEntryKind('.kube/config') // 'file'
 * protectedEntryKind('.emacs.d') // 'dir'
 * protectedEntryKind('.config/foo/pip.conf') // 'file'
 */
export function protectedEntryKind(rel: string): ProtectedEntryKind {
  const parts = rel.split(/[/\\]/).filter(Boolean);
  const known = KINDS.get(parts.join('/'));
  if (known !== undefined) return known;
  const last = parts.at(-1) ?? '';
  return FILE_BASENAMES.has(last) || /^.+\.(?!d$)[A-Za-z0-9]+$/.test(last.replace(/^\./, '')) ? F : D;
}
