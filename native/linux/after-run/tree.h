/*
 * Whole trees on descriptors, for what the checks set aside: removed, copied to another filesystem within
 * a budget, and made never executable. No symlink is followed; no depth limit binds removal or stripping.
 */
#ifndef ALEPH_AFTER_RUN_TREE_H
#define ALEPH_AFTER_RUN_TREE_H

/* What copy_tree copies at most of one tree: beyond it, the tree is not copied. */
#define TREE_COPY_BYTES (16LL * 1024 * 1024)
#define TREE_COPY_ENTRIES 4096
#define TREE_COPY_DEPTH 64

/* Removes NAME beneath DIRFD and everything below it; 0 when it is gone (or was not there). */
int remove_tree(int dirfd, const char *name);
/* Copies NAME beneath FROM to TO_NAME beneath TO (which must not exist): files, directories and symlinks,
 * within the budget above; 0 when copied whole, else -1 with nothing left at TO_NAME. */
int copy_tree(int from, const char *name, int to, const char *to_name);
/* Makes NAME beneath DIRFD and everything below it owner-only and never executable: directories 0700,
 * files 0600 (no x, no set-id bits), symlinks left as they are. A file with other links is replaced by a
 * private copy (or removed) rather than chmod'ed, so the file at its other link keeps its mode. */
void strip_tree(int dirfd, const char *name);

#endif
