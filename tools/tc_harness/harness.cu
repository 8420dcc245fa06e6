// Accuracy and timing driver of the trailing_tc kernel
// (crates/qr-gpu/src/kernels/trailing_tc/, its files joined by run.sh), beside the cuBLAS
// three-SGEMM trailing update it would replace.
//
//   harness KERNEL.cu [PRELUDE.cu] [OUTDIR]
//
// The kernel is compiled the way qr-gpu compiles it: NVRTC, sm_90, no CUDA
// headers, every tile parameter a -D define; so each variant below is one
// NVRTC compile, loaded through the driver API. Accuracy: float64 reference
// on the GPU from the same float32 inputs, with real Householder (V, T) of
// each distribution. Timing: CUDA events around one launch (or the three
// SGEMMs), L2 flushed before each repetition, median.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "host.h"

struct Variant {
    const char* name;
    int split, bn, warps, minb, flush, vec4;
    bool timed;
    CUmodule mod = nullptr;
    CUfunction fn = nullptr;
    int regs = 0, local = 0, occ = 0;
};

static std::string read_file(const char* path) {
    std::ifstream f(path);
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// NVRTC compile of `src`; returns the cubin (empty on failure, log printed).
static std::vector<char> nvrtc_compile(const std::string& src, const char* name,
                                       const std::vector<std::string>& defs, bool verbose) {
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), name, 0, nullptr, nullptr) != NVRTC_SUCCESS) exit(2);
    std::vector<std::string> opts = {"--gpu-architecture=sm_90", "-std=c++17",
                                     "--ptxas-options=-v"};
    for (auto& d : defs) opts.push_back(d);
    std::vector<const char*> o;
    for (auto& s : opts) o.push_back(s.c_str());
    const nvrtcResult r = nvrtcCompileProgram(prog, (int)o.size(), o.data());
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    std::vector<char> cubin;
    if (r != NVRTC_SUCCESS) {
        printf("NVRTC FAILED (%s) for %s:\n%s\n", nvrtcGetErrorString(r), name, log.c_str());
    } else {
        if (verbose) {
            std::istringstream ls(log);
            for (std::string line; std::getline(ls, line);)
                if (line.find("registers") != std::string::npos ||
                    line.find("spill") != std::string::npos)
                    printf("    %s\n", line.c_str());
        }
        nvrtcGetCUBINSize(prog, &n);
        cubin.resize(n);
        nvrtcGetCUBIN(prog, cubin.data());
    }
    nvrtcDestroyProgram(&prog);
    return cubin;
}

static void build(Variant& v, const std::string& src, const char* outdir, bool dump) {
    std::vector<std::string> defs = {
        "-DTC_SPLIT=" + std::to_string(v.split), "-DTC_BN=" + std::to_string(v.bn),
        "-DTC_WARPS=" + std::to_string(v.warps), "-DTC_MIN_BLOCKS=" + std::to_string(v.minb),
        "-DTC_FLUSH=" + std::to_string(v.flush), "-DTC_VEC4=" + std::to_string(v.vec4),
        "-DTC_STAGE=0"};
    printf("  %-18s", v.name);
    for (auto& d : defs) printf(" %s", d.c_str());
    printf("\n");
    std::vector<char> cubin = nvrtc_compile(src, "trailing_tc.cu", defs, true);
    if (cubin.empty()) exit(3);
    if (dump && outdir) {
        std::string p = std::string(outdir) + "/" + v.name + ".cubin";
        FILE* f = fopen(p.c_str(), "wb");
        if (f) {
            fwrite(cubin.data(), 1, cubin.size(), f);
            fclose(f);
        }
    }
    CU_OK(cuModuleLoadData(&v.mod, cubin.data()));
    CU_OK(cuModuleGetFunction(&v.fn, v.mod, "trailing_tc_apply_f32"));
    CU_OK(cuFuncGetAttribute(&v.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, v.fn));
    CU_OK(cuFuncGetAttribute(&v.local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, v.fn));
    CU_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&v.occ, v.fn, v.warps * 32, 0));
    printf("    regs %d, local %d B, resident blocks/SM %d (%d warps)\n", v.regs, v.local, v.occ,
           v.occ * v.warps);
}

