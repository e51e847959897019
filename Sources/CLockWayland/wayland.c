/* Puff's Wayland client (see include/puff_wayland.h): puff-lock's session lock and
   puff-greeter's window. Single-threaded: every callback runs inside puff_wl_pump. */
#define _GNU_SOURCE
#include "puff_wayland.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int puff_send_with_descriptor(int socket, const void *bytes, size_t length, int descriptor) {
    struct iovec vector = {.iov_base = (void *)bytes, .iov_len = length};
    union {
        char buffer[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1,
                             .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &descriptor, sizeof(int));
    ssize_t sent;
    do sent = sendmsg(socket, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (sent < 0 && errno == EINTR);
    return sent == (ssize_t)length ? 0 : -1;
}

long puff_receive_with_descriptor(int socket, void *bytes, size_t length, int *descriptor) {
    *descriptor = -1;
    struct iovec vector = {.iov_base = bytes, .iov_len = length};
    union {
        char buffer[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1,
                             .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
    ssize_t got = recvmsg(socket, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (got < 0) return got;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t index = 0; index < count; index++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + index * sizeof(int), sizeof(int));
            /* One descriptor per record; any more are closed at once. */
            if (*descriptor < 0) *descriptor = fd; else close(fd);
        }
    }
    if (message.msg_flags & MSG_CTRUNC) {
        if (*descriptor >= 0) close(*descriptor);
        *descriptor = -1;
    }
    return got;
}

int puff_frame_file(size_t size) {
    int fd = memfd_create("puff-lock-frames", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)size) != 0
        || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

#if __has_include("generated/ext-session-lock-v1-client.h") && __has_include("generated/xdg-shell-client.h")
#include <wayland-client.h>
#include <xkbcommon/xkbcommon.h>
#include <xkbcommon/xkbcommon-keysyms.h>
#include "generated/ext-session-lock-v1-client.h"
#include "generated/ext-session-lock-v1-code.h"
#include "generated/xdg-shell-client.h"
#include "generated/xdg-shell-code.h"

int puff_wl_available(void) { return 1; }

#define PUFF_OUTPUTS 16
#define PUFF_QUEUE 256
#define PUFF_BUTTON_LEFT 0x110

struct puff_output {
    struct puff_wl *wl;
    uint32_t name;
    struct wl_output *output;
    struct wl_surface *surface;
    struct ext_session_lock_surface_v1 *lock_surface;
    int32_t width, height;
    int configured;
    struct wl_buffer *plain;
    int32_t plain_width, plain_height;
    /* A frame of the child is what this surface shows. */
    int showing_frame;
    /* wl_output.scale (HiDPI; 1 until said): frames are drawn at width × scale pixels. The
       window's is that of the output it is on. */
    int32_t scale;
};

struct puff_wl {
    struct wl_display *display;
    struct wl_registry *registry;
    struct wl_compositor *compositor;
    struct wl_shm *shm;
    struct wl_seat *seat;
    struct wl_pointer *pointer;
    struct wl_touch *touch;
    struct wl_keyboard *keyboard;
    struct ext_session_lock_manager_v1 *manager;
    struct ext_session_lock_v1 *lock;
    int state;
    /* Window mode: the one toplevel, drawn as the lock screen's output is in lock mode. */
    struct xdg_wm_base *wm_base;
    struct puff_output *window;
    struct xdg_surface *xdg_surface;
    struct xdg_toplevel *toplevel;
    int32_t pending_width, pending_height;
    /* The output the window is on (wl_surface.enter), 0 before it says. */
    uint32_t window_output;
    uint32_t background;
    struct puff_output *outputs[PUFF_OUTPUTS];
    /* The registry name of the output the lock screen is drawn on (0: none yet). */
    uint32_t primary;
    struct wl_surface *pointer_surface;
    double pointer_x, pointer_y;
    int button_down;
    int touch_id, touching;
    double touch_x, touch_y;
    struct xkb_context *xkb;
    struct xkb_keymap *keymap;
    struct xkb_state *xkb_state;
    /* Key repeat (wl_keyboard.repeat_info: per second, after milliseconds): the key held down
       (0: none) and when it is pressed again, on CLOCK_MONOTONIC in milliseconds. */
    int32_t repeat_rate, repeat_delay;
    xkb_keycode_t repeat_key;
    double repeat_next;
    struct puff_wl_event queue[PUFF_QUEUE];
    int head, count;
    struct wl_buffer *frames[2];
    int32_t frame_width, frame_height;
    int last_frame;
};

static void push(struct puff_wl *wl, const struct puff_wl_event *event) {
    if (wl->count == PUFF_QUEUE) return; /* nobody reads: dropped, as on X11's full channel */
    wl->queue[(wl->head + wl->count) % PUFF_QUEUE] = *event;
    wl->count++;
}

static struct puff_output *primary_output(struct puff_wl *wl);
static int32_t effective_scale(struct puff_output *output);

static void push_kind(struct puff_wl *wl, int kind, double x, double y) {
    if (kind == PUFF_WL_DOWN || kind == PUFF_WL_MOVE || kind == PUFF_WL_UP) {
        /* Surface coordinates are logical; the drawing is in the frame's pixels. */
        struct puff_output *primary = primary_output(wl);
        int32_t scale = primary ? effective_scale(primary) : 1;
        x *= scale;
        y *= scale;
    }
    struct puff_wl_event event = {.kind = kind, .x = x, .y = y};
    push(wl, &event);
}

int puff_wl_next_event(struct puff_wl *wl, struct puff_wl_event *event) {
    if (wl->count == 0) return 0;
    struct puff_wl_event *slot = &wl->queue[wl->head];
    *event = *slot;
    explicit_bzero(slot, sizeof *slot);
    wl->head = (wl->head + 1) % PUFF_QUEUE;
    wl->count--;
    return 1;
}

int puff_wl_has_events(struct puff_wl *wl) { return wl->count > 0; }

static struct puff_output *output_named(struct puff_wl *wl, uint32_t name) {
    for (int index = 0; index < PUFF_OUTPUTS; index++)
        if (wl->outputs[index] && wl->outputs[index]->name == name) return wl->outputs[index];
    return NULL;
}

/* The output's scale, or 1 when frames that large could not be had. */
static int32_t effective_scale(struct puff_output *output) {
    int32_t scale = output->scale > 1 ? output->scale : 1;
    if ((int64_t)output->width * scale > 16384 || (int64_t)output->height * scale > 16384) return 1;
    return scale;
}

static struct puff_output *primary_output(struct puff_wl *wl) {
    if (wl->window) return wl->window;
    return wl->primary ? output_named(wl, wl->primary) : NULL;
}

static int is_primary_surface(struct puff_wl *wl, struct wl_surface *surface) {
    struct puff_output *primary = primary_output(wl);
    return primary && surface && primary->surface == surface;
}

/* A buffer of one colour, the size of the output. */
static struct wl_buffer *plain_buffer(struct puff_wl *wl, int32_t width, int32_t height) {
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384) return NULL;
    size_t stride = (size_t)width * 4, size = stride * (size_t)height;
    int fd = puff_frame_file(size);
    if (fd < 0) return NULL;
    uint32_t *pixels = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (pixels == MAP_FAILED) {
        close(fd);
        return NULL;
    }
    for (size_t index = 0; index < size / 4; index++) pixels[index] = 0xFF000000u | wl->background;
    munmap(pixels, size);
    struct wl_shm_pool *pool = wl_shm_create_pool(wl->shm, fd, (int32_t)size);
    struct wl_buffer *buffer = wl_shm_pool_create_buffer(pool, 0, width, height, (int32_t)stride, WL_SHM_FORMAT_XRGB8888);
    wl_shm_pool_destroy(pool);
    close(fd);
    return buffer;
}

