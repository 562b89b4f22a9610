/* calib.c — the calibrate sweep and its CSV schema (see calib.h). */
#include "calib.h"

#include <csv.h>
#include <stdio.h>
#include <string.h>

const char *const calib_csv_columns[] = {
    "op", "dtype", "name", "m", "n", "k", "bytes", "group_size", "span", "time_s",
    "algbw_bytes_per_s", "busbw_bytes_per_s", "tflops", "check_error", "spread",
};
const int calib_csv_ncolumns = (int)(sizeof calib_csv_columns / sizeof *calib_csv_columns);

cm_status calib_parse_ops(const char *list, unsigned *mask, char *err, size_t errlen)
{
    *mask = 0;
    if (!list || !*list)
        return cm_fail(err, errlen, CM_EINVAL,
                       "--ops needs a comma-separated list: gemm, gemm_fp8, gemm_fp8_blockwise, "
                       "all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, "
                       "collectives or all");
    char buf[256];
    if (strlen(list) >= sizeof buf) /* was cut at 255 characters, dropping the names past it */
        return cm_fail(err, errlen, CM_EINVAL,
                       "--ops list is %zu characters, over %zu: name each operation once",
                       strlen(list), sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char name[64];
        size_t j = 0;
        for (const char *p = tok; *p && j + 1 < sizeof name; p++)
            if (*p != '_' && *p != '-') name[j++] = *p; /* all_reduce, all-reduce, allreduce */
        name[j] = '\0';
        if (!strcmp(name, "all")) {
            *mask |= CALIB_ALL;
            continue;
        }
        if (!strcmp(name, "gemm")) {
            *mask |= CALIB_GEMM;
            continue;
        }
        if (!strcmp(name, "gemmfp8")) {
            *mask |= CALIB_GEMM_FP8;
            continue;
        }
        if (!strcmp(name, "gemmfp8blockwise")) {
            *mask |= CALIB_GEMM_FP8_BLOCK;
            continue;
        }
        if (!strcmp(name, "collectives")) {
            *mask |= CALIB_ALL & ~CALIB_GEMMS;
            continue;
        }
        int found = 0;
        for (int op = 0; op < COLL_COUNT; op++) {
            char cn[64];
            size_t q = 0;
            for (const char *p = collective_get(op)->name; *p; p++)
                if (*p != '_') cn[q++] = *p;
            cn[q] = '\0';
            if (!strcmp(name, cn)) {
                *mask |= CALIB_COLL(op);
                found = 1;
            }
        }
        if (!found)
            return cm_fail(err, errlen, CM_EINVAL,
                           "--ops: unknown operation '%s': use gemm, gemm_fp8, "
                           "gemm_fp8_blockwise, all_reduce, all_gather, reduce_scatter, "
                           "all_to_all, send_recv, collectives or all",
                           tok);
    }
    if (!*mask) /* "," or ",,": no operation named, and calibrate ran nothing with exit 0 */
        return cm_fail(err, errlen, CM_EINVAL,
                       "--ops names no operation in '%s': give gemm, gemm_fp8, "
                       "gemm_fp8_blockwise, all_reduce, all_gather, reduce_scatter, all_to_all, "
                       "send_recv, collectives or all",
                       list);
    return CM_OK;
}

int calib_gemm_shapes(const model_spec *m, long tokens, calib_shape *out, int max)
{
    int n = 0;
    static const int tps[] = {1, 2, 4, 8};
    long h = m->hidden, q = model_q_dim(m), kv = model_kv_dim(m);
    long gate = m->activation == MODEL_ACT_SWIGLU ? 2 : 1;
    for (size_t i = 0; i < sizeof tps / sizeof *tps; i++) {
        int t = tps[i];
        if (m->heads % t || m->kv_heads % t || m->ffn % t) continue;
        struct { const char *nm; long nn, kk; } s[4] = {
            {"qkv", (q + 2 * kv) / t, h},
            {"attn_out", h, q / t},
            {"mlp_up", gate * m->ffn / t, h},
            {"mlp_down", h, m->ffn / t},
        };
        for (int j = 0; j < 4 && n < max; j++) {
            snprintf(out[n].name, sizeof out[n].name, "%s.tp%d", s[j].nm, t);
            out[n].m = tokens;
            out[n].n = s[j].nn;
            out[n].k = s[j].kk;
            n++;
        }
    }
    if (n < max) {
        snprintf(out[n].name, sizeof out[n].name, "square8192");
        out[n].m = out[n].n = out[n].k = 8192;
        n++;
    }
    return n;
}

int calib_sizes(size_t max_bytes, size_t *out, int max)
{
    int n = 0;
    size_t s = 1024;
    for (; s <= max_bytes && n < max; s *= 4) out[n++] = s;
    if (n < max && (n == 0 || out[n - 1] != max_bytes) && max_bytes >= 1024) out[n++] = max_bytes;
    return n;
}

static int field(FILE *f, const char *s, int last)
{
    if (csv_fwrite(f, s, strlen(s)) != 0) return -1;
    return fputc(last ? '\n' : ',', f) == EOF ? -1 : 0;
}

int calib_csv_header(FILE *f)
{
    for (int i = 0; i < calib_csv_ncolumns; i++)
        if (field(f, calib_csv_columns[i], i + 1 == calib_csv_ncolumns)) return -1;
    return 0;
}

int calib_csv_row(FILE *f, const calib_row *r)
{
    char v[15][64];
    snprintf(v[0], 64, "%s", r->op);
    snprintf(v[1], 64, "%s", r->dtype);
    snprintf(v[2], 64, "%s", r->name ? r->name : "");
    snprintf(v[3], 64, "%ld", r->m);
    snprintf(v[4], 64, "%ld", r->n);
    snprintf(v[5], 64, "%ld", r->k);
    snprintf(v[6], 64, "%.0f", r->bytes);
    snprintf(v[7], 64, "%d", r->group_size);
    snprintf(v[8], 64, "%s", r->span);
    snprintf(v[9], 64, "%.6e", r->time_s);
    snprintf(v[10], 64, "%.6e", r->algbw_bytes_per_s);
    snprintf(v[11], 64, "%.6e", r->busbw_bytes_per_s);
    snprintf(v[12], 64, "%.3f", r->tflops);
    snprintf(v[13], 64, "%.3g", r->check_error);
    snprintf(v[14], 64, "%.4f", r->spread);
    for (int i = 0; i < 15; i++)
        if (field(f, v[i], i == 14)) return -1;
    return 0;
}
