#ifndef PUFF_HELPER_START_H
#define PUFF_HELPER_START_H

/// How many environment variables puff-check dropped before anything else ran (the
/// Swift runtime included); -1 when its start-up code was not linked in, or could not make the
/// process undumpable or change to /.
int puff_helper_dropped_environment(void);

/// Sets the scheduling a process started at boot has (scheduling.c): SCHED_OTHER at nice 0
/// without utilization clamps, every CPU the machine allows, the default I/O priority and
/// timer slack, a session of its own where it is no process group leader. Run from
/// .preinit_array; 0, or -1 and `puff_helper_scheduling_failure` names the step that failed.
int puff_helper_reset_scheduling(void);

/// Whether the start-up code reset the scheduling (1) or could not (0).
int puff_helper_scheduling_was_reset(void);

/// The step of `puff_helper_reset_scheduling` that failed, or NULL.
const char *puff_helper_scheduling_failure(void);

/// setresuid(0, 0, 0), checked: 0, or -1 when a uid is still not root. For the setuid helper
/// run by an ordinary user, once it knows who called it: no signal, scheduling or I/O
/// priority change of that user reaches it afterwards (scheduling.c).
int puff_helper_become_root(void);

/// pam_start, pam_authenticate and pam_acct_mgmt (both with PAM_DISALLOW_NULL_AUTHTOK), then
/// pam_end, for `user` through `service` with `conversation` (a `struct pam_conv *`), with
/// libpam opened on first use (system_password.c). The PAM status; PAM_SYSTEM_ERR when libpam
/// cannot be loaded.
int puff_helper_check_password(const char *service, const char *user, const void *conversation);

#include <stddef.h>

/// Makes sure no one but root can freeze, throttle or move the helper through a cgroup
/// (cgroup.c): in every mounted hierarchy, the process's cgroup and its ancestors must be
/// root's alone, or the process moves into `puff-check` under the hierarchy's root. 0 when
/// that holds (`moved` counts the moves), -1 when it cannot be made to hold; `message` then
/// says why.
int puff_helper_leave_user_cgroups(char *message, size_t size, int *moved);

#endif
