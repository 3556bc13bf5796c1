/*
 * The undo executor: `aleph-sandbox-init --undo DIR [--force] [--dry-run]`, DIR a run's change store.
 * Checks that every path the run changed is still as the run left it (type, inode, size, times, mode,
 * owner, link target), and refuses with the list of conflicts unless forced; then puts back the state
 * before the run (undo-apply.c), acting only on descriptors beneath each root. Prints one JSON object:
 * `{"undone":…,"restored":[…],"removed":[…],"conflicts":[{"path":…,"reason":…}]}`.
 */
#ifndef ALEPH_CHANGES_UNDO_H
#define ALEPH_CHANGES_UNDO_H

/* The mode's main: 0 when undone (or nothing to do), 1 when refused or incomplete, 125 on bad input. */
int undo_main(int argc, char **argv);

#endif
