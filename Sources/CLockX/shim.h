#ifndef PUFF_CLOCKX_SHIM_H
#define PUFF_CLOCKX_SHIM_H
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/Xatom.h>
#include <X11/keysym.h>
#include <X11/cursorfont.h>
#include <X11/extensions/XInput2.h>
#include <X11/extensions/Xrandr.h>
#include <cairo/cairo.h>
#include <cairo/cairo-xlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <signal.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <spawn.h>

/* XCreateIC is variadic, which Swift cannot call: the one input context puff-lock needs
   (no pre-edit or status window, so the local input method composes without a server). */
static inline XIC puff_create_input_context(XIM method, Window window) {
    return XCreateIC(method, XNInputStyle, XIMPreeditNothing | XIMStatusNothing,
                     XNClientWindow, window, XNFocusWindow, window, (char *)NULL);
}

/* XISetMask is a macro. */
static inline void puff_xi_set_mask(unsigned char *mask, int event) {
    mask[event >> 3] |= (unsigned char)(1 << (event & 7));
}

/* prctl is variadic too: no core dumps and no ptrace by other processes of the same user
   (a core file or a debugger would see the passcode and the strokes). */
static inline int puff_forbid_dumps(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* puff-lock's authentication child: killed when the locking parent dies (checked by the
   caller through its socket as well, since the parent may die before this call). */
static inline int puff_die_with_parent(void) {
    return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}

/* Marks every descriptor from `first` on close-on-exec (before the parent starts its
   child: it gets only the descriptors its spawn actions give it, never xss-lock's sleep lock). */
static inline int puff_cloexec_from(int first) {
    return (int)syscall(SYS_close_range, (unsigned)first, ~0U, CLOSE_RANGE_CLOEXEC);
}

/* A descriptor readable when SIGCHLD is pending; SIGCHLD is blocked in the caller. */
static inline int puff_child_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* posix_spawn attributes for the child: no signal blocked, every signal at its default. */
static inline int puff_spawn_defaults(posix_spawnattr_t *attributes) {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    if (posix_spawnattr_init(attributes) != 0) return -1;
    if (posix_spawnattr_setsigmask(attributes, &none) != 0) return -1;
    if (posix_spawnattr_setsigdefault(attributes, &all) != 0) return -1;
    return posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}
#endif