/* What a surface shows: the child's last frame on the lock screen's output when it fits,
   else the plain background. */
static void paint(struct puff_output *output) {
    struct puff_wl *wl = output->wl;
    if (!output->configured) return;
    struct wl_buffer *buffer = NULL;
    int32_t scale = effective_scale(output), buffer_scale = 1;
    output->showing_frame = 0;
    if (output == primary_output(wl) && wl->frames[0] && wl->last_frame >= 0
        && wl->frame_width == output->width * scale && wl->frame_height == output->height * scale) {
        buffer = wl->frames[wl->last_frame];
        buffer_scale = scale;
        output->showing_frame = 1;
    } else {
        if (!output->plain || output->plain_width != output->width || output->plain_height != output->height) {
            if (output->plain) wl_buffer_destroy(output->plain);
            output->plain = plain_buffer(wl, output->width, output->height);
            output->plain_width = output->width;
            output->plain_height = output->height;
        }
        buffer = output->plain;
    }
    if (!buffer) return;
    wl_surface_set_buffer_scale(output->surface, buffer_scale);
    wl_surface_attach(output->surface, buffer, 0, 0);
    wl_surface_damage_buffer(output->surface, 0, 0, INT32_MAX, INT32_MAX);
    wl_surface_commit(output->surface);
}

static void lock_surface_configure(void *data, struct ext_session_lock_surface_v1 *surface, uint32_t serial,
                                   uint32_t width, uint32_t height) {
    struct puff_output *output = data;
    struct puff_wl *wl = output->wl;
    ext_session_lock_surface_v1_ack_configure(surface, serial);
    int changed = !output->configured || output->width != (int32_t)width || output->height != (int32_t)height;
    output->width = width > INT32_MAX ? 0 : (int32_t)width;
    output->height = height > INT32_MAX ? 0 : (int32_t)height;
    output->configured = 1;
    if (!wl->primary) {
        wl->primary = output->name;
        changed = 1;
    }
    paint(output);
    if (changed && wl->primary == output->name) push_kind(wl, PUFF_WL_RESIZED, 0, 0);
}

static const struct ext_session_lock_surface_v1_listener lock_surface_listener = {
    .configure = lock_surface_configure,
};

static void cover(struct puff_output *output) {
    struct puff_wl *wl = output->wl;
    if (!wl->lock || output->lock_surface) return;
    output->surface = wl_compositor_create_surface(wl->compositor);
    output->lock_surface = ext_session_lock_v1_get_lock_surface(wl->lock, output->surface, output->output);
    ext_session_lock_surface_v1_add_listener(output->lock_surface, &lock_surface_listener, output);
}

