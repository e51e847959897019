/* The few libldap calls Puff's directory client needs, with C signatures Swift can call:
 * libldap's BER parsing (ber_scanf) is variadic and its modify lists are NULL-terminated
 * arrays of pointers, which are clumsy and error-prone to build from Swift. Everything here is
 * single-valued and bounded; nothing is kept between calls.
 *
 * Two implementations of this header:
 * - puff_ldap.c, the calls themselves, linked with libldap. The SwiftPM builds (puff-enroll,
 *   the tests) link it directly; `make` also builds it alone into puff-ldap.so, installed in
 *   $(LIBDIR)/puff/.
 * - puff_ldap_loader.c, for the Embedded Swift module and setuid helper: the same functions
 *   forward to puff-ldap.so, which `puff_ldap_load` opens on the first use of fleet mode, so a
 *   host that never sets `backend = ldap` never maps libldap, its TLS library or SASL. */
#ifndef PUFF_LDAP_H
#define PUFF_LDAP_H

#include <stddef.h>
#include <stdint.h>

/* puff-ldap.so is built with hidden visibility; only these entry points are exported. */
#define PUFF_LDAP_API __attribute__((visibility("default")))

typedef struct ldap LDAP;

/* Returned by every call when the implementation could not be loaded (never an LDAP code). */
#define PUFF_LDAP_UNAVAILABLE (-1000)
/* The version of this interface; the loader refuses a puff-ldap.so of another one. */
#define PUFF_LDAP_ABI 3
PUFF_LDAP_API int puff_ldap_abi(void);

/* Whether the implementation is there: 1 when linked directly or already loaded, else 0. */
int puff_ldap_is_loaded(void);

/* Makes the implementation available. Linked directly: nothing to do, 0. Through the loader:
 * loads the library open at `fd` (the caller walked its path from / with the trusted-file
 * checks and opened it with O_NOFOLLOW; it must be a regular file owned by root and not
 * writable by group or others, checked again here with fstat), once: later calls return 0.
 * On failure, PUFF_LDAP_UNAVAILABLE with the reason in `error[0..<size]`; the next call tries
 * again. `fd` stays the caller's. Thread-safe. */
int puff_ldap_load(int fd, char *error, size_t size);

/* Opens a handle for `uri` (ldapi://, ldaps:// or ldap:// with `start_tls` set), with
 * protocol 3, no referral chasing, a network (connect) timeout and an operation timeout in
 * milliseconds, TLS certificates always required and checked against `ca_file` (or the
 * system's store when NULL), and StartTLS done when asked. 0 or an LDAP result code. */
PUFF_LDAP_API int puff_ldap_open(const char *uri, const char *ca_file, int start_tls, int network_timeout_ms,
                   int operation_timeout_ms, LDAP **out);

/* SASL EXTERNAL (the peer credentials of an ldapi socket, or a TLS client certificate). */
PUFF_LDAP_API int puff_ldap_bind_external(LDAP *ld, int timeout_ms);

/* A simple bind with `dn` and the password in `password[0..<length]`. */
PUFF_LDAP_API int puff_ldap_bind_simple(LDAP *ld, const char *dn, const void *password, size_t length, int timeout_ms);

/* Closes the handle. */
PUFF_LDAP_API void puff_ldap_close(LDAP *ld);

/* What `puff_ldap_read_user` found; `dn` and the byte values are malloc'd (free with
 * `puff_ldap_user_free`). Absent integer attributes are -1, absent byte values NULL. */
typedef struct {
    char *dn;
    int is_puff_user;
    unsigned char *record;
    size_t record_length;
    unsigned char *picture;
    size_t picture_length;
    char *picture_sha256;
    long long failures;
    long long last_failure;
    long long passcode_at;
    int admin_lock;
    char *last_failure_host;
} puff_ldap_user;

/* Finds the one entry under `base` (subtree) whose uid is `uid` (escaped here) and reads the
 * Puff attributes; `want_picture` also reads puffPicture. Returns 0 with `found` set to 0 when
 * there is no such entry; LDAP_SIZELIMIT_EXCEEDED (4) when there are several. */
PUFF_LDAP_API int puff_ldap_read_user(LDAP *ld, const char *base, const char *uid, int want_picture, int timeout_ms,
                        puff_ldap_user *user, int *found);
PUFF_LDAP_API void puff_ldap_user_free(puff_ldap_user *user);

/* Counts one failure: one Modify that increments puffFailures by 1 (RFC 4525) and replaces
 * puffLastFailure and puffLastFailureHost, with the RFC 4527 post-read control (critical) for
 * puffFailures: `*failures` is the count this very modification produced. */
PUFF_LDAP_API int puff_ldap_count_failure(LDAP *ld, const char *dn, long long now, const char *host, int timeout_ms,
                            long long *failures);

/* One change of a modify: op is 0 add, 1 delete, 2 replace (LDAP_MOD_*); `value` NULL for no
 * value (delete the attribute). */
typedef struct {
    int op;
    const char *attribute;
    const void *value;
    size_t length;
} puff_ldap_change;

/* One Modify with `count` single-valued changes, applied atomically by the server. */
PUFF_LDAP_API int puff_ldap_modify(LDAP *ld, const char *dn, const puff_ldap_change *changes, int count, int timeout_ms);

/* The text for an LDAP result code, and the server's diagnostic message for the last
 * operation on `ld` (copied into `buffer`, possibly empty). */
PUFF_LDAP_API const char *puff_ldap_error_text(int code);
PUFF_LDAP_API void puff_ldap_diagnostic(LDAP *ld, char *buffer, size_t size);

/* What puff_ldap_probe found. */
enum {
    /* A server of the list accepted a connection and answered on it: the failure was not the
     * network's. */
    PUFF_LDAP_PROBE_REACHABLE = 0,
    /* Every address refused the connection, stayed silent (at the connect, or on a connection
     * its kernel accepted for a server that is stopped or hung), or had no route: out of reach. */
    PUFF_LDAP_PROBE_REMOTE = 1,
    /* A resource of this host failed (no free source port, no descriptor, no buffer), or a
     * name did not resolve (which a full table of local ports can cause too): the cause may be
     * a local user's doing, so it is never read as "out of reach". */
    PUFF_LDAP_PROBE_LOCAL = 2,
};

/* After libldap could not reach any server of `uris` (space-separated ldap://, ldaps://,
 * ldapi:// URIs): connects once more to every address of every server, from a fresh socket
 * with no libldap in the way, each bounded by `timeout_ms`, and says why it failed. The first
 * failure that is not the network's is described in `reason` (may be empty). */
/* With `want_answer`, a connection its server's kernel accepted counts only when the server
 * also answers on it within `timeout_ms` (a stopped or hung server is silent: out of reach);
 * without, the connect alone (for a caller whose libldap already saw an operation time out). */
PUFF_LDAP_API int puff_ldap_probe(const char *uris, int timeout_ms, int want_answer, char *reason, size_t size);

#endif
