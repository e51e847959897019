/* The few libldap calls Puff's directory client needs, with C signatures Swift can call:
 * libldap's BER parsing (ber_scanf) is variadic and its modify lists are NULL-terminated
 * arrays of pointers, which are clumsy and error-prone to build from Swift. Everything here is
 * single-valued and bounded; nothing is kept between calls. */
#ifndef PUFF_LDAP_H
#define PUFF_LDAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ldap LDAP;

/* Opens a handle for `uri` (ldapi://, ldaps:// or ldap:// with `start_tls` set), with
 * protocol 3, no referral chasing, a network (connect) timeout and an operation timeout in
 * milliseconds, TLS certificates always required and checked against `ca_file` (or the
 * system's store when NULL), and StartTLS done when asked. 0 or an LDAP result code. */
int puff_ldap_open(const char *uri, const char *ca_file, int start_tls, int network_timeout_ms,
                   int operation_timeout_ms, LDAP **out);

/* SASL EXTERNAL (the peer credentials of an ldapi socket, or a TLS client certificate). */
int puff_ldap_bind_external(LDAP *ld, int timeout_ms);

/* A simple bind with `dn` and the password in `password[0..<length]`. */
int puff_ldap_bind_simple(LDAP *ld, const char *dn, const void *password, size_t length, int timeout_ms);

/* Closes the handle. */
void puff_ldap_close(LDAP *ld);

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
int puff_ldap_read_user(LDAP *ld, const char *base, const char *uid, int want_picture, int timeout_ms,
                        puff_ldap_user *user, int *found);
void puff_ldap_user_free(puff_ldap_user *user);

/* Counts one failure: one Modify that increments puffFailures by 1 (RFC 4525) and replaces
 * puffLastFailure and puffLastFailureHost, with the RFC 4527 post-read control (critical) for
 * puffFailures: `*failures` is the count this very modification produced. */
int puff_ldap_count_failure(LDAP *ld, const char *dn, long long now, const char *host, int timeout_ms,
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
int puff_ldap_modify(LDAP *ld, const char *dn, const puff_ldap_change *changes, int count, int timeout_ms);

/* The text for an LDAP result code, and the server's diagnostic message for the last
 * operation on `ld` (copied into `buffer`, possibly empty). */
const char *puff_ldap_error_text(int code);
void puff_ldap_diagnostic(LDAP *ld, char *buffer, size_t size);

#endif
