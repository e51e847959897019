/*
 * puff-pam-harness: a small PAM application for Puff's integration tests and benchmark.
 *
 * It runs a real libpam transaction with pam_start_confdir (so tests use a service file in
 * a temporary directory, never /etc/pam.d) and a scripted conversation, and prints what the
 * module said and returned:
 *
 *   PROMPT <echo-off|echo-on> <text>     INFO <text>     ERROR <text>     RESULT <code> <name>
 *
 * The exit status is the PAM code of the last operation (0 = PAM_SUCCESS).
 *
 * Raw bytes (invalid UTF-8, embedded NUL, control characters) can be passed as hex with
 * --user-hex and --reply-hex; a reply keeps every byte, so the module receives a buffer
 * with whatever follows an embedded NUL, as a buggy or hostile application would send.
 *
 * --fd-check lists /proc/self/fd before pam_start, after the operation (before pam_end) and
 * after pam_end, and prints each descriptor that was not there before:
 *
 *   FD <after-op|after-end> <fd> <cloexec|inheritable> <target>
 *   FDS <after-op|after-end> new=<n> inheritable=<n>
 *
 * An "inheritable" descriptor (no FD_CLOEXEC) would survive an exec by the application.
 *
 * --time prints, after each operation, how long the operation call took (monotonic clock,
 * microseconds) and how many times the module called the conversation function:
 *
 *   TIMING <microseconds> ROUNDS <n>
 *
 * --caller UID runs the transaction with UID as the real uid and root as the effective uid,
 * as a setuid-root application started by UID would (su or sudo to oneself when UID is the
 * user's own). Without it, the real uid is root's, as in sshd or login.
 */
#define _GNU_SOURCE
#include <security/pam_appl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct script {
    const char *replies[32];
    size_t reply_lengths[32];    /* bytes of each reply, which may hold a NUL */
    int reply_count;
    int next_reply;
    int conv_error;      /* answer prompts with PAM_CONV_ERR */
    int null_reply;      /* answer prompts with a NULL response array */
    int null_resp;       /* answer prompts with a response array whose resp is NULL */
    int conv_again;      /* answer prompts with PAM_CONV_AGAIN (a non-blocking application) */
    int quiet;           /* print nothing (threads, benchmark) */
    int rounds;          /* calls of the conversation function so far */
};

static int converse(int count, const struct pam_message **messages,
                     struct pam_response **responses, void *data) {
    struct script *script = data;
    script->rounds++;
    if (count <= 0 || count > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
    struct pam_response *out = calloc((size_t)count, sizeof *out);
    if (out == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        const struct pam_message *message = messages[i];
        switch (message->msg_style) {
        case PAM_PROMPT_ECHO_OFF:
        case PAM_PROMPT_ECHO_ON:
            if (!script->quiet)
                printf("PROMPT %s %s\n", message->msg_style == PAM_PROMPT_ECHO_OFF ? "echo-off" : "echo-on",
                       message->msg ? message->msg : "");
            if (script->conv_error) { free(out); return PAM_CONV_ERR; }
            if (script->null_reply) { free(out); *responses = NULL; return PAM_SUCCESS; }
            if (script->conv_again) { free(out); return PAM_CONV_AGAIN; }
            if (script->null_resp) { out[i].resp = NULL; break; }
            if (script->next_reply < script->reply_count) {
                size_t length = script->reply_lengths[script->next_reply];
                out[i].resp = malloc(length + 1);
                if (out[i].resp != NULL) {
                    memcpy(out[i].resp, script->replies[script->next_reply], length);
                    out[i].resp[length] = '\0';
                }
                script->next_reply++;
            } else {
                out[i].resp = strdup("");
            }
            if (out[i].resp == NULL) { free(out); return PAM_BUF_ERR; }
            break;
        case PAM_TEXT_INFO:
            if (!script->quiet) printf("INFO %s\n", message->msg ? message->msg : "");
            break;
        case PAM_ERROR_MSG:
            if (!script->quiet) printf("ERROR %s\n", message->msg ? message->msg : "");
            break;
        default:
            free(out);
            return PAM_CONV_ERR;
        }
    }
    *responses = out;
    fflush(stdout);
    return PAM_SUCCESS;
}

static char *read_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) { perror(path); exit(100); }
    size_t capacity = 1 << 16, size = 0;
    char *data = malloc(capacity + 1);
    for (;;) {
        if (data == NULL) exit(100);
        size_t got = fread(data + size, 1, capacity - size, file);
        size += got;
        if (got == 0) break;
        if (size == capacity) { capacity *= 2; data = realloc(data, capacity + 1); }
    }
    fclose(file);
    data[size] = '\0';
    return data;
}

