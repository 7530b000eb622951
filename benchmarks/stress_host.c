/* The C hosts of benchmarks/stress.py, one per first argument; every one prints only what
 * does not depend on scheduling, and writes out.txt in its working folder.
 *
 *   gcc -O2 -fopenmp -pthread benchmarks/stress_host.c -o stress_host
 *   ./stress_host omp|fork|sigterm|abort|thread-exit|signals|steer|nested
 *
 *   omp          regions, a task tree, an omp lock and a critical section; exit 0
 *   fork         an OpenMP region, a child that prints and exits 3, a child that execs
 *                `sh -c 'echo child; exit 4'`, then the program execs `echo exec'd`
 *   sigterm      OpenMP regions, then SIGTERM to itself while its team's threads live
 *   abort        OpenMP regions, then abort() (no core file: RLIMIT_CORE 0)
 *   thread-exit  two threads run OpenMP regions without end; a third calls exit(5)
 *   signals      a SIGALRM every 200 us (no SA_RESTART) through OpenMP regions, a semaphore
 *                handed between two threads (sem_wait retried on EINTR) and a condvar;
 *                prints how many calls failed other than by EINTR (0)
 *   steer        two regions called 3000 times each (about 1 s at 2 threads on a 2-core
 *                VM): an integer reduction, and a loop whose every iteration takes a
 *                critical section (a convoy: steering and probing act on both); prints
 *                sums that are the same whatever the team size
 *   nested       teams inside teams at 2 active levels (omp_set_max_active_levels): a task
 *                made in a single block starts a team (run in the single's barrier), a single
 *                block makes tasks before and after a team it starts, then teams of one five
 *                deep at 8 levels (past the OMPT shim's depth); sums whatever the team size
 */
#include <omp.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t mix(uint64_t x, int rounds) {
    for (int r = 0; r < rounds; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

/* A sum over i of mix(i): the same whatever the team. */
static uint64_t region(int n, int rounds) {
    uint64_t s = 0;
#pragma omp parallel for reduction(+ : s) schedule(dynamic, 16)
    for (int i = 0; i < n; i++) s += mix((uint64_t)i + 1, rounds);
    return s;
}

static uint64_t tree(int depth) {
    if (depth == 0) return mix((uint64_t)depth + 7, 2000);
    uint64_t a = 0, b = 0;
#pragma omp task shared(a)
    a = tree(depth - 1);
#pragma omp task shared(b)
    b = tree(depth - 1);
#pragma omp taskwait
    return a + b + 1;
}

static void write_file(const char *text) {
    FILE *f = fopen("out.txt", "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int host_omp(void) {
    uint64_t s = 0, locked = 0, crit = 0, t = 0;
    for (int r = 0; r < 20; r++) s += region(4000, 100);
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel for
    for (int i = 0; i < 2000; i++) {
        uint64_t v = mix((uint64_t)i + 3, 50);
        omp_set_lock(&lock);
        locked += v;
        omp_unset_lock(&lock);
#pragma omp critical
        crit ^= v;
    }
    omp_destroy_lock(&lock);
#pragma omp parallel
#pragma omp single
    t = tree(9);
    char buf[256];
    snprintf(buf, sizeof buf, "omp %016llx lock %016llx critical %016llx tasks %016llx\n",
             (unsigned long long)s, (unsigned long long)locked, (unsigned long long)crit,
             (unsigned long long)t);
    write_file(buf);
    fputs(buf, stdout);
    return 0;
}

static int host_fork(void) {
    printf("parent %016llx\n", (unsigned long long)region(4000, 100));
    fflush(stdout);
    pid_t a = fork();
    if (a == 0) {
        /* serial: libgomp's team does not survive a fork (the child would hang, bare) */
        printf("child %016llx\n", (unsigned long long)mix(12345, 100000));
        exit(3);
    }
    int st = 0;
    waitpid(a, &st, 0);
    printf("child status %d\n", WEXITSTATUS(st));
    fflush(stdout);
    pid_t b = fork();
    if (b == 0) {
        execl("/bin/sh", "sh", "-c", "echo child; echo sh > out.txt; exit 4", (char *)NULL);
        _exit(127);
    }
    waitpid(b, &st, 0);
    printf("exec child status %d\n", WEXITSTATUS(st));
    fflush(stdout);
    execl("/bin/echo", "echo", "exec'd", (char *)NULL);
    return 126;
}

static int host_signal(int sig) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    uint64_t s = 0;
    for (int r = 0; r < 20; r++) s += region(4000, 100);
    printf("omp %016llx\n", (unsigned long long)s);
    write_file("before the signal\n");
    fflush(stdout);
    if (sig == SIGABRT) abort();
    raise(sig);
    return 1;
}

static void *spinner(void *arg) {
    (void)arg;
    for (;;) region(2000, 50);
    return NULL;
}

static void *leaver(void *arg) {
    (void)arg;
    for (int r = 0; r < 300; r++) region(2000, 50); /* some windows: the sampler and steering run */
    printf("leaving from a thread\n");
    write_file("left\n");
    exit(5);
}

static int host_thread_exit(void) {
    pthread_t t[3];
    pthread_create(&t[0], NULL, spinner, NULL);
    pthread_create(&t[1], NULL, spinner, NULL);
    pthread_create(&t[2], NULL, leaver, NULL);
    for (;;) pause();
    return 0;
}

static volatile sig_atomic_t ticks;
static void on_alarm(int sig) { (void)sig; ticks++; }
static sem_t ping, pong;
static int odd_errors;

static void *ponger(void *arg) {
    (void)arg;
    for (int i = 0; i < 3000; i++) {
        while (sem_wait(&ping) != 0)
            if (errno != EINTR) odd_errors++;
        sem_post(&pong);
    }
    return NULL;
}

static int host_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: blocking calls see EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    sem_init(&ping, 0, 0);
    sem_init(&pong, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, ponger, NULL);
    uint64_t s = 0;
    for (int i = 0; i < 3000; i++) {
        sem_post(&ping);
        while (sem_wait(&pong) != 0)
            if (errno != EINTR) odd_errors++;
        if (i % 100 == 0) s += region(2000, 20);
    }
    pthread_join(t, NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("omp %016llx odd errors %d\n", (unsigned long long)s, odd_errors);
    write_file("signals\n");
    return 0;
}

/* Steering and probing act here: many calls of two regions, one a critical-section convoy.
 * Every sum is of integers (wrapping, commutative), so any team size prints the same. */
static int host_steer(void) {
    uint64_t s = 0, crit = 0;
    int calls = 3000;
    for (int call = 0; call < calls; call++) {
        s += region(256, 1000);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < 32; i++) {
            uint64_t v = mix((uint64_t)call * 32 + i + 1, 200);
#pragma omp critical
            crit += mix(v, 2000);
        }
    }
    char buf[256];
    snprintf(buf, sizeof buf, "steer %016llx critical %016llx calls %d\n", (unsigned long long)s,
             (unsigned long long)crit, calls);
    write_file(buf);
    fputs(buf, stdout);
    return 0;
}

