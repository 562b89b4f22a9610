/* schedule.c — pipeline chunk order (see schedule.h for the sources). */
#include "schedule.h"

int schedule_pipeline(int p, int v, int m, int s, schedule_op *out)
{
    int n = 0;
    if (v == 1) {
        int warm = p - s - 1 < m ? p - s - 1 : m;
        for (int i = 0; i < warm; i++) out[n++] = (schedule_op){i, 0, false};
        for (int i = 0; i < m - warm; i++) {
            out[n++] = (schedule_op){warm + i, 0, false};
            out[n++] = (schedule_op){i, 0, true};
        }
        for (int i = m - warm; i < m; i++) out[n++] = (schedule_op){i, 0, true};
        return n;
    }
    int total = m * v, group = p * v;
    int warm = (p - s - 1) * 2 + (v - 1) * p;
    if (m == p || warm > total) warm = total;
    int rest = total - warm;
#define MB(k) (((k) / group) * p + (k) % p)
#define CHUNK(k) (((k) % group) / p)
    for (int k = 0; k < warm; k++) out[n++] = (schedule_op){MB(k), CHUNK(k), false};
    for (int k = 0; k < rest; k++) {
        int f = warm + k;
        out[n++] = (schedule_op){MB(f), CHUNK(f), false};
        out[n++] = (schedule_op){MB(k), v - 1 - CHUNK(k), true};
    }
    for (int k = rest; k < total; k++) out[n++] = (schedule_op){MB(k), v - 1 - CHUNK(k), true};
#undef MB
#undef CHUNK
    return n;
}
