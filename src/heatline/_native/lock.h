/* lock.h: the engine lock's type: a mutex that, in debug builds (debug.h), records which thread
 * holds it, so that a function whose contract is "called with the engine lock held" can check
 * it (HL_ASSERT_ENGINE_LOCKED, engine_part.h) and taking it twice in one thread (which would
 * hang: it does not nest) fails a check instead.
 *
 * In a release build an hl_lock is its mutex alone and every function below is the pthread call
 * it wraps. The holder is kept with relaxed atomics: only the holder writes it while it holds
 * the lock, and a thread asking whether it holds the lock can only find its own id there if it
 * wrote it itself, so no ordering is needed. Used by engine.c, which owns the lock, and by the
 * sampler (sampler.h), which holds it for each tick and waits on a condition with it.
 */
#ifndef HEATLINE_LOCK_H
#define HEATLINE_LOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "debug.h"

typedef struct hl_lock {
    pthread_mutex_t mutex;
#if HL_DEBUG
    uintptr_t holder; /* the holding thread's pthread_self(), 0 when free */
#endif
} hl_lock;

#if HL_DEBUG
#define HL_LOCK_INITIALIZER {PTHREAD_MUTEX_INITIALIZER, 0}
#else
#define HL_LOCK_INITIALIZER {PTHREAD_MUTEX_INITIALIZER}
#endif

#if HL_DEBUG
static inline uintptr_t hl_lock_self(void) {
    return (uintptr_t)pthread_self();
}

/* Whether the calling thread holds the lock. Debug builds only. */
static inline int hl_lock_held(const hl_lock *lock) {
    return __atomic_load_n(&lock->holder, __ATOMIC_RELAXED) == hl_lock_self();
}

static inline void hl_lock_set_holder(hl_lock *lock, uintptr_t holder) {
    __atomic_store_n(&lock->holder, holder, __ATOMIC_RELAXED);
}
#else
#define hl_lock_set_holder(lock, holder) ((void)0)
#endif

static inline void hl_lock_acquire(hl_lock *lock) {
    HL_ASSERT(!hl_lock_held(lock)); /* it does not nest: this thread would wait for itself */
    pthread_mutex_lock(&lock->mutex);
    hl_lock_set_holder(lock, hl_lock_self());
}

/* 1 if the lock was free and is now held, else 0. */
static inline int hl_lock_try(hl_lock *lock) {
    HL_ASSERT(!hl_lock_held(lock));
    if (pthread_mutex_trylock(&lock->mutex) != 0) return 0;
    hl_lock_set_holder(lock, hl_lock_self());
    return 1;
}

static inline void hl_lock_release(hl_lock *lock) {
    HL_ASSERT(hl_lock_held(lock));
    hl_lock_set_holder(lock, 0);
    pthread_mutex_unlock(&lock->mutex);
}

/* pthread_cond_timedwait on the held lock, which is released while waiting and held again on
 * return (its holder record follows). Returns what pthread_cond_timedwait returned. */
static inline int hl_lock_wait(hl_lock *lock, pthread_cond_t *condition,
                               const struct timespec *until) {
    HL_ASSERT(hl_lock_held(lock));
    hl_lock_set_holder(lock, 0);
    int rc = pthread_cond_timedwait(condition, &lock->mutex, until);
    hl_lock_set_holder(lock, hl_lock_self());
    return rc;
}

/* In the child of fork(), where the thread that held it across the fork is the only one left:
 * a fresh, free lock. */
static inline void hl_lock_reinit(hl_lock *lock) {
    pthread_mutex_init(&lock->mutex, NULL);
    hl_lock_set_holder(lock, 0);
}

#endif
