/* The unsealed key kept for the rest of the boot (puff_key_cache.c, docs/admin/protection-at-rest.md):
 * a "user" key in root's persistent kernel keyring, which only a process with a root uid can
 * link (KEYCTL_GET_PERSISTENT), readable only by its possessors, in kernel memory that is never
 * swapped, and gone at the next boot. Names start with "puff:". */
#ifndef PUFF_KEY_CACHE_H
#define PUFF_KEY_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The key named `name`, copied into `key` (at most `size` bytes; its length in *length): 0;
 * 1 when there is none; -1 when the keyring cannot be used (errno says why). */
int puff_key_cache_get(const char *name, uint8_t *key, size_t size, size_t *length);

/* Keeps `key` under `name` (replacing an older one): 0, or -1 (errno). */
int puff_key_cache_put(const char *name, const uint8_t *key, size_t length);

/* Drops every key whose name starts with "puff:": how many, or -1 (errno). */
int puff_key_cache_forget(void);

#endif
