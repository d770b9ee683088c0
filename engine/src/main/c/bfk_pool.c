/*
 * A fixed team of threads for the kernels. Every task claims its work in small pieces from a shared counter, so
 * whoever runs does the work: the caller starts at once and the members join as they get a core. The caller never
 * waits for a member that has not started: when its own claims run out every piece is taken, so it closes the task
 * to latecomers and waits only for the members inside it, each finishing one piece at most. Where several stages
 * share cores (a pipeline on one machine) a member descheduled by another process costs the step nothing, where a
 * fixed split made every phase wait for it.
 *
 * Between tasks of a step (microseconds apart) the team spins; after a while without work (between steps, which can
 * be milliseconds apart) a thread sleeps on a condition variable, so an idle worker takes no CPU from the processes
 * it shares cores with.
 */
#define _GNU_SOURCE
#include "bfk.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BFK_PAUSE() _mm_pause()
#else
#define BFK_PAUSE() ((void) 0)
#endif

/* How long a thread spins for the next task before it sleeps. */
#define SPIN_NANOS 200000L

/*
 * The task's state in one word, so that entering is one compare-and-swap against the task it was meant for:
 * generation (high 32 bits), closed (bit 31: the caller's claims ran out, latecomers stay out), members inside
 * (low 31 bits).
 */
#define GENERATION(state) ((unsigned) ((state) >> 32))
#define CLOSED (1ULL << 31)
#define INSIDE (CLOSED - 1)

struct bfk_pool {
    int threads;
    pthread_t *team;
    atomic_uint generation;
    _Atomic unsigned long long state;
    atomic_int sleepers;
    atomic_int stopping;
    atomic_int resting; /* the caller's step is over: sleep now rather than spin for a task that is milliseconds away */
    bfk_task task;
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t wake;
};

typedef struct {
    bfk_pool *pool;
    int ith;
} member;

static long now_nanos(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Joins task g unless the caller closed it (all its work is claimed) or has moved on to another. */
static int enter(bfk_pool *pool, unsigned g) {
    unsigned long long st = atomic_load_explicit(&pool->state, memory_order_acquire);
    while (GENERATION(st) == g && !(st & CLOSED)) {
        if (atomic_compare_exchange_weak_explicit(&pool->state, &st, st + 1, memory_order_acquire,
                                                  memory_order_acquire)) {
            return 1;
        }
    }
    return 0;
}

static void *member_loop(void *p) {
    member *m = (member *) p;
    bfk_pool *pool = m->pool;
    int ith = m->ith;
    free(m);
    unsigned seen = 0; /* the generation the pool was created with: a task run before this thread got here is still new */
    for (;;) {
        long since = now_nanos();
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen) {
            BFK_PAUSE();
            if (atomic_load_explicit(&pool->resting, memory_order_relaxed)
                || (++spins % 1024 == 0 && now_nanos() - since > SPIN_NANOS)) {
                pthread_mutex_lock(&pool->lock);
                atomic_fetch_add(&pool->sleepers, 1);
                /* sleepers is raised before generation is read again, and run() raises generation before it
                   reads sleepers (both sequentially consistent): either this thread sees the new task, or run()
                   sees a sleeper and wakes it */
                while ((g = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->stopping)) {
                    pthread_cond_wait(&pool->wake, &pool->lock);
                }
                atomic_fetch_sub(&pool->sleepers, 1);
                pthread_mutex_unlock(&pool->lock);
                break;
            }
        }
        if (atomic_load(&pool->stopping)) {
            return NULL;
        }
        seen = g;
        if (enter(pool, g)) {
            pool->task(pool->arg, ith, pool->threads);
            atomic_fetch_sub_explicit(&pool->state, 1, memory_order_release);
        }
    }
}

bfk_pool *bfk_pool_create(int threads) {
    if (threads < 1) {
        threads = 1;
    }
    bfk_pool *pool = calloc(1, sizeof(bfk_pool));
    if (!pool) {
        return NULL;
    }
    pool->threads = threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pool->team = calloc((size_t) threads, sizeof(pthread_t));
    for (int i = 1; i < threads; i++) {
        member *m = malloc(sizeof(member));
        m->pool = pool;
        m->ith = i;
        if (pthread_create(&pool->team[i], NULL, member_loop, m) != 0) {
            free(m);
            pool->threads = i; /* run with the threads that started */
            break;
        }
    }
    return pool;
}

int bfk_pool_threads(const bfk_pool *pool) {
    return pool->threads;
}

void bfk_pool_run(bfk_pool *pool, bfk_task task, void *arg) {
    if (pool->threads == 1) {
        task(arg, 0, 1);
        return;
    }
    pool->task = task;
    pool->arg = arg;
    unsigned g = atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1;
    atomic_store_explicit(&pool->state, (unsigned long long) g << 32, memory_order_release);
    atomic_store_explicit(&pool->resting, 0, memory_order_relaxed);
    atomic_store(&pool->generation, g); /* seq_cst, as the sleepers' count: see member_loop */
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->lock);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
    }
    task(arg, 0, pool->threads);
    /* Every piece is claimed: close the task, then wait for the members inside to finish theirs (a piece each at
       most), yielding now and then in case one of them waits for this very core. */
    atomic_fetch_or_explicit(&pool->state, CLOSED, memory_order_acq_rel);
    for (unsigned spins = 1; atomic_load_explicit(&pool->state, memory_order_acquire) & INSIDE; spins++) {
        BFK_PAUSE();
        if (spins % 4096 == 0) {
            sched_yield();
        }
    }
}

/*
 * The caller's step is over. Its team would spin for the next task up to SPIN_NANOS; between steps the next task is a
 * network hop away, and where several stages share cores (a pipeline on one machine) that spin takes a core from the
 * stage computing now. The next bfk_pool_run wakes the team (one wake-up a step).
 */
void bfk_pool_rest(bfk_pool *pool) {
    if (pool) {
        atomic_store_explicit(&pool->resting, 1, memory_order_relaxed);
    }
}

void bfk_pool_destroy(bfk_pool *pool) {
    if (!pool) {
        return;
    }
    atomic_store(&pool->stopping, 1);
    atomic_fetch_add(&pool->generation, 1);
    pthread_mutex_lock(&pool->lock);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i < pool->threads; i++) {
        pthread_join(pool->team[i], NULL);
    }
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->wake);
    free(pool->team);
    free(pool);
}
