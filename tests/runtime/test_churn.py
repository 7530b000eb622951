"""Thread churn: programs that make threads all the time (libgomp remakes its pool whenever a
team grows after shrinking; a thread per task) must not fill the library's per-thread
tables (native/core.c hands an exited thread's slot to the next new thread).

Nothing here depends on timing: the OpenMP program waits until the threads a smaller team
released have exited before it grows the team again, through a pthread key of its own
whose destructor runs after the library's (glibc runs a thread's key destructors in key
order, and the library makes its key in its constructor, before main), so the slots in
use never depend on how fast exiting threads get a CPU.  The pthreads program joins its
threads before it makes the next ones.
"""
from __future__ import annotations

import pytest

from .helpers import clean_env, events, read_lines, run

CALLS = 3000
TABLE = 1024  # CC_MAX_THREADS: more threads than this must have come and gone

# Alternating team sizes 4 and 2: libgomp ends the surplus pool threads at each shrink and
# makes new ones at each growth.  stderr says how many threads ran the region (each counts
# itself once, through a thread-local flag).
OMP_CHURN_C = r"""
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_key_t gone_key;
static int alive; /* workers that ran the region and have not finished exiting */
static int made;  /* threads that ran the region, the main one included */
static __thread int counted;

static void gone(void *p) { (void)p; __atomic_sub_fetch(&alive, 1, __ATOMIC_RELEASE); }

int main(int argc, char **argv) {
    long calls = argc > 1 ? atol(argv[1]) : 3000;
    double s = 0;
    pthread_key_create(&gone_key, gone);
    for (long c = 0; c < calls; c++) {
        int nt = (c % 2) ? 2 : 4;
#pragma omp parallel num_threads(nt) reduction(+ : s)
        {
            if (!counted) {
                counted = 1;
                __atomic_add_fetch(&made, 1, __ATOMIC_RELAXED);
                if (omp_get_thread_num() != 0) {
                    __atomic_add_fetch(&alive, 1, __ATOMIC_RELAXED);
                    pthread_setspecific(gone_key, &counted);
                }
            }
            for (int i = 0; i < 2000; i++)
                s += i * 1e-9;
        }
        /* The workers this team did not keep have finished exiting. */
        while (__atomic_load_n(&alive, __ATOMIC_ACQUIRE) > nt - 1)
            sched_yield();
    }
    printf("%.3f\n", s);
    fprintf(stderr, "threads made %d\n", made);
    return 0;
}
"""

# Threads made and joined one or two at a time, each taking a mutex LOCKS times.
PTHREAD_CHURN_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define LOCKS 7
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < LOCKS; i++) {
        pthread_mutex_lock(&m);
        total++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3000, made = 0;
    while (made < n) {
        pthread_t t[2];
        int k = made % 3 == 2 ? 1 : 2; /* one or two at a time */
        if (k > n - made)
            k = (int)(n - made);
        for (int i = 0; i < k; i++)
            if (pthread_create(&t[i], NULL, worker, NULL))
                return 2;
        for (int i = 0; i < k; i++)
            pthread_join(t[i], NULL);
        made += k;
    }
    printf("threads %ld locks %ld\n", made, total);
    return 0;
}
"""
LOCKS = 7


def tables_full(stderr: bytes) -> bool:
    return b"not recorded (tables full)" in stderr


def test_openmp_team_size_churn_reuses_slots(build, lib, tmp_path):
    prog = build("omp_churn", OMP_CHURN_C, "-fopenmp", "-pthread")
    env = clean_env(OMP_WAIT_POLICY="passive", OMP_DYNAMIC="false")
    plain = run([prog, CALLS], env=env)
    assert plain.returncode == 0
    made = int(plain.stderr.decode().split("threads made ")[1].split()[0])
    assert made > TABLE + 8, f"libgomp made only {made} threads: no churn to test"
    out = tmp_path / "cc.jsonl"
    proc = run([prog, CALLS], env=env, preload=lib, output=out)
    assert proc.returncode == 0
    assert proc.stdout == plain.stdout
    assert not tables_full(proc.stderr), proc.stderr.decode()
    lines = read_lines(out)
    (region,) = events(lines, "region")
    assert region["calls"] == CALLS
    (process,) = events(lines, "process")
    # At most four program threads alive at once (main and the 4-team's three workers).
    assert process["threads"] <= 8, process["threads"]
    (summary,) = events(lines, "summary")
    assert summary["overflow"] == 0


def test_pthreads_create_join_churn_counts_every_acquisition(build, lib, tmp_path):
    prog = build("pthread_churn", PTHREAD_CHURN_C, "-pthread")
    plain = run([prog, CALLS])
    assert plain.returncode == 0
    assert plain.stdout == f"threads {CALLS} locks {CALLS * LOCKS}\n".encode()
    out = tmp_path / "cc.jsonl"
    proc = run([prog, CALLS], preload=lib, output=out)
    assert proc.returncode == 0
    assert proc.stdout == plain.stdout
    assert not tables_full(proc.stderr), proc.stderr.decode()
    (process,) = events(read_lines(out), "process")
    # Every pthread mutex acquisition is counted (no sampling): the workers' and none else.
    assert process["counters"]["acquisitions"]["mutex"] == CALLS * LOCKS
    # Joined before the next ones start: main and at most two workers hold slots.
    assert process["threads"] <= 3, process["threads"]
    per_thread = process["per_thread"]
    assert sum(t["acquisitions"] for t in per_thread) == CALLS * LOCKS


# native/counters.c on its own, in a process that makes 1200 threads in batches of 100, each
# alive (past a CPU-time spin) while the batch is read: the task table holds live tasks
# only, and the task clock still holds every thread's CPU time.  Deterministic: a thread's
# schedstat time once it blocks is at least what its own CPU clock read before.
TASKS_C = r"""
#include "counters.c"

