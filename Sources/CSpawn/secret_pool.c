// The secret pool behind SecureBytes (Sources/PuffPlatform/SecureBytes.swift). See
// include/puff_secret_pool.h.
#include <pthread.h>
#include <sodium.h>
#include <string.h>
#include "puff_secret_pool.h"

enum { pool_size = 16384, alignment = 16 };

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
// From sodium_malloc (guard pages, locked, left out of core dumps); made on first use and
// kept for the life of the process (the module is loaded NODELETE).
static unsigned char *pool;
static size_t pool_used;   // bytes handed out since the pool was last empty
static size_t pool_live;   // allocations not yet released

static int in_pool(const unsigned char *bytes) {
    return pool != NULL && bytes >= pool && bytes < pool + pool_size;
}

void *puff_secret_alloc(size_t size) {
    if (size == 0) size = 1;
    if (size <= pool_size) {
        size_t rounded = (size + alignment - 1) & ~(size_t)(alignment - 1);
        unsigned char *bytes = NULL;
        pthread_mutex_lock(&pool_lock);
        if (pool == NULL) pool = sodium_malloc(pool_size);
        if (pool != NULL && pool_size - pool_used >= rounded) {
            bytes = pool + pool_used;
            pool_used += rounded;
            pool_live += 1;
        }
        pthread_mutex_unlock(&pool_lock);
        if (bytes != NULL) {
            sodium_memzero(bytes, size);
            return bytes;
        }
    }
    void *own = sodium_malloc(size);
    if (own != NULL) sodium_memzero(own, size);
    return own;
}

void puff_secret_free(void *secret, size_t size) {
    if (secret == NULL) return;
    if (size == 0) size = 1;
    pthread_mutex_lock(&pool_lock);
    int pooled = in_pool(secret);
    if (pooled) {
        sodium_memzero(secret, size);
        pool_live -= 1;
        if (pool_live == 0) pool_used = 0;
    }
    pthread_mutex_unlock(&pool_lock);
    if (!pooled) sodium_free(secret);
}
