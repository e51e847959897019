// puff-check takes nothing of its caller's scheduling (issue 36, item 2). A process inherits
// its policy and nice value, CPU affinity, I/O priority, timer slack and utilization clamps
// across fork and exec, setuid or not; `chrt --idle 0 taskset -c 0 su VICTIM` handed all of
// them to the helper that su's module starts with real uid root, which its user can then no
// longer change, and 300 busy loops on that CPU kept it inside the victim's counter lock past
// lock_wait. So before anything else runs (start.c calls this from .preinit_array), the
// helper sets the defaults of a process started at boot: SCHED_OTHER at nice 0 with no
// utilization clamp, every CPU the machine lets it use, the I/O priority that follows the
// nice value, the kernel's default timer slack, and a session (hence an autogroup) of its own.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CHelperStart.h"

// struct sched_attr (include/uapi/linux/sched/types.h), which glibc 2.36 does not declare.
struct puff_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
};

#define PUFF_SCHED_FLAG_UTIL_CLAMP_MIN 0x20
#define PUFF_SCHED_FLAG_UTIL_CLAMP_MAX 0x40
// IOPRIO_WHO_PROCESS, and IOPRIO_CLASS_NONE at level 0: "follow the CPU nice value".
#define PUFF_IOPRIO_WHO_PROCESS 1
#define PUFF_IOPRIO_DEFAULT 0
// The kernel's timer slack for a process that inherited none (init_task's). PR_SET_TIMERSLACK
// with 0 restores the "default" slack, but that default is the parent's slack at fork, which
// the caller chose.
#define PUFF_DEFAULT_TIMER_SLACK_NS 50000UL

static const char *failed_step = "not run";

static int set_default_policy(void) {
    struct puff_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.sched_policy = SCHED_OTHER;
    attr.sched_nice = 0;
    // -1: the clamps' defaults (none), where the kernel has utilization clamping.
    attr.sched_flags = PUFF_SCHED_FLAG_UTIL_CLAMP_MIN | PUFF_SCHED_FLAG_UTIL_CLAMP_MAX;
    attr.sched_util_min = UINT32_MAX;
    attr.sched_util_max = UINT32_MAX;
    if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0) return 0;
    // A kernel without CONFIG_UCLAMP_TASK has no clamp a caller could have set.
    if (errno != EOPNOTSUPP) return -1;
    attr.sched_flags = 0;
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : -1;
}

static int set_every_cpu(void) {
    // Every bit set: the kernel keeps the CPUs that exist and that the cpuset allows.
    cpu_set_t every;
    memset(&every, 0xff, sizeof every);
    return sched_setaffinity(0, sizeof every, &every);
}

int puff_helper_reset_scheduling(void) {
    if (set_default_policy() != 0) { failed_step = "sched_setattr (SCHED_OTHER, nice 0)"; return -1; }
    if (set_every_cpu() != 0) { failed_step = "sched_setaffinity (every CPU)"; return -1; }
    if (syscall(SYS_ioprio_set, PUFF_IOPRIO_WHO_PROCESS, 0, PUFF_IOPRIO_DEFAULT) != 0) {
        failed_step = "ioprio_set (the default)";
        return -1;
    }
    if (prctl(PR_SET_TIMERSLACK, PUFF_DEFAULT_TIMER_SLACK_NS, 0, 0, 0) != 0) {
        failed_step = "PR_SET_TIMERSLACK (50 us)";
        return -1;
    }
    // Out of the caller's session, and so out of its autogroup, whose nice value its user may
    // raise (/proc/PID/autogroup). Not possible for a process group leader (the setuid helper
    // run straight from a user's shell); the module never starts the helper as one.
    if (setsid() < 0 && errno != EPERM) { failed_step = "setsid"; return -1; }
    failed_step = NULL;
    return 0;
}

const char *puff_helper_scheduling_failure(void) { return failed_step; }

int puff_helper_become_root(void) {
    // Real and saved uid too: kill(2), sched_setattr(2), ioprio_set(2) and the like let a
    // user act on a process whose real or saved uid is theirs, whatever its effective uid.
    if (setresuid(0, 0, 0) != 0) return -1;
    uid_t real, effective, saved;
    if (getresuid(&real, &effective, &saved) != 0 || real != 0 || effective != 0 || saved != 0) return -1;
    return 0;
}