static void forget(struct puff_wl *wl, int index) {
    struct puff_output *output = wl->outputs[index];
    if (!output) return;
    if (output->lock_surface) ext_session_lock_surface_v1_destroy(output->lock_surface);
    if (output->surface) wl_surface_destroy(output->surface);
    if (output->plain) wl_buffer_destroy(output->plain);
    wl_output_destroy(output->output);
    if (wl->pointer_surface == output->surface) wl->pointer_surface = NULL;
    if (wl->window_output == output->name) wl->window_output = 0;
    wl->outputs[index] = NULL;
    if (wl->primary == output->name) {
        /* The lock screen moves to another output (the first configured one). */
        wl->primary = 0;
        for (int other = 0; other < PUFF_OUTPUTS; other++) {
            if (wl->outputs[other] && wl->outputs[other]->configured) {
                wl->primary = wl->outputs[other]->name;
                break;
            }
        }
        push_kind(wl, PUFF_WL_RESIZED, 0, 0);
    }
    free(output);
}

/* The pointer: the left button draws, on the lock screen's output only. */
static void pointer_enter(void *data, struct wl_pointer *pointer, uint32_t serial, struct wl_surface *surface,
                          wl_fixed_t x, wl_fixed_t y) {
    struct puff_wl *wl = data;
    wl->pointer_surface = surface;
    wl->pointer_x = wl_fixed_to_double(x);
    wl->pointer_y = wl_fixed_to_double(y);
}

static void pointer_leave(void *data, struct wl_pointer *pointer, uint32_t serial, struct wl_surface *surface) {
    struct puff_wl *wl = data;
    if (wl->button_down && is_primary_surface(wl, wl->pointer_surface))
        push_kind(wl, PUFF_WL_UP, wl->pointer_x, wl->pointer_y);
    wl->button_down = 0;
    wl->pointer_surface = NULL;
}

static void pointer_motion(void *data, struct wl_pointer *pointer, uint32_t time, wl_fixed_t x, wl_fixed_t y) {
    struct puff_wl *wl = data;
    wl->pointer_x = wl_fixed_to_double(x);
    wl->pointer_y = wl_fixed_to_double(y);
    if (wl->button_down && is_primary_surface(wl, wl->pointer_surface))
        push_kind(wl, PUFF_WL_MOVE, wl->pointer_x, wl->pointer_y);
}

static void pointer_button(void *data, struct wl_pointer *pointer, uint32_t serial, uint32_t time, uint32_t button,
                           uint32_t state) {
    struct puff_wl *wl = data;
    if (button != PUFF_BUTTON_LEFT || !is_primary_surface(wl, wl->pointer_surface)) return;
    if (state == WL_POINTER_BUTTON_STATE_PRESSED && !wl->button_down) {
        wl->button_down = 1;
        push_kind(wl, PUFF_WL_DOWN, wl->pointer_x, wl->pointer_y);
    } else if (state == WL_POINTER_BUTTON_STATE_RELEASED && wl->button_down) {
        wl->button_down = 0;
        push_kind(wl, PUFF_WL_UP, wl->pointer_x, wl->pointer_y);
    }
}

static void pointer_axis(void *data, struct wl_pointer *pointer, uint32_t time, uint32_t axis, wl_fixed_t value) {}
static void pointer_frame(void *data, struct wl_pointer *pointer) {}
static void pointer_axis_source(void *data, struct wl_pointer *pointer, uint32_t source) {}
static void pointer_axis_stop(void *data, struct wl_pointer *pointer, uint32_t time, uint32_t axis) {}
static void pointer_axis_discrete(void *data, struct wl_pointer *pointer, uint32_t axis, int32_t discrete) {}

static const struct wl_pointer_listener pointer_listener = {
    .enter = pointer_enter, .leave = pointer_leave, .motion = pointer_motion, .button = pointer_button,
    .axis = pointer_axis, .frame = pointer_frame, .axis_source = pointer_axis_source,
    .axis_stop = pointer_axis_stop, .axis_discrete = pointer_axis_discrete,
};

/* Touch: the first finger draws; others are ignored until it lifts. */
static void touch_down(void *data, struct wl_touch *touch, uint32_t serial, uint32_t time, struct wl_surface *surface,
                       int32_t id, wl_fixed_t x, wl_fixed_t y) {
    struct puff_wl *wl = data;
    if (wl->touching || !is_primary_surface(wl, surface)) return;
    wl->touching = 1;
    wl->touch_id = id;
    wl->touch_x = wl_fixed_to_double(x);
    wl->touch_y = wl_fixed_to_double(y);
    push_kind(wl, PUFF_WL_DOWN, wl->touch_x, wl->touch_y);
}

static void touch_up(void *data, struct wl_touch *touch, uint32_t serial, uint32_t time, int32_t id) {
    struct puff_wl *wl = data;
    if (!wl->touching || id != wl->touch_id) return;
    wl->touching = 0;
    push_kind(wl, PUFF_WL_UP, wl->touch_x, wl->touch_y);
}

