/* See include/puff_ldap.h. Every call is bounded by an explicit timeout: an operation is sent
 * asynchronously and its result awaited with ldap_result() and a timeval, and abandoned when
 * the time is up, so a server that accepts and never answers cannot hang the caller. */
#define LDAP_DEPRECATED 0
#define _GNU_SOURCE
#include <ldap.h>
#include <lber.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netdb.h>
#include <unistd.h>
#include <time.h>
#include <sys/time.h>
#include "puff_ldap.h"

static struct timeval interval(int ms) {
    struct timeval tv;
    if (ms < 1) ms = 1;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

/* Waits for the result of `msgid`; on timeout the operation is abandoned. */
static int await_result(LDAP *ld, int msgid, int timeout_ms, LDAPMessage **result) {
    struct timeval tv = interval(timeout_ms);
    *result = NULL;
    int got = ldap_result(ld, msgid, LDAP_MSG_ALL, &tv, result);
    if (got == 0) {
        ldap_abandon_ext(ld, msgid, NULL, NULL);
        return LDAP_TIMEOUT;
    }
    if (got < 0) {
        int code = LDAP_SERVER_DOWN;
        ldap_get_option(ld, LDAP_OPT_RESULT_CODE, &code);
        return code == LDAP_SUCCESS ? LDAP_SERVER_DOWN : code;
    }
    return LDAP_SUCCESS;
}

/* libldap bounds the TCP connect with LDAP_OPT_NETWORK_TIMEOUT and each result wait with the
 * timeout given to ldap_result(), but Debian 12's libldap (2.5.13, GnuTLS) spins on EAGAIN
 * during the TLS handshake of ldaps:// and StartTLS with no bound at all (measured: a server
 * that accepts and then says nothing kept a client busy until the server closed). So every
 * connection gets one more I/O layer, just above the socket and below TLS: each read and write
 * first waits with poll() for at most the operation timeout, and the whole connection may live
 * at most `connection_lifetime` operations' worth of time; past either the call fails with
 * ETIMEDOUT, which ends the handshake (or the operation) with an error. */
enum { connection_lifetime = 6 };

typedef struct {
    int timeout_ms;
    struct timespec deadline;
} io_bound;

static long remaining_ms(const io_bound *bound) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (bound->deadline.tv_sec - now.tv_sec) * 1000L + (bound->deadline.tv_nsec - now.tv_nsec) / 1000000L;
}

static int bound_wait(Sockbuf_IO_Desc *sbiod, short events) {
    io_bound *bound = sbiod->sbiod_pvt;
    ber_socket_t fd = -1;
    if (!bound || ber_sockbuf_ctrl(sbiod->sbiod_sb, LBER_SB_OPT_GET_FD, &fd) != 1 || fd < 0) {
        errno = EBADF;
        return -1;
    }
    long wait = remaining_ms(bound);
    if (wait <= 0) { errno = ETIMEDOUT; return -1; }
    if (wait > bound->timeout_ms) wait = bound->timeout_ms;
    struct pollfd entry = {fd, events, 0};
    int ready;
    do {
        ready = poll(&entry, 1, (int)wait);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) { errno = ETIMEDOUT; return -1; }
    return ready < 0 ? -1 : 0;
}

static int bound_setup(Sockbuf_IO_Desc *sbiod, void *arg) {
    io_bound *bound = malloc(sizeof *bound);
    if (!bound) return -1;
    bound->timeout_ms = (int)(intptr_t)arg;
    clock_gettime(CLOCK_MONOTONIC, &bound->deadline);
    long long total = (long long)bound->timeout_ms * connection_lifetime;
    bound->deadline.tv_sec += total / 1000;
    bound->deadline.tv_nsec += (total % 1000) * 1000000L;
    if (bound->deadline.tv_nsec >= 1000000000L) { bound->deadline.tv_sec++; bound->deadline.tv_nsec -= 1000000000L; }
    sbiod->sbiod_pvt = bound;
    return 0;
}