// One matrix set on the device: batch matrices n x n (stride n*n), V per
// matrix n x 32 (stride n*32), T per matrix 32 x 32.
struct Problem {
    int n, batch, r0, c0, nrow, ntrail;
    float *a, *v, *t;
    int* zcol;  // per matrix: n (no zero columns to skip)
    float* a2() const { return a + (size_t)r0 * n + c0; }
    long long as() const { return (long long)n * n; }
    long long vs() const { return (long long)n * kNb; }
};

static void launch_tc(const Variant& var, const Problem& p, cudaStream_t st) {
    float* a2 = p.a2();
    long long as = p.as(), vs = p.vs(), ts = kNb * kNb;
    int lda = p.n, nrow = p.nrow, ntrail = p.ntrail, w = kNb;
    const float* v = p.v;
    const float* t = p.t;
    const float* src = a2;  // in place
    const unsigned tiles = (unsigned)((ntrail + var.bn - 1) / var.bn);
    const int* zcol = p.zcol;
    int panel_col = p.c0 - kNb;
    void* args[] = {&a2, &src, &as, &lda, &v, &vs, &t, &ts, &nrow, &ntrail, &w, &zcol, &panel_col};
    CU_OK(cuLaunchKernel(var.fn, tiles * (unsigned)p.batch, 1, 1, (unsigned)var.warps * 32, 1, 1,
                         0, (CUstream)st, args, nullptr));
}

// The three-GEMM update in float32 (default math: no TF32). Row-major X is
// column-major X^T, so each product is written as its transpose.
static void launch_cublas(cublasHandle_t h, const Problem& p, float* w, float* w2) {
    const float one = 1.0f, zero = 0.0f, mone = -1.0f;
    const long long sw = (long long)kNb * p.ntrail;
    // W^T = A2^T V
    CUBLAS_OK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, p.ntrail, kNb, p.nrow, &one,
                                        p.a2(), p.n, p.as(), p.v, kNb, p.vs(), &zero, w, p.ntrail,
                                        sw, p.batch));
    // W2^T = W^T T
    CUBLAS_OK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, p.ntrail, kNb, kNb, &one, w,
                                        p.ntrail, sw, p.t, kNb, kNb * kNb, &zero, w2, p.ntrail, sw,
                                        p.batch));
    // A2^T -= W2^T V^T
    CUBLAS_OK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, p.ntrail, p.nrow, kNb, &mone,
                                        w2, p.ntrail, sw, p.v, kNb, p.vs(), &one, p.a2(), p.n,
                                        p.as(), p.batch));
}

// ---- float64 reference, one thread per output ----
__global__ void ref_w(const float* a2, long long as, int lda, const float* v, long long vs,
                      int nrow, int ntrail, double* w) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y, b = blockIdx.z;
    if (j >= ntrail) return;
    double s = 0.0;
    for (int i = 0; i < nrow; ++i)
        s += (double)v[b * vs + (long long)i * kNb + r] * (double)a2[b * as + (long long)i * lda + j];
    w[((long long)b * kNb + r) * ntrail + j] = s;
}
__global__ void ref_w2(const float* t, const double* w, int ntrail, double* w2) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y, b = blockIdx.z;
    if (j >= ntrail) return;
    double s = 0.0;
    for (int r = 0; r <= c; ++r)
        s += (double)t[b * kNb * kNb + r * kNb + c] * w[((long long)b * kNb + r) * ntrail + j];
    w2[((long long)b * kNb + c) * ntrail + j] = s;
}
__global__ void ref_out(const float* a2, long long as, int lda, const float* v, long long vs,
                        const double* w2, int nrow, int ntrail, double* out) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y, b = blockIdx.z;
    if (j >= ntrail) return;
    double s = a2[b * as + (long long)i * lda + j];
    for (int r = 0; r < kNb; ++r)
        s -= (double)v[b * vs + (long long)i * kNb + r] * w2[((long long)b * kNb + r) * ntrail + j];
    out[((long long)b * nrow + i) * ntrail + j] = s;
}

