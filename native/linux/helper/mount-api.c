/* The new mount API inside the sandbox (mount-api.h): attaching a detached mount, making a tmpfs. */
#define _GNU_SOURCE
#include "mount-api.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/errors.h"

void attach(int src, int dest_fd, const char *dest) {
  if (syscall(SYS_move_mount, src, "", dest_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    die("attaching %s: %s", dest, strerror(errno));
}

int make_tmpfs(const char *mode, const char *size, unsigned attrs) {
  int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) die("fsopen tmpfs: %s", strerror(errno));
  if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", mode, 0) < 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
      syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    die("configuring a tmpfs: %s", strerror(errno));
  int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attrs);
  if (m < 0) die("fsmount tmpfs: %s", strerror(errno));
  close(fs);
  return m;
}