static int bound_remove(Sockbuf_IO_Desc *sbiod) {
    free(sbiod->sbiod_pvt);
    sbiod->sbiod_pvt = NULL;
    return 0;
}

static int bound_ctrl(Sockbuf_IO_Desc *sbiod, int opt, void *arg) {
    return LBER_SBIOD_CTRL_NEXT(sbiod, opt, arg);
}

static ber_slen_t bound_read(Sockbuf_IO_Desc *sbiod, void *buf, ber_len_t len) {
    if (bound_wait(sbiod, POLLIN) != 0) return -1;
    return LBER_SBIOD_READ_NEXT(sbiod, buf, len);
}

/* Writes with send(MSG_NOSIGNAL) rather than the provider's write(): a directory that goes
 * away mid-operation must give EPIPE, not a SIGPIPE that kills the host process (login, su,
 * a screen locker) the module runs in — measured: the test harness died of SIGPIPE when
 * slapd stopped during an ldaps attempt. The module changes no signal disposition. */
static ber_slen_t bound_write(Sockbuf_IO_Desc *sbiod, void *buf, ber_len_t len) {
    if (bound_wait(sbiod, POLLOUT) != 0) return -1;
    ber_socket_t fd = -1;
    if (ber_sockbuf_ctrl(sbiod->sbiod_sb, LBER_SB_OPT_GET_FD, &fd) != 1 || fd < 0) {
        errno = EBADF;
        return -1;
    }
    ssize_t sent;
    do {
        sent = send(fd, buf, len, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0 && errno == ENOTSOCK) return LBER_SBIOD_WRITE_NEXT(sbiod, buf, len);
    return sent;
}

static int bound_close(Sockbuf_IO_Desc *sbiod) {
    (void)sbiod;
    return 0;
}

static Sockbuf_IO bounded_io = {bound_setup, bound_remove, bound_ctrl, bound_read, bound_write, bound_close};

/* Connection callback: runs once the socket is connected, before any TLS handshake. */
static int add_bounds(LDAP *ld, Sockbuf *sb, LDAPURLDesc *srv, struct sockaddr *addr, struct ldap_conncb *ctx) {
    (void)srv; (void)addr; (void)ctx;
    struct timeval *limit = NULL;
    if (ldap_get_option(ld, LDAP_OPT_TIMEOUT, &limit) != LDAP_OPT_SUCCESS || !limit) return -1;
    long long ms = (long long)limit->tv_sec * 1000 + limit->tv_usec / 1000;
    ldap_memfree(limit);
    if (ms < 1 || ms > INT_MAX / connection_lifetime) return -1;
    /* One level above the socket provider, which libldap adds after this callback, and below
     * TLS (LBER_SBIOD_LEVEL_TRANSPORT): the layers are ordered by level. */
    return ber_sockbuf_add_io(sb, &bounded_io, LBER_SBIOD_LEVEL_PROVIDER + 1, (void *)(intptr_t)ms) == 0 ? 0 : -1;
}

static void forget_bounds(LDAP *ld, Sockbuf *sb, struct ldap_conncb *ctx) {
    (void)ld; (void)sb; (void)ctx;
}

/* Shared by every handle: the callbacks keep no state of their own. */
static ldap_conncb socket_bounds = {add_bounds, forget_bounds, NULL};

int puff_ldap_open(const char *uri, const char *ca_file, int start_tls, int network_timeout_ms,
                   int operation_timeout_ms, LDAP **out) {
    LDAP *ld = NULL;
    *out = NULL;
    int code = ldap_initialize(&ld, uri);
    if (code != LDAP_SUCCESS) return code;
    int version = LDAP_VERSION3;
    int hard = LDAP_OPT_X_TLS_HARD;
    int tls12 = LDAP_OPT_X_TLS_PROTOCOL_TLS1_2;
    int zero = 0;
    int never = LDAP_DEREF_NEVER;
    struct timeval network = interval(network_timeout_ms);
    struct timeval operation = interval(operation_timeout_ms);
    if ((code = ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version)) != LDAP_OPT_SUCCESS
        || (code = ldap_set_option(ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF)) != LDAP_OPT_SUCCESS
        /* Set, not left to an ldap.conf or ldaprc. */
        || (code = ldap_set_option(ld, LDAP_OPT_DEREF, &never)) != LDAP_OPT_SUCCESS
        || (code = ldap_set_option(ld, LDAP_OPT_RESTART, LDAP_OPT_ON)) != LDAP_OPT_SUCCESS
        || (code = ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &network)) != LDAP_OPT_SUCCESS
        || (code = ldap_set_option(ld, LDAP_OPT_TIMEOUT, &operation)) != LDAP_OPT_SUCCESS
        || (code = ldap_set_option(ld, LDAP_OPT_CONNECT_CB, &socket_bounds)) != LDAP_OPT_SUCCESS
        || (code = ldap_set_option(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &hard)) != LDAP_OPT_SUCCESS
        || (code = ldap_set_option(ld, LDAP_OPT_X_TLS_PROTOCOL_MIN, &tls12)) != LDAP_OPT_SUCCESS
        || (ca_file != NULL && (code = ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, ca_file)) != LDAP_OPT_SUCCESS)
        /* The TLS settings above apply to this handle only once it has its own context. */
        || (code = ldap_set_option(ld, LDAP_OPT_X_TLS_NEWCTX, &zero)) != LDAP_OPT_SUCCESS) {
        ldap_unbind_ext(ld, NULL, NULL);
        return code == LDAP_OPT_ERROR ? LDAP_PARAM_ERROR : code;
    }
    if (start_tls) {
        int msgid = 0;
        code = ldap_start_tls(ld, NULL, NULL, &msgid);
        if (code == LDAP_SUCCESS) {
            LDAPMessage *result = NULL;
            code = await_result(ld, msgid, operation_timeout_ms, &result);
            if (code == LDAP_SUCCESS) {
                int server = LDAP_OTHER;
                code = ldap_parse_result(ld, result, &server, NULL, NULL, NULL, NULL, 1);
                result = NULL;
                if (code == LDAP_SUCCESS) code = server;
            }
            if (result) ldap_msgfree(result);
        }
        if (code == LDAP_SUCCESS) code = ldap_install_tls(ld);
        if (code != LDAP_SUCCESS) {
            ldap_unbind_ext(ld, NULL, NULL);
            return code;
        }
    }
    *out = ld;
    return LDAP_SUCCESS;
}

