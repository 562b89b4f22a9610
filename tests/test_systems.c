/*
 * test_systems.c — the system presets and the topology of issue 22: every preset parses and
 * carries a source for every figure it gives; placement on a rack-scale NVLink domain (NVL72:
 * 4 GPUs per host, 72 per domain) keeps TP, EP and CP groups inside the domain and prices only
 * groups that leave it on the network; NVLS, mesh fabrics and power limits; the nccl-tests
 * reader on sample files written from the format nccl-tests documents (tests/data/nccl_tests).
 */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collective.h"
#include "compute.h"
#include "layout.h"
#include "nccl_tests.h"
#include "system.h"

/* cmocka before 1.1.6 has no assert_double_equal: |a - b| <= tol. */
#define assert_double_equal(a, b, tol)                                                          \
    do {                                                                                        \
        double a_ = (a), b_ = (b);                                                              \
        if (!(fabs(a_ - b_) <= (tol))) fail_msg("%s = %.9g, expected %.9g", #a, a_, b_);         \
    } while (0)

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static system_spec load(const char *name)
{
    system_spec s;
    char err[CM_ERRLEN];
    cm_status st = system_load(name, data_dir(), &s, err, sizeof err);
    if (st != CM_OK) fail_msg("%s: %s", name, err);
    return s;
}

/* Every preset file loads, and every field it gives (gpu.name aside) has a "sources" entry. */
static void test_presets_parse_and_cite(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/systems", data_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    int presets = 0;
    struct dirent *e;
    static const char *const sections[] = {"gpu", "node", "network", "host", "framework"};
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
        char name[256], path[1400];
        snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        system_spec s = load(name);
        assert_true(s.peak_bf16_flops_per_s > 0);
        assert_true(system_domain_gpus(&s) >= 1);
        json_error_t jerr;
        json_t *root = json_load_file(path, 0, &jerr);
        assert_non_null(root);
        const json_t *sources = json_object_get(root, "sources");
        if (!json_is_object(sources)) fail_msg("%s has no sources object", name);
        for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) {
            const json_t *sec = json_object_get(root, sections[i]);
            const char *key;
            const json_t *v;
            json_object_foreach((json_t *)sec, key, v) {
                (void)v;
                if (!strcmp(sections[i], "gpu") && !strcmp(key, "name")) continue;
                char full[128];
                snprintf(full, sizeof full, "%s.%s", sections[i], key);
                const json_t *src = json_object_get(sources, full);
                if (!json_is_string(src) || strlen(json_string_value(src)) < 10)
                    fail_msg("%s: %s has no source", name, full);
            }
        }
        json_decref(root);
        presets++;
    }
    closedir(d);
    assert_true(presets >= 14);
}

/* The new presets' key figures (datasheet arithmetic; data/systems/README.md). */
static void test_new_preset_figures(void **state)
{
    (void)state;
    system_spec g = load("gb200-nvl72");
    assert_int_equal(g.gpus_per_node, 4);
    assert_int_equal(system_domain_gpus(&g), 72);
    assert_double_equal(g.peak_bf16_flops_per_s, 2.5e15, 1);
    assert_double_equal(g.peak_fp4_flops_per_s, 10e15, 1);
    assert_double_equal(g.intra_bandwidth_bytes_per_s, 900e9, 1);
    assert_false(g.nvls_enabled);
    assert_true(g.nvls_busbw_bytes_per_s > 0);
    /* usable HBM: nvidia-smi's total less B200's 729 MiB nvidia-smi vs CUDA-visible gap
     * (data/systems/README.md "Capacity convention"): GB200 189471, B300 275040 and GB300
     * 284208 MiB -> 188742, 274311 and 283479 MiB */
    assert_double_equal(g.hbm_bytes, 197910000000.0, 1);
    assert_double_equal(load("b300").hbm_bytes, 274311.0 * 1048576, 1);
    assert_double_equal(load("gb300-nvl72").hbm_bytes, 283479.0 * 1048576, 1);
    system_spec h8 = load("h800");
    assert_double_equal(h8.intra_bandwidth_bytes_per_s, 200e9, 1);
    assert_double_equal(h8.intra_busbw_efficiency * h8.intra_bandwidth_bytes_per_s, 160e9, 1);
    system_spec mi = load("mi300x");
    assert_true(mi.scaleup_mesh);
    assert_double_equal(mi.peak_bf16_flops_per_s, 1307.4e12, 1);
    /* Existing presets: the domain is the host, nothing else new is set. */
    system_spec h = load("h100");
    assert_int_equal(system_domain_gpus(&h), h.gpus_per_node);
    assert_false(h.scaleup_mesh);
    assert_false(h.nvls_enabled);
    assert_double_equal(system_gemm_power_scale(&h), 1.0, 0);
}

