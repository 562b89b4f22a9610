// chunkcat_meta.cc — the host-side work of torch._chunk_cat's CUDA path that grows with the
// number of 2 KiB output blocks, re-enacted on the CPU alone (moe18, issue 20): a std::vector of
// int64 block -> tensor indices built tensor by tensor with insert(end, n, i), as
// aten/src/ATen/native/cuda/TensorShape.cu get_chunk_cat_metadata does (read there for the
// behaviour; nothing copied), then copied into a reused staging buffer (pack_vecs' memcpy into
// pinned memory). Times each call and counts the process's minor page faults around it.
// Modes: default glibc malloc; "nofault": mallopt keeps freed memory in the heap (no mmap, no
// trim), so the vector's pages are reused from the previous call.
// Build: g++ -O2 -o chunkcat_meta chunkcat_meta.cc ; run: ./chunkcat_meta [nofault]
#include <malloc.h>
#include <sys/resource.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

static long minflt()
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

int main(int argc, char **argv)
{
    bool nofault = argc > 1 && !strcmp(argv[1], "nofault");
    if (nofault) {
        mallopt(M_MMAP_THRESHOLD, 1 << 30);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
        mallopt(M_TOP_PAD, 64 << 20);
    }
    // one decoder layer's parameters (elements), as bench/realruns/host_probe.py lists them
    struct unit { const char *name; std::vector<double> numel; };
    std::vector<unit> units = {
        {"llama-3.2-1b", {2048.0 * 2048, 512.0 * 2048, 512.0 * 2048, 2048.0 * 2048, 2048, 2048,
                          8192.0 * 2048, 8192.0 * 2048, 2048.0 * 8192}},
        {"qwen3-30b-a3b", {4096.0 * 2048, 512.0 * 2048, 512.0 * 2048, 2048.0 * 4096, 2048, 2048, 128,
                           128, 128.0 * 2048, 128.0 * 1536 * 2048, 128.0 * 2048 * 768}},
        {"mixtral-8x7b", {4096.0 * 4096, 1024.0 * 4096, 1024.0 * 4096, 4096.0 * 4096, 4096, 4096,
                          8.0 * 4096, 8.0 * 28672 * 4096, 8.0 * 4096 * 14336}},
    };
    std::vector<int64_t> staging(4 << 20);
    for (auto &u : units) {
        std::vector<double> us, flt;
        double blocks = 0;
        for (int rep = 0; rep < 12; rep++) {
            long f0 = minflt();
            auto t0 = std::chrono::steady_clock::now();
            std::vector<int64_t> g;  // group_idx_to_tensor_idx: not reserved (data dependent)
            for (size_t i = 0; i < u.numel.size(); i++) {
                int64_t nb = (int64_t)((u.numel[i] * 4 + 2047) / 2048);  // fp32 out, 2 KiB blocks
                g.insert(g.end(), nb, (int64_t)i);
            }
            memcpy(staging.data(), g.data(), sizeof(int64_t) * std::min(g.size(), staging.size()));
            auto t1 = std::chrono::steady_clock::now();
            blocks = (double)g.size();
            us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            flt.push_back((double)(minflt() - f0));
        }
        std::sort(us.begin() + 2, us.end());
        std::sort(flt.begin() + 2, flt.end());
        double med = us[2 + (us.size() - 2) / 2], fm = flt[2 + (flt.size() - 2) / 2];
        printf("%-14s %-8s blocks %9.0f  median %9.1f us  %6.2f ns/block  minor faults %7.0f "
               "(%.2f per 512 blocks)\n", u.name, nofault ? "nofault" : "default", blocks, med,
               med * 1e3 / blocks, fm, fm * 512 / blocks);
    }
    return 0;
}