static void touch_motion(void *data, struct wl_touch *touch, uint32_t time, int32_t id, wl_fixed_t x, wl_fixed_t y) {
    struct puff_wl *wl = data;
    if (!wl->touching || id != wl->touch_id) return;
    wl->touch_x = wl_fixed_to_double(x);
    wl->touch_y = wl_fixed_to_double(y);
    push_kind(wl, PUFF_WL_MOVE, wl->touch_x, wl->touch_y);
}

static void touch_frame(void *data, struct wl_touch *touch) {}

static void touch_cancel(void *data, struct wl_touch *touch) {
    struct puff_wl *wl = data;
    if (wl->touching) push_kind(wl, PUFF_WL_UP, wl->touch_x, wl->touch_y);
    wl->touching = 0;
}

static void touch_shape(void *data, struct wl_touch *touch, int32_t id, wl_fixed_t major, wl_fixed_t minor) {}
static void touch_orientation(void *data, struct wl_touch *touch, int32_t id, wl_fixed_t orientation) {}

static const struct wl_touch_listener touch_listener = {
    .down = touch_down, .up = touch_up, .motion = touch_motion, .frame = touch_frame, .cancel = touch_cancel,
    .shape = touch_shape, .orientation = touch_orientation,
};

/* The keyboard: the compositor's keymap through xkbcommon; Enter, Backspace and Escape by
   their key symbols, everything else as the UTF-8 text it types. */
static void keyboard_keymap(void *data, struct wl_keyboard *keyboard, uint32_t format, int32_t fd, uint32_t size) {
    struct puff_wl *wl = data;
    if (format != WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1 || size == 0 || size > (64u << 20)) {
        close(fd);
        return;
    }
    char *text = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (text == MAP_FAILED) return;
    struct xkb_keymap *keymap = xkb_keymap_new_from_buffer(wl->xkb, text, strnlen(text, size),
                                                           XKB_KEYMAP_FORMAT_TEXT_V1, XKB_KEYMAP_COMPILE_NO_FLAGS);
    munmap(text, size);
    if (!keymap) return;
    struct xkb_state *state = xkb_state_new(keymap);
    if (!state) {
        xkb_keymap_unref(keymap);
        return;
    }
    if (wl->xkb_state) xkb_state_unref(wl->xkb_state);
    if (wl->keymap) xkb_keymap_unref(wl->keymap);
    wl->repeat_key = 0;
    wl->keymap = keymap;
    wl->xkb_state = state;
}

static void keyboard_enter(void *data, struct wl_keyboard *keyboard, uint32_t serial, struct wl_surface *surface,
                           struct wl_array *keys) {}
static double monotonic_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1000 + (double)now.tv_nsec / 1e6;
}

static void keyboard_leave(void *data, struct wl_keyboard *keyboard, uint32_t serial, struct wl_surface *surface) {
    struct puff_wl *wl = data;
    wl->repeat_key = 0;
}

/* One press of `code`, as typed or as repeated; 1 when the key may repeat (not Enter nor Esc:
   a held Enter would submit again and again). */
static int press(struct puff_wl *wl, xkb_keycode_t code) {
    switch (xkb_state_key_get_one_sym(wl->xkb_state, code)) {
    case XKB_KEY_Return: case XKB_KEY_KP_Enter: push_kind(wl, PUFF_WL_ENTER, 0, 0); return 0;
    case XKB_KEY_BackSpace: case XKB_KEY_Delete: push_kind(wl, PUFF_WL_BACKSPACE, 0, 0); return 1;
    case XKB_KEY_Escape: push_kind(wl, PUFF_WL_ESCAPE, 0, 0); return 0;
    default: break;
    }
    struct puff_wl_event event = {.kind = PUFF_WL_TEXT};
    char text[17];
    int length = xkb_state_key_get_utf8(wl->xkb_state, code, text, sizeof text);
    /* Control characters (Tab, Ctrl-letters) are not text; nor is what does not fit. */
    if (length > 0 && length <= 16 && !(length == 1 && ((unsigned char)text[0] < 0x20 || text[0] == 0x7F))) {
        memcpy(event.text, text, (size_t)length);
        event.count = length;
        push(wl, &event);
    } else if (length <= 1) {
        /* Arrows, Tab, function keys: by their symbol (the greeter's user list uses them). */
        struct puff_wl_event key_event = {.kind = PUFF_WL_KEY, .symbol = xkb_state_key_get_one_sym(wl->xkb_state, code)};
        push(wl, &key_event);
    }
    explicit_bzero(text, sizeof text);
    explicit_bzero(&event, sizeof event);
    return 1;
}

/* Wayland compositors send a key once, however long it is held: the client repeats it. */
static void keyboard_key(void *data, struct wl_keyboard *keyboard, uint32_t serial, uint32_t time, uint32_t key,
                         uint32_t state) {
    struct puff_wl *wl = data;
    if (!wl->xkb_state) return;
    xkb_keycode_t code = key + 8;
    if (state != WL_KEYBOARD_KEY_STATE_PRESSED) {
        if (code == wl->repeat_key) wl->repeat_key = 0;
        return;
    }
    wl->repeat_key = 0;
    if (press(wl, code) && wl->repeat_rate > 0 && xkb_keymap_key_repeats(wl->keymap, code)) {
        wl->repeat_key = code;
        wl->repeat_next = monotonic_ms() + wl->repeat_delay;
    }
}

