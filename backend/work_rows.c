/*
 * work_rows.c — the per-expert loop's row counts per pass, a share of them new to the process
 * (work_rows.h says why and how).
 */
#include "work_rows.h"

#include <math.h>

void work_rows_init(work_rows *r, int c0, int experts, double share)
{
    r->c0 = c0 > 0 ? c0 : 1;
    r->experts = experts > 0 ? experts : 0;
    r->share = share > 0 ? (share < 1 ? share : 1) : 0;
    r->carry = 0;
    r->next_d = 1;
    r->issued_new = 0;
    r->exhausted = 0;
}

int work_rows_next(work_rows *r, int *counts, unsigned char *is_new)
{
    int e = r->experts;
    r->carry += r->share * e;
    int want = 2 * (int)floor(r->carry / 2 + 1e-9); /* whole pairs */
    if (want > e - e % 2) want = e - e % 2;
    r->carry -= want;
    int made = 0;
    for (int b = 0; b < e; b++) {
        counts[b] = r->c0;
        if (is_new) is_new[b] = 0;
    }
    for (int b = 0; b + 1 < e && made < want; b += 2) {
        if (r->next_d >= r->c0) { /* no unused pair left in [1, 2 c0 - 1] */
            r->exhausted += want - made;
            break;
        }
        counts[b] = r->c0 + r->next_d;
        counts[b + 1] = r->c0 - r->next_d;
        if (is_new) is_new[b] = is_new[b + 1] = 1;
        r->next_d++;
        made += 2;
    }
    r->issued_new += made;
    return made;
}
