/* The unsealed key kept for the rest of the boot (issue 36, item 3): a discreet refusal must
 * cost what a real attempt costs, and both needed the key, so every refusal made the TPM unseal
 * it (two TPM commands), also for names that are no account. Now the key is unsealed at most
 * once a boot and kept in root's persistent keyring: kernel memory (never swapped), reachable
 * only by a process with a root uid (KEYCTL_GET_PERSISTENT for uid 0 needs it), and the key
 * readable only by its possessors. Nothing is written to a file. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/keyctl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "puff_key_cache.h"

/* Key permissions (keyutils.h, which the kernel's uapi headers do not carry). */
#define PUFF_KEY_POS_VIEW 0x01000000UL
#define PUFF_KEY_POS_READ 0x02000000UL
#define PUFF_KEY_POS_SEARCH 0x08000000UL
#define PUFF_KEY_POS_SETATTR 0x20000000UL
#define PUFF_KEY_USR_VIEW 0x00010000UL

static const char type[] = "user";
static const char prefix[] = "puff:";

static long keyctl5(int operation, unsigned long a, unsigned long b, unsigned long c, unsigned long d) {
    return syscall(SYS_keyctl, operation, a, b, c, d);
}

/* Root's persistent keyring, linked into this process's keyring (so its keys are possessed). */
static long persistent_keyring(void) {
    return keyctl5(KEYCTL_GET_PERSISTENT, 0, (unsigned long)KEY_SPEC_PROCESS_KEYRING, 0, 0);
}

static int named(const char *name) {
    return name != NULL && strncmp(name, prefix, sizeof prefix - 1) == 0 && strlen(name) < 128;
}

int puff_key_cache_get(const char *name, uint8_t *key, size_t size, size_t *length) {
    *length = 0;
    if (!named(name)) { errno = EINVAL; return -1; }
    long ring = persistent_keyring();
    if (ring < 0) return -1;
    long found = keyctl5(KEYCTL_SEARCH, (unsigned long)ring, (unsigned long)type, (unsigned long)name, 0);
    if (found < 0) return (errno == ENOKEY || errno == EKEYEXPIRED || errno == EKEYREVOKED) ? 1 : -1;
    long read = keyctl5(KEYCTL_READ, (unsigned long)found, (unsigned long)key, size, 0);
    if (read < 0) return -1;
    if ((size_t)read > size) { explicit_bzero(key, size); errno = EMSGSIZE; return -1; }
    *length = (size_t)read;
    return 0;
}

int puff_key_cache_put(const char *name, const uint8_t *key, size_t length) {
    if (!named(name)) { errno = EINVAL; return -1; }
    long ring = persistent_keyring();
    if (ring < 0) return -1;
    long id = syscall(SYS_add_key, type, name, key, length, (int32_t)ring);
    if (id < 0) return -1;
    /* Its possessors only (root's processes that linked the keyring): no group or other
     * rights, whatever the creating process's group. */
    unsigned long perm = PUFF_KEY_POS_VIEW | PUFF_KEY_POS_READ | PUFF_KEY_POS_SEARCH | PUFF_KEY_POS_SETATTR | PUFF_KEY_USR_VIEW;
    if (keyctl5(KEYCTL_SETPERM, (unsigned long)id, perm, 0, 0) != 0) {
        int saved = errno;
        keyctl5(KEYCTL_INVALIDATE, (unsigned long)id, 0, 0, 0);
        errno = saved;
        return -1;
    }
    return 0;
}

int puff_key_cache_forget(void) {
    long ring = persistent_keyring();
    if (ring < 0) return -1;
    long size = keyctl5(KEYCTL_READ, (unsigned long)ring, 0, 0, 0);
    if (size < 0) return -1;
    if (size == 0) return 0;
    int32_t *ids = malloc((size_t)size);
    if (ids == NULL) return -1;
    long got = keyctl5(KEYCTL_READ, (unsigned long)ring, (unsigned long)ids, (unsigned long)size, 0);
    int forgotten = 0;
    for (long index = 0; got > 0 && index < got / (long)sizeof *ids && index < size / (long)sizeof *ids; index++) {
        char description[256];
        long described = keyctl5(KEYCTL_DESCRIBE, (unsigned long)ids[index], (unsigned long)description, sizeof description, 0);
        if (described <= 0 || (size_t)described > sizeof description) continue;
        description[sizeof description - 1] = 0;
        /* "type;uid;gid;perm;description" */
        const char *name = description;
        for (int semicolons = 0; semicolons < 4 && name != NULL; semicolons++) {
            name = strchr(name, ';');
            if (name != NULL) name++;
        }
        if (strncmp(description, "user;", 5) != 0 || !named(name)) continue;
        if (keyctl5(KEYCTL_INVALIDATE, (unsigned long)ids[index], 0, 0, 0) == 0) forgotten++;
    }
    free(ids);
    return got < 0 ? -1 : forgotten;
}