static int send_bind(LDAP *ld, const char *dn, const char *mechanism, struct berval *credentials, int timeout_ms) {
    int msgid = 0;
    int code = ldap_sasl_bind(ld, dn, mechanism, credentials, NULL, NULL, &msgid);
    if (code != LDAP_SUCCESS) return code;
    LDAPMessage *result = NULL;
    code = await_result(ld, msgid, timeout_ms, &result);
    if (code != LDAP_SUCCESS) return code;
    int server = LDAP_OTHER;
    code = ldap_parse_result(ld, result, &server, NULL, NULL, NULL, NULL, 1);
    return code == LDAP_SUCCESS ? server : code;
}

int puff_ldap_bind_external(LDAP *ld, int timeout_ms) {
    /* An empty initial response (no authorization identity): without one the server asks
     * for it with an empty challenge (SASL bind in progress). */
    static char empty[] = "";
    struct berval response = {0, empty};
    return send_bind(ld, NULL, "EXTERNAL", &response, timeout_ms);
}

int puff_ldap_bind_simple(LDAP *ld, const char *dn, const void *password, size_t length, int timeout_ms) {
    struct berval credentials;
    credentials.bv_val = (char *)password;
    credentials.bv_len = length;
    return send_bind(ld, dn, LDAP_SASL_SIMPLE, &credentials, timeout_ms);
}

void puff_ldap_close(LDAP *ld) {
    if (ld) ldap_unbind_ext(ld, NULL, NULL);
}

