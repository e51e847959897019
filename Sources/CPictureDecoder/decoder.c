/* The confined picture decoder child (see include/puff_picture_decoder.h).
 *
 * Pictures are chosen by their users, and the programs that show them (puff-lock, puff-pad,
 * the greeter) are the ones people type their passcodes into, sometimes as root. So stb_image
 * runs only here, in a fresh process of the same program started with an empty environment:
 * before it decodes a byte it has every descriptor but 0, 1 and 2 closed (2 is /dev/null),
 * its memory, CPU time and core size capped, root given up for `nobody`, and a seccomp filter
 * that leaves it read, write, memory and exit. The parent checks the answer as untrusted data.
 *
 * Why a constructor and not a branch at the top of each main: the child is entered before the
 * Swift runtime and the program's argument parser run, so no program can forget the entry, none
 * parses an argument first, and the code that runs confined is this file and stb_image only. */
#define _GNU_SOURCE
#include "puff_picture_decoder.h"

#include <errno.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stb/stb_image.h>

/* Closes every inherited descriptor from 3 on and caps memory, CPU time and core files. */
static int puff_decoder_isolate(void) {
    static const int crashes[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS };
    for (size_t index = 0; index < sizeof(crashes) / sizeof(crashes[0]); index++) signal(crashes[index], SIG_DFL);
    if (syscall(SYS_close_range, 3U, ~0U, 0) != 0) return -1;
    struct rlimit limit = { PUFF_DECODER_MEMORY, PUFF_DECODER_MEMORY };
    if (setrlimit(RLIMIT_AS, &limit) != 0) return -1;
    limit.rlim_cur = limit.rlim_max = PUFF_DECODER_SECONDS;
    if (setrlimit(RLIMIT_CPU, &limit) != 0) return -1;
    limit.rlim_cur = limit.rlim_max = 0;
    return setrlimit(RLIMIT_CORE, &limit);
}

/* As root (puff-pad login run by root for another user, puff-lock --draw for puff-enroll):
 * no supplementary groups, nobody's group and user, and no way back. */
static int puff_decoder_unprivileged(void) {
    if (getuid() != 0 && geteuid() != 0 && getgid() != 0 && getegid() != 0) return 0;
    struct passwd *nobody = getpwnam("nobody");
    if (nobody == NULL || nobody->pw_uid == 0 || nobody->pw_gid == 0) return -1;
    uid_t uid = nobody->pw_uid;
    gid_t gid = nobody->pw_gid;
    /* As root, setgid and setuid set the real, effective and saved ids alike. */
    if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0) return -1;
    if (setuid(0) == 0 || getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid) return -1;
    return 0;
}

/* The child's whole world once it has its input: read and write on the descriptors it holds,
 * memory for the decoder, and exit. Anything else (open, socket, ptrace, execve, mprotect to
 * make code, kill) ends it. */
#if defined(__x86_64__)
#define PUFF_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PUFF_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

static int puff_decoder_confine(void) {
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

/* Reads standard input to its end; -1 when it holds more than `capacity` bytes or fails. The
 * child was just started by exec with every signal at its default, so a read is never
 * interrupted by a handler; any failure, EINTR included, ends the child without a picture. */
static long puff_decoder_read(unsigned char *buffer, size_t capacity) {
    size_t length = 0;
    while (length <= capacity) {
        unsigned char *target = buffer + length;
        size_t room = capacity - length;
        unsigned char spare;
        /* One byte past the limit tells an oversized file from one that fills it exactly. */
        if (room == 0) { target = &spare; room = 1; }
        ssize_t got = read(0, target, room);
        if (got < 0) return -1;
        if (got == 0) return (long)length;
        if (target == &spare) return -1;
        length += (size_t)got;
    }
    return -1;
}

static int puff_decoder_write(const unsigned char *bytes, size_t count) {
    while (count > 0) {
        ssize_t wrote = write(1, bytes, count);
        if (wrote <= 0) return -1;
        bytes += wrote;
        count -= (size_t)wrote;
    }
    return 0;
}

int puff_decoder_run(void) {
    if (puff_decoder_isolate() != 0 || puff_decoder_unprivileged() != 0) return 3;
    /* Changing the user made it dumpable again: no ptrace by others of nobody's processes. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return 3;
    unsigned char *input = malloc(PUFF_DECODER_MAX_INPUT);
    if (input == NULL) return 3;
    long length = puff_decoder_read(input, PUFF_DECODER_MAX_INPUT);
    if (length <= 0) return 2;
    if (puff_decoder_confine() != 0) return 3;
    int width = 0, height = 0, components = 0;
    if (stbi_info_from_memory(input, (int)length, &width, &height, &components) != 1
        || width <= 0 || height <= 0 || width > PUFF_DECODER_MAX_SIDE || height > PUFF_DECODER_MAX_SIDE
        || (long long)width * height > PUFF_DECODER_MAX_PIXELS) return 1;
    unsigned char *pixels = stbi_load_from_memory(input, (int)length, &width, &height, &components, 4);
    if (pixels == NULL || width <= 0 || height <= 0 || width > PUFF_DECODER_MAX_SIDE || height > PUFF_DECODER_MAX_SIDE
        || (long long)width * height > PUFF_DECODER_MAX_PIXELS) return 1;
    uint32_t w = (uint32_t)width, h = (uint32_t)height;
    unsigned char header[8] = {
        (unsigned char)w, (unsigned char)(w >> 8), (unsigned char)(w >> 16), (unsigned char)(w >> 24),
        (unsigned char)h, (unsigned char)(h >> 8), (unsigned char)(h >> 16), (unsigned char)(h >> 24),
    };
    if (puff_decoder_write(header, sizeof(header)) != 0) return 1;
    if (puff_decoder_write(pixels, (size_t)w * h * 4) != 0) return 1;
    return 0;
}

/* glibc passes the arguments to constructors of the executable and its libraries. */
__attribute__((constructor)) static void puff_decoder_entry(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc != 2 || argv == NULL || argv[1] == NULL || strcmp(argv[1], PUFF_DECODER_ARGUMENT) != 0) return;
    _exit(puff_decoder_run());
}
