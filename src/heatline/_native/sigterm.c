/* sigterm.c: see sigterm.h. */
#define _GNU_SOURCE
#include "sigterm.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>

static struct sigaction python_action; /* what Python installed, called from ours */
static volatile sig_atomic_t pending;  /* a SIGTERM came while ours was installed */
static volatile sig_atomic_t delivered; /* likewise, cleared only by hl_sigterm_chain() */
static pthread_t main_thread;

static void on_sigterm(int signum, siginfo_t *info, void *context) {
    int saved = errno;
    pending = 1;
    delivered = 1;
    if (python_action.sa_flags & SA_SIGINFO) python_action.sa_sigaction(signum, info, context);
    else if (python_action.sa_handler != SIG_DFL && python_action.sa_handler != SIG_IGN)
        python_action.sa_handler(signum);
    errno = saved;
}

static int ours_installed(void) {
    struct sigaction current;
    if (sigaction(SIGTERM, NULL, &current) != 0) return 0;
    return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_sigterm;
}

int hl_sigterm_chain(void) {
    struct sigaction current, ours;
    if (sigaction(SIGTERM, NULL, &current) != 0) return -1;
    if (current.sa_flags & SA_SIGINFO) {
        if (current.sa_sigaction == on_sigterm) return 0;
    } else if (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN) {
        return -1;
    }
    python_action = current;
    main_thread = pthread_self();
    pending = 0;
    delivered = 0;
    ours = current;
    ours.sa_flags |= SA_SIGINFO;
    ours.sa_sigaction = on_sigterm;
    return sigaction(SIGTERM, &ours, NULL) == 0 ? 0 : -1;
}

int hl_sigterm_delivered(void) {
    return delivered || !ours_installed();
}

void hl_sigterm_tick(void) {
    if (!pending) return;
    if (!ours_installed()) {
        pending = 0; /* Python's handler ran (or the program installed its own) */
        return;
    }
    /* Interrupts the main thread's blocking call (EINTR), after which CPython runs the
     * handler it noted; ours notes the signal again, which changes nothing. */
    pthread_kill(main_thread, SIGTERM);
}
