/* control.c: see control.h. */
#define _GNU_SOURCE
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "engine_part.h"

#define PATH_BYTES 4096

static struct {
    pthread_mutex_t lock; /* guards the record: pause() runs in the program's threads */
    char command[PATH_BYTES], state[PATH_BYTES]; /* "" when not controlled */
    uint64_t next_poll_ns;
    unsigned long long applied; /* the sequence number of the last command applied */
    unsigned long long written; /* ... and of the state last written, with: */
    int written_paused;
    uint64_t start_ns, stop_ns; /* stop_ns 0 while running */
    uint64_t changes[HL_CONTROL_MAX_CHANGES]; /* times of on/off changes, first: start */
    size_t nchanges;
    int first_on; /* whether profiling was on at the start */
    int paused;   /* the state recorded last */
    uint64_t dropped;
} ctl = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int control_start(const hl_config *config) {
    const char *command = config->control_command, *state = config->control_state;
    int err = 0;
    hl_engine_lock(); /* the sampler thread is running: it polls under this lock */
    pthread_mutex_lock(&ctl.lock);
    ctl.command[0] = ctl.state[0] = '\0';
    if (command != NULL && state != NULL) {
        if (strlen(command) >= PATH_BYTES || strlen(state) >= PATH_BYTES) {
            err = -ENAMETOOLONG;
        } else {
            strcpy(ctl.command, command);
            strcpy(ctl.state, state);
        }
    }
    ctl.start_ns = hl_now_ns();
    ctl.stop_ns = 0;
    ctl.next_poll_ns = 0;
    ctl.applied = ctl.written = 0;
    ctl.written_paused = -1; /* the state file is written at the first poll */
    ctl.nchanges = 0;
    ctl.first_on = !config->paused;
    ctl.paused = config->paused ? 1 : 0;
    ctl.dropped = 0;
    pthread_mutex_unlock(&ctl.lock);
    hl_engine_unlock();
    return err;
}

static void control_stop(void) {
    hl_engine_lock();
    pthread_mutex_lock(&ctl.lock);
    ctl.command[0] = ctl.state[0] = '\0';
    if (ctl.stop_ns == 0) ctl.stop_ns = hl_now_ns();
    pthread_mutex_unlock(&ctl.lock);
    hl_engine_unlock();
}

static void control_after_fork_child(void) {
    pthread_mutex_init(&ctl.lock, NULL);
    ctl.command[0] = ctl.state[0] = '\0'; /* the parent's files */
}

void hl_control_set_paused(int paused) {
    paused = paused ? 1 : 0;
    pthread_mutex_lock(&ctl.lock);
    hl_engine_set_paused(paused);
    HL_ASSERT(ctl.nchanges <= HL_CONTROL_MAX_CHANGES);
    if (paused != ctl.paused && ctl.stop_ns == 0) {
        if (ctl.nchanges < HL_CONTROL_MAX_CHANGES) ctl.changes[ctl.nchanges++] = hl_now_ns();
        else ctl.dropped++;
        ctl.paused = paused;
    }
    pthread_mutex_unlock(&ctl.lock);
}

/* A file of the user's own, not a link (O_NOFOLLOW), not readable or writable by others. */
static int open_private(const char *path, int flags) {
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void read_command_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    char text[64];
    int fd = open_private(ctl.command, O_RDONLY);
    if (fd < 0) return;
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) return;
    text[n] = '\0';
    unsigned long long seq;
    char word[4];
    if (sscanf(text, "%llu %3s", &seq, word) != 2 || seq == ctl.applied) return;
    if (strcmp(word, "on") == 0) hl_control_set_paused(0);
    else if (strcmp(word, "off") == 0) hl_control_set_paused(1);
    else return;
    ctl.applied = seq;
}

static void write_state_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    int paused = hl_engine_paused();
    if (ctl.written == ctl.applied && ctl.written_paused == paused) return;
    char text[64];
    int n = snprintf(text, sizeof(text), "%llu %s\n", ctl.applied, paused ? "off" : "on");
    int fd = open_private(ctl.state, O_WRONLY | O_TRUNC); /* never created here */
    if (fd < 0) return;
    if (write(fd, text, (size_t)n) == n) {
        ctl.written = ctl.applied;
        ctl.written_paused = paused;
    }
    close(fd);
}

static void control_wake_locked(uint64_t now_ns) {
    HL_ASSERT_ENGINE_LOCKED();
    /* The paths change only under the engine lock, which the sampler holds here; the sequence
     * numbers are the sampler thread's alone while a session runs. */
    if (ctl.command[0] == '\0' || now_ns < ctl.next_poll_ns) return;
    ctl.next_poll_ns = now_ns + HL_CONTROL_POLL_NS;
    read_command_locked();
    write_state_locked();
}

size_t hl_control_periods(uint64_t (*periods)[2], size_t capacity, uint64_t *dropped) {
    pthread_mutex_lock(&ctl.lock);
    uint64_t end = ctl.stop_ns ? ctl.stop_ns : hl_now_ns();
    size_t count = 0;
    int on = ctl.first_on;
    uint64_t since = ctl.start_ns;
    for (size_t i = 0; i <= ctl.nchanges; i++) {
        uint64_t at = i < ctl.nchanges ? ctl.changes[i] : end;
        if (on && at >= since) {
            if (count < capacity) {
                periods[count][0] = since - ctl.start_ns;
                periods[count][1] = at - ctl.start_ns;
            }
            count++;
        }
        on = !on;
        since = at;
    }
    *dropped = ctl.dropped;
    pthread_mutex_unlock(&ctl.lock);
    return count;
}

int hl_control_was_paused(void) {
    pthread_mutex_lock(&ctl.lock);
    int paused = !ctl.first_on || ctl.nchanges > 0 || ctl.dropped > 0;
    pthread_mutex_unlock(&ctl.lock);
    return paused;
}

const hl_engine_part hl_control_part = {
    .start = control_start,
    .stop = control_stop,
    .wake = control_wake_locked,
    .after_fork_child = control_after_fork_child,
};
