#ifndef PUFF_CLOCKX_SHIM_H
#define PUFF_CLOCKX_SHIM_H
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/Xatom.h>
#include <X11/keysym.h>
#include <X11/cursorfont.h>
#include <X11/extensions/XInput2.h>
#include <X11/extensions/Xrandr.h>
#include <cairo.h>
#include <cairo-xlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>

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
#endif
