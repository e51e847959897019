#ifndef PUFF_SECRET_POOL_H
#define PUFF_SECRET_POOL_H

#include <stddef.h>

/* Memory for secrets (SecureBytes): zeroed, locked in RAM, left out of core dumps, wiped when
 * released. Requests up to 16 KiB come from one pool made once per process by sodium_malloc
 * (guard pages before and after it, mlock, MADV_DONTDUMP), handed out in 16-byte steps and
 * reused once every piece is released; a larger request, or one the full pool cannot take,
 * gets its own sodium_malloc. A login then costs one sodium_malloc instead of one per secret
 * (each was about ten system calls that split and merge mappings: ~35 us). Inside the pool
 * the secrets have no guard pages between them; the pool as a whole has them. Thread-safe
 * (a mutex); not for use in a child between fork and exec. NULL when no memory is left. */
void *puff_secret_alloc(size_t size);

/* Wipes and releases what puff_secret_alloc(size) returned (size as asked). */
void puff_secret_free(void *secret, size_t size);

#endif
