#ifndef PUFF_WAYLAND_H
#define PUFF_WAYLAND_H
/* Puff's Wayland client, in one of two modes: puff-lock's locking parent (ext-session-lock-v1,
   one lock surface per output) or puff-greeter's window under cage (one fullscreen xdg-shell
   toplevel); both with the seat's pointer, touch and keyboard and the same two-frame drawing.
   Also the descriptor passing between puff-lock's parent and its authentication child. The
   protocol code is generated at build time by wayland-scanner from wayland-protocols' XML
   (`make wayland-protocol`); a build without it has `puff_wl_available()` false and refuses. */
#include <stddef.h>
#include <stdint.h>

/* Whether this build has the ext-session-lock-v1 client code. */
int puff_wl_available(void);

struct puff_wl;

/* Input translated for the lock screen; `text` holds up to 16 bytes of one key press and is
   wiped by puff_wl_next_event's caller. */
enum puff_wl_kind {
    PUFF_WL_DOWN = 1, PUFF_WL_MOVE, PUFF_WL_UP, PUFF_WL_ENTER, PUFF_WL_BACKSPACE, PUFF_WL_ESCAPE,
    PUFF_WL_TEXT,
    /* The output with the lock screen changed size, or another output took its place. */
    PUFF_WL_RESIZED,
    /* A key that types nothing (arrows, Tab, F2): its key symbol in `symbol`. */
    PUFF_WL_KEY,
    /* The compositor asked the window to close (window mode). */
    PUFF_WL_CLOSE,
};

struct puff_wl_event {
    int kind;
    double x, y;
    int count;
    unsigned char text[16];
    uint32_t symbol;
};

/* The lock's state as the compositor said it. */
enum puff_wl_state { PUFF_WL_IDLE = 0, PUFF_WL_LOCKING, PUFF_WL_LOCKED, PUFF_WL_FINISHED };

/* Connects to $WAYLAND_DISPLAY and finds the globals; NULL with a message in `error` when
   there is no compositor or it lacks wl_compositor, wl_shm or ext_session_lock_manager_v1.
   `background` (0xRRGGBB) fills the outputs the lock screen is not drawn on. */
struct puff_wl *puff_wl_connect(uint32_t background, char *error, size_t error_size);
/* Window mode: connects and asks for one fullscreen xdg-shell toplevel titled `title`; NULL
   with a message when there is no compositor or it lacks xdg_wm_base. Drawn like the lock
   screen (puff_wl_set_frames, puff_wl_show_frame), sized by the compositor's configure. */
struct puff_wl *puff_wl_connect_window(uint32_t background, const char *title, char *error, size_t error_size);
void puff_wl_disconnect(struct puff_wl *wl);
/* The connection's descriptor, for poll. */
int puff_wl_fd(struct puff_wl *wl);
/* Asks for the lock and gives every output a lock surface (outputs added later get theirs
   when they appear). */
int puff_wl_lock(struct puff_wl *wl);
int puff_wl_state(struct puff_wl *wl);
/* Milliseconds until a held key is pressed again (key repeat happens in puff_wl_pump), or -1
   when no key repeats. */
int puff_wl_repeat_wait(struct puff_wl *wl);
/* Dispatches what is queued, reads the socket when `readable`, flushes; -1 when the
   connection is lost. */
int puff_wl_pump(struct puff_wl *wl, int readable);
/* The next input event, 1 when one was taken, 0 when none waits. */
int puff_wl_next_event(struct puff_wl *wl, struct puff_wl_event *event);
/* Whether an input event waits (nothing is taken). */
int puff_wl_has_events(struct puff_wl *wl);
/* The size in pixels (the output's scale applied: HiDPI) of the output the lock screen is drawn
   on, or of the window (0 × 0 before its first configure); frames are drawn at this size and
   pointer and touch positions come in its pixels. */
void puff_wl_primary_size(struct puff_wl *wl, int32_t *width, int32_t *height);
/* How many outputs have a lock surface now. */
int puff_wl_surface_count(struct puff_wl *wl);
/* The child's two frames: `fd` a sealed memfd (F_SEAL_SHRINK) holding two XRGB8888 images
   of width × height at `stride`; checked, then shared with the compositor. 0, or -1 when
   refused (the descriptor is always closed). */
int puff_wl_set_frames(struct puff_wl *wl, int fd, int32_t width, int32_t height, int32_t stride);
/* Shows frame 0 or 1 on the lock screen's output when its size is that output's size. */
int puff_wl_show_frame(struct puff_wl *wl, int index);
/* Drops the child's frames and shows the plain background (no child draws). */
void puff_wl_clear_frames(struct puff_wl *wl);
/* unlock_and_destroy, then a round trip so the compositor has it before this process ends. */
void puff_wl_unlock(struct puff_wl *wl);

/* A SOCK_SEQPACKET record with one descriptor (SCM_RIGHTS); 0 when sent whole. */
int puff_send_with_descriptor(int socket, const void *bytes, size_t length, int descriptor);
/* Receives one record without blocking; a descriptor that came with it is stored in
   `*descriptor` (close-on-exec), or -1. Returns recv's result. */
long puff_receive_with_descriptor(int socket, void *bytes, size_t length, int *descriptor);
/* An anonymous file for frames: memfd, close-on-exec, sealable, `size` bytes, then sealed
   against shrinking and growing. -1 on failure. */
int puff_frame_file(size_t size);
#endif