/* The shapes tests/runtime/test_nested_members.py checks, many times over (OMPT on libomp:
 * a paused member, a single block open around a nested team, a member not measured). */
static int host_nested(void) {
    uint64_t total = 0;
    static volatile long sink;
    omp_set_max_active_levels(2);
    for (int c = 0; c < 30; c++) {
#pragma omp parallel num_threads(2) shared(total)
        {
#pragma omp single
            {
#pragma omp task shared(total)
                {
#pragma omp critical
                    total += 1;
#pragma omp parallel for num_threads(2) shared(total)
                    for (int i = 0; i < 8; i++) {
#pragma omp critical
                        total += mix((uint64_t)i + 1, 20);
                    }
                }
            }
#pragma omp single
            {
                for (int i = 0; i < 3; i++) {
#pragma omp task
#pragma omp atomic
                    sink++;
                }
#pragma omp parallel num_threads(2)
#pragma omp single
                for (int i = 0; i < 4; i++) {
#pragma omp task
#pragma omp atomic
                    sink++;
                }
                for (int i = 0; i < 5; i++) {
#pragma omp task
#pragma omp atomic
                    sink++;
                }
            }
#pragma omp for
            for (int i = 0; i < 16; i++) {
#pragma omp critical
                total += mix((uint64_t)c * 16 + i + 1, 50);
            }
        }
    }
    omp_set_max_active_levels(8);
    for (int c = 0; c < 20; c++) {
#pragma omp parallel num_threads(1)
        for (int i = 0; i < 10; i++) {
#pragma omp task
#pragma omp atomic
            sink++;
        }
#pragma omp parallel num_threads(1)
#pragma omp parallel num_threads(1)
#pragma omp parallel num_threads(1)
#pragma omp parallel num_threads(1)
#pragma omp parallel num_threads(1)
#pragma omp atomic
        sink++;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "nested %016llx tasks %ld\n", (unsigned long long)total, (long)sink);
    write_file(buf);
    fputs(buf, stdout);
    return 0;
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "omp";
    if (!strcmp(m, "omp")) return host_omp();
    if (!strcmp(m, "fork")) return host_fork();
    if (!strcmp(m, "sigterm")) return host_signal(SIGTERM);
    if (!strcmp(m, "abort")) return host_signal(SIGABRT);
    if (!strcmp(m, "thread-exit")) return host_thread_exit();
    if (!strcmp(m, "signals")) return host_signals();
    if (!strcmp(m, "steer")) return host_steer();
    if (!strcmp(m, "nested")) return host_nested();
    fprintf(stderr, "usage: %s omp|fork|sigterm|abort|thread-exit|signals|steer|nested\n", argv[0]);
    return 2;
}
