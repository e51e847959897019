/* The glibc headers Puff's module and helper use, for the Embedded Swift build, which has no
 * Glibc overlay. The inline functions give Swift what it cannot import: the variadic
 * open/openat/fcntl and the errno and SIG_IGN macros. */
#ifndef PUFF_CGLIBC_SHIM_H
#define PUFF_CGLIBC_SHIM_H
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static inline int *puff_errno_location(void) { return &errno; }
static inline int puff_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static inline int puff_openat(int directory, const char *path, int flags, mode_t mode) {
    return openat(directory, path, flags, mode);
}
static inline int puff_fcntl(int descriptor, int command, int argument) { return fcntl(descriptor, command, argument); }
static inline __sighandler_t puff_sig_ign(void) { return SIG_IGN; }
#endif