/* A decimal integer attribute value, strictly: optional '-', 1 to 19 digits. */
static int parse_integer(const struct berval *value, long long *out) {
    size_t i = 0;
    int negative = 0;
    if (value->bv_len == 0 || value->bv_len > 20) return 0;
    if (value->bv_val[0] == '-') { negative = 1; i = 1; }
    if (i == value->bv_len || value->bv_len - i > 19) return 0;
    long long result = 0;
    for (; i < value->bv_len; i++) {
        char c = value->bv_val[i];
        if (c < '0' || c > '9') return 0;
        if (result > (LLONG_MAX - (c - '0')) / 10) return 0;
        result = result * 10 + (c - '0');
    }
    *out = negative ? -result : result;
    return 1;
}

static int copy_bytes(const struct berval *value, unsigned char **bytes, size_t *length) {
    *bytes = malloc(value->bv_len ? value->bv_len : 1);
    if (!*bytes) return 0;
    memcpy(*bytes, value->bv_val, value->bv_len);
    *length = value->bv_len;
    return 1;
}

static int copy_text(const struct berval *value, size_t limit, char **text) {
    if (value->bv_len > limit || memchr(value->bv_val, 0, value->bv_len)) return 0;
    *text = malloc(value->bv_len + 1);
    if (!*text) return 0;
    memcpy(*text, value->bv_val, value->bv_len);
    (*text)[value->bv_len] = 0;
    return 1;
}

void puff_ldap_user_free(puff_ldap_user *user) {
    if (!user) return;
    if (user->dn) ldap_memfree(user->dn);
    if (user->record) { explicit_bzero(user->record, user->record_length); free(user->record); }
    free(user->picture);
    free(user->picture_sha256);
    free(user->last_failure_host);
    memset(user, 0, sizeof *user);
}

/* The single value of `attribute` in `entry`: 1 found, 0 absent, -1 several values. */
static int single_value(LDAP *ld, LDAPMessage *entry, const char *attribute, struct berval ***values) {
    *values = ldap_get_values_len(ld, entry, attribute);
    if (!*values || !(*values)[0]) {
        if (*values) ldap_value_free_len(*values);
        *values = NULL;
        return 0;
    }
    if ((*values)[1]) {
        ldap_value_free_len(*values);
        *values = NULL;
        return -1;
    }
    return 1;
}

static int read_entry(LDAP *ld, LDAPMessage *entry, puff_ldap_user *user) {
    struct berval **values = NULL;
    char *dn = ldap_get_dn(ld, entry);
    if (!dn) return LDAP_NO_MEMORY;
    user->dn = dn;
    values = ldap_get_values_len(ld, entry, "objectClass");
    for (size_t i = 0; values && values[i]; i++) {
        if (values[i]->bv_len == 8 && strncasecmp(values[i]->bv_val, "puffUser", 8) == 0) user->is_puff_user = 1;
    }
    if (values) ldap_value_free_len(values);

    static const char *integers[] = {"puffFailures", "puffLastFailure", "puffPasscodeAt"};
    long long *targets[] = {&user->failures, &user->last_failure, &user->passcode_at};
    for (int i = 0; i < 3; i++) {
        *targets[i] = -1;
        int found = single_value(ld, entry, integers[i], &values);
        if (found < 0) return LDAP_CONSTRAINT_VIOLATION;
        if (found == 0) continue;
        int ok = parse_integer(values[0], targets[i]);
        ldap_value_free_len(values);
        if (!ok) return LDAP_INVALID_SYNTAX;
    }
    int found = single_value(ld, entry, "puffAdminLock", &values);
    if (found < 0) return LDAP_CONSTRAINT_VIOLATION;
    if (found) {
        user->admin_lock = values[0]->bv_len == 4 && memcmp(values[0]->bv_val, "TRUE", 4) == 0;
        ldap_value_free_len(values);
    }
    struct { const char *name; unsigned char **bytes; size_t *length; } blobs[] = {
        {"puffRecord", &user->record, &user->record_length},
        {"puffPicture", &user->picture, &user->picture_length},
    };
    for (int i = 0; i < 2; i++) {
        found = single_value(ld, entry, blobs[i].name, &values);
        if (found < 0) return LDAP_CONSTRAINT_VIOLATION;
        if (found == 0) continue;
        int ok = copy_bytes(values[0], blobs[i].bytes, blobs[i].length);
        ldap_value_free_len(values);
        if (!ok) return LDAP_NO_MEMORY;
    }
    struct { const char *name; char **text; size_t limit; } texts[] = {
        {"puffPictureSHA256", &user->picture_sha256, 64},
        {"puffLastFailureHost", &user->last_failure_host, 256},
    };
    for (int i = 0; i < 2; i++) {
        found = single_value(ld, entry, texts[i].name, &values);
        if (found < 0) return LDAP_CONSTRAINT_VIOLATION;
        if (found == 0) continue;
        int ok = copy_text(values[0], texts[i].limit, texts[i].text);
        ldap_value_free_len(values);
        if (!ok) return LDAP_INVALID_SYNTAX;
    }
    return LDAP_SUCCESS;
}