/* NVL72: TP 8 crosses two 4-GPU hosts but stays inside the 72-GPU domain, on NVLink. */
static void test_nvl72_tp8_inside_domain(void **state)
{
    (void)state;
    system_spec s = load("gb200-nvl72");
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8;
    l.dp = 64;
    layout_group g = layout_tp_group(&s, &l);
    assert_false(g.spans_nodes);
    assert_int_equal(g.members_per_node, 8);
    double bytes = 256e6;
    double t = collective_time_s(&s, COLL_ALL_REDUCE, bytes, g);
    double nvlink = s.call_latency_s + s.intra_latency_s * 14 +
                    bytes * 2 * 7 / 8.0 / (s.intra_bandwidth_bytes_per_s * s.intra_busbw_efficiency);
    assert_double_equal(t, nvlink, 1e-12);
    char notes[1024];
    assert_int_equal(layout_domain_notes(&s, &l, notes, sizeof notes), 0);
    assert_non_null(strstr(notes, "TP 8 crosses hosts of 4 GPUs but stays inside the 72-GPU"));
    /* On h100 (8-GPU hosts = domains) the same TP 8 is inside a host; TP 16 spans nodes as
     * before. */
    system_spec h = load("h100");
    assert_false(layout_tp_group(&h, &l).spans_nodes);
    l.tp = 16;
    assert_true(layout_tp_group(&h, &l).spans_nodes);
}

/* EP 64 inside the domain: 64 does not divide 72, so the note says each domain runs whole
 * groups (8 GPUs left); CP 2 over TP 8 stays inside too. */
static void test_nvl72_ep64_inside_domain(void **state)
{
    (void)state;
    system_spec s = load("gb200-nvl72");
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 1;
    l.ep = 64;
    l.dp = 256;
    layout_group g = layout_ep_group(&s, &l);
    assert_false(g.spans_nodes);
    assert_int_equal(g.size, 64);
    char notes[1024];
    assert_int_equal(layout_domain_notes(&s, &l, notes, sizeof notes), 0);
    assert_non_null(strstr(notes, "EP 64"));
    assert_non_null(strstr(notes, "64 ranks of the job, 8 GPUs left"));
    /* The all-to-all of an EP 64 group runs on NVLink: faster than the same group on h100,
     * where it leaves the 8-GPU node. */
    system_spec h = load("h100");
    double t72 = collective_time_s(&s, COLL_ALL_TO_ALL, 64e6, g);
    double th = collective_time_s(&h, COLL_ALL_TO_ALL, 64e6, layout_ep_group(&h, &l));
    assert_true(t72 < th / 4);
    l.tp = 8;
    l.cp = 2;
    l.ep = 8;
    l.dp = 16;
    assert_false(layout_cp_group(&s, &l).spans_nodes);
}

/* A group of 144 spans two domains: members_per_node is per domain (72), its collectives are
 * priced on the scale-out network. */
static void test_nvl72_group_of_144_spans(void **state)
{
    (void)state;
    system_spec s = load("gb200-nvl72");
    layout_group g = layout_group_place(&s, 144, 1);
    assert_true(g.spans_nodes);
    assert_int_equal(g.members_per_node, 72);
    layout_group g2 = layout_group_place(&s, 144, 8); /* DP over TP 8 */
    assert_true(g2.spans_nodes);
    assert_int_equal(g2.members_per_node, 9);
    double bw = collective_busbw_bytes_per_s(&s, g2);
    double net = 9 * system_inter_bandwidth_per_gpu(&s) * s.inter_busbw_efficiency;
    assert_double_equal(bw, net, 1);
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.ep = 144;
    l.dp = 288;
    char notes[1024];
    assert_int_equal(layout_domain_notes(&s, &l, notes, sizeof notes), 1);
    assert_non_null(strstr(notes, "EP 144 spans 2 NVLink domains"));
    /* The latency of a spanning group is the network's. */
    assert_double_equal(collective_latency_s(&s, g), s.inter_latency_s, 0);
}

