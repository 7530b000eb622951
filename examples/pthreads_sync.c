/* pthreads example: every synchronisation kind corecast times, each one contended by
 * construction (a holder that sleeps until the others have asked, not timing luck), so
 * even a 1- or 2-core machine shows mutex, condition-variable, barrier, rwlock and
 * semaphore waits.
 *
 *   gcc -O2 -pthread examples/pthreads_sync.c -o pthreads_sync
 *   corecast run -- ./pthreads_sync [iterations (2000)] [threads (4)]
 *
 * Phases, separated by a pthread barrier (its waits are timed too):
 *   1. mutex:     thread 0 holds the mutex until every other thread has asked for it
 *                 (3 rounds), then all threads do shared work while holding it;
 *   2. condvar:   thread 0 produces into a bounded queue once every consumer is waiting on
 *                 the condition variable (counted under the queue's mutex), threads 1..
 *                 consume;
 *   3. rwlock:    thread 0 holds the write lock until every reader has asked for the read
 *                 lock, then updates the table the readers sum (3 rounds);
 *   4. semaphore: thread 0 posts the others' tokens only after they have asked for them
 *                 (3 rounds), then a pool of 2 slots is shared by all the threads.
 * Every checksum is a sum (mod 2^64) of values that do not depend on which thread did
 * what, so stdout is the same whatever the scheduling.  Exit status 0.
 */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define QUEUE_CAP 8
#define TABLE 64
#define FORCED_ROUNDS 3 /* each forced contention is repeated: one late thread cannot undo it */

static int nthreads = 4, iterations = 2000;
static pthread_barrier_t phase;

/* Deterministic work: a few hundred rounds of xorshift. */
static uint64_t mix(uint64_t x, int rounds) {
    x = x * 0x9E3779B97F4A7C15ull + 1;
    for (int r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

static void nap_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Waits (yielding) until *counter reaches want, then sleeps so that the threads that
 * announced themselves are certainly blocked in the call that follows their announcement. */
static void await_announced(int *counter, int want) {
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want)
        sched_yield();
    nap_ms(20);
}

/* ---- 1. mutex -------------------------------------------------------------------- */
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t mutex_sum;
static int mutex_asking;

static void phase_mutex(int id) {
    for (int round = 0; round < FORCED_ROUNDS; round++) {
        if (id == 0)
            pthread_mutex_lock(&mutex);
        pthread_barrier_wait(&phase);
        if (id == 0) {
            await_announced(&mutex_asking, (round + 1) * (nthreads - 1));
        } else {
            __atomic_fetch_add(&mutex_asking, 1, __ATOMIC_RELEASE);
            pthread_mutex_lock(&mutex);
        }
        mutex_sum += mix(1000 * round + id, 200);
        pthread_mutex_unlock(&mutex);
        pthread_barrier_wait(&phase);
    }
    /* Shared work under the lock, with a yield inside: the others queue up behind it. */
    for (int i = 0; i < iterations; i++) {
        pthread_mutex_lock(&mutex);
        mutex_sum += mix((uint64_t)id * iterations + i, 300);
        sched_yield();
        pthread_mutex_unlock(&mutex);
    }
}

/* ---- 2. condition variable: producer/consumer queue -------------------------------- */
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static uint64_t queue[QUEUE_CAP];
static int qhead, qlen, qdone, qwaiting;
static uint64_t consumed_sum;

static void phase_condvar(int id) {
    int consumers = nthreads - 1;
    if (id == 0) {
        pthread_mutex_lock(&qlock);
        /* Each consumer counts itself under qlock before it waits, and the wait releases
         * qlock: seeing them all here means they are all inside pthread_cond_wait. */
        while (qwaiting < consumers)
            pthread_cond_wait(&not_full, &qlock);
        pthread_mutex_unlock(&qlock);
        for (int i = 0; i < iterations * consumers; i++) {
            uint64_t item = mix(i, 50);
            pthread_mutex_lock(&qlock);
            while (qlen == QUEUE_CAP)
                pthread_cond_wait(&not_full, &qlock);
            queue[(qhead + qlen) % QUEUE_CAP] = item;
            qlen++;
            pthread_cond_signal(&not_empty);
            pthread_mutex_unlock(&qlock);
        }
        pthread_mutex_lock(&qlock);
        qdone = 1;
        pthread_cond_broadcast(&not_empty);
        pthread_mutex_unlock(&qlock);
        return;
    }
    uint64_t mine = 0;
    pthread_mutex_lock(&qlock);
    for (;;) {
        while (qlen == 0 && !qdone) {
            qwaiting++;
            pthread_cond_broadcast(&not_full); /* the producer waits for the count */
            pthread_cond_wait(&not_empty, &qlock);
        }
        if (qlen == 0)
            break;
        uint64_t item = queue[qhead];
        qhead = (qhead + 1) % QUEUE_CAP;
        qlen--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&qlock);
        mine += mix(item, 100);
        pthread_mutex_lock(&qlock);
    }
    consumed_sum += mine;
    pthread_mutex_unlock(&qlock);
}