int puff_ldap_read_user(LDAP *ld, const char *base, const char *uid, int want_picture, int timeout_ms,
                        puff_ldap_user *user, int *found) {
    memset(user, 0, sizeof *user);
    user->failures = user->last_failure = user->passcode_at = -1;
    *found = 0;
    struct berval raw, escaped = {0, NULL};
    raw.bv_val = (char *)uid;
    raw.bv_len = strlen(uid);
    if (ldap_bv2escaped_filter_value(&raw, &escaped) != 0) return LDAP_NO_MEMORY;
    size_t size = escaped.bv_len + 8;
    char *filter = malloc(size);
    if (!filter) { ber_memfree(escaped.bv_val); return LDAP_NO_MEMORY; }
    snprintf(filter, size, "(uid=%s)", escaped.bv_val);
    ber_memfree(escaped.bv_val);
    char *attributes[] = {"objectClass", "puffRecord", "puffPictureSHA256", "puffFailures", "puffLastFailure",
                          "puffLastFailureHost", "puffAdminLock", "puffPasscodeAt",
                          want_picture ? "puffPicture" : NULL, NULL};
    int msgid = 0;
    struct timeval limit = interval(timeout_ms);
    int code = ldap_search_ext(ld, base, LDAP_SCOPE_SUBTREE, filter, attributes, 0, NULL, NULL, &limit, 2, &msgid);
    free(filter);
    if (code != LDAP_SUCCESS) return code;
    LDAPMessage *result = NULL;
    code = await_result(ld, msgid, timeout_ms, &result);
    if (code != LDAP_SUCCESS) return code;
    int server = LDAP_OTHER;
    int entries = ldap_count_entries(ld, result);
    code = ldap_parse_result(ld, result, &server, NULL, NULL, NULL, NULL, 0);
    if (code == LDAP_SUCCESS) code = server;
    if (code == LDAP_SUCCESS && entries > 1) code = LDAP_SIZELIMIT_EXCEEDED;
    if (code == LDAP_SUCCESS && entries == 1) {
        code = read_entry(ld, ldap_first_entry(ld, result), user);
        if (code == LDAP_SUCCESS) *found = 1; else puff_ldap_user_free(user);
    }
    ldap_msgfree(result);
    return code;
}

static int send_modify(LDAP *ld, const char *dn, LDAPMod **mods, LDAPControl **controls, int timeout_ms,
                       LDAPMessage **result) {
    int msgid = 0;
    int code = ldap_modify_ext(ld, dn, mods, controls, NULL, &msgid);
    if (code != LDAP_SUCCESS) return code;
    code = await_result(ld, msgid, timeout_ms, result);
    if (code != LDAP_SUCCESS) return code;
    int server = LDAP_OTHER;
    code = ldap_parse_result(ld, *result, &server, NULL, NULL, NULL, NULL, 0);
    return code == LDAP_SUCCESS ? server : code;
}

