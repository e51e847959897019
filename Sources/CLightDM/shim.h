#ifndef PUFF_CLIGHTDM_SHIM_H
#define PUFF_CLIGHTDM_SHIM_H
/* liblightdm-gobject-1 (Debian's liblightdm-gobject-dev) for puff-greeter. */
/* No _GNU_SOURCE here: puff-greeter imports CLockX too, and glibc's headers compiled under two
   feature sets are two different definitions of fd_set to clang's module checks. */
#include <lightdm.h>
#include <glib-unix.h>
#include <string.h>

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

#endif
