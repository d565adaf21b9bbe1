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

/* /proc/PID/stat's fields after the name, "S PPID ...", into text; NULL if unreadable. */
static const char *stat_fields(pid_t pid, char *text, size_t size) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *file = fopen(path, "re");
    if (file == NULL) return NULL;
    size_t n = fread(text, 1, size - 1, file);
    fclose(file);
    text[n] = '\0';
    const char *end = strrchr(text, ')'); /* the name may hold anything but ends at the last ) */
    return end != NULL && end[1] == ' ' && end[2] != '\0' ? end + 2 : NULL;
}

/* Whether the process's main thread has exited (a zombie, or dead). */
static int leader_exited(pid_t pid) {
    char text[512];
    const char *fields = stat_fields(pid, text, sizeof(text));
    return fields == NULL || fields[0] == 'Z' || fields[0] == 'X';
}

static int is_parent_of(pid_t pid) {
    char text[512];
    const char *fields = stat_fields(pid, text, sizeof(text));
    long parent = 0;
    return fields != NULL && sscanf(fields, "%*c %ld", &parent) == 1 && parent == (long)getpid();
}

/* Whether thread t has stopped, without waiting: 1 (now in a ptrace stop), 0 (still running),
 * -1 (it exited, or is no longer ours: nothing to let go).
 *
 * A traced thread that exits stays a zombie until its tracer waits for it, and the process's
 * main thread cannot be reaped by its parent before its other threads are: so an exit seen
 * here is reaped here (waitpid with __WALL), else a parent waiting for the process would wait
 * for ever. The one exit not reaped is the main thread's when heatline is the process's parent
 * too (a test reading its own child): that wait would take the exit status its parent's own
 * wait must get, and that wait reaps it anyway. */
static int poll_stop(const hl_seized *s, hl_seized_thread *t) {
    if (t->stopped) return 1;
    if (t->tid == s->pid && s->parent && leader_exited(s->pid)) return -1;
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
        int state = poll_stop(s, &s->threads[i]);
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
    s->pid = pid;
    s->parent = is_parent_of(pid);
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

/* Lets thread t go if it is stopped: 1 when it is let go or gone, 0 when it must be waited for. A
 * stopped thread that cannot be detached (ESRCH) is no longer in its stop: killed meanwhile (the
 * process exiting), it is reaped by poll_stop. */
static int let_go(const hl_seized *s, hl_seized_thread *t) {
    if (t->stopped) {
        if (ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(intptr_t)t->pass_on) == 0) return 1;
        t->stopped = 0;
    }
    int state = poll_stop(s, t);
    if (state < 0) return 1;
    return state > 0 && ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(intptr_t)t->pass_on) == 0;
}

void hl_seize_release(hl_seized *s, uint64_t timeout_ns) {
    uint64_t deadline = hl_now_ns() + timeout_ns;
    /* The stopped ones first: the pause they see ends now. */
    for (size_t i = 0; i < s->count; i++) {
        hl_seized_thread *t = &s->threads[i];
        if (t->stopped && let_go(s, t)) t->tid = 0;
    }
    s->released_ns = hl_now_ns();
    /* Then the ones that had not stopped (they can be detached only from a stop) or were
     * exiting. */
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < s->count; i++) {
            hl_seized_thread *t = &s->threads[i];
            if (t->tid == 0) continue;
            if (let_go(s, t)) t->tid = 0;
            else left++;
        }
        if (left == 0 || hl_now_ns() >= deadline) break;
        pause_briefly();
    }
    free(s->threads);
    s->threads = NULL;
    s->count = s->capacity = 0;
}