/* ---- 3. rwlock ------------------------------------------------------------------------ */
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t table[TABLE];
static int readers_asking;
static pthread_mutex_t read_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t read_sum;

static void phase_rwlock(int id) {
    uint64_t mine = 0;
    for (int round = 0; round < FORCED_ROUNDS; round++) {
        if (id == 0)
            pthread_rwlock_wrlock(&rwlock);
        pthread_barrier_wait(&phase);
        if (id == 0) {
            await_announced(&readers_asking, (round + 1) * (nthreads - 1));
            for (int k = 0; k < TABLE; k++)
                table[k] = mix((uint64_t)round * TABLE + k, 20);
            pthread_rwlock_unlock(&rwlock);
        } else {
            __atomic_fetch_add(&readers_asking, 1, __ATOMIC_RELEASE);
            pthread_rwlock_rdlock(&rwlock);
            mine += table[id % TABLE];
            pthread_rwlock_unlock(&rwlock);
        }
        pthread_barrier_wait(&phase);
    }
    if (id != 0)
        for (int i = 0; i < iterations; i++) {
            pthread_rwlock_rdlock(&rwlock);
            mine += table[(i + id) % TABLE];
            pthread_rwlock_unlock(&rwlock);
        }
    pthread_mutex_lock(&read_lock);
    read_sum += mine;
    pthread_mutex_unlock(&read_lock);
}

/* ---- 4. semaphore --------------------------------------------------------------------- */
static sem_t slots, tokens;
static int token_asking;
static pthread_mutex_t sem_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sem_sum;

static void phase_semaphore(int id) {
    for (int round = 0; round < FORCED_ROUNDS; round++) {
        pthread_barrier_wait(&phase);
        if (id == 0) {
            await_announced(&token_asking, (round + 1) * (nthreads - 1));
            for (int k = 1; k < nthreads; k++)
                sem_post(&tokens);
        } else {
            __atomic_fetch_add(&token_asking, 1, __ATOMIC_RELEASE);
            sem_wait(&tokens);
        }
        pthread_barrier_wait(&phase);
    }
    /* Fewer slots than threads: the pool is contended while its holders yield. */
    uint64_t mine = 0;
    for (int i = 0; i < iterations; i++) {
        sem_wait(&slots);
        mine += mix((uint64_t)id * 7919 + i, 100);
        sched_yield();
        sem_post(&slots);
    }
    pthread_mutex_lock(&sem_lock);
    sem_sum += mine;
    pthread_mutex_unlock(&sem_lock);
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    phase_mutex(id);
    pthread_barrier_wait(&phase);
    phase_condvar(id);
    pthread_barrier_wait(&phase);
    phase_rwlock(id);
    pthread_barrier_wait(&phase);
    phase_semaphore(id);
    pthread_barrier_wait(&phase);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        iterations = atoi(argv[1]);
    if (argc > 2)
        nthreads = atoi(argv[2]);
    if (iterations < 1 || nthreads < 2 || nthreads > 256) {
        fprintf(stderr, "usage: %s [iterations >= 1] [threads 2..256]\n", argv[0]);
        return 2;
    }
    pthread_barrier_init(&phase, NULL, (unsigned)nthreads);
    sem_init(&slots, 0, 2);
    sem_init(&tokens, 0, 0);
    pthread_t th[256];
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&phase);
    sem_destroy(&slots);
    sem_destroy(&tokens);
    printf("threads %d iterations %d\n", nthreads, iterations);
    printf("mutex %016llx\n", (unsigned long long)mutex_sum);
    printf("queue %016llx\n", (unsigned long long)consumed_sum);
    printf("rwlock %016llx\n", (unsigned long long)read_sum);
    printf("semaphore %016llx\n", (unsigned long long)sem_sum);
    return 0;
}