int puff_ldap_modify(LDAP *ld, const char *dn, const puff_ldap_change *changes, int count, int timeout_ms) {
    if (count < 1 || count > 16) return LDAP_PARAM_ERROR;
    LDAPMod mods[16];
    LDAPMod *list[17];
    struct berval values[16];
    struct berval *valueLists[16][2];
    for (int i = 0; i < count; i++) {
        int op = changes[i].op;
        if (op != LDAP_MOD_ADD && op != LDAP_MOD_DELETE && op != LDAP_MOD_REPLACE) return LDAP_PARAM_ERROR;
        mods[i].mod_op = op | LDAP_MOD_BVALUES;
        mods[i].mod_type = (char *)changes[i].attribute;
        if (changes[i].value) {
            values[i].bv_val = (char *)changes[i].value;
            values[i].bv_len = changes[i].length;
            valueLists[i][0] = &values[i];
            valueLists[i][1] = NULL;
            mods[i].mod_bvalues = valueLists[i];
        } else {
            mods[i].mod_bvalues = NULL;
        }
        list[i] = &mods[i];
    }
    list[count] = NULL;
    LDAPMessage *result = NULL;
    int code = send_modify(ld, dn, list, NULL, timeout_ms, &result);
    if (result) ldap_msgfree(result);
    return code;
}

int puff_ldap_count_failure(LDAP *ld, const char *dn, long long now, const char *host, int timeout_ms,
                            long long *failures) {
    char one[] = "1";
    char when[24];
    snprintf(when, sizeof when, "%lld", now);
    struct berval increment = {1, one}, time = {strlen(when), when}, origin = {strlen(host), (char *)host};
    struct berval *incrementValues[] = {&increment, NULL}, *timeValues[] = {&time, NULL},
                  *originValues[] = {&origin, NULL};
    LDAPMod counter = {LDAP_MOD_INCREMENT | LDAP_MOD_BVALUES, "puffFailures", {.modv_bvals = incrementValues}};
    LDAPMod last = {LDAP_MOD_REPLACE | LDAP_MOD_BVALUES, "puffLastFailure", {.modv_bvals = timeValues}};
    LDAPMod where = {LDAP_MOD_REPLACE | LDAP_MOD_BVALUES, "puffLastFailureHost", {.modv_bvals = originValues}};
    LDAPMod *mods[] = {&counter, &last, &where, NULL};

    /* The post-read control's value: AttributeSelection ::= SEQUENCE OF LDAPString. */
    BerElement *ber = ber_alloc_t(LBER_USE_DER);
    if (!ber) return LDAP_NO_MEMORY;
    struct berval selection = {0, NULL};
    if (ber_printf(ber, "{s}", "puffFailures") == -1 || ber_flatten2(ber, &selection, 0) == -1) {
        ber_free(ber, 1);
        return LDAP_ENCODING_ERROR;
    }
    LDAPControl postRead = {LDAP_CONTROL_POST_READ, selection, 1};
    LDAPControl *controls[] = {&postRead, NULL};
    LDAPMessage *result = NULL;
    int code = send_modify(ld, dn, mods, controls, timeout_ms, &result);
    ber_free(ber, 1);
    if (code != LDAP_SUCCESS) {
        if (result) ldap_msgfree(result);
        return code;
    }
    LDAPControl **returned = NULL;
    code = ldap_parse_result(ld, result, NULL, NULL, NULL, NULL, &returned, 1);
    if (code != LDAP_SUCCESS) return code;
    LDAPControl *control = ldap_control_find(LDAP_CONTROL_POST_READ, returned, NULL);
    code = LDAP_CONTROL_NOT_FOUND;
    if (control) {
        /* SearchResultEntry: { objectName, { { type, [ values ] } ... } } */
        BerElement *entry = ber_init(&control->ldctl_value);
        struct berval name, type;
        code = LDAP_DECODING_ERROR;
        if (entry && ber_scanf(entry, "{m{", &name) != LBER_ERROR) {
            /* Each attribute: "{m" its type, then "[W]" its set of values. */
            while (ber_scanf(entry, "{m", &type) != LBER_ERROR) {
                struct berval *values = NULL;
                if (ber_scanf(entry, "[W]", &values) == LBER_ERROR) break;
                if (type.bv_len == 12 && strncasecmp(type.bv_val, "puffFailures", 12) == 0
                    && values && values[0].bv_val && !values[1].bv_val && parse_integer(&values[0], failures)) {
                    code = LDAP_SUCCESS;
                }
                ber_bvarray_free(values);
            }
        }
        if (entry) ber_free(entry, 1);
    }
    ldap_controls_free(returned);
    return code;
}

