/*
 * puff-race: N separate processes authenticating through real libpam at the same instant.
 *
 * The parent forks N children. Each child runs pam_start_confdir (which loads the modules of
 * the service), tells the parent it is ready, then blocks reading a pipe whose write end the
 * parent holds. When every child is ready the parent closes that end: every read returns
 * end-of-file at once and all N children call pam_authenticate together. Each child answers
 * the prompts with the scripted replies and sends its PAM code and its time from the release
 * to the end of pam_authenticate back to the parent, which prints:
 *
 *   CODE <code> <count> <name>     one line per distinct PAM code
 *   MISSING <count>                children that reported nothing (crashed or killed)
 *   TIME max_ms=<ms> total_ms=<ms> from the release to the last child's pam_authenticate
 *
 * Exit status 0 when every child reported, 1 otherwise, 100 on a usage or setup error.
 * pam_wrapper is not used: it is unreliable with this many processes.
 */
#define _GNU_SOURCE
#include <security/pam_appl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHILDREN 1024
#define MAX_REPLIES 8

struct script {
    const char *replies[MAX_REPLIES];
    int count;
    int next;
};

/* What a child sends back: fixed size, well under PIPE_BUF, so each write is atomic. */
struct report {
    int index;
    int code;
    long elapsed_us;
};

static int converse(int count, const struct pam_message **messages,
                    struct pam_response **responses, void *data) {
    struct script *script = data;
    if (count <= 0 || count > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
    struct pam_response *out = calloc((size_t)count, sizeof *out);
    if (out == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        int style = messages[i]->msg_style;
        if (style != PAM_PROMPT_ECHO_OFF && style != PAM_PROMPT_ECHO_ON) continue;
        const char *reply = script->next < script->count ? script->replies[script->next++] : "";
        out[i].resp = strdup(reply);
        if (out[i].resp == NULL) {
            for (int j = 0; j < i; j++) free(out[j].resp);
            free(out);
            return PAM_BUF_ERR;
        }
    }
    *responses = out;
    return PAM_SUCCESS;
}

static long microseconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start->tv_sec) * 1000000L + (now.tv_nsec - start->tv_nsec) / 1000L;
}

static void write_all(int fd, const void *data, size_t size) {
    const char *bytes = data;
    while (size > 0) {
        ssize_t wrote = write(fd, bytes, size);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return;
        bytes += wrote;
        size -= (size_t)wrote;
    }
}

static void child(int index, const char *confdir, const char *service, const char *user,
                  struct script *script, int ready_fd, int barrier_fd, int report_fd) {
    struct pam_conv conversation = { converse, script };
    pam_handle_t *handle = NULL;
    struct report report = { .index = index, .code = -1 };
    int status = pam_start_confdir(service, user, &conversation, confdir, &handle);
    write_all(ready_fd, "r", 1);
    close(ready_fd);
    char byte;
    ssize_t got;
    while ((got = read(barrier_fd, &byte, 1)) != 0) {
        if (got < 0 && errno != EINTR) break;
    }
    struct timespec released;
    clock_gettime(CLOCK_MONOTONIC, &released);
    if (status == PAM_SUCCESS) {
        status = pam_authenticate(handle, 0);
        report.code = status;
        pam_end(handle, status);
    } else {
        report.code = status;
    }
    report.elapsed_us = microseconds_since(&released);
    write_all(report_fd, &report, sizeof report);
    _exit(0);
}

static int usage(const char *problem) {
    fprintf(stderr, "puff-race: %s\n"
            "usage: puff-race --confdir DIR --service NAME --user USER --count N [--reply TEXT]...\n", problem);
    return 100;
}

int main(int argc, char **argv) {
    const char *confdir = NULL, *service = NULL, *user = NULL;
    int count = 0;
    struct script script = { .count = 0 };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (value == NULL) return usage("every option takes a value");
        if (strcmp(arg, "--confdir") == 0) confdir = value;
        else if (strcmp(arg, "--service") == 0) service = value;
        else if (strcmp(arg, "--user") == 0) user = value;
        else if (strcmp(arg, "--count") == 0) count = atoi(value);
        else if (strcmp(arg, "--reply") == 0) {
            if (script.count == MAX_REPLIES) return usage("too many replies");
            script.replies[script.count++] = value;
        }
        else return usage("unknown option");
        i++;
    }
    if (confdir == NULL || service == NULL || user == NULL) return usage("--confdir, --service and --user are required");
    if (count < 1 || count > MAX_CHILDREN) return usage("--count must be 1 to 1024");

    int ready[2], barrier[2], reports[2];
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(barrier, O_CLOEXEC) != 0 || pipe2(reports, O_CLOEXEC) != 0) {
        perror("pipe2");
        return 100;
    }
    fflush(stdout);
    static pid_t pids[MAX_CHILDREN];
    for (int i = 0; i < count; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            for (int j = 0; j < i; j++) kill(pids[j], SIGKILL);
            return 100;
        }
        if (pid == 0) {
            close(ready[0]);
            close(barrier[1]);
            close(reports[0]);
            child(i, confdir, service, user, &script, ready[1], barrier[0], reports[1]);
        }
        pids[i] = pid;
    }
    close(ready[1]);
    close(barrier[0]);
    close(reports[1]);

    /* Every child writes one byte when its pam_start_confdir is done; end-of-file early
       means some child died before that, which the reports below will show. */
    int ready_count = 0;
    char buffer[256];
    while (ready_count < count) {
        ssize_t got = read(ready[0], buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        ready_count += (int)got;
    }
    close(ready[0]);

    struct timespec released;
    clock_gettime(CLOCK_MONOTONIC, &released);
    close(barrier[1]);

    static int codes[MAX_CHILDREN];
    static int reported[MAX_CHILDREN];
    long max_us = 0;
    for (;;) {
        struct report report;
        size_t filled = 0;
        while (filled < sizeof report) {
            ssize_t got = read(reports[0], (char *)&report + filled, sizeof report - filled);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            filled += (size_t)got;
        }
        if (filled < sizeof report) break;
        if (report.index < 0 || report.index >= count || reported[report.index]) continue;
        reported[report.index] = 1;
        codes[report.index] = report.code;
        if (report.elapsed_us > max_us) max_us = report.elapsed_us;
    }
    long total_us = microseconds_since(&released);
    for (int i = 0; i < count; i++) {
        while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {}
    }

    int missing = 0;
    for (int i = 0; i < count; i++) missing += !reported[i];
    for (int code = -1; code < 64; code++) {
        int n = 0;
        for (int i = 0; i < count; i++) n += reported[i] && codes[i] == code;
        if (n > 0) printf("CODE %d %d %s\n", code, n, code < 0 ? "pam_start_failed" : pam_strerror(NULL, code));
    }
    printf("MISSING %d\n", missing);
    printf("TIME max_ms=%ld total_ms=%ld\n", max_us / 1000, total_us / 1000);
    return missing == 0 ? 0 : 1;
}
