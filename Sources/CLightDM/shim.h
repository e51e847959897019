#ifndef PUFF_CLIGHTDM_SHIM_H
#define PUFF_CLIGHTDM_SHIM_H
/* liblightdm-gobject-1 (Debian's liblightdm-gobject-dev) for puff-greeter, and the seccomp
   filter its picture decoder runs under. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <lightdm.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/resource.h>
#include <glib-unix.h>
#include <stddef.h>
#include <string.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

/* The three signals the greeter follows; g_signal_connect is a macro, and the handlers'
   argument lists differ, so each gets its own typed connector. */
typedef void (*puff_prompt_handler)(LightDMGreeter *greeter, const gchar *text, LightDMPromptType type, gpointer data);
typedef void (*puff_message_handler)(LightDMGreeter *greeter, const gchar *text, LightDMMessageType type, gpointer data);
typedef void (*puff_complete_handler)(LightDMGreeter *greeter, gpointer data);

static inline void puff_greeter_follow(LightDMGreeter *greeter, puff_prompt_handler prompt,
                                       puff_message_handler message, puff_complete_handler complete,
                                       gpointer data) {
    g_signal_connect(greeter, LIGHTDM_GREETER_SIGNAL_SHOW_PROMPT, G_CALLBACK(prompt), data);
    g_signal_connect(greeter, LIGHTDM_GREETER_SIGNAL_SHOW_MESSAGE, G_CALLBACK(message), data);
    g_signal_connect(greeter, LIGHTDM_GREETER_SIGNAL_AUTHENTICATION_COMPLETE, G_CALLBACK(complete), data);
}

/* A GError's message copied into `buffer` (cut to fit) and the error freed; empty without one. */
static inline void puff_take_error(GError **error, char *buffer, size_t size) {
    if (size == 0) return;
    buffer[0] = 0;
    if (error == NULL || *error == NULL) return;
    if ((*error)->message != NULL) {
        strncpy(buffer, (*error)->message, size - 1);
        buffer[size - 1] = 0;
    }
    g_clear_error(error);
}

/* A pipe whose ends are not inherited by programs started later. */
static inline int puff_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

/* The decoder child: every descriptor from `first` on closed, its address space and CPU time
   capped. */
static inline int puff_decoder_isolate(int first, unsigned long memory, unsigned long seconds) {
    if (syscall(SYS_close_range, (unsigned int)first, ~0U, 0) != 0) return -1;
    struct rlimit limit = { memory, memory };
    if (setrlimit(RLIMIT_AS, &limit) != 0) return -1;
    limit.rlim_cur = limit.rlim_max = seconds;
    if (setrlimit(RLIMIT_CPU, &limit) != 0) return -1;
    limit.rlim_cur = limit.rlim_max = 0;
    return setrlimit(RLIMIT_CORE, &limit);
}

/* The decoder child's whole world once it has read its input: read and write on the
   descriptors it holds, memory for the decoder, and exit. Anything else (open, socket,
   ptrace, execve, mprotect to make code) kills it. */
#if defined(__x86_64__)
#define PUFF_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PUFF_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

static inline int puff_confine_decoder(void) {
#ifdef PUFF_AUDIT_ARCH
#define PUFF_ALLOW(name) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_##name, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PUFF_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        PUFF_ALLOW(read), PUFF_ALLOW(write), PUFF_ALLOW(brk), PUFF_ALLOW(mmap), PUFF_ALLOW(munmap),
        PUFF_ALLOW(mremap), PUFF_ALLOW(madvise), PUFF_ALLOW(exit), PUFF_ALLOW(exit_group),
        PUFF_ALLOW(rt_sigreturn), PUFF_ALLOW(futex),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
#undef PUFF_ALLOW
    struct sock_fprog program = { (unsigned short)(sizeof(filter) / sizeof(filter[0])), filter };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program);
#else
    errno = ENOSYS;
    return -1;
#endif
}
#endif