/* Decodes a hex string into a new buffer (NUL-terminated after the bytes); exits on bad hex. */
static char *from_hex(const char *hex, size_t *length) {
    size_t digits = strlen(hex);
    if (digits % 2 != 0) { fprintf(stderr, "odd hex length\n"); exit(100); }
    char *bytes = malloc(digits / 2 + 1);
    if (bytes == NULL) exit(100);
    for (size_t i = 0; i < digits / 2; i++) {
        unsigned value;
        if (sscanf(hex + 2 * i, "%2x", &value) != 1) { fprintf(stderr, "bad hex\n"); exit(100); }
        bytes[i] = (char)value;
    }
    bytes[digits / 2] = '\0';
    *length = digits / 2;
    return bytes;
}

struct options {
    const char *confdir, *service, *user, *op, *authtok, *wait_fifo;
    const char *rhost, *tty, *ruser;   /* PAM_RHOST, PAM_TTY, PAM_RUSER when given */
    const char *env[16];               /* --env NAME=VALUE: pam_putenv before the operation */
    int env_count;
    int no_user, repeat, threads, fd_check, time;
    long caller;                       /* the real uid with --caller, else -1 */
    struct script script;
};

#define MAX_FDS 1024

/* The open descriptors of this process, from /proc/self/fd (without the one reading it). */
static int list_fds(int *fds) {
    int count = 0;
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL) { perror("/proc/self/fd"); exit(100); }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && count < MAX_FDS) {
        if (entry->d_name[0] == '.') continue;
        int fd = atoi(entry->d_name);
        if (fd != dirfd(dir)) fds[count++] = fd;
    }
    closedir(dir);
    return count;
}

/* Prints the descriptors open now that were not in `before`. */
static void report_new_fds(const char *when, const int *before, int before_count) {
    int now[MAX_FDS];
    int count = list_fds(now), fresh = 0, inheritable = 0;
    for (int i = 0; i < count; i++) {
        int seen = 0;
        for (int j = 0; j < before_count && !seen; j++) seen = before[j] == now[i];
        if (seen) continue;
        char link[64], target[512];
        snprintf(link, sizeof link, "/proc/self/fd/%d", now[i]);
        ssize_t length = readlink(link, target, sizeof target - 1);
        target[length < 0 ? 0 : length] = '\0';
        int flags = fcntl(now[i], F_GETFD);
        int cloexec = flags >= 0 && (flags & FD_CLOEXEC);
        fresh++;
        if (!cloexec) inheritable++;
        printf("FD %s %d %s %s\n", when, now[i], cloexec ? "cloexec" : "inheritable", target);
    }
    printf("FDS %s new=%d inheritable=%d\n", when, fresh, inheritable);
    fflush(stdout);
}

static int run_once(struct options *options, struct script *script) {
    struct pam_conv conversation = { converse, script };
    pam_handle_t *handle = NULL;
    const char *user = options->no_user ? NULL : options->user;
    int before[MAX_FDS], before_count = 0;
    if (options->fd_check) before_count = list_fds(before);
    int status = pam_start_confdir(options->service, user, &conversation, options->confdir, &handle);
    if (status != PAM_SUCCESS) {
        if (!script->quiet) printf("RESULT %d %s\n", status, "pam_start_confdir failed");
        return status;
    }
    if (options->authtok) pam_set_item(handle, PAM_AUTHTOK, options->authtok);
    if (options->rhost) pam_set_item(handle, PAM_RHOST, options->rhost);
    if (options->tty) pam_set_item(handle, PAM_TTY, options->tty);
    if (options->ruser) pam_set_item(handle, PAM_RUSER, options->ruser);
    for (int i = 0; i < options->env_count; i++) pam_putenv(handle, options->env[i]);
    struct timespec started, ended;
    int rounds_before = script->rounds;
    clock_gettime(CLOCK_MONOTONIC, &started);
    if (strcmp(options->op, "auth") == 0) status = pam_authenticate(handle, 0);
    else if (strcmp(options->op, "acct") == 0) status = pam_acct_mgmt(handle, 0);
    else if (strcmp(options->op, "setcred") == 0) status = pam_setcred(handle, PAM_ESTABLISH_CRED);
    else if (strcmp(options->op, "chauthtok") == 0) status = pam_chauthtok(handle, 0);
    else if (strcmp(options->op, "login") == 0) {
        /* A display manager's order: authenticate, then (on success) open and close a session. */
        status = pam_authenticate(handle, 0);
        if (status == PAM_SUCCESS) {
            int opened = pam_open_session(handle, 0);
            printf("SESSION %d %s\n", opened, pam_strerror(handle, opened));
            if (opened == PAM_SUCCESS) pam_close_session(handle, 0);
        }
    }
    else status = PAM_SYSTEM_ERR;
    clock_gettime(CLOCK_MONOTONIC, &ended);
    if (!script->quiet) printf("RESULT %d %s\n", status, pam_strerror(handle, status));
    if (options->time)
        printf("TIMING %lld ROUNDS %d\n",
               (long long)(ended.tv_sec - started.tv_sec) * 1000000 + (ended.tv_nsec - started.tv_nsec) / 1000,
               script->rounds - rounds_before);
    fflush(stdout);
    if (options->fd_check) report_new_fds("after-op", before, before_count);
    pam_end(handle, status);
    if (options->fd_check) report_new_fds("after-end", before, before_count);
    return status;
}

