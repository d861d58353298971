/*
 * Drives the Auto engine through its C ABI the way a mobile app would: two servers,
 * Auto on, traffic that stalls, a check whose replies make Auto switch, a connect
 * failure, bad input, and the memory saved and restored. Prints what fails and exits
 * non-zero on the first failure.
 *
 * Built and run by tests/it/c_abi.rs:
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -I include tests/c/drive.c \
 *      libswitchyard_auto_ffi.a -lpthread -ldl -lm
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "switchyard_auto.h"

static void fail(const char *fmt, ...) {
    va_list args;
    fflush(stdout);
    va_start(args, fmt);
    fprintf(stderr, "drive.c: FAILED: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

/* Fails unless the call succeeded; frees the message of a failed call. */
static void ok(int rc, char *err, const char *what) {
    if (rc != SY_AUTO_OK || err != NULL) {
        fail("%s: rc %d, error %s", what, rc, err ? err : "(none)");
    }
}

static int64_t now_ms = 1000;

static void event(SyAuto *auto_, const char *json) {
    char *err = NULL;
    int rc = sy_auto_event(auto_, now_ms, json, &err);
    ok(rc, err, json);
}

/* Every pending output, one JSON object a line, in `out` (at most `cap` bytes). */
static size_t drain(SyAuto *auto_, char *out, size_t cap) {
    size_t len = 0, count = 0;
    char *one;
    out[0] = '\0';
    while ((one = sy_auto_poll_output(auto_)) != NULL) {
        size_t n = strlen(one);
        if (len + n + 2 > cap) {
            fail("outputs longer than %zu bytes", cap);
        }
        memcpy(out + len, one, n);
        len += n;
        out[len++] = '\n';
        out[len] = '\0';
        count++;
        sy_auto_string_free(one);
    }
    printf("t=%lld: %zu output(s)\n%s", (long long)now_ms, count, out);
    return count;
}

static void has(const char *outputs, const char *want) {
    if (strstr(outputs, want) == NULL) {
        fail("expected %s in the outputs:\n%s", want, outputs);
    }
}

/* The number after `"check":` in a probe output. */
static long check_id(const char *outputs) {
    const char *at = strstr(outputs, "{\"type\":\"probe\",\"check\":");
    if (at == NULL) {
        fail("no probe output in:\n%s", outputs);
    }
    return strtol(at + strlen("{\"type\":\"probe\",\"check\":"), NULL, 10);
}

/* Waits (in virtual time) for the engine's next deadline and hands it the timeout. */
static void wait_deadline(SyAuto *auto_) {
    char *err = NULL;
    int64_t at = sy_auto_poll_timeout(auto_);
    if (at < now_ms) {
        fail("poll_timeout: %lld, expected a deadline from %lld on", (long long)at,
             (long long)now_ms);
    }
    now_ms = at;
    ok(sy_auto_timeout(auto_, now_ms, &err), err, "sy_auto_timeout");
}

static char *server_id(const char *host, const char *uuid) {
    char *err = NULL;
    char *id = sy_auto_server_id("vless", host, 443, uuid, &err);
    if (id == NULL || err != NULL) {
        fail("sy_auto_server_id: %s", err ? err : "(no message)");
    }
    return id;
}

