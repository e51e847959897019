#ifndef PUFF_HELPER_START_H
#define PUFF_HELPER_START_H

/// How many environment variables puff-check dropped before anything else ran (the
/// Swift runtime included); -1 when its start-up code was not linked in, or could not make the
/// process undumpable or change to /.
int puff_helper_dropped_environment(void);

/// pam_start, pam_authenticate and pam_acct_mgmt (both with PAM_DISALLOW_NULL_AUTHTOK), then
/// pam_end, for `user` through `service` with `conversation` (a `struct pam_conv *`), with
/// libpam opened on first use (system_password.c). The PAM status; PAM_SYSTEM_ERR when libpam
/// cannot be loaded.
int puff_helper_check_password(const char *service, const char *user, const void *conversation);

#endif
