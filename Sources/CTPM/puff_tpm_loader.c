/* The puff_tpm_* functions of include/puff_tpm.h for the Embedded Swift helper (puff-check):
 * each forwards to the same function of puff-tpm.so (puff_tpm.c linked with libtss2), which
 * puff_tpm_load opens the first time a sealed key is read. A store whose key is a file never
 * loads libtss2. The checks are those of the LDAP client's loader (puff_ldap_loader.c): the
 * caller walked the path from / and opened it with O_NOFOLLOW; here the file must be a regular
 * file owned by root and not writable by group or others, and the descriptor checked is the one
 * loaded (dlopen of /proc/self/fd/N), RTLD_NOW | RTLD_LOCAL, never unloaded. SwiftPM does not
 * compile this file (Package.swift excludes it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "puff_tpm.h"
#include "puff_library.h"

struct table {
    int (*abi)(void);
    int (*seal)(const char *, uint32_t, int, const uint8_t *, size_t, uint8_t *, size_t, size_t *, char *, size_t);
    int (*unseal)(const char *, const uint8_t *, size_t, uint8_t *, size_t, size_t *, char *, size_t);
    int (*evict)(const char *, const uint8_t *, size_t, char *, size_t);
};

/* Set once, under `lock`, and never changed again. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table loaded;
static int is_loaded;

static void failed(char *error, size_t size, const char *text) {
    if (size > 0) snprintf(error, size, "%s", text ? text : "");
}

static int load(int fd, struct table *table, char *error, size_t size) {
    void *handle = puff_open_trusted_library(fd, error, size);
    if (!handle) return -1;
    *(void **)&table->abi = dlsym(handle, "puff_tpm_abi");
    *(void **)&table->seal = dlsym(handle, "puff_tpm_seal");
    *(void **)&table->unseal = dlsym(handle, "puff_tpm_unseal");
    *(void **)&table->evict = dlsym(handle, "puff_tpm_evict");
    if (!table->abi || !table->seal || !table->unseal || !table->evict) {
        failed(error, size, "it lacks the puff_tpm_* entry points");
        dlclose(handle);
        return -1;
    }
    if (table->abi() != PUFF_TPM_ABI) {
        failed(error, size, "it is built for another version of Puff (interface version differs)");
        dlclose(handle);
        return -1;
    }
    return 0;
}

int puff_tpm_load(int fd, char *error, size_t size) {
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
            code = PUFF_TPM_UNAVAILABLE;
        }
    }
    pthread_mutex_unlock(&lock);
    return code;
}

int puff_tpm_is_loaded(void) {
    pthread_mutex_lock(&lock);
    int result = is_loaded;
    pthread_mutex_unlock(&lock);
    return result;
}

static const struct table *table(void) {
    pthread_mutex_lock(&lock);
    const struct table *result = is_loaded ? &loaded : NULL;
    pthread_mutex_unlock(&lock);
    return result;
}

static int unavailable(char *error, size_t size) {
    failed(error, size, "the TPM client library is not loaded");
    return PUFF_TPM_UNAVAILABLE;
}

int puff_tpm_abi(void) { return PUFF_TPM_ABI; }

int puff_tpm_seal(const char *tcti, uint32_t handle, int pcr7, const uint8_t *key, size_t length, uint8_t *blob,
                  size_t blob_size, size_t *blob_length, char *error, size_t size) {
    const struct table *t = table();
    if (blob_length) *blob_length = 0;
    if (!t) return unavailable(error, size);
    return t->seal(tcti, handle, pcr7, key, length, blob, blob_size, blob_length, error, size);
}

int puff_tpm_unseal(const char *tcti, const uint8_t *blob, size_t blob_length, uint8_t *key, size_t key_size,
                    size_t *key_length, char *error, size_t size) {
    const struct table *t = table();
    if (key_length) *key_length = 0;
    if (!t) return unavailable(error, size);
    return t->unseal(tcti, blob, blob_length, key, key_size, key_length, error, size);
}

int puff_tpm_evict(const char *tcti, const uint8_t *blob, size_t blob_length, char *error, size_t size) {
    const struct table *t = table();
    if (!t) return unavailable(error, size);
    return t->evict(tcti, blob, blob_length, error, size);
}
