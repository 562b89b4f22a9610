/*
 * report_threads.h — internal to libreport: runs one worker function on every core, the way
 * `plan report` spreads its searches (report_analysis.c) and its PNG charts (doc_writer.c):
 * as many threads as the cores online (PLAN_THREADS overrides it, as for plan's own search),
 * at most 16, the calling thread one of them. The workers share their work through their
 * argument, under their own lock.
 */
#ifndef PLAN_REPORT_THREADS_H
#define PLAN_REPORT_THREADS_H

/* How many threads report_on_threads runs. */
int report_threads(void);

/* fn(arg) on report_threads() threads, at most max of them (at least one), this one included;
 * returns when all have. A thread that cannot be started leaves its share to the others. */
void report_on_threads(void *(*fn)(void *), void *arg, int max);

#endif
