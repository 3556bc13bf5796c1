/*
 * Copies into the quarantine, on descriptors and within budgets counted in what they cost the host: the
 * blocks each copy allocates (st_blocks * 512, at least KEEP_ENTRY_BYTES an entry), per run (this process)
 * and per session (the quarantine directory, counted once when first used). Sparse files are copied
 * sparse (SEEK_DATA/SEEK_HOLE), and the links of one file are one copy: its further links in the quarantine
 * are hard links to the first copy. Every copy is new, owned by this process, owner-only and never
 * executable (files 0600, directories 0700, no set-id bit): no descriptor a command held on what it
 * planted reaches it, and nothing of the user's tree has its mode changed by name.
 */
#ifndef ALEPH_AFTER_RUN_KEEP_H
#define ALEPH_AFTER_RUN_KEEP_H

/* Defaults of the budgets (--quarantine-budget RUN:SESSION changes them). */
#define KEEP_RUN_BYTES (64LL * 1024 * 1024)
#define KEEP_SESSION_BYTES (512LL * 1024 * 1024)
/* What one entry costs at least (its inode), so empty files cannot flood the quarantine for free. */
#define KEEP_ENTRY_BYTES 512
/* What one tree copies at most: entries and depth. */
#define KEEP_ENTRIES 4096
#define KEEP_DEPTH 64

/* Sets the budgets of this run and of a session, in bytes. */
void keep_budget(long long run_bytes, long long session_bytes);
/* The budget of this run, in bytes. */
long long keep_run_budget(void);
/* The quarantine directory DIRFD is now the one in use: what it holds (allocated bytes, at least
 * KEEP_ENTRY_BYTES an entry) counts against the session's budget; links remembered so far are forgotten. */
void keep_session(int dirfd);
/* Copies NAME beneath FROM to TO_NAME beneath TO (which must not exist): regular files, directories and
 * symlinks (fifos, sockets, devices are left out), never following a symlink. 0 when copied whole; else -1
 * with nothing left at TO_NAME and nothing charged, *WHY saying why (over a budget, too many entries or
 * too deep, or the errno of what failed). */
int keep_copy(int from, const char *name, int to, const char *to_name, const char **why);

#endif