/* The presses of the held key that are due (a few at most: a process that was stopped does
   not get a burst). */
static void repeat_due(struct puff_wl *wl) {
    if (!wl->repeat_key || !wl->xkb_state || wl->repeat_rate <= 0) return;
    double now = monotonic_ms(), interval = 1000.0 / wl->repeat_rate;
    for (int count = 0; count < 4 && now >= wl->repeat_next; count++) {
        press(wl, wl->repeat_key);
        wl->repeat_next += interval;
    }
    if (now >= wl->repeat_next) wl->repeat_next = now + interval;
}

static void keyboard_modifiers(void *data, struct wl_keyboard *keyboard, uint32_t serial, uint32_t depressed,
                               uint32_t latched, uint32_t locked, uint32_t group) {
    struct puff_wl *wl = data;
    if (wl->xkb_state) xkb_state_update_mask(wl->xkb_state, depressed, latched, locked, 0, 0, group);
}

static void keyboard_repeat(void *data, struct wl_keyboard *keyboard, int32_t rate, int32_t delay) {
    struct puff_wl *wl = data;
    /* Bounded: rate 0 turns repeat off; more than 100 a second or a delay outside 0–10 s is
       not a keyboard setting. */
    wl->repeat_rate = rate < 0 ? 0 : rate > 100 ? 100 : rate;
    wl->repeat_delay = delay < 0 ? 0 : delay > 10000 ? 10000 : delay;
    if (!wl->repeat_rate) wl->repeat_key = 0;
}

static const struct wl_keyboard_listener keyboard_listener = {
    .keymap = keyboard_keymap, .enter = keyboard_enter, .leave = keyboard_leave, .key = keyboard_key,
    .modifiers = keyboard_modifiers, .repeat_info = keyboard_repeat,
};

static void seat_capabilities(void *data, struct wl_seat *seat, uint32_t capabilities) {
    struct puff_wl *wl = data;
    if ((capabilities & WL_SEAT_CAPABILITY_POINTER) && !wl->pointer) {
        wl->pointer = wl_seat_get_pointer(seat);
        wl_pointer_add_listener(wl->pointer, &pointer_listener, wl);
    } else if (!(capabilities & WL_SEAT_CAPABILITY_POINTER) && wl->pointer) {
        wl_pointer_release(wl->pointer);
        wl->pointer = NULL;
        wl->button_down = 0;
    }
    if ((capabilities & WL_SEAT_CAPABILITY_TOUCH) && !wl->touch) {
        wl->touch = wl_seat_get_touch(seat);
        wl_touch_add_listener(wl->touch, &touch_listener, wl);
    } else if (!(capabilities & WL_SEAT_CAPABILITY_TOUCH) && wl->touch) {
        wl_touch_release(wl->touch);
        wl->touch = NULL;
        wl->touching = 0;
    }
    if ((capabilities & WL_SEAT_CAPABILITY_KEYBOARD) && !wl->keyboard) {
        wl->keyboard = wl_seat_get_keyboard(seat);
        wl_keyboard_add_listener(wl->keyboard, &keyboard_listener, wl);
    } else if (!(capabilities & WL_SEAT_CAPABILITY_KEYBOARD) && wl->keyboard) {
        wl_keyboard_release(wl->keyboard);
        wl->keyboard = NULL;
    }
}

static void seat_name(void *data, struct wl_seat *seat, const char *name) {}

static const struct wl_seat_listener seat_listener = {.capabilities = seat_capabilities, .name = seat_name};

static void lock_locked(void *data, struct ext_session_lock_v1 *lock) {
    struct puff_wl *wl = data;
    wl->state = PUFF_WL_LOCKED;
}

static void lock_finished(void *data, struct ext_session_lock_v1 *lock) {
    struct puff_wl *wl = data;
    wl->state = PUFF_WL_FINISHED;
}

static const struct ext_session_lock_v1_listener lock_listener = {.locked = lock_locked, .finished = lock_finished};

/* A surface's scale changed: drawn again, and when it has the lock screen (or is the window)
   its drawers are told the new size in pixels. */
static void rescaled(struct puff_output *output) {
    struct puff_wl *wl = output->wl;
    paint(output);
    if (output == primary_output(wl) && output->configured) push_kind(wl, PUFF_WL_RESIZED, 0, 0);
}

static void output_geometry(void *data, struct wl_output *o, int32_t x, int32_t y, int32_t width_mm, int32_t height_mm,
                            int32_t subpixel, const char *make, const char *model, int32_t transform) {}
static void output_mode(void *data, struct wl_output *o, uint32_t flags, int32_t width, int32_t height, int32_t refresh) {}
static void output_done(void *data, struct wl_output *o) {}
static void output_name(void *data, struct wl_output *o, const char *name) {}
static void output_description(void *data, struct wl_output *o, const char *description) {}