int main(void) {
    char json[1024], outputs[8192], want[512];
    char *err = NULL;
    char *fi = server_id("fi.example.org", "uuid-fi");
    char *de = server_id("de.example.org", "uuid-de");

    SyAuto *auto_ = sy_auto_new("{\"platform\":\"mobile\"}", NULL, &err);
    if (auto_ == NULL || err != NULL) {
        fail("sy_auto_new: %s", err ? err : "(no message)");
    }

    /* Two servers, Auto on: it connects to the first. */
    snprintf(json, sizeof json,
             "{\"type\":\"subscriptions\",\"subscriptions\":[{\"name\":\"main\",\"servers\":["
             "{\"id\":\"%s\",\"name\":\"Helsinki\"},{\"id\":\"%s\",\"name\":\"Frankfurt\"}]}]}",
             fi, de);
    event(auto_, json);
    event(auto_, "{\"type\":\"auto_on\",\"subscription\":\"main\"}");
    if (drain(auto_, outputs, sizeof outputs) != 1) {
        fail("expected one output after auto_on");
    }
    snprintf(want, sizeof want, "{\"type\":\"connect\",\"server\":\"%s\",\"reason\":\"auto_on\"}", fi);
    has(outputs, want);

    /* Data goes out and nothing comes back: a stall check at the 2 s mobile threshold
     * (after the 5 s with no check that follow connecting). */
    now_ms += 9000;
    event(auto_, "{\"type\":\"traffic\",\"sent\":0,\"received\":0}");
    now_ms += 1000;
    event(auto_, "{\"type\":\"traffic\",\"sent\":800,\"received\":0}");
    if (sy_auto_poll_timeout(auto_) != now_ms + 2000) {
        fail("poll_timeout: %lld, expected the stall at %lld",
             (long long)sy_auto_poll_timeout(auto_), (long long)(now_ms + 2000));
    }
    wait_deadline(auto_);
    drain(auto_, outputs, sizeof outputs);
    has(outputs, "\"trigger\":\"stall\"");
    snprintf(want, sizeof want, "\"servers\":[\"%s\",\"%s\"],\"method\":\"url\",\"timeout_ms\":5000", fi, de);
    has(outputs, want);

    /* Helsinki is silent, Frankfurt answers: Auto switches. */
    now_ms += 300;
    snprintf(json, sizeof json,
             "{\"type\":\"probe_results\",\"check\":%ld,\"replies\":["
             "{\"server\":\"%s\",\"total_ms\":null},"
             "{\"server\":\"%s\",\"total_ms\":80,\"request_ms\":30,\"status\":204}]}",
             check_id(outputs), fi, de);
    event(auto_, json);
    drain(auto_, outputs, sizeof outputs);
    has(outputs, "\"type\":\"check_done\"");
    has(outputs, "\"outcome\":\"switch\"");
    snprintf(want, sizeof want, "{\"type\":\"switched\",\"from\":\"%s\",\"to\":\"%s\",\"reason\":\"current_silent\"}", fi, de);
    has(outputs, want);
    snprintf(want, sizeof want, "{\"type\":\"connect\",\"server\":\"%s\",\"reason\":\"switch\"}", de);
    has(outputs, want);

    /* The core fails to connect to Frankfurt: a check after the cool-down; it answers. */
    now_ms += 1000;
    snprintf(json, sizeof json, "{\"type\":\"connect_failed\",\"server\":\"%s\"}", de);
    event(auto_, json);
    wait_deadline(auto_);
    drain(auto_, outputs, sizeof outputs);
    has(outputs, "\"trigger\":\"connect_failure\"");
    snprintf(json, sizeof json,
             "{\"type\":\"probe_results\",\"check\":%ld,\"replies\":["
             "{\"server\":\"%s\",\"total_ms\":90},{\"server\":\"%s\",\"total_ms\":null}]}",
             check_id(outputs), de, fi);
    event(auto_, json);
    drain(auto_, outputs, sizeof outputs);
    has(outputs, "\"outcome\":\"stay\"");
    if (sy_auto_poll_output(auto_) != NULL) {
        fail("poll_output after draining: expected NULL");
    }

    /* Bad input: the code says what kind, the message names the field. */
    int rc = sy_auto_event(auto_, now_ms, "{\"type\":\"traffic\",\"sent\":\"lots\",\"received\":0}", &err);
    if (rc != SY_AUTO_ERR_JSON || err == NULL || strstr(err, "event.sent: invalid type") == NULL) {
        fail("malformed event: rc %d, error %s", rc, err ? err : "(none)");
    }
    printf("malformed event refused: %s\n", err);
    sy_auto_string_free(err);
    rc = sy_auto_event(auto_, now_ms, "{\"type\":\"auto_on\",\"subscription\":\"other\"}", &err);
    if (rc != SY_AUTO_ERR_REFUSED || err == NULL || strstr(err, "\"other\" is not known") == NULL) {
        fail("unknown subscription: rc %d, error %s", rc, err ? err : "(none)");
    }
    sy_auto_string_free(err);
    rc = sy_auto_event(auto_, now_ms, "{\"type\":\"network_changed\"", &err);
    if (rc != SY_AUTO_ERR_JSON || err == NULL || strstr(err, "event: not valid JSON") == NULL) {
        fail("truncated JSON: rc %d, error %s", rc, err ? err : "(none)");
    }
    sy_auto_string_free(err);
    rc = sy_auto_event(NULL, now_ms, "{\"type\":\"network_changed\"}", &err);
    if (rc != SY_AUTO_ERR_NULL || err == NULL || strcmp(err, "handle: is NULL") != 0) {
        fail("NULL handle: rc %d, error %s", rc, err ? err : "(none)");
    }
    sy_auto_string_free(err);
    if (sy_auto_poll_timeout(NULL) != -1 || sy_auto_poll_output(NULL) != NULL) {
        fail("a NULL handle polls as nothing");
    }

    /* Save the memory, restart from it: the same memory, and Frankfurt (it answered,
     * Helsinki did not) is where Auto goes when turned on again. */
    char *saved = sy_auto_state(auto_, &err);
    if (saved == NULL || err != NULL) {
        fail("sy_auto_state: %s", err ? err : "(no message)");
    }
    snprintf(want, sizeof want, "\"current\":\"%s\"", de);
    has(saved, want);
    sy_auto_free(auto_);

    auto_ = sy_auto_new("{\"platform\":\"mobile\"}", saved, &err);
    if (auto_ == NULL || err != NULL) {
        fail("sy_auto_new from the saved state: %s", err ? err : "(no message)");
    }
    char *again = sy_auto_state(auto_, &err);
    if (again == NULL || strcmp(again, saved) != 0) {
        fail("restored state differs:\n%s\n%s", saved, again ? again : "(NULL)");
    }
    sy_auto_string_free(again);
    now_ms += 60000;
    snprintf(json, sizeof json,
             "{\"type\":\"subscriptions\",\"subscriptions\":[{\"name\":\"main\",\"servers\":["
             "{\"id\":\"%s\"},{\"id\":\"%s\"}]}]}",
             fi, de);
    event(auto_, json);
    if (drain(auto_, outputs, sizeof outputs) != 0) {
        fail("a restored engine stays off until auto_on");
    }
    event(auto_, "{\"type\":\"auto_on\",\"subscription\":\"main\"}");
    drain(auto_, outputs, sizeof outputs);
    snprintf(want, sizeof want, "{\"type\":\"connect\",\"server\":\"%s\",\"reason\":\"auto_on\"}", de);
    has(outputs, want);

    /* A bad saved state names its field. */
    if (sy_auto_new("{}", "{\"marks\":7}", &err) != NULL || err == NULL ||
        strstr(err, "state.marks: ") == NULL) {
        fail("bad state: error %s", err ? err : "(none)");
    }
    sy_auto_string_free(err);

    sy_auto_string_free(saved);
    sy_auto_free(auto_);
    sy_auto_string_free(fi);
    sy_auto_string_free(de);
    sy_auto_string_free(NULL);
    sy_auto_free(NULL);
    printf("drive.c: all checks passed\n");
    return 0;
}
