/* native_event_cost.c: what heatline's native-frames event costs the thread it samples.
 *
 * A fixed loop is timed by the thread's CPU clock, alternately without and with a user-space
 * CPU-clock sampling event on the thread (as native.c opens it: IP only, a 2-page ring), 12
 * times each; the minimum of each is printed (interference from other work only adds). Build
 * and run: cc -O2 -DPERIOD_NS=2500000 bench/native_event_cost.c -o /tmp/cost && /tmp/cost */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PERIOD_NS
#define PERIOD_NS 2500000
#endif

static double thread_cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static volatile double sink;

static double loop(void) {
    double start = thread_cpu(), x = 1.0;
    for (long i = 0; i < 300000000; i++) x = x * 1.0000001 + 0.5;
    sink = x;
    return thread_cpu() - start;
}

int main(void) {
    double best[2] = {1e9, 1e9};
    size_t bytes = 3 * (size_t)sysconf(_SC_PAGESIZE);
    for (int round = 0; round < 12; round++) {
        for (int on = 0; on < 2; on++) {
            int fd = -1;
            void *ring = MAP_FAILED;
            if (on) {
                struct perf_event_attr attr;
                memset(&attr, 0, sizeof(attr));
                attr.size = sizeof(attr);
                attr.type = PERF_TYPE_SOFTWARE;
                attr.config = PERF_COUNT_SW_CPU_CLOCK;
                attr.sample_period = PERIOD_NS;
                attr.sample_type = PERF_SAMPLE_IP;
                attr.exclude_kernel = 1;
                attr.exclude_hv = 1;
                fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
                if (fd < 0) {
                    perror("perf_event_open");
                    return 1;
                }
                ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            }
            double took = loop();
            if (took < best[on]) best[on] = took;
            if (ring != MAP_FAILED) munmap(ring, bytes);
            if (fd >= 0) close(fd);
        }
    }
    printf("period %d us: min CPU without %.4f s, with %.4f s: %+.2f%%\n", PERIOD_NS / 1000,
           best[0], best[1], (best[1] / best[0] - 1) * 100);
    return 0;
}
