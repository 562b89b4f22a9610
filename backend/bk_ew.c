/*
 * bk_ew.c — kernels_ew.cu's copy of an elementwise.h access (what plan measure launches for an
 * eager kernel), and one such kernel on host operands, for checking its results against a
 * reference (tests/backend/test_backend_gpu.c).
 */
#include <stdint.h>
#include <stdlib.h>

#include "bk_internal.h"

bkk_ew bk_ew_kernel(const ew_access *a)
{
    bkk_ew e;
    e.pattern = (int)a->pattern;
    for (int k = 0; k < 3; k++) {
        e.esize[k] = a->esize[k];
        e.n[k] = a->n[k];
        for (int i = 0; i < 3; i++) e.stride[k][i] = a->stride[k][i];
    }
    return e;
}

cm_status bk_ew_run(bk_ctx *ctx, int dev, const ew_access *a, const void *in_a, const void *in_b,
                    void *out, char *err, size_t errlen)
{
    bkk_ew e = bk_ew_kernel(a);
    size_t bytes[3];
    for (int k = 0; k < 3; k++) bytes[k] = (size_t)ew_operand_elems(a, k) * (size_t)a->esize[k];
    size_t wsb = bkk_ew_workspace_bytes(&e, ctx->sms);
    const void *host_in[3] = {out, in_a, in_b};
    void *buf[4] = {NULL, NULL, NULL, NULL};
    cm_status st = CM_OK;
    cudaError_t r = cudaSetDevice(ctx->dev[dev]);
    cudaStream_t s = ctx->compute[dev];
    for (int k = 0; k < 3 && r == cudaSuccess; k++) {
        if (!bytes[k]) continue;
        r = cudaMalloc(&buf[k], bytes[k]);
        if (r == cudaSuccess && host_in[k])
            r = cudaMemcpy(buf[k], host_in[k], bytes[k], cudaMemcpyHostToDevice);
    }
    if (r == cudaSuccess && wsb) r = cudaMalloc(&buf[3], wsb);
    if (r == cudaSuccess) r = (cudaError_t)bkk_ew_launch(&e, buf[0], buf[1], buf[2], buf[3],
                                                         ctx->sms, s);
    if (r == cudaSuccess) r = cudaStreamSynchronize(s);
    if (r == cudaSuccess && bytes[0]) r = cudaMemcpy(out, buf[0], bytes[0], cudaMemcpyDeviceToHost);
    if (r != cudaSuccess)
        st = cm_fail(err, errlen, CM_EIO, "eager kernel (%s): %s", ew_pattern_name(a->pattern),
                     cudaGetErrorString(r));
    for (int k = 0; k < 4; k++)
        if (buf[k]) cudaFree(buf[k]);
    return st;
}
