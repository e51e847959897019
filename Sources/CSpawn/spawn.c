#define _GNU_SOURCE
#include "puff_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Moves `fd` above the standard descriptors in the child, so that setting up 0, 1 and 2
 * cannot overwrite it. */
static int above_standard(int fd) {
    return fd > 2 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

pid_t puff_spawn_as_root(const char *path, char *const argv[], int input, int output) {
    sigset_t all, previous;
    sigfillset(&all);
    /* No handler of the host may run in the child before its dispositions are reset. */
    int masked = pthread_sigmask(SIG_SETMASK, &all, &previous);
    if (masked != 0) {
        errno = masked;
        return -1;
    }
    pid_t child = _Fork();
    if (child == 0) {
        struct sigaction standard = { .sa_handler = SIG_DFL };
        sigemptyset(&standard.sa_mask);
        for (int signal = 1; signal < NSIG; signal++) {
            (void)sigaction(signal, &standard, NULL); /* SIGKILL, SIGSTOP and glibc's own fail: fine */
        }
        input = above_standard(input);
        output = above_standard(output);
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0) null = above_standard(null);
        if (input < 0 || output < 0 || null < 0) _exit(127);
        if (dup2(input, 0) != 0 || dup2(output, 1) != 1 || dup2(null, 2) != 2) _exit(127);
        /* Root's groups and ids, by raw calls: glibc's wrappers would try to reach the parent's
         * other threads, which the child does not have. */
        if (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setresgid, 0, 0, 0) != 0
            || syscall(SYS_setresuid, 0, 0, 0) != 0) _exit(127);
        /* Not su's working directory, which its user chose (libldap reads ./ldaprc). */
        if (chdir("/") != 0) _exit(127);
        sigset_t none;
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) != 0) _exit(127);
        char *const environment[] = { NULL };
        execve(path, argv, environment);
        _exit(127);
    }
    int saved = errno;
    (void)pthread_sigmask(SIG_SETMASK, &previous, NULL);
    errno = saved;
    return child;
}
