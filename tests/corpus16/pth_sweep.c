/* A tiny pthreads program for the corpus kit's test: THREADS workers share ITEMS items
 * through a mutex-protected counter.  usage: pth_sweep ITEMS THREADS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long next_item, items, sum;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        long i = next_item++;
        pthread_mutex_unlock(&lock);
        if (i >= items) return NULL;
        long local = 0;
        for (long k = 0; k < 20000; k++) local += (i * k) % 13;
        pthread_mutex_lock(&lock);
        sum += local;
        pthread_mutex_unlock(&lock);
    }
}

int main(int argc, char **argv) {
    items = argc > 1 ? atol(argv[1]) : 200;
    int n = argc > 2 ? atoi(argv[2]) : 2;
    if (n < 1) n = 1;
    pthread_t *t = malloc(sizeof *t * n);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    printf("%ld\n", sum);
    free(t);
    return 0;
}