static void output_scale(void *data, struct wl_output *o, int32_t factor) {
    struct puff_output *output = data;
    struct puff_wl *wl = output->wl;
    /* Bounded: no screen has more than 4 pixels a point. */
    int32_t scale = factor < 1 ? 1 : factor > 4 ? 4 : factor;
    if (scale == output->scale) return;
    output->scale = scale;
    rescaled(output);
    if (wl->window && wl->window_output == output->name) {
        wl->window->scale = scale;
        rescaled(wl->window);
    }
}

static const struct wl_output_listener output_listener = {
    .geometry = output_geometry, .mode = output_mode, .done = output_done, .scale = output_scale,
    .name = output_name, .description = output_description,
};

/* Window mode: the window takes the scale of the output it is shown on. */
static void window_enter(void *data, struct wl_surface *surface, struct wl_output *o) {
    struct puff_wl *wl = data;
    for (int index = 0; index < PUFF_OUTPUTS; index++) {
        struct puff_output *output = wl->outputs[index];
        if (!output || output->output != o) continue;
        wl->window_output = output->name;
        if (wl->window->scale != output->scale) {
            wl->window->scale = output->scale;
            rescaled(wl->window);
        }
    }
}

static void window_leave(void *data, struct wl_surface *surface, struct wl_output *o) {}

static const struct wl_surface_listener window_surface_listener = {.enter = window_enter, .leave = window_leave};

/* Window mode: the toplevel's size comes with xdg_toplevel.configure and takes effect at the
   xdg_surface.configure that follows it. */
static void wm_base_ping(void *data, struct xdg_wm_base *base, uint32_t serial) { xdg_wm_base_pong(base, serial); }

static const struct xdg_wm_base_listener wm_base_listener = {.ping = wm_base_ping};

static void toplevel_configure(void *data, struct xdg_toplevel *toplevel, int32_t width, int32_t height,
                               struct wl_array *states) {
    struct puff_wl *wl = data;
    wl->pending_width = width;
    wl->pending_height = height;
}

static void toplevel_close(void *data, struct xdg_toplevel *toplevel) {
    push_kind(data, PUFF_WL_CLOSE, 0, 0);
}

static const struct xdg_toplevel_listener toplevel_listener = {.configure = toplevel_configure, .close = toplevel_close};

static void xdg_surface_configure(void *data, struct xdg_surface *surface, uint32_t serial) {
    struct puff_wl *wl = data;
    struct puff_output *window = wl->window;
    xdg_surface_ack_configure(surface, serial);
    /* 0 × 0: the compositor leaves the size to the client (not cage, which gives its output's). */
    int32_t width = wl->pending_width > 0 && wl->pending_width <= 16384 ? wl->pending_width : window->configured ? window->width : 1024;
    int32_t height = wl->pending_height > 0 && wl->pending_height <= 16384 ? wl->pending_height : window->configured ? window->height : 768;
    int changed = !window->configured || window->width != width || window->height != height;
    window->width = width;
    window->height = height;
    window->configured = 1;
    paint(window);
    if (changed) push_kind(wl, PUFF_WL_RESIZED, 0, 0);
}

static const struct xdg_surface_listener xdg_surface_listener = {.configure = xdg_surface_configure};

static void registry_global(void *data, struct wl_registry *registry, uint32_t name, const char *interface,
                            uint32_t version) {
    struct puff_wl *wl = data;
    if (strcmp(interface, wl_compositor_interface.name) == 0 && !wl->compositor && version >= 4) {
        wl->compositor = wl_registry_bind(registry, name, &wl_compositor_interface, 4);
    } else if (strcmp(interface, wl_shm_interface.name) == 0 && !wl->shm) {
        wl->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
    } else if (strcmp(interface, wl_seat_interface.name) == 0 && !wl->seat && version >= 5) {
        /* One seat: the first. */
        wl->seat = wl_registry_bind(registry, name, &wl_seat_interface, 5);
        wl_seat_add_listener(wl->seat, &seat_listener, wl);
    } else if (strcmp(interface, ext_session_lock_manager_v1_interface.name) == 0 && !wl->manager) {
        wl->manager = wl_registry_bind(registry, name, &ext_session_lock_manager_v1_interface, 1);
    } else if (strcmp(interface, xdg_wm_base_interface.name) == 0 && !wl->wm_base) {
        wl->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
        xdg_wm_base_add_listener(wl->wm_base, &wm_base_listener, wl);
    } else if (strcmp(interface, wl_output_interface.name) == 0) {
        for (int index = 0; index < PUFF_OUTPUTS; index++) {
            if (wl->outputs[index]) continue;
            struct puff_output *output = calloc(1, sizeof *output);
            if (!output) return;
            output->wl = wl;
            output->name = name;
            output->scale = 1;
            /* Version 2 for its scale. */
            output->output = wl_registry_bind(registry, name, &wl_output_interface, version < 2 ? version : 2);
            wl_output_add_listener(output->output, &output_listener, output);
            wl->outputs[index] = output;
            /* An output plugged in while locked is covered at once. */
            cover(output);
            return;
        }
        fprintf(stderr, "puff-lock: more than %d outputs; output %u is not used\n", PUFF_OUTPUTS, name);
    }
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name) {
    struct puff_wl *wl = data;
    for (int index = 0; index < PUFF_OUTPUTS; index++)
        if (wl->outputs[index] && wl->outputs[index]->name == name) forget(wl, index);
}

