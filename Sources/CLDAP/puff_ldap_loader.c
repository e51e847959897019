/* The puff_ldap_* functions of include/puff_ldap.h for the Embedded Swift module and helper:
 * each forwards to the same function of puff-ldap.so (puff_ldap.c linked with libldap), which
 * puff_ldap_load opens the first time fleet mode is used. A host whose puff.conf does not say
 * `backend = ldap` never loads libldap, liblber, SASL or the TLS library (what they cost a host
 * that loads pam_puff.so: docs/dev/embedded-swift.md).
 *
 * The caller (DirectoryClient.swift) walks the path from / as every trusted file is walked and
 * opens the file with O_NOFOLLOW; here the file must be a regular file owned by root and not
 * writable by group or others (fstat), and the descriptor checked is the one loaded (dlopen of
 * /proc/self/fd/N), so it cannot be swapped between the check and the load. It is
 * loaded RTLD_NOW | RTLD_LOCAL (nothing of libldap resolves the host's symbols or leaks into
 * them) and never unloaded. SwiftPM does not compile this file (Package.swift excludes it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "puff_ldap.h"
#include "puff_library.h"

struct table {
    int (*abi)(void);
    int (*open)(const char *, const char *, int, int, int, LDAP **);
    int (*bind_external)(LDAP *, int);
    int (*bind_simple)(LDAP *, const char *, const void *, size_t, int);
    void (*close)(LDAP *);
    int (*read_user)(LDAP *, const char *, const char *, int, int, puff_ldap_user *, int *);
    void (*user_free)(puff_ldap_user *);
    int (*count_failure)(LDAP *, const char *, long long, const char *, int, long long *);
    int (*modify)(LDAP *, const char *, const puff_ldap_change *, int, int);
    const char *(*error_text)(int);
    void (*diagnostic)(LDAP *, char *, size_t);
    int (*probe)(const char *, int, int, char *, size_t);
};

/* Set once, under `lock`, and never changed again. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table loaded;
static int is_loaded;

static void failed(char *error, size_t size, const char *format, const char *detail) {
    if (size > 0) snprintf(error, size, format, detail ? detail : "");
}

/* Checks the file open at `fd`, loads it and fills `table`: 0, or -1 with `error` set. */
static int load(int fd, struct table *table, char *error, size_t size) {
    void *handle = puff_open_trusted_library(fd, error, size);
    if (!handle) return -1;
#define RESOLVE(field, symbol)                                                       \
    do {                                                                             \
        *(void **)&table->field = dlsym(handle, symbol);                             \
        if (!table->field) {                                                         \
            failed(error, size, "it has no %s", symbol);                             \
            dlclose(handle);                                                         \
            return -1;                                                               \
        }                                                                            \
    } while (0)
    RESOLVE(abi, "puff_ldap_abi");
    RESOLVE(open, "puff_ldap_open");
    RESOLVE(bind_external, "puff_ldap_bind_external");
    RESOLVE(bind_simple, "puff_ldap_bind_simple");
    RESOLVE(close, "puff_ldap_close");
    RESOLVE(read_user, "puff_ldap_read_user");
    RESOLVE(user_free, "puff_ldap_user_free");
    RESOLVE(count_failure, "puff_ldap_count_failure");
    RESOLVE(modify, "puff_ldap_modify");
    RESOLVE(error_text, "puff_ldap_error_text");
    RESOLVE(diagnostic, "puff_ldap_diagnostic");
    RESOLVE(probe, "puff_ldap_probe");
#undef RESOLVE
    if (table->abi() != PUFF_LDAP_ABI) {
        failed(error, size, "%s", "it is built for another version of pam_puff (interface version differs)");
        dlclose(handle);
        return -1;
    }
    return 0;
}

int puff_ldap_load(int fd, char *error, size_t size) {
    if (size > 0) error[0] = 0;
    pthread_mutex_lock(&lock);
    int code = 0;
    if (!is_loaded) {
        struct table table;
        memset(&table, 0, sizeof table);
        if (load(fd, &table, error, size) == 0) {
            loaded = table;
            is_loaded = 1;
        } else {
            code = PUFF_LDAP_UNAVAILABLE;
        }
    }
    pthread_mutex_unlock(&lock);
    return code;
}

int puff_ldap_is_loaded(void) {
    pthread_mutex_lock(&lock);
    int result = is_loaded;
    pthread_mutex_unlock(&lock);
    return result;
}

/* The table once loaded, else NULL; the lock orders the read after the load. */
static const struct table *table(void) {
    pthread_mutex_lock(&lock);
    const struct table *result = is_loaded ? &loaded : NULL;
    pthread_mutex_unlock(&lock);
    return result;
}

int puff_ldap_abi(void) { return PUFF_LDAP_ABI; }

int puff_ldap_open(const char *uri, const char *ca_file, int start_tls, int network_timeout_ms,
                   int operation_timeout_ms, LDAP **out) {
    const struct table *t = table();
    if (out) *out = NULL;
    if (!t) return PUFF_LDAP_UNAVAILABLE;
    return t->open(uri, ca_file, start_tls, network_timeout_ms, operation_timeout_ms, out);
}

int puff_ldap_bind_external(LDAP *ld, int timeout_ms) {
    const struct table *t = table();
    return t ? t->bind_external(ld, timeout_ms) : PUFF_LDAP_UNAVAILABLE;
}

int puff_ldap_bind_simple(LDAP *ld, const char *dn, const void *password, size_t length, int timeout_ms) {
    const struct table *t = table();
    return t ? t->bind_simple(ld, dn, password, length, timeout_ms) : PUFF_LDAP_UNAVAILABLE;
}

void puff_ldap_close(LDAP *ld) {
    const struct table *t = table();
    if (t) t->close(ld);
}

int puff_ldap_read_user(LDAP *ld, const char *base, const char *uid, int want_picture, int timeout_ms,
                        puff_ldap_user *user, int *found) {
    const struct table *t = table();
    if (found) *found = 0;
    return t ? t->read_user(ld, base, uid, want_picture, timeout_ms, user, found) : PUFF_LDAP_UNAVAILABLE;
}

void puff_ldap_user_free(puff_ldap_user *user) {
    const struct table *t = table();
    if (t) t->user_free(user);
}

int puff_ldap_count_failure(LDAP *ld, const char *dn, long long now, const char *host, int timeout_ms,
                            long long *failures) {
    const struct table *t = table();
    return t ? t->count_failure(ld, dn, now, host, timeout_ms, failures) : PUFF_LDAP_UNAVAILABLE;
}

int puff_ldap_modify(LDAP *ld, const char *dn, const puff_ldap_change *changes, int count, int timeout_ms) {
    const struct table *t = table();
    return t ? t->modify(ld, dn, changes, count, timeout_ms) : PUFF_LDAP_UNAVAILABLE;
}

const char *puff_ldap_error_text(int code) {
    const struct table *t = table();
    if (code == PUFF_LDAP_UNAVAILABLE || !t) return "the LDAP client library is not loaded";
    return t->error_text(code);
}

void puff_ldap_diagnostic(LDAP *ld, char *buffer, size_t size) {
    const struct table *t = table();
    if (t) {
        t->diagnostic(ld, buffer, size);
    } else if (size > 0) {
        buffer[0] = 0;
    }
}

int puff_ldap_probe(const char *uris, int timeout_ms, int want_answer, char *reason, size_t size) {
    const struct table *t = table();
    if (t) return t->probe(uris, timeout_ms, want_answer, reason, size);
    if (size > 0) snprintf(reason, size, "%s", "the LDAP client library is not loaded");
    return PUFF_LDAP_PROBE_LOCAL;
}
