// puff-check's way out of a cgroup its caller controls (issue 27, H1). The helper started
// with real uid root for su or sudo run by a user takes other accounts' locks (their counter,
// the failure history). The user cannot signal it, but the cgroup freezer checks no uid: it
// stops every process of a cgroup whose `cgroup.freeze` (v2) or `freezer.state` (v1) the
// user may write, and a delegated cgroup (systemd's user@UID.service, `systemd-run --user
// --scope`) is theirs, with every cgroup they create below it. `cpu.max` or
// `cpu.cfs_quota_us` near zero and `io.max` or the blkio throttles do the same more slowly.
// So before it takes any lock the helper checks, in every mounted cgroup hierarchy, its own
// cgroup and each ancestor up to the hierarchy's root: each directory and its controls must
// be root's and writable by no one else. Where one is not, it moves itself into `puff-check`
// directly under that hierarchy's root (root's, 0755; made when missing), then checks again;
// whatever is still not root's alone fails the run.
#define _GNU_SOURCE
#include "CHelperStart.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <unistd.h>

#define CGROUP_V1_MAGIC 0x27e0ebL
#define CGROUP_V2_MAGIC 0x63677270L
#define MAXIMUM_HIERARCHIES 32
#define LINE_BYTES 8192

// A cgroup's controls a user with write access could use to stop or starve a root process in
// it, or to move it into a cgroup of theirs. A missing one is no risk.
static const char *const controls[] = {
    "cgroup.procs", "cgroup.threads", "tasks", "cgroup.subtree_control", "cgroup.freeze", "freezer.state",
    "cpu.max", "cpu.max.burst", "cpu.idle", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.rt_runtime_us",
    "io.max", "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
    "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device", NULL,
};

static void say(char *message, size_t size, const char *format, ...) {
    if (message == NULL || size == 0) return;
    va_list list;
    va_start(list, format);
    (void)vsnprintf(message, size, format, list);
    va_end(list);
}