static void *thread_main(void *data) {
    struct options *options = data;
    long failures = 0;
    for (int i = 0; i < options->repeat; i++) {
        struct script script = options->script;
        script.quiet = 1;
        if (run_once(options, &script) != PAM_SUCCESS) failures++;
    }
    return (void *)failures;
}

int main(int argc, char **argv) {
    struct options options = { .service = "puff-test", .user = "", .op = "auth", .repeat = 1, .caller = -1 };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE(field) do { if (value == NULL) { fprintf(stderr, "%s needs a value\n", arg); return 100; } field = value; i++; } while (0)
        if (strcmp(arg, "--confdir") == 0) TAKE(options.confdir);
        else if (strcmp(arg, "--service") == 0) TAKE(options.service);
        else if (strcmp(arg, "--user") == 0) TAKE(options.user);
        else if (strcmp(arg, "--user-hex") == 0) {
            const char *hex;
            size_t length;
            TAKE(hex);
            options.user = from_hex(hex, &length);
        }
        else if (strcmp(arg, "--no-user") == 0) options.no_user = 1;
        else if (strcmp(arg, "--op") == 0) TAKE(options.op);
        else if (strcmp(arg, "--authtok") == 0) TAKE(options.authtok);
        else if (strcmp(arg, "--rhost") == 0) TAKE(options.rhost);
        else if (strcmp(arg, "--tty") == 0) TAKE(options.tty);
        else if (strcmp(arg, "--ruser") == 0) TAKE(options.ruser);
        else if (strcmp(arg, "--env") == 0) {
            if (options.env_count >= 16) { fprintf(stderr, "too many --env\n"); return 64; }
            TAKE(options.env[options.env_count]);
            options.env_count++;
        }
        else if (strcmp(arg, "--wait-fifo") == 0) TAKE(options.wait_fifo);
        else if (strcmp(arg, "--reply") == 0 || strcmp(arg, "--reply-file") == 0) {
            const char *text;
            TAKE(text);
            if (options.script.reply_count == 32) return 100;
            const char *reply = strcmp(arg, "--reply-file") == 0 ? read_file(text) : text;
            options.script.reply_lengths[options.script.reply_count] = strlen(reply);
            options.script.replies[options.script.reply_count++] = reply;
        }
        else if (strcmp(arg, "--reply-hex") == 0) {
            const char *hex;
            TAKE(hex);
            if (options.script.reply_count == 32) return 100;
            size_t length;
            options.script.replies[options.script.reply_count] = from_hex(hex, &length);
            options.script.reply_lengths[options.script.reply_count++] = length;
        }
        else if (strcmp(arg, "--conv-error") == 0) options.script.conv_error = 1;
        else if (strcmp(arg, "--null-reply") == 0) options.script.null_reply = 1;
        else if (strcmp(arg, "--null-resp") == 0) options.script.null_resp = 1;
        else if (strcmp(arg, "--conv-again") == 0) options.script.conv_again = 1;
        else if (strcmp(arg, "--quiet") == 0) options.script.quiet = 1;
        else if (strcmp(arg, "--fd-check") == 0) options.fd_check = 1;
        else if (strcmp(arg, "--time") == 0) options.time = 1;
        else if (strcmp(arg, "--repeat") == 0) { const char *n; TAKE(n); options.repeat = atoi(n); }
        else if (strcmp(arg, "--threads") == 0) { const char *n; TAKE(n); options.threads = atoi(n); }
        else if (strcmp(arg, "--caller") == 0) { const char *n; TAKE(n); options.caller = atol(n); }
        else { fprintf(stderr, "unknown argument %s\n", arg); return 100; }
#undef TAKE
    }
    if (options.caller >= 0 && setresuid((uid_t)options.caller, 0, 0) != 0) { perror("setresuid"); return 100; }
    if (options.wait_fifo) {
        /* A barrier: opening a FIFO for reading blocks until the test opens it for writing,
           and reading returns end-of-file when the test closes it, releasing every process at once. */
        int fd = open(options.wait_fifo, O_RDONLY | O_CLOEXEC);
        if (fd < 0) { perror("open fifo"); return 100; }
        char byte;
        while (read(fd, &byte, 1) > 0) {}
        close(fd);
    }
    if (options.threads > 0) {
        pthread_t threads[256];
        if (options.threads > 256) return 100;
        for (int t = 0; t < options.threads; t++)
            if (pthread_create(&threads[t], NULL, thread_main, &options) != 0) return 100;
        long failures = 0;
        for (int t = 0; t < options.threads; t++) {
            void *result;
            pthread_join(threads[t], &result);
            failures += (long)result;
        }
        printf("THREADS %d x %d: %ld not successful\n", options.threads, options.repeat, failures);
        return failures == 0 ? 0 : 1;
    }
    int status = PAM_SUCCESS;
    for (int r = 0; r < options.repeat; r++) {
        struct script script = options.script;
        status = run_once(&options, &script);
    }
    return status;
}
