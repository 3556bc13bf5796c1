/*
 * User-path mounts made inside the sandbox from descriptors (--mnt, --tmpfs-at, --mask-at, --dev-at,
 * --tmpfs-size, --verify): read among the helper's options, made in their order before the identity drop.
 */
#ifndef ALEPH_HELPER_MOUNTS_H
#define ALEPH_HELPER_MOUNTS_H

/* Takes ARGV[*I] (OP) and its values when OP is a mount operation, advancing *I past the values: 1, or
 * 0 for another option. */
int mount_op_parse(const char *op, char **argv, int argc, int *i);
/* Makes every operation read, in order, then makes read-only the tmpfs marked 'r'. */
void mount_ops_apply(void);
int mount_ops_count(void);

#endif
