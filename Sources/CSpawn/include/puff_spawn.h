#ifndef PUFF_SPAWN_H
#define PUFF_SPAWN_H

#include <sys/types.h>

/* Starts `path` with `argv`, an empty environment, `input` as its standard input, `output` as
 * its standard output and /dev/null as its standard error, every signal at its default and
 * none blocked, / as its working directory, no supplementary groups, and real, effective and
 * saved uid and gid 0: for a caller whose effective uid is root
 * but whose real uid is not (su or sudo run by a user), so that the setuid helper sees a
 * root caller. The child runs only async-signal-safe calls between fork and exec, and the
 * host's fork handlers do not run (_Fork), so a multithreaded host is safe. Returns the
 * child's pid, or -1 with errno set when no child was started. A child that cannot become
 * root or exec exits with status 127. */
pid_t puff_spawn_as_root(const char *path, char *const argv[], int input, int output);

#endif
