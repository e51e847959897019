#ifndef PUFF_CPAM_SHIM_H
#define PUFF_CPAM_SHIM_H
#include <security/pam_appl.h>
#include <security/pam_modules.h>
#include <security/pam_ext.h>
#include <security/pam_modutil.h>
#include <syslog.h>

/* pam_syslog and syslog are variadic, which Swift cannot call; these pass one line as the
 * argument of a "%s" format, so nothing in the text is read as a format. (Swift's withVaList
 * would do the same, but Embedded Swift, which builds the module and the helper, has no
 * CVarArg.) */
static inline void puff_pam_syslog_text(const pam_handle_t *handle, int priority, const char *text) {
    pam_syslog(handle, priority, "%s", text);
}

static inline void puff_syslog_text(int priority, const char *text) {
    syslog(priority, "%s", text);
}
#endif