/* NVLS prices an in-domain all-reduce at its busbw only when enabled; never across domains. */
static void test_nvls_option(void **state)
{
    (void)state;
    system_spec s = load("gb200-nvl72");
    layout_group g = layout_group_place(&s, 8, 1);
    double off = collective_time_s(&s, COLL_ALL_REDUCE, 1e9, g);
    double ag_off = collective_time_s(&s, COLL_ALL_GATHER, 1e9, g);
    s.nvls_enabled = true;
    double on = collective_time_s(&s, COLL_ALL_REDUCE, 1e9, g);
    assert_true(on < off);
    assert_double_equal(collective_time_s(&s, COLL_ALL_GATHER, 1e9, g), ag_off, 0);
    layout_group far = layout_group_place(&s, 144, 1);
    s.nvls_enabled = false;
    double far_off = collective_time_s(&s, COLL_ALL_REDUCE, 1e9, far);
    s.nvls_enabled = true;
    assert_double_equal(collective_time_s(&s, COLL_ALL_REDUCE, 1e9, far), far_off, 0);
}

/* xGMI mesh: a group of n of the 8 uses n-1 of the 7 links (RCCL README). */
static void test_mesh_fabric(void **state)
{
    (void)state;
    system_spec s = load("mi300x");
    double full = collective_busbw_bytes_per_s(&s, layout_group_place(&s, 8, 1));
    double four = collective_busbw_bytes_per_s(&s, layout_group_place(&s, 4, 1));
    assert_double_equal(full, s.intra_bandwidth_bytes_per_s * s.intra_busbw_efficiency, 1);
    assert_double_equal(four, full * 3 / 7, 1);
}

/* A power limit below the TDP scales the GEMM rate by the cube root (an assumption) on a GPU
 * without a measured gpu.gemm_power_exponent (h100-nvl). */
static void test_power_limit(void **state)
{
    (void)state;
    system_spec s = load("h100-nvl");
    double t = compute_gemm_s(&s, 8192, 8192, 8192);
    s.power_limit_w = 350;
    assert_double_equal(system_gemm_power_scale(&s), cbrt(350.0 / 400.0), 1e-12);
    double t350 = compute_gemm_s(&s, 8192, 8192, 8192);
    assert_double_equal((t350 - s.gemm_overhead_s) / (t - s.gemm_overhead_s),
                        cbrt(400.0 / 350.0), 1e-9);
    s.power_limit_w = 500; /* above the TDP: no gain */
    assert_double_equal(system_gemm_power_scale(&s), 1.0, 0);
}

static const char *sample(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", NCCL_TESTS_DIR, name);
    return path;
}

static void test_nccl_tests_text(void **state)
{
    (void)state;
    nccl_tests_file f;
    char err[CM_ERRLEN];
    assert_true(nccl_tests_detect(sample("all_reduce_h100x8.txt")));
    assert_int_equal(nccl_tests_read(sample("all_reduce_h100x8.txt"), &f, err, sizeof err), CM_OK);
    assert_int_equal(f.nruns, 1);
    assert_int_equal(f.runs[0].op, COLL_ALL_REDUCE);
    assert_int_equal(f.runs[0].ranks, 8);
    assert_int_equal(f.runs[0].hosts, 1);
    assert_int_equal(f.runs[0].n, 14); /* 8 B .. 512 MiB by 4x */
    assert_double_equal(f.runs[0].obs[0].bytes, 8, 0);
    assert_double_equal(f.runs[0].obs[0].time_s, 22.00e-6, 1e-12);
    assert_double_equal(f.runs[0].obs[13].bytes, 536870912, 0);
    system_spec h = load("h100");
    assert_false(nccl_tests_spans_domains(&f.runs[0], &h));
    nccl_tests_free(&f);

    /* Two tests in one log: all_gather over 2 hosts, broadcast skipped. */
    assert_int_equal(nccl_tests_read(sample("two_tests_2nodes.txt"), &f, err, sizeof err), CM_OK);
    assert_int_equal(f.nruns, 1);
    assert_int_equal(f.skipped_runs, 1);
    assert_int_equal(f.runs[0].op, COLL_ALL_GATHER);
    assert_int_equal(f.runs[0].ranks, 16);
    assert_int_equal(f.runs[0].hosts, 2);
    assert_int_equal(f.runs[0].n, 6);
    /* 16 ranks on 2 hosts leave an 8-GPU node but fit in a 72-GPU NVLink domain. */
    assert_true(nccl_tests_spans_domains(&f.runs[0], &h));
    system_spec g = load("gb200-nvl72");
    assert_false(nccl_tests_spans_domains(&f.runs[0], &g));
    nccl_tests_free(&f);

    /* An older log: no "starting" line (the file name names the test), no root column. */
    assert_int_equal(nccl_tests_read(sample("reduce_scatter_perf_old.txt"), &f, err, sizeof err),
                     CM_OK);
    assert_int_equal(f.runs[0].op, COLL_REDUCE_SCATTER);
    assert_int_equal(f.runs[0].ranks, 4);
    assert_int_equal(f.runs[0].n, 6);
    assert_double_equal(f.runs[0].obs[0].bytes, 8388608, 0);
    assert_double_equal(f.runs[0].obs[0].time_s, 50.97e-6, 1e-12);
    nccl_tests_free(&f);
}

