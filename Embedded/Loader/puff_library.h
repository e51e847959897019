/* The one trusted load of a helper-only client library (puff-ldap.so, puff-tpm.so) for the
 * loaders of the Embedded Swift binaries (Sources/CLDAP/puff_ldap_loader.c,
 * Sources/CTPM/puff_tpm_loader.c; SwiftPM compiles neither). The caller walked the path from /
 * and opened it with O_NOFOLLOW; here the file must be a regular file owned by root and not
 * writable by group or others, and the descriptor checked is the one loaded (dlopen of
 * /proc/self/fd/N), RTLD_NOW | RTLD_LOCAL. On failure: NULL and the reason in `error`. */
#ifndef PUFF_LIBRARY_H
#define PUFF_LIBRARY_H
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void *puff_open_trusted_library(int fd, char *error, size_t size) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        if (size > 0) snprintf(error, size, "fstat: %s", strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        if (size > 0) snprintf(error, size, "%s", "it must be a regular file owned by root and not writable by group or others");
        return NULL;
    }
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *reason = dlerror();
        if (size > 0) snprintf(error, size, "%s", reason ? reason : "dlopen failed");
    }
    return handle;
}
#endif