// Root's, and writable by no one else.
static int roots_alone(const struct stat *status) {
    return status->st_uid == 0 && (status->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// Opens `path` (absolute) one component at a time, never through a symbolic link.
static int open_directory(const char *path) {
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const char *cursor = path;
    while (fd >= 0 && *cursor != '\0') {
        while (*cursor == '/') cursor++;
        if (*cursor == '\0') break;
        size_t length = strcspn(cursor, "/");
        char name[256];
        if (length >= sizeof name) {
            close(fd);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(name, cursor, length);
        name[length] = '\0';
        cursor += length;
        if (strcmp(name, "..") == 0 || strcmp(name, ".") == 0) {
            close(fd);
            errno = EINVAL;
            return -1;
        }
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        close(fd);
        errno = saved;
        fd = next;
    }
    return fd;
}

// mountinfo's octal escapes (\040 for a space) undone in place.
static void unescape(char *text) {
    char *out = text;
    for (char *in = text; *in != '\0'; in++) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' && in[3] <= '7') {
            *out++ = (char)(((in[1] - '0') << 6) | ((in[2] - '0') << 3) | (in[3] - '0'));
            in += 3;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
}

// `word` is one of the comma-separated entries of `list`.
static int listed(const char *list, const char *word, size_t length) {
    const char *cursor = list;
    while (*cursor != '\0') {
        size_t entry = strcspn(cursor, ",");
        if (entry == length && strncmp(cursor, word, length) == 0) return 1;
        cursor += entry;
        if (*cursor == ',') cursor++;
    }
    return 0;
}

// Every controller of a /proc/self/cgroup line (`cpu,cpuacct`, `name=systemd`) is among
// the mount's super options.
static int hierarchy_matches(const char *controllers, const char *options) {
    if (*controllers == '\0') return 0;
    const char *cursor = controllers;
    while (*cursor != '\0') {
        size_t length = strcspn(cursor, ",");
        if (!listed(options, cursor, length)) return 0;
        cursor += length;
        if (*cursor == ',') cursor++;
    }
    return 1;
}

struct hierarchy {
    char controllers[256]; // empty for the unified (v2) hierarchy
    char cgroup[4096];     // the process's cgroup in it, as /proc/self/cgroup says
};

static int read_file(const char *path, char *buffer, size_t size) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done + 1 < size) {
        ssize_t got = read(fd, buffer + done, size - 1 - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            close(fd);
            return -1;
        }
        if (got == 0) break;
        done += (size_t)got;
    }
    close(fd);
    if (done + 1 >= size) {
        errno = EFBIG;
        return -1;
    }
    buffer[done] = '\0';
    return (int)done;
}

static char self_cgroup[16384];
static char mountinfo[1 << 20];

// The process's hierarchies from /proc/self/cgroup; their count, or -1.
static int read_hierarchies(struct hierarchy *list, int capacity) {
    if (read_file("/proc/self/cgroup", self_cgroup, sizeof self_cgroup) < 0) return -1;
    int count = 0;
    char *saveline = NULL;
    for (char *line = strtok_r(self_cgroup, "\n", &saveline); line != NULL; line = strtok_r(NULL, "\n", &saveline)) {
        char *first = strchr(line, ':');
        char *second = first == NULL ? NULL : strchr(first + 1, ':');
        if (second == NULL || count >= capacity) {
            errno = EPROTO;
            return -1;
        }
        size_t length = (size_t)(second - first - 1);
        if (length >= sizeof list[count].controllers || strlen(second + 1) >= sizeof list[count].cgroup) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(list[count].controllers, first + 1, length);
        list[count].controllers[length] = '\0';
        strcpy(list[count].cgroup, second + 1);
        count++;
    }
    return count;
}

// The mount point of `wanted`'s hierarchy whose root is the hierarchy's own (or the prefix
// of the process's cgroup in it) into `point`, and that prefix's length into `prefix`; 1
// when found, 0 when the hierarchy is not mounted, -1 on error.
static int find_mount(const struct hierarchy *wanted, char *point, size_t size, size_t *prefix) {
    if (read_file("/proc/self/mountinfo", mountinfo, sizeof mountinfo) < 0) return -1;
    int found = 0;
    size_t best = 0;
    char *saveline = NULL;
    for (char *line = strtok_r(mountinfo, "\n", &saveline); line != NULL; line = strtok_r(NULL, "\n", &saveline)) {
        // id parent major:minor root mount-point options [optional...] - type source super-options
        char *fields[6] = { 0 };
        char *saveword = NULL;
        char *word = strtok_r(line, " ", &saveword);
        int index = 0;
        while (word != NULL && index < 6) {
            fields[index++] = word;
            word = strtok_r(NULL, " ", &saveword);
        }
        while (word != NULL && strcmp(word, "-") != 0) word = strtok_r(NULL, " ", &saveword);
        char *type = word == NULL ? NULL : strtok_r(NULL, " ", &saveword);
        char *source = type == NULL ? NULL : strtok_r(NULL, " ", &saveword);
        char *options = source == NULL ? NULL : strtok_r(NULL, " ", &saveword);
        if (index < 6 || options == NULL) continue;
        int unified = strcmp(type, "cgroup2") == 0;
        if (!unified && strcmp(type, "cgroup") != 0) continue;
        if (unified != (wanted->controllers[0] == '\0')) continue;
        if (!unified && !hierarchy_matches(wanted->controllers, options)) continue;
        char *root = fields[3];
        char *mount = fields[4];
        unescape(root);
        unescape(mount);
        size_t length = strcmp(root, "/") == 0 ? 0 : strlen(root);
        if (length > 0 && (strncmp(wanted->cgroup, root, length) != 0
                           || (wanted->cgroup[length] != '/' && wanted->cgroup[length] != '\0'))) continue;
        if (strlen(mount) >= size) continue;
        // The mount nearest the hierarchy's root: its root directory is the one we may use.
        if (found && length >= best) continue;
        strcpy(point, mount);
        best = length;
        *prefix = length;
        found = 1;
    }
    return found;
}

// 1 when the directory `fd` (a cgroup) and its controls are root's alone, 0 when not
// (`what` names the first that is not), -1 on error.
static int cgroup_is_roots(int fd, const char **what) {
    struct stat status;
    if (fstat(fd, &status) != 0) return -1;
    if (!roots_alone(&status)) {
        *what = "the directory";
        return 0;
    }
    for (int index = 0; controls[index] != NULL; index++) {
        if (fstatat(fd, controls[index], &status, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue;
            return -1;
        }
        if (!S_ISREG(status.st_mode) || !roots_alone(&status)) {
            *what = controls[index];
            return 0;
        }
    }
    return 1;
}

// The hierarchy's check: 1 when the process's cgroup and every ancestor below the mount's
// root are root's alone, 0 when one is not, -1 on error (each with the message).
static int hierarchy_is_roots(const char *point, const char *cgroup, char *message, size_t size) {
    int fd = open_directory(point);
    if (fd < 0) {
        say(message, size, "%s: %s", point, strerror(errno));
        return -1;
    }
    struct statfs filesystem;
    if (fstatfs(fd, &filesystem) != 0 || (filesystem.f_type != CGROUP_V1_MAGIC && filesystem.f_type != CGROUP_V2_MAGIC)) {
        say(message, size, "%s is no cgroup file system", point);
        close(fd);
        return -1;
    }
    const char *cursor = cgroup;
    int result = 1;
    while (result == 1) {
        while (*cursor == '/') cursor++;
        if (*cursor == '\0') break;
        size_t length = strcspn(cursor, "/");
        char name[256];
        if (length >= sizeof name) {
            say(message, size, "%s: a cgroup name too long", point);
            result = -1;
            break;
        }
        memcpy(name, cursor, length);
        name[length] = '\0';
        if (strcmp(name, "..") == 0 || strcmp(name, ".") == 0) {
            // Outside the cgroup namespace's root: nothing to check it by.
            say(message, size, "%s: the cgroup %s is outside this namespace's view", point, cgroup);
            result = -1;
            break;
        }
        int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            say(message, size, "%s%s: %s", point, cgroup, strerror(errno));
            result = -1;
            break;
        }
        close(fd);
        fd = next;
        cursor += length;
        const char *what = NULL;
        int roots = cgroup_is_roots(fd, &what);
        if (roots < 0) {
            say(message, size, "%s%s: %s", point, cgroup, strerror(errno));
            result = -1;
        } else if (roots == 0) {
            say(message, size, "%s%s: %s of %.*s is not root's alone", point, cgroup, what,
                (int)(cursor - cgroup), cgroup);
            result = 0;
        }
    }
    close(fd);
    return result;
}

// Moves the process into `puff-check` under the hierarchy mounted at `point`.
static int move_to_own_cgroup(const char *point, char *message, size_t size) {
    int root = open_directory(point);
    if (root < 0) {
        say(message, size, "%s: %s", point, strerror(errno));
        return -1;
    }
    struct stat status;
    struct statfs filesystem;
    if (fstat(root, &status) != 0 || !roots_alone(&status) || fstatfs(root, &filesystem) != 0
        || (filesystem.f_type != CGROUP_V1_MAGIC && filesystem.f_type != CGROUP_V2_MAGIC)) {
        say(message, size, "%s is no cgroup root of root's alone", point);
        close(root);
        return -1;
    }
    int result = -1;
    // A few tries: another run's `puff-check` cgroup may be removed while this one moves in.
    for (int attempt = 0; attempt < 3 && result != 0; attempt++) {
        if (mkdirat(root, "puff-check", 0755) != 0 && errno != EEXIST) {
            say(message, size, "%s/puff-check: mkdir: %s", point, strerror(errno));
            break;
        }
        int own = openat(root, "puff-check", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (own < 0) {
            say(message, size, "%s/puff-check: %s", point, strerror(errno));
            if (errno == ENOENT) continue;
            break;
        }
        const char *what = NULL;
        int roots = cgroup_is_roots(own, &what);
        if (roots != 1) {
            if (roots == 0) say(message, size, "%s/puff-check: %s is not root's alone", point, what);
            else say(message, size, "%s/puff-check: %s", point, strerror(errno));
            close(own);
            break;
        }
        int procs = openat(own, "cgroup.procs", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        close(own);
        if (procs < 0) {
            say(message, size, "%s/puff-check/cgroup.procs: %s", point, strerror(errno));
            if (errno == ENOENT) continue;
            break;
        }
        char pid[32];
        int length = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        ssize_t wrote;
        do {
            wrote = write(procs, pid, (size_t)length);
        } while (wrote < 0 && errno == EINTR);
        int saved = errno;
        close(procs);
        if (wrote == length) {
            result = 0;
        } else {
            say(message, size, "%s/puff-check: moving in: %s", point, wrote < 0 ? strerror(saved) : "short write");
            if (wrote < 0 && (saved == ENOENT || saved == ENODEV)) continue;
            break;
        }
    }
    close(root);
    return result;
}

int puff_helper_leave_user_cgroups(char *message, size_t size, int *moved) {
    struct hierarchy list[MAXIMUM_HIERARCHIES];
    char point[4096];
    if (moved != NULL) *moved = 0;
    say(message, size, "");
    // Twice: check and move; then check again, and what is still not root's fails the run.
    for (int round = 0; round < 2; round++) {
        int count = read_hierarchies(list, MAXIMUM_HIERARCHIES);
        if (count < 0) {
            say(message, size, "/proc/self/cgroup: %s", strerror(errno));
            return -1;
        }
        int clean = 1;
        for (int index = 0; index < count; index++) {
            size_t prefix = 0;
            int found = find_mount(&list[index], point, sizeof point, &prefix);
            if (found < 0) {
                say(message, size, "/proc/self/mountinfo: %s", strerror(errno));
                return -1;
            }
            if (found == 0) continue; // not mounted: no one can write its controls
            int roots = hierarchy_is_roots(point, list[index].cgroup + prefix, message, size);
            if (roots < 0) return -1;
            if (roots == 1) continue;
            clean = 0;
            if (round == 1) return -1; // the message says which
            if (move_to_own_cgroup(point, message, size) != 0) return -1;
            if (moved != NULL) (*moved)++;
        }
        if (clean) return 0;
    }
    return 0;
}