static const struct wl_registry_listener registry_listener = {
    .global = registry_global, .global_remove = registry_global_remove,
};

/* Connects and binds the globals; the caller checks for the ones its mode needs. */
static struct puff_wl *connect_display(uint32_t background, char *error, size_t error_size) {
    struct puff_wl *wl = calloc(1, sizeof *wl);
    if (!wl) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    wl->background = background & 0xFFFFFFu;
    wl->last_frame = -1;
    /* Until the compositor says (wl_keyboard.repeat_info): the usual 25 a second after 600 ms. */
    wl->repeat_rate = 25;
    wl->repeat_delay = 600;
    wl->display = wl_display_connect(NULL);
    if (!wl->display) {
        const char *name = getenv("WAYLAND_DISPLAY");
        snprintf(error, error_size, "cannot connect to the Wayland compositor %s (errno %d)", name ? name : "wayland-0", errno);
        free(wl);
        return NULL;
    }
    wl->xkb = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
    wl->registry = wl_display_get_registry(wl->display);
    wl_registry_add_listener(wl->registry, &registry_listener, wl);
    if (wl_display_roundtrip(wl->display) < 0 || wl_display_roundtrip(wl->display) < 0) {
        snprintf(error, error_size, "the Wayland compositor closed the connection");
        puff_wl_disconnect(wl);
        return NULL;
    }
    return wl;
}

struct puff_wl *puff_wl_connect(uint32_t background, char *error, size_t error_size) {
    struct puff_wl *wl = connect_display(background, error, error_size);
    if (!wl) return NULL;
    const char *missing = !wl->manager ? "ext_session_lock_manager_v1 (the ext-session-lock-v1 protocol)"
                        : !wl->compositor ? "wl_compositor version 4" : !wl->shm ? "wl_shm" : !wl->xkb ? "an xkbcommon context" : NULL;
    if (missing) {
        snprintf(error, error_size, "the Wayland compositor does not offer %s, so it cannot lock the session", missing);
        puff_wl_disconnect(wl);
        return NULL;
    }
    return wl;
}

struct puff_wl *puff_wl_connect_window(uint32_t background, const char *title, char *error, size_t error_size) {
    struct puff_wl *wl = connect_display(background, error, error_size);
    if (!wl) return NULL;
    const char *missing = !wl->wm_base ? "xdg_wm_base (the xdg-shell protocol)"
                        : !wl->compositor ? "wl_compositor version 4" : !wl->shm ? "wl_shm" : !wl->xkb ? "an xkbcommon context" : NULL;
    if (missing || !(wl->window = calloc(1, sizeof *wl->window))) {
        snprintf(error, error_size, "the Wayland compositor does not offer %s, so no window can be shown", missing ? missing : "memory");
        puff_wl_disconnect(wl);
        return NULL;
    }
    wl->window->wl = wl;
    wl->window->scale = 1;
    wl->window->surface = wl_compositor_create_surface(wl->compositor);
    wl_surface_add_listener(wl->window->surface, &window_surface_listener, wl);
    wl->xdg_surface = xdg_wm_base_get_xdg_surface(wl->wm_base, wl->window->surface);
    xdg_surface_add_listener(wl->xdg_surface, &xdg_surface_listener, wl);
    wl->toplevel = xdg_surface_get_toplevel(wl->xdg_surface);
    xdg_toplevel_add_listener(wl->toplevel, &toplevel_listener, wl);
    xdg_toplevel_set_title(wl->toplevel, title);
    xdg_toplevel_set_app_id(wl->toplevel, title);
    xdg_toplevel_set_fullscreen(wl->toplevel, NULL);
    /* The first commit has no buffer: the compositor answers with the size (configure). */
    wl_surface_commit(wl->window->surface);
    wl_display_flush(wl->display);
    return wl;
}

void puff_wl_disconnect(struct puff_wl *wl) {
    if (!wl) return;
    wl_display_disconnect(wl->display);
    free(wl->window);
    if (wl->xkb_state) xkb_state_unref(wl->xkb_state);
    if (wl->keymap) xkb_keymap_unref(wl->keymap);
    if (wl->xkb) xkb_context_unref(wl->xkb);
    explicit_bzero(wl->queue, sizeof wl->queue);
    free(wl);
}

int puff_wl_fd(struct puff_wl *wl) { return wl_display_get_fd(wl->display); }

int puff_wl_lock(struct puff_wl *wl) {
    if (wl->lock) return 0;
    wl->lock = ext_session_lock_manager_v1_lock(wl->manager);
    ext_session_lock_v1_add_listener(wl->lock, &lock_listener, wl);
    wl->state = PUFF_WL_LOCKING;
    for (int index = 0; index < PUFF_OUTPUTS; index++)
        if (wl->outputs[index]) cover(wl->outputs[index]);
    return wl_display_flush(wl->display) < 0 && errno != EAGAIN ? -1 : 0;
}

int puff_wl_state(struct puff_wl *wl) { return wl->state; }

int puff_wl_repeat_wait(struct puff_wl *wl) {
    if (!wl->repeat_key || wl->repeat_rate <= 0) return -1;
    double left = wl->repeat_next - monotonic_ms();
    return left <= 0 ? 0 : left > 10001 ? 10001 : (int)left + 1;
}