const char *puff_ldap_error_text(int code) {
    return ldap_err2string(code);
}

void puff_ldap_diagnostic(LDAP *ld, char *buffer, size_t size) {
    if (size == 0) return;
    buffer[0] = 0;
    char *message = NULL;
    if (ld && ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &message) == LDAP_OPT_SUCCESS && message) {
        snprintf(buffer, size, "%s", message);
        ldap_memfree(message);
    }
}

/* Errors of a connect whose cause lies beyond this host: nothing listens (for ldapi://, no
 * socket file), no answer in time, no route. Everything else (EADDRNOTAVAIL: no free source
 * port; EMFILE, ENFILE, ENOBUFS, ENOMEM, EAGAIN, EACCES...) is taken as local. A local user
 * can exhaust this host's ports, descriptors or buffers, but cannot make a server refuse, go
 * silent or lose its route. */
static int is_remote_errno(int error, int is_unix) {
    switch (error) {
    case ECONNREFUSED: case ETIMEDOUT: case EHOSTUNREACH: case ENETUNREACH: case EHOSTDOWN: case ENETDOWN:
    case ECONNRESET:
        return 1;
    case ENOENT:
        return is_unix;
    default:
        return 0;
    }
}

/* Whether the server behind the connected `fd` says anything within `timeout_ms`: 0 when it
 * does (data, or it closes or resets the connection), ETIMEDOUT when it stays silent, else the
 * errno of a local failure. It is sent seven bytes that no LDAP server accepts as a request
 * and no TLS server as a record (an LDAP message with ID 0 and an OCTET STRING for its
 * operation; 0x30 is no TLS content type): a live server answers with an error or closes the
 * connection, and only one that is stopped, hung or overloaded, whose kernel still accepts
 * connections into the listen queue, says nothing. */
