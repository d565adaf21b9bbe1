/* _burn.c: functions that burn a known amount of CPU in C, for the native-frames tests
 * (tests/integration/test_native_frames.py builds it with the system compiler, loads it with
 * ctypes and compares heatline's per-function shares with what these functions measured).
 *
 * Each burn_* function spins until the calling thread's CPU clock has advanced by `seconds`
 * and returns the CPU time it actually spent, in nanoseconds: the truth. Built with
 * -DBURN_PREFIX=x, the functions are named x_burn_a... instead (a second library whose names
 * differ). The loops differ so that the compiler cannot merge the functions.
 *
 * burn_thread_start runs them on a pthread of its own, which has no Python thread state (a C
 * library's own thread, as a BLAS pool's are); burn_thread_join waits for it and gives what
 * each function measured and the thread's kernel id. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef BURN_PREFIX
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define NAME(n) CAT(BURN_PREFIX, n)
#else
#define NAME(n) n
#endif

static int64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

volatile double sink;

__attribute__((noinline)) int64_t NAME(burn_a)(double seconds) {
    int64_t start = cpu_ns(), until = start + (int64_t)(seconds * 1e9), now;
    double x = 1.0;
    do {
        for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 0.5;
        sink = x;
    } while ((now = cpu_ns()) < until);
    return now - start;
}

__attribute__((noinline)) int64_t NAME(burn_b)(double seconds) {
    int64_t start = cpu_ns(), until = start + (int64_t)(seconds * 1e9), now;
    uint64_t h = 1469598103934665603u;
    do {
        for (int i = 0; i < 20000; i++) h = (h ^ (uint64_t)i) * 1099511628211u;
        sink = (double)h;
    } while ((now = cpu_ns()) < until);
    return now - start;
}

typedef struct burner {
    pthread_t thread;
    double a_seconds, b_seconds;
    int rounds;
    int64_t a_ns, b_ns, tid;
} burner;

static void *burner_main(void *arg) {
    burner *b = arg;
    b->tid = (int64_t)gettid();
    for (int i = 0; i < b->rounds; i++) {
        b->a_ns += NAME(burn_a)(b->a_seconds / b->rounds);
        b->b_ns += NAME(burn_b)(b->b_seconds / b->rounds);
    }
    return NULL;
}

void *NAME(burn_thread_start)(double a_seconds, double b_seconds, int rounds) {
    burner *b = calloc(1, sizeof(*b));
    if (b == NULL) return NULL;
    b->a_seconds = a_seconds;
    b->b_seconds = b_seconds;
    b->rounds = rounds;
    if (pthread_create(&b->thread, NULL, burner_main, b) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

/* out: the ns burn_a and burn_b measured, and the thread's kernel id. */
void NAME(burn_thread_join)(void *handle, int64_t *out) {
    burner *b = handle;
    pthread_join(b->thread, NULL);
    out[0] = b->a_ns;
    out[1] = b->b_ns;
    out[2] = b->tid;
    free(b);
}