// Uniform(-1, 1) fill from a hash of the index: timing data, never zeros.
__global__ void fill_uniform(float* x, size_t len, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < len;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 0x9E3779B1u ^ seed ^ (uint32_t)(i >> 32) * 0x85EBCA77u;
        h ^= h >> 16;
        h *= 0x7FEB352Du;
        h ^= h >> 15;
        h *= 0x846CA68Bu;
        h ^= h >> 16;
        x[i] = (float)((h >> 8) * (2.0 / 16777216.0) - 1.0) + 1.0f / 33554432.0f;
    }
}

// V and T of `batch` matrices from the panels of `distinct` host matrices
// (reused cyclically), for a problem whose block starts at (r0, c0 = r0 + 32).
static void upload_vt(const Problem& p, const std::vector<std::vector<float>>& mats) {
    std::vector<float> v((size_t)p.batch * p.vs(), 0.0f), t((size_t)p.batch * kNb * kNb);
    std::vector<float> pv((size_t)p.nrow * kNb), pt(kNb * kNb);
    for (size_t m = 0; m < mats.size() && m < (size_t)p.batch; ++m) {
        panel_vt(p.nrow, kNb, mats[m].data() + (size_t)p.r0 * p.n + p.r0, p.n, pv.data(), pt.data());
        for (size_t b = m; b < (size_t)p.batch; b += mats.size()) {
            std::copy(pv.begin(), pv.end(), v.begin() + b * p.vs());
            std::copy(pt.begin(), pt.end(), t.begin() + b * kNb * kNb);
        }
    }
    CUDA_OK(cudaMemcpy(p.v, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(p.t, t.data(), t.size() * 4, cudaMemcpyHostToDevice));
}

static Problem alloc_problem(int n, int batch, int panel) {
    Problem p;
    p.n = n;
    p.batch = batch;
    p.r0 = panel * kNb;
    p.c0 = p.r0 + kNb;
    p.nrow = n - p.r0;
    p.ntrail = n - p.c0;
    CUDA_OK(cudaMalloc(&p.a, (size_t)batch * n * n * 4));
    CUDA_OK(cudaMalloc(&p.v, (size_t)batch * n * kNb * 4));
    CUDA_OK(cudaMalloc(&p.t, (size_t)batch * kNb * kNb * 4));
    {
        std::vector<int> z((size_t)batch, n);
        CUDA_OK(cudaMalloc(&p.zcol, (size_t)batch * 4));
        CUDA_OK(cudaMemcpy(p.zcol, z.data(), (size_t)batch * 4, cudaMemcpyHostToDevice));
    }
    return p;
}
static void free_problem(Problem& p) {
    cudaFree(p.a);
    cudaFree(p.v);
    cudaFree(p.t);
}

// ---- accuracy ----
static void accuracy(std::vector<Variant>& vars, cublasHandle_t h) {
    struct Case {
        int n, panel, batch;
        bool all_dists;
    };
    const Case cases[] = {{512, 0, 3, true},   {512, 14, 3, true},  {1024, 0, 3, true},
                          {1024, 30, 3, true}, {176, 0, 3, true},   {352, 5, 3, true},
                          {301, 0, 3, true},   {301, 8, 3, true},   {4096, 0, 1, false},
                          {2048, 40, 2, false}};
    const int nv = (int)vars.size();
    std::vector<Err> worst(nv + 1);  // last: cuBLAS
    std::vector<double> worst_ratio(nv, 0.0);
    std::vector<std::vector<Err>> by_dist(6, std::vector<Err>(nv + 1));
    printf("\n== accuracy: worst over the batch of rel_fro = ||out-ref||_F/||ref||_F and "
           "col_max = max_j ||out_j-ref_j||/||ref_j||; ref in float64\n");
    for (const Case& c : cases) {
        Problem p = alloc_problem(c.n, c.batch, c.panel);
        double *dw, *dw2, *dref;
        float *cw, *cw2;
        const size_t blk = (size_t)c.batch * p.nrow * p.ntrail;
        CUDA_OK(cudaMalloc(&dw, (size_t)c.batch * kNb * p.ntrail * 8));
        CUDA_OK(cudaMalloc(&dw2, (size_t)c.batch * kNb * p.ntrail * 8));
        CUDA_OK(cudaMalloc(&dref, blk * 8));
        CUDA_OK(cudaMalloc(&cw, (size_t)c.batch * kNb * p.ntrail * 4));
        CUDA_OK(cudaMalloc(&cw2, (size_t)c.batch * kNb * p.ntrail * 4));
        std::vector<double> ref(blk);
        std::vector<float> out((size_t)c.batch * c.n * c.n), orig(out.size());
        for (int di = 0; di < 6; ++di) {
            const Dist d = kAllDists[di];
            if (!c.all_dists && d != Dist::Dense && d != Dist::Rowscale) continue;
            std::vector<std::vector<float>> mats;
            for (int b = 0; b < c.batch; ++b) {
                mats.push_back(make_matrix(c.n, d, 1000 * c.n + 10 * c.panel + b + 100000 * di));
                std::copy(mats[b].begin(), mats[b].end(), orig.begin() + (size_t)b * c.n * c.n);
            }
            upload_vt(p, mats);
            CUDA_OK(cudaMemcpy(p.a, orig.data(), orig.size() * 4, cudaMemcpyHostToDevice));
            const dim3 blkd(128), g1((p.ntrail + 127) / 128, kNb, c.batch),
                g3((p.ntrail + 127) / 128, p.nrow, c.batch);
            ref_w<<<g1, blkd>>>(p.a2(), p.as(), c.n, p.v, p.vs(), p.nrow, p.ntrail, dw);
            ref_w2<<<g1, blkd>>>(p.t, dw, p.ntrail, dw2);
            ref_out<<<g3, blkd>>>(p.a2(), p.as(), c.n, p.v, p.vs(), dw2, p.nrow, p.ntrail, dref);
            CUDA_OK(cudaGetLastError());
            CUDA_OK(cudaMemcpy(ref.data(), dref, blk * 8, cudaMemcpyDeviceToHost));
            printf("  n %4d panel %2d (%4d x %4d) %-17s", c.n, c.panel, p.nrow, p.ntrail,
                   dist_name(d));
            std::vector<Err> errs(nv + 1);
            for (int k = 0; k <= nv; ++k) {
                if (k < nv && vars[k].vec4 && c.n % 4 != 0) continue;
                CUDA_OK(cudaMemcpy(p.a, orig.data(), orig.size() * 4, cudaMemcpyHostToDevice));
                if (k < nv)
                    launch_tc(vars[k], p, 0);
                else
                    launch_cublas(h, p, cw, cw2);
                CUDA_OK(cudaGetLastError());
                CUDA_OK(cudaDeviceSynchronize());
                CUDA_OK(cudaMemcpy(out.data(), p.a, out.size() * 4, cudaMemcpyDeviceToHost));
                Err e;
                for (int b = 0; b < c.batch; ++b)
                    e.worst_of(block_error(c.n, p.r0, p.c0, out.data() + (size_t)b * c.n * c.n,
                                           orig.data() + (size_t)b * c.n * c.n,
                                           ref.data() + (size_t)b * p.nrow * p.ntrail));
                errs[k] = e;
                worst[k].worst_of(e);
                by_dist[di][k].worst_of(e);
            }
            printf(" cublas %.2e/%.2e\n", errs[nv].rel_fro, errs[nv].col_max);
            for (int k = 0; k < nv; ++k) {
                if (vars[k].vec4 && c.n % 4 != 0) continue;
                const double ratio = errs[k].rel_fro / std::fmax(errs[nv].rel_fro, 1e-300);
                worst_ratio[k] = std::fmax(worst_ratio[k], ratio);
                printf("      %-20s rel_fro %.2e col_max %.2e (x%.2f cublas)%s\n", vars[k].name,
                       errs[k].rel_fro, errs[k].col_max, ratio,
                       errs[k].outside ? "  WROTE OUTSIDE THE BLOCK" : "");
            }
        }
        cudaFree(dw);
        cudaFree(dw2);
        cudaFree(dref);
        cudaFree(cw);
        cudaFree(cw2);
        free_problem(p);
    }
    printf("\n== accuracy summary (worst rel_fro / worst col_max per distribution, all shapes)\n");
    printf("%-20s", "variant");
    for (int di = 0; di < 6; ++di) printf(" | %-21s", dist_name(kAllDists[di]));
    printf(" | outside | max ratio to cublas\n");
    for (int k = 0; k <= nv; ++k) {
        printf("%-20s", k < nv ? vars[k].name : "cublas-sgemm");
        for (int di = 0; di < 6; ++di)
            printf(" | %.2e / %.2e", by_dist[di][k].rel_fro, by_dist[di][k].col_max);
        printf(" | %7lld | %s\n", worst[k].outside,
               k < nv ? std::to_string(worst_ratio[k]).c_str() : "-");
    }
}

// ---- timing ----
struct Timer {
    void* flush = nullptr;
    size_t flush_bytes = 256u << 20;
    std::vector<cudaEvent_t> ev;
    Timer() {
        CUDA_OK(cudaMalloc(&flush, flush_bytes));
        ev.resize(128);
        for (auto& e : ev) CUDA_OK(cudaEventCreate(&e));
    }
    // Median microseconds of `reps` runs of op, each after an L2 flush.
    template <class F>
    double median_us(int reps, F op) {
        for (int i = 0; i < 3; ++i) op();
        for (int i = 0; i < reps; ++i) {
            CUDA_OK(cudaMemsetAsync(flush, i & 0xff, flush_bytes, 0));
            CUDA_OK(cudaEventRecord(ev[2 * i], 0));
            op();
            CUDA_OK(cudaEventRecord(ev[2 * i + 1], 0));
        }
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaDeviceSynchronize());
        std::vector<double> t(reps);
        for (int i = 0; i < reps; ++i) {
            float ms = 0;
            CUDA_OK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
            t[i] = ms * 1e3;
        }
        std::sort(t.begin(), t.end());
        return t[reps / 2];
    }
};

