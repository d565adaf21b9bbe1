/* seize.c: see seize.h. */
#define _GNU_SOURCE
#include "seize.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"

#define MAX_LISTINGS 16 /* rounds of "list the threads, stop the new ones" before giving up */
#define POLL_NS 20000   /* between two looks at the threads still running */

static int known(const hl_seized *s, pid_t tid) {
    for (size_t i = 0; i < s->count; i++)
        if (s->threads[i].tid == tid) return 1;
    return 0;
}

static int thread_exists(pid_t pid, pid_t tid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
    return access(path, F_OK) == 0;
}

/* Seizes and interrupts the threads of pid not seized yet. Returns how many were added, or
 * -errno when one that still exists refused. */
static int seize_new(pid_t pid, hl_seized *s) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir == NULL) return errno == ENOENT ? -ESRCH : -errno;
    int added = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        char *end;
        long tid = strtol(entry->d_name, &end, 10);
        if (*end != '\0' || tid <= 0 || known(s, (pid_t)tid)) continue;
        if (ptrace(PTRACE_SEIZE, (pid_t)tid, NULL, NULL) != 0) {
            int error = errno;
            if (error == ESRCH || !thread_exists(pid, (pid_t)tid)) continue; /* it just exited */
            closedir(dir);
            return -error;
        }
        if (s->count == 0) s->first_stop_ns = hl_now_ns();
        if (HL_ARRAY_RESERVE(s->threads, s->capacity, s->count + 1, 16) != 0) {
            ptrace(PTRACE_DETACH, (pid_t)tid, NULL, NULL); /* running: detaches at once */
            closedir(dir);
            return -ENOMEM;
        }
        s->threads[s->count++] = (hl_seized_thread){(pid_t)tid, 0, 0};
        ptrace(PTRACE_INTERRUPT, (pid_t)tid, NULL, NULL);
        added++;
    }
    closedir(dir);
    return added;
}

/* Whether thread t has stopped, without waiting: 1 (now in a ptrace stop), 0 (still running),
 * -1 (it exited, or is no longer ours: nothing to let go). */
static int poll_stop(hl_seized_thread *t) {
    if (t->stopped) return 1;
    int status;
    pid_t got = waitpid(t->tid, &status, __WALL | WNOHANG);
    if (got < 0) return errno == ECHILD ? -1 : 0;
    if (got != t->tid) return 0;
    if (WIFEXITED(status) || WIFSIGNALED(status)) return -1;
    if (!WIFSTOPPED(status)) return 0;
    t->stopped = 1;
    /* A PTRACE_EVENT_STOP is our interrupt (or a group stop, which detaching keeps); a stop
     * without an event is a signal on its way to the thread, which it must still get. */
    if ((status >> 16) == 0) t->pass_on = WSTOPSIG(status);
    return 1;
}

/* Collects the stops that have happened, without waiting; drops the threads that exited.
 * Returns how many threads are still running. */
static size_t collect_stops(hl_seized *s) {
    size_t running = 0;
    for (size_t i = 0; i < s->count;) {
        int state = poll_stop(&s->threads[i]);
        if (state < 0) {
            s->threads[i] = s->threads[--s->count];
            continue;
        }
        running += state == 0;
        i++;
    }
    return running;
}

static void pause_briefly(void) {
    struct timespec wait = {0, POLL_NS};
    nanosleep(&wait, NULL);
}

int hl_seize(pid_t pid, hl_seized *s, uint64_t timeout_ns) {
    memset(s, 0, sizeof(*s));
    uint64_t deadline = hl_now_ns() + timeout_ns;
    for (int round = 0; round < MAX_LISTINGS; round++) {
        int added = seize_new(pid, s);
        if (added < 0) {
            if (s->count == 0 || added == -ENOMEM) {
                hl_seize_release(s, timeout_ns);
                return added == -ENOMEM ? -ENOMEM : added;
            }
            break; /* one thread refused after others were stopped: read what is stopped */
        }
        if (s->count == 0) return -ESRCH;
        /* Wait for this round's threads to stop before listing again: a stopped thread starts
         * no new one, so once all are stopped a listing without news is the last. */
        while (collect_stops(s) > 0 && hl_now_ns() < deadline) pause_briefly();
        if (added == 0 || hl_now_ns() >= deadline) break;
    }
    return 0;
}

size_t hl_seize_stopped(const hl_seized *s) {
    size_t stopped = 0;
    for (size_t i = 0; i < s->count; i++) stopped += s->threads[i].stopped != 0;
    return stopped;
}

int hl_seize_is_stopped(const hl_seized *s, pid_t tid) {
    for (size_t i = 0; i < s->count; i++)
        if (s->threads[i].tid == tid) return s->threads[i].stopped;
    return 0;
}

void hl_seize_release(hl_seized *s, uint64_t timeout_ns) {
    uint64_t deadline = hl_now_ns() + timeout_ns;
    /* The stopped ones first: the pause they see ends now. */
    for (size_t i = 0; i < s->count; i++) {
        hl_seized_thread *t = &s->threads[i];
        if (t->stopped && ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(intptr_t)t->pass_on) == 0)
            t->tid = 0;
    }
    s->released_ns = hl_now_ns();
    /* A thread that had not stopped yet can only be detached from its stop. */
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < s->count; i++) {
            hl_seized_thread *t = &s->threads[i];
            if (t->tid == 0) continue;
            int state = poll_stop(t);
            if (state < 0 || (state > 0 && (ptrace(PTRACE_DETACH, t->tid, NULL,
                                                   (void *)(intptr_t)t->pass_on) == 0 ||
                                            errno == ESRCH))) {
                t->tid = 0; /* let go, or gone */
                continue;
            }
            left++;
        }
        if (left == 0 || hl_now_ns() >= deadline) break;
        pause_briefly();
    }
    free(s->threads);
    s->threads = NULL;
    s->count = s->capacity = 0;
}