int puff_wl_pump(struct puff_wl *wl, int readable) {
    if (readable && wl_display_dispatch(wl->display) < 0) return -1;
    if (wl_display_dispatch_pending(wl->display) < 0) return -1;
    repeat_due(wl);
    if (wl_display_flush(wl->display) < 0 && errno != EAGAIN) return -1;
    return 0;
}

void puff_wl_primary_size(struct puff_wl *wl, int32_t *width, int32_t *height) {
    struct puff_output *primary = primary_output(wl);
    int32_t scale = primary ? effective_scale(primary) : 1;
    *width = primary && primary->configured ? primary->width * scale : 0;
    *height = primary && primary->configured ? primary->height * scale : 0;
}

int puff_wl_surface_count(struct puff_wl *wl) {
    int count = 0;
    for (int index = 0; index < PUFF_OUTPUTS; index++)
        if (wl->outputs[index] && wl->outputs[index]->lock_surface) count++;
    return count;
}

void puff_wl_clear_frames(struct puff_wl *wl) {
    for (int index = 0; index < 2; index++) {
        if (wl->frames[index]) wl_buffer_destroy(wl->frames[index]);
        wl->frames[index] = NULL;
    }
    wl->last_frame = -1;
}

int puff_wl_set_frames(struct puff_wl *wl, int fd, int32_t width, int32_t height, int32_t stride) {
    struct stat status;
    /* The child's file must hold both frames and be unable to shrink under the compositor
       (which would then read past its end). */
    int seals = fcntl(fd, F_GET_SEALS);
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384 || stride < width * 4 || stride % 4 != 0
        || stride > 65536 * 4 || fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || seals < 0
        || !(seals & F_SEAL_SHRINK) || (uint64_t)status.st_size < 2 * (uint64_t)stride * (uint64_t)height
        || 2 * (uint64_t)stride * (uint64_t)height > INT32_MAX) {
        close(fd);
        return -1;
    }
    int32_t frame = stride * height;
    struct wl_shm_pool *pool = wl_shm_create_pool(wl->shm, fd, 2 * frame);
    struct wl_buffer *first = wl_shm_pool_create_buffer(pool, 0, width, height, stride, WL_SHM_FORMAT_XRGB8888);
    struct wl_buffer *second = wl_shm_pool_create_buffer(pool, frame, width, height, stride, WL_SHM_FORMAT_XRGB8888);
    wl_shm_pool_destroy(pool);
    close(fd);
    puff_wl_clear_frames(wl);
    wl->frames[0] = first;
    wl->frames[1] = second;
    wl->frame_width = width;
    wl->frame_height = height;
    return 0;
}

int puff_wl_show_frame(struct puff_wl *wl, int index) {
    struct puff_output *primary = primary_output(wl);
    if (index < 0 || index > 1 || !wl->frames[index] || !primary || !primary->configured
        || wl->frame_width != primary->width * effective_scale(primary)
        || wl->frame_height != primary->height * effective_scale(primary)) return -1;
    wl->last_frame = index;
    paint(primary);
    return 0;
}

void puff_wl_unlock(struct puff_wl *wl) {
    if (!wl->lock) return;
    ext_session_lock_v1_unlock_and_destroy(wl->lock);
    wl->lock = NULL;
    wl_display_roundtrip(wl->display);
}

#else
/* Built without the generated protocol code (`make wayland-protocol` was not run). */
int puff_wl_available(void) { return 0; }
struct puff_wl *puff_wl_connect(uint32_t background, char *error, size_t error_size) {
    snprintf(error, error_size, "this puff-lock was built without Wayland support (the ext-session-lock-v1 code was not generated)");
    return NULL;
}
struct puff_wl *puff_wl_connect_window(uint32_t background, const char *title, char *error, size_t error_size) {
    snprintf(error, error_size, "this program was built without Wayland support (the xdg-shell code was not generated)");
    return NULL;
}
void puff_wl_disconnect(struct puff_wl *wl) {}
int puff_wl_fd(struct puff_wl *wl) { return -1; }
int puff_wl_lock(struct puff_wl *wl) { return -1; }
int puff_wl_state(struct puff_wl *wl) { return PUFF_WL_FINISHED; }
int puff_wl_repeat_wait(struct puff_wl *wl) { return -1; }
int puff_wl_pump(struct puff_wl *wl, int readable) { return -1; }
int puff_wl_next_event(struct puff_wl *wl, struct puff_wl_event *event) { return 0; }
int puff_wl_has_events(struct puff_wl *wl) { return 0; }
void puff_wl_primary_size(struct puff_wl *wl, int32_t *width, int32_t *height) { *width = 0; *height = 0; }
int puff_wl_surface_count(struct puff_wl *wl) { return 0; }
int puff_wl_set_frames(struct puff_wl *wl, int fd, int32_t width, int32_t height, int32_t stride) { close(fd); return -1; }
int puff_wl_show_frame(struct puff_wl *wl, int index) { return -1; }
void puff_wl_clear_frames(struct puff_wl *wl) {}
void puff_wl_unlock(struct puff_wl *wl) {}
#endif
