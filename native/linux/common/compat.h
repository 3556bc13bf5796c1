/*
 * Kernel interface numbers that older C library headers lack, so the helper builds on them too: the
 * Landlock and close_range system calls and PR_CAP_AMBIENT. Include after <sys/syscall.h> and
 * <sys/prctl.h>.
 */
#ifndef ALEPH_COMMON_COMPAT_H
#define ALEPH_COMMON_COMPAT_H

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

#endif