static void timing(std::vector<Variant>& vars, cublasHandle_t h) {
    struct Shape {
        int n, batch;
        std::vector<int> panels;
    };
    const Shape shapes[] = {{512, 640, {0, 8, 14}},  {1024, 60, {0, 16, 30}}, {176, 40, {0, 3}},
                            {352, 40, {0, 5}},       {2048, 8, {0, 32, 60}},  {4096, 2, {0, 64, 120}}};
    Timer tm;
    std::vector<int> timed;
    for (int k = 0; k < (int)vars.size(); ++k)
        if (vars[k].timed) timed.push_back(k);
    printf("\n== timing: median us over 31 reps, L2 flushed; TB/s counts 8 bytes per A2 element "
           "(one read, one write)\n");
    printf("%-5s %-5s %-5s %-11s %9s", "n", "batch", "panel", "nrow x nt", "cublas");
    for (int k : timed) printf(" %20s", vars[k].name);
    printf("   best/cublas  best TB/s  best TFLOP/s\n");
    // Per shape: sums over every panel (the whole factorization's trailing work).
    for (const Shape& s : shapes) {
        std::vector<double> sum(vars.size() + 1, 0.0);
        Problem p0 = alloc_problem(s.n, s.batch, 0);
        fill_uniform<<<1024, 256>>>(p0.a, (size_t)s.batch * s.n * s.n, 12345u + s.n);
        CUDA_OK(cudaGetLastError());
        float *cw, *cw2;
        CUDA_OK(cudaMalloc(&cw, (size_t)s.batch * kNb * s.n * 4));
        CUDA_OK(cudaMalloc(&cw2, (size_t)s.batch * kNb * s.n * 4));
        std::vector<std::vector<float>> mats;
        for (int m = 0; m < 2; ++m) mats.push_back(make_matrix(s.n, Dist::Dense, 77 + m));
        const int npanels = (s.n - 1) / kNb;  // panels with trailing columns
        for (int panel = 0; panel < npanels; ++panel) {
            Problem p = p0;
            p.r0 = panel * kNb;
            p.c0 = p.r0 + kNb;
            p.nrow = s.n - p.r0;
            p.ntrail = s.n - p.c0;
            upload_vt(p, mats);
            const bool listed =
                std::find(s.panels.begin(), s.panels.end(), panel) != s.panels.end();
            const int reps = listed ? 31 : 11;
            std::vector<double> us(vars.size() + 1, 0.0);
            us[vars.size()] = tm.median_us(reps, [&] { launch_cublas(h, p, cw, cw2); });
            for (int k : timed) us[k] = tm.median_us(reps, [&] { launch_tc(vars[k], p, 0); });
            for (size_t k = 0; k <= vars.size(); ++k) sum[k] += us[k];
            if (!listed) continue;
            double best = 1e30;
            for (int k : timed) best = std::min(best, us[k]);
            const double elems = (double)s.batch * p.nrow * p.ntrail;
            printf("%-5d %-5d %-5d %4dx%-6d %9.1f", s.n, s.batch, panel, p.nrow, p.ntrail,
                   us[vars.size()]);
            for (int k : timed) printf(" %20.1f", us[k]);
            printf("   %10.2fx  %9.2f  %11.1f\n", us[vars.size()] / best, elems * 8 / best * 1e-6,
                   elems * 4 * kNb / best * 1e-6);
        }
        double best = 1e30;
        for (int k : timed) best = std::min(best, sum[k]);
        printf("%-5d %-5d %-5s %-11s %9.1f", s.n, s.batch, "ALL", "sum", sum[vars.size()]);
        for (int k : timed) printf(" %20.1f", sum[k]);
        printf("   %10.2fx\n", sum[vars.size()] / best);
        cudaFree(cw);
        cudaFree(cw2);
        free_problem(p0);
    }
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s KERNEL.cu [PRELUDE.cu] [OUTDIR]\n", argv[0]);
        return 2;
    }
    const std::string src = read_file(argv[1]);
    const char* outdir = argc > 3 ? argv[3] : nullptr;
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaFree(0));
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    int nvrtc_major = 0, nvrtc_minor = 0;
    nvrtcVersion(&nvrtc_major, &nvrtc_minor);
    printf("device %s, cc %d.%d, %d SMs, L2 %d MB, smem/SM %zu KB; NVRTC %d.%d\n", prop.name,
           prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize >> 20,
           prop.sharedMemPerMultiprocessor >> 10, nvrtc_major, nvrtc_minor);

    // Run 2 (tools/tc_harness/results/run2-h200.log) compared the splits and
    // BN 64 / 32; this list tunes the chosen tf32 BN = 32 with flush 1.
    // name, split, BN, warps, min blocks/SM, flush, vec4, timed (the
    // prefetching variants went with TC_PREFETCH: measured slower)
    std::vector<Variant> vars = {
        {"tf32_bn32_w8_f1", 0, 32, 8, 2, 1, 1, true},
        {"tf32_bn32_w8_f1#2", 0, 32, 8, 2, 1, 1, true},  // same build: the spread
        {"tf32_bn32_w4_f1", 0, 32, 4, 4, 1, 1, true},
        {"tf32_bn32_w8_f1_s", 0, 32, 8, 2, 1, 0, false}};
    printf("\n== NVRTC (header-free, --gpu-architecture=sm_90) builds\n");
    for (size_t k = 0; k < vars.size(); ++k) build(vars[k], src, outdir, k == 0);
    if (argc > 2) {
        // The engine joins the shared prelude in front of every family.
        const std::string joined = read_file(argv[2]) + "\n" + src;
        const std::vector<char> c = nvrtc_compile(
            joined, "prelude+trailing_tc.cu",
            {"-DTC_SPLIT=0", "-DTC_BN=32", "-DTC_WARPS=8", "-DTC_MIN_BLOCKS=2", "-DTC_FLUSH=1",
             "-DTC_VEC4=1", "-DTC_STAGE=0"},
            false);
        printf("  prelude.cu + trailing_tc.cu: %s\n", c.empty() ? "FAILED" : "compiles");
    }
    cublasHandle_t h;
    CUBLAS_OK(cublasCreate(&h));
    CUBLAS_OK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    accuracy(vars, h);
    timing(vars, h);
    CUBLAS_OK(cublasDestroy(h));
    printf("\ndone\n");
    return 0;
}