static int await_answer(int fd, int timeout_ms) {
    static const unsigned char nonsense[] = {0x30, 0x05, 0x02, 0x01, 0x00, 0x04, 0x00};
    ssize_t sent;
    do {
        sent = send(fd, nonsense, sizeof nonsense, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) return errno == EPIPE || errno == ECONNRESET ? 0 : (errno ? errno : EIO);
    struct pollfd wanted = {fd, POLLIN, 0};
    int ready;
    do {
        ready = poll(&wanted, 1, timeout_ms < 1 ? 1 : timeout_ms);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) return ETIMEDOUT;
    return ready < 0 ? (errno ? errno : EIO) : 0;
}

/* One non-blocking connect to `address`, bounded by `timeout_ms`, then `await_answer`: 0 the
 * server answers, else errno (ETIMEDOUT also for a connection accepted by a silent server). */
static int probe_connect(int family, const struct sockaddr *address, socklen_t length, int timeout_ms, int want_answer) {
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno ? errno : EIO;
    int error = 0;
    if (connect(fd, address, length) != 0) {
        error = errno;
        if (error == EINPROGRESS) {
            struct pollfd wanted = {fd, POLLOUT, 0};
            int ready;
            do {
                ready = poll(&wanted, 1, timeout_ms < 1 ? 1 : timeout_ms);
            } while (ready < 0 && errno == EINTR);
            if (ready == 0) {
                error = ETIMEDOUT;
            } else if (ready < 0) {
                error = errno;
            } else {
                socklen_t size = sizeof error;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
            }
        }
    }
    if (error == 0 && want_answer) error = await_answer(fd, timeout_ms);
    close(fd);
    return error;
}

int puff_ldap_probe(const char *uris, int timeout_ms, int want_answer, char *reason, size_t size) {
    if (size > 0) reason[0] = 0;
    int any_local = 0, any_tried = 0;
    char *list = strdup(uris ? uris : "");
    if (!list) {
        if (size > 0) snprintf(reason, size, "%s", "out of memory");
        return PUFF_LDAP_PROBE_LOCAL;
    }
    char *saved = NULL;
    for (char *uri = strtok_r(list, " ", &saved); uri; uri = strtok_r(NULL, " ", &saved)) {
        LDAPURLDesc *url = NULL;
        if (ldap_url_parse(uri, &url) != LDAP_URL_SUCCESS || !url || !url->lud_scheme) {
            if (url) ldap_free_urldesc(url);
            if (!any_local && size > 0) snprintf(reason, size, "%s", "a server address that does not parse");
            any_local = 1;
            continue;
        }
        if (strcasecmp(url->lud_scheme, "ldapi") == 0) {
            struct sockaddr_un address;
            memset(&address, 0, sizeof address);
            address.sun_family = AF_UNIX;
            const char *path = url->lud_host;
            if (!path || !*path || strlen(path) >= sizeof address.sun_path) {
                if (!any_local && size > 0) snprintf(reason, size, "%s", "an ldapi:// URI without a usable socket path");
                any_local = 1;
            } else {
                memcpy(address.sun_path, path, strlen(path));
                any_tried = 1;
                int error = probe_connect(AF_UNIX, (struct sockaddr *)&address, sizeof address, timeout_ms, want_answer);
                if (error == 0) {
                    ldap_free_urldesc(url);
                    free(list);
                    return PUFF_LDAP_PROBE_REACHABLE;
                }
                if (!is_remote_errno(error, 1)) {
                    if (!any_local && size > 0) snprintf(reason, size, "connect to %s: %s", path, strerror(error));
                    any_local = 1;
                }
            }
            ldap_free_urldesc(url);
            continue;
        }
        int port = url->lud_port > 0 ? url->lud_port : (strcasecmp(url->lud_scheme, "ldaps") == 0 ? 636 : 389);
        char service[16];
        snprintf(service, sizeof service, "%d", port);
        struct addrinfo hints, *found = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        const char *host = url->lud_host && *url->lud_host ? url->lud_host : "localhost";
        int resolved = getaddrinfo(host, service, &hints, &found);
        if (resolved != 0) {
            if (!any_local && size > 0) snprintf(reason, size, "resolve %s: %s", host, gai_strerror(resolved));
            any_local = 1;
            ldap_free_urldesc(url);
            continue;
        }
        for (struct addrinfo *each = found; each; each = each->ai_next) {
            any_tried = 1;
            int error = probe_connect(each->ai_family, each->ai_addr, each->ai_addrlen, timeout_ms, want_answer);
            if (error == 0) {
                freeaddrinfo(found);
                ldap_free_urldesc(url);
                free(list);
                return PUFF_LDAP_PROBE_REACHABLE;
            }
            if (!is_remote_errno(error, 0)) {
                if (!any_local && size > 0) snprintf(reason, size, "connect to %s port %d: %s", host, port, strerror(error));
                any_local = 1;
            }
        }
        freeaddrinfo(found);
        ldap_free_urldesc(url);
    }
    free(list);
    if (any_local || !any_tried) {
        if (size > 0 && !reason[0]) snprintf(reason, size, "%s", "no server address to try");
        return PUFF_LDAP_PROBE_LOCAL;
    }
    return PUFF_LDAP_PROBE_REMOTE;
}

int puff_ldap_abi(void) { return PUFF_LDAP_ABI; }

/* Linked directly (the SwiftPM builds): libldap is already there. */
int puff_ldap_is_loaded(void) { return 1; }

int puff_ldap_load(int fd, char *error, size_t size) {
    (void)fd;
    if (size > 0) error[0] = 0;
    return 0;
}
