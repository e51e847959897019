// puff-check's first code, run from .preinit_array: before every constructor of the
// executable, so before the statically linked Swift runtime reads SWIFT_* variables
// (SWIFT_DEBUG_LIB_PRESPECIALIZED_PATH made root dlopen a caller-chosen path and print the
// loader's error: a file-existence oracle for root-only directories). The helper needs no
// environment at all, so it keeps none; main() clears it again and trusts nothing else of
// its caller either (Hardening.swift).
#include <stddef.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "CHelperStart.h"

static int dropped = -1;
static int scheduled = -1;

static void puff_helper_drop_environment(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    int count = 0;
    for (char **entry = envp; entry != NULL && *entry != NULL; entry++) count++;
    // Emptied in place: glibc's __libc_start_main, which runs after .preinit_array, points
    // environ at this same array again (&argv[argc + 1]), so a new pointer would not last.
    if (envp != NULL) envp[0] = NULL;
    // No core dump or ptrace by the caller, even where the exec made no credential change (a
    // root caller: the module in fleet mode); and not the caller's working directory, where a
    // library could find a per-directory file (libldap's ./ldaprc). Either failing stops the
    // helper in main().
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || chdir("/") != 0) return;
    dropped = count;
    // Nor its scheduling (scheduling.c); helperMain() refuses to run when that failed.
    scheduled = puff_helper_reset_scheduling();
}

__attribute__((section(".preinit_array"), used))
static void (*const puff_helper_preinit)(int, char **, char **) = puff_helper_drop_environment;

int puff_helper_dropped_environment(void) { return dropped; }

int puff_helper_scheduling_was_reset(void) { return scheduled == 0; }
