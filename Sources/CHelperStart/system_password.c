// libpam for the one check of puff-check that needs it: the caller's system password
// (SystemPassword.swift), through the `puff-enroll` service. It is opened the first time that
// check runs, not at start-up, so a `query` or a Puff passcode (every screen-locker login)
// neither maps nor relocates libpam, libaudit and libcap-ng. dlopen in a setuid process
// searches only the trusted system directories (LD_LIBRARY_PATH is ignored, and the helper
// has dropped its environment anyway).
#include <dlfcn.h>
#include <stddef.h>
#include <security/pam_appl.h>
#include "CHelperStart.h"

int puff_helper_check_password(const char *service, const char *user, const void *conversation) {
    void *library = dlopen("libpam.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return PAM_SYSTEM_ERR;
    int (*start)(const char *, const char *, const struct pam_conv *, pam_handle_t **) =
        (int (*)(const char *, const char *, const struct pam_conv *, pam_handle_t **))dlsym(library, "pam_start");
    int (*authenticate)(pam_handle_t *, int) = (int (*)(pam_handle_t *, int))dlsym(library, "pam_authenticate");
    int (*account)(pam_handle_t *, int) = (int (*)(pam_handle_t *, int))dlsym(library, "pam_acct_mgmt");
    int (*end)(pam_handle_t *, int) = (int (*)(pam_handle_t *, int))dlsym(library, "pam_end");
    // The library stays loaded: modules it loaded may have registered exit handlers.
    if (start == NULL || authenticate == NULL || account == NULL || end == NULL) return PAM_SYSTEM_ERR;
    pam_handle_t *handle = NULL;
    int status = start(service, user, (const struct pam_conv *)conversation, &handle);
    if (status != PAM_SUCCESS || handle == NULL) return status == PAM_SUCCESS ? PAM_SYSTEM_ERR : status;
    status = authenticate(handle, PAM_DISALLOW_NULL_AUTHTOK);
    if (status == PAM_SUCCESS) status = account(handle, PAM_DISALLOW_NULL_AUTHTOK);
    end(handle, status);
    return status;
}
