/*
 * report_threads.c — one worker function on every core (see report_threads.h).
 */
#include "report_threads.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

enum { MAX_THREADS = 16 };

int report_threads(void)
{
    const char *env = getenv("PLAN_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > MAX_THREADS) n = MAX_THREADS;
    return (int)n;
}

void report_on_threads(void *(*fn)(void *), void *arg, int max)
{
    int n = report_threads();
    if (n > max) n = max;
    pthread_t tid[MAX_THREADS];
    int started = 0;
    for (int k = 1; k < n; k++) {
        if (pthread_create(&tid[k], NULL, fn, arg) != 0) break;
        started = k;
    }
    fn(arg); /* this thread works too */
    for (int k = 1; k <= started; k++) pthread_join(tid[k], NULL);
}