static void test_nccl_tests_json(void **state)
{
    (void)state;
    nccl_tests_file f;
    char err[CM_ERRLEN];
    assert_true(nccl_tests_detect(sample("alltoall_perf.json")));
    assert_int_equal(nccl_tests_read(sample("alltoall_perf.json"), &f, err, sizeof err), CM_OK);
    assert_int_equal(f.nruns, 1);
    assert_int_equal(f.runs[0].op, COLL_ALL_TO_ALL);
    assert_int_equal(f.runs[0].ranks, 8);
    assert_int_equal(f.runs[0].hosts, 1);
    assert_int_equal(f.runs[0].n, 6); /* the "nan" row is skipped */
    assert_double_equal(f.runs[0].obs[0].bytes, 1048576, 0);
    double t0 = 35.0 + 1048576 * 7.0 / 8 / 260e9 * 1e6;
    assert_double_equal(f.runs[0].obs[0].time_s, round(t0 * 1e6) / 1e12, 1e-12);
    /* The fit recovers the figures the sample was written with. */
    system_collective_fit fit;
    assert_int_equal(fit_collective(COLL_ALL_TO_ALL, 8, false, f.runs[0].obs, f.runs[0].n, &fit,
                                    err, sizeof err),
                     CM_OK);
    assert_double_equal(fit.alpha_s, 35e-6, 1e-8);
    assert_double_equal(fit.busbw_bytes_per_s, 260e9, 1e8);
    nccl_tests_free(&f);
}

static void test_nccl_tests_rejects(void **state)
{
    (void)state;
    nccl_tests_file f;
    char err[CM_ERRLEN];
    char calib[1024];
    snprintf(calib, sizeof calib, "%s/../bench/results/calibrate_h200x4.csv", data_dir());
    assert_false(nccl_tests_detect(calib));
    assert_false(nccl_tests_detect("/nonexistent/all_reduce_perf.txt"));
    assert_int_equal(nccl_tests_read("/nonexistent/x.txt", &f, err, sizeof err), CM_EIO);
    assert_int_equal(nccl_tests_op_of_name("./build/all_reduce_perf"), COLL_ALL_REDUCE);
    assert_int_equal(nccl_tests_op_of_name("alltoallv_perf"), -1);
    assert_int_equal(nccl_tests_op_of_name("sendrecv_perf"), COLL_SEND_RECV);
    assert_int_equal(nccl_tests_op_of_name("broadcast_perf"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_parse_and_cite),
        cmocka_unit_test(test_new_preset_figures),
        cmocka_unit_test(test_nvl72_tp8_inside_domain),
        cmocka_unit_test(test_nvl72_ep64_inside_domain),
        cmocka_unit_test(test_nvl72_group_of_144_spans),
        cmocka_unit_test(test_nvls_option),
        cmocka_unit_test(test_mesh_fabric),
        cmocka_unit_test(test_power_limit),
        cmocka_unit_test(test_nccl_tests_text),
        cmocka_unit_test(test_nccl_tests_json),
        cmocka_unit_test(test_nccl_tests_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
