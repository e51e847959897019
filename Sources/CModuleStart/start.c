// The module's first constructor (priority 101, before the default-priority constructors of
// the statically linked Swift runtime, which read SWIFT_* variables while the module is
// loaded: SWIFT_DEBUG_LIB_PRESPECIALIZED_PATH made a setuid `su` dlopen a caller-chosen path
// as root). In a setuid or otherwise secure-mode host (AT_SECURE) the SWIFT_* entries are
// taken out of environ for that moment, so the runtime sees none, and are put back (same
// strings, via putenv) by the first call into the module, after the runtime has read its
// settings once and for all. Hosts that are not in secure mode are left untouched.
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include "CModuleStart.h"

extern char **environ;

enum { capacity = 64 };
static char *hidden[capacity];
static int hidden_count = 0;

__attribute__((constructor(101)))
static void puff_module_hide_runtime_environment(void) {
    if (getauxval(AT_SECURE) == 0 || environ == NULL) return;
    char **write = environ;
    for (char **read = environ; *read != NULL; read++) {
        if (strncmp(*read, "SWIFT_", 6) == 0 && hidden_count < capacity) {
            hidden[hidden_count++] = *read;
            continue;
        }
        // More than `capacity` SWIFT_* entries: the rest are dropped for good (the
        // environment of a setuid program is its caller's, who can set them again).
        if (strncmp(*read, "SWIFT_", 6) == 0) continue;
        *write++ = *read;
    }
    *write = NULL;
}

void puff_module_restore_environment(void) {
    while (hidden_count > 0) {
        char *entry = hidden[--hidden_count];
        hidden[hidden_count] = NULL;
        (void)putenv(entry);
    }
}

int puff_module_hidden_environment(void) { return hidden_count; }
