/* make bench: the whole-process cost of running a program the way the module runs puff-check.
 *
 *   spawnprobe COUNT PROGRAM [ARGUMENT...]    prints COUNT lines, one wall time in microseconds
 *
 * Each run is posix_spawn (as HelperProcess does) with standard input and output on /dev/null
 * and an empty environment, then waitpid, timed with CLOCK_MONOTONIC. A run whose program
 * does not exit with 0 or 1 (a report) stops the probe with status 1. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: spawnprobe COUNT PROGRAM [ARGUMENT...]\n");
        return 2;
    }
    long count = strtol(argv[1], NULL, 10);
    char *empty[] = {NULL};
    posix_spawn_file_actions_t actions;
    if (posix_spawn_file_actions_init(&actions) != 0
        || posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) != 0
        || posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) != 0) {
        perror("posix_spawn_file_actions");
        return 1;
    }
    for (long run = 0; run < count; run++) {
        struct timespec start, end;
        pid_t child;
        int status;
        clock_gettime(CLOCK_MONOTONIC, &start);
        if (posix_spawn(&child, argv[2], &actions, NULL, argv + 2, empty) != 0) { perror("posix_spawn"); return 1; }
        if (waitpid(child, &status, 0) != child) { perror("waitpid"); return 1; }
        clock_gettime(CLOCK_MONOTONIC, &end);
        if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
            fprintf(stderr, "%s: status %d\n", argv[2], status);
            return 1;
        }
        printf("%lld\n", ((long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec)) / 1000);
    }
    return 0;
}
