// Host side of the trailing_tc harness: error checks, a reproducible random
// source, the input distributions and a float64 panel factorization that
// gives each test a real compact-WY (V, T), so that Q = I - V T V^T is
// orthogonal and errors can be read against ||A2||.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#define CUDA_OK(x)                                                                         \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)
#define CU_OK(x)                                                                  \
    do {                                                                          \
        CUresult e_ = (x);                                                        \
        if (e_ != CUDA_SUCCESS) {                                                 \
            const char* s_ = nullptr;                                             \
            cuGetErrorString(e_, &s_);                                            \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?"); \
            exit(2);                                                              \
        }                                                                         \
    } while (0)
#define CUBLAS_OK(x)                                                                \
    do {                                                                            \
        cublasStatus_t e_ = (x);                                                    \
        if (e_ != CUBLAS_STATUS_SUCCESS) {                                          \
            fprintf(stderr, "%s:%d %s: cublas status %d\n", __FILE__, __LINE__, #x, \
                    (int)e_);                                                       \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

constexpr int kNb = 32;  // panel width
constexpr double kEps32 = 1.1920928955078125e-07;

// splitmix64 stream with Box-Muller normals: the same bits everywhere.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
    uint64_t next() {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double uniform() { return ((next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
    double normal() {
        return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
    }
};

enum class Dist { Dense, Rowscale, Clustered, Tiny, Huge, RowscaleTiny };
static const Dist kAllDists[] = {Dist::Dense, Dist::Tiny,      Dist::Huge,
                                 Dist::Rowscale, Dist::Clustered, Dist::RowscaleTiny};

inline const char* dist_name(Dist d) {
    switch (d) {
        case Dist::Dense: return "dense(cond 2)";
        case Dist::Rowscale: return "rowscale 1..1e-4";
        case Dist::Clustered: return "clustered 4eps";
        case Dist::Tiny: return "randn*1e-30";
        case Dist::Huge: return "randn*1e+30";
        case Dist::RowscaleTiny: return "rowscale*1e-30";
    }
    return "?";
}

// One n x n row-major matrix of a distribution (the qr_v2 recipes where
// they apply: column scaling logspace(0, -cond, n), row scaling
// logspace(0, -4, n), clustered columns times 4 eps and sqrt(eps)).
inline std::vector<float> make_matrix(int n, Dist d, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> a((size_t)n * n);
    auto logspace = [n](int i, double lo) { return n > 1 ? std::pow(10.0, lo * i / (n - 1)) : 1.0; };
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double x = rng.normal();
            switch (d) {
                case Dist::Dense: x *= logspace(j, -2.0); break;
                case Dist::Rowscale: x *= logspace(i, -4.0); break;
                case Dist::RowscaleTiny: x *= logspace(i, -4.0) * 1e-30; break;
                case Dist::Tiny: x *= 1e-30; break;
                case Dist::Huge: x *= 1e+30; break;
                case Dist::Clustered:
                    if (j >= n / 2) x *= 4.0 * kEps32;
                    if (n >= 8 && j >= n / 2 - 2 && j < n / 2 + 2) x *= std::sqrt(kEps32);
                    break;
            }
            a[(size_t)i * n + j] = (float)x;
        }
    return a;
}

// Householder QR of the m x kb panel p (row-major, leading dimension ldp)
// in float64, LAPACK's rules (beta = -sign(alpha) ||x||, v[0] = 1), then
// larft (forward, columnwise). V is m x 32 row-major, T 32 x 32 row-major
// upper; both zero past kb.
inline void panel_vt(int m, int kb, const float* p, int ldp, float* v_out, float* t_out) {
    std::vector<double> a((size_t)m * kb), vv((size_t)m * kNb, 0.0), t(kNb * kNb, 0.0);
    std::vector<double> tau(kNb, 0.0);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < kb; ++j) a[(size_t)i * kb + j] = p[(size_t)i * ldp + j];
    for (int j = 0; j < kb && j < m; ++j) {
        double alpha = a[(size_t)j * kb + j], xn2 = 0.0;
        for (int i = j + 1; i < m; ++i) xn2 += a[(size_t)i * kb + j] * a[(size_t)i * kb + j];
        vv[(size_t)j * kNb + j] = 1.0;
        if (xn2 == 0.0) continue;
        const double beta = -std::copysign(std::sqrt(alpha * alpha + xn2), alpha);
        tau[j] = (beta - alpha) / beta;
        const double scale = 1.0 / (alpha - beta);
        for (int i = j + 1; i < m; ++i) vv[(size_t)i * kNb + j] = a[(size_t)i * kb + j] * scale;
        a[(size_t)j * kb + j] = beta;
        for (int c = j + 1; c < kb; ++c) {
            double s = a[(size_t)j * kb + c];
            for (int i = j + 1; i < m; ++i) s += vv[(size_t)i * kNb + j] * a[(size_t)i * kb + c];
            s *= tau[j];
            a[(size_t)j * kb + c] -= s;
            for (int i = j + 1; i < m; ++i) a[(size_t)i * kb + c] -= s * vv[(size_t)i * kNb + j];
        }
    }
    for (int j = 0; j < kb; ++j) {
        // T[0:j, j] = -tau_j T[0:j, 0:j] (V[:, 0:j]^T v_j)
        std::vector<double> g(j, 0.0);
        for (int l = 0; l < j; ++l)
            for (int i = 0; i < m; ++i) g[l] += vv[(size_t)i * kNb + l] * vv[(size_t)i * kNb + j];
        for (int r = 0; r < j; ++r) {
            double s = 0.0;
            for (int l = r; l < j; ++l) s += t[r * kNb + l] * g[l];
            t[r * kNb + j] = -tau[j] * s;
        }
        t[j * kNb + j] = tau[j];
    }
    for (size_t i = 0; i < (size_t)m * kNb; ++i) v_out[i] = (float)vv[i];
    for (int i = 0; i < kNb * kNb; ++i) t_out[i] = (float)t[i];
}

// Normwise errors of one updated block against the float64 reference.
struct Err {
    double rel_fro = 0.0;     // ||out - ref||_F / ||ref||_F
    double col_max = 0.0;     // max_j ||out_j - ref_j|| / ||ref_j||
    long long outside = 0;    // elements changed outside the block (must be 0)
    bool finite = true;
    void worst_of(const Err& o) {
        rel_fro = std::fmax(rel_fro, o.rel_fro);
        col_max = std::fmax(col_max, o.col_max);
        outside += o.outside;
        finite = finite && o.finite;
    }
};

// `out` and `orig` are one n x n matrix; the block starts at (r0, c0);
// `ref` is nrow x ntrail.
inline Err block_error(int n, int r0, int c0, const float* out, const float* orig,
                       const double* ref) {
    const int nrow = n - r0, ntrail = n - c0;
    Err e;
    double num = 0.0, den = 0.0;
    std::vector<double> cn(ntrail, 0.0), cd(ntrail, 0.0);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            const size_t k = (size_t)i * n + j;
            if (i < r0 || j < c0) {
                if (std::memcmp(&out[k], &orig[k], sizeof(float)) != 0) ++e.outside;
                continue;
            }
            const double r = ref[(size_t)(i - r0) * ntrail + (j - c0)], o = out[k];
            if (!std::isfinite(o)) e.finite = false;
            const double d = (o - r) * (o - r);
            num += d;
            den += r * r;
            cn[j - c0] += d;
            cd[j - c0] += r * r;
        }
    (void)nrow;
    e.rel_fro = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    for (int j = 0; j < ntrail; ++j)
        if (cd[j] > 0) e.col_max = std::fmax(e.col_max, std::sqrt(cn[j] / cd[j]));
    if (!e.finite) e.rel_fro = e.col_max = INFINITY;
    return e;
}