int cc_thread_count(void) { return 0; }
struct cc_thread *cc_thread_slot(int i) { (void)i; return NULL; }
int cc_slots_reused(void) { return 1; }
int cc_slot_vacant(const struct cc_thread *t) { (void)t; return 0; }
void cc_numa_open(void) {}
void cc_numa_read(struct cc_numa_counts *n) { (void)n; }
void cc_numa_after_fork(void) {}
void cc_numa_topology(void) {}
double cc_run_apart(void (*fn)(void *), void *arg) { fn(arg); return 0; }
int cc_numa_fds(int *out, int max) { (void)out; (void)max; return 0; }
void cc_numa_moved(void) {}
int cc_own_table_here(void) { return 0; }
int cc_apart_tid(void) { return 0; }
struct cc_config cc_cfg = {.output = "x"}; /* JSON Lines wanted: each task's sched is read too */
void cc_put_decimal(char **p, long v) { *p += sprintf(*p, "%ld", v); }

#include <pthread.h>
#define BATCH 100
static pthread_barrier_t spun, done;
static uint64_t spent_ns;

static void *spin(void *arg) {
    struct timespec ts;
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    while (ts.tv_sec == 0 && ts.tv_nsec < 1000000);
    __atomic_add_fetch(&spent_ns, (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec, __ATOMIC_RELAXED);
    pthread_barrier_wait(&spun);
    pthread_barrier_wait(&done);
    return arg;
}

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 12, most = 0;
    static struct cc_sample s;
    cc_sampler_baseline();
    for (int b = 0; b < batches; b++) {
        pthread_t t[BATCH];
        pthread_barrier_init(&spun, NULL, BATCH + 1);
        pthread_barrier_init(&done, NULL, BATCH + 1);
        for (int i = 0; i < BATCH; i++)
            if (pthread_create(&t[i], NULL, spin, NULL))
                return 2;
        pthread_barrier_wait(&spun);
        cc_sampler_read_counters(&s); /* the whole batch is alive */
        most = ntasks > most ? ntasks : most;
        pthread_barrier_wait(&done);
        for (int i = 0; i < BATCH; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&spun);
        pthread_barrier_destroy(&done);
    }
    cc_sampler_read_counters(&s);
    printf("%d %d %.9f %.9f\n", most, ntasks, s.counters[CC_CTR_TASK_CLOCK], spent_ns * 1e-9);
    return 0;
}
"""


def test_task_table_holds_live_tasks_and_keeps_their_time(build):
    from .helpers import NATIVE_SOURCE
    prog = build("tasks_churn", TASKS_C, f"-I{NATIVE_SOURCE}", "-pthread")
    proc = run([prog, 12])
    assert proc.returncode == 0, proc.stderr.decode()
    most, left, task_clock, spent = proc.stdout.split()
    assert int(most) <= 100 + 2  # a batch, the main thread, a task still leaving
    assert int(left) <= 2
    # Every thread's time counted once: at least what each spent, at most everything.
    assert float(task_clock) >= float(spent)
    assert float(task_clock) <= 1.25 * float(spent) + 0.3  # counted twice: over 2 x spent
