// Unblocked Householder QR with the whole matrix in shared memory: one block
// per matrix, SMEM_TPC threads per column (a power of two up to 32) so that a
// block of a few hundred threads keeps enough warps in flight. Kernels:
// smem_onebarrier_f32 (one block barrier per column), smem_registers_f32
// (one, and every column in its group's registers) and smem_warp_f32 (one
// warp per matrix, compiled in with SMEM_WARP); each is described above it.
//
// The matrix is stored row-major with leading dimension `lda` (a kernel
// argument): for the one-barrier kernel, where a warp reads SMEM_TPC
// consecutive rows of 32 / SMEM_TPC adjacent columns, lda = 32 / SMEM_TPC
// (mod 64 / SMEM_TPC) when the padded matrix fits, so that those 32
// elements fall in 32 different banks (the planner's `smem::padded_lda`),
// else n | 1.
//
// Range: as in the panel kernel, the matrix is scaled by a power of two
// (exact) so that its largest entry lies in [0.5, 1); float32 products then
// neither overflow nor lose anything above float32's rounding of the matrix.
// A column whose scaled squared norm falls below SMEM_TINY has it recomputed
// in double by the whole block, so tau = 0 stays exactly "x[1..] is zero".
// R is scaled back when the matrix is written out.
//
// Where a matrix lives (kernel arguments mstride, ldg, tstride, corner):
// the `smem` strategy passes whole n x n matrices (mstride n * n, ldg n,
// tstride n, corner 0). corner 1 was a blocked or cluster factorization's
// trailing n x n corner of each matrix (strides of the whole matrix, info
// and the NaN fill left to the batch-wide checks that surrounded it, so a
// non-finite corner was left as it was for them to find); its planner and
// launcher were deleted (measured slower, docs/PERF.md), and the kernels
// keep the arguments and their branches so that their code stays the one
// measured.

#ifndef SMEM_TPC
#error "SMEM_TPC (threads per column) must be defined by the plan"
#endif

#ifndef SMEM_ROWS
#error "SMEM_ROWS (rows per thread of smem_registers_f32, 0 when it is not used) must be defined by the plan"
#endif
#ifndef SMEM_WARP
#error "SMEM_WARP (1: smem_warp_f32 compiled in) must be defined by the plan"
#endif
// Register array length of smem_registers_f32 (at least 1, so that the
// other kernels' builds compile it too).
#define SMEM_RT (SMEM_ROWS > 0 ? SMEM_ROWS : 1)
// Largest block of smem_registers_f32: a whole multiple of 32 threads each
// with the rows and about 40 registers more (the planner keeps to it through
// `smem::register_threads`).
#define SMEM_REG_THREADS_RAW (65536 / (SMEM_RT + 40) / 32 * 32)
#define SMEM_REG_THREADS (SMEM_REG_THREADS_RAW > 1024 ? 1024 : SMEM_REG_THREADS_RAW)

#define SMEM_TINY QR_TINY

// Lanes of this thread's column group, for group-local shuffles (the groups
// of one warp run different numbers of columns, so a full mask would hang).
__device__ __forceinline__ u32 group_mask(int lane) {
    if (SMEM_TPC >= 32) return 0xffffffffu;
    const u32 ones = (1u << (SMEM_TPC & 31)) - 1u;
    return ones << (lane & ~(SMEM_TPC - 1));
}

// Exponent all ones: an infinity or a NaN.
__device__ __forceinline__ int smem_nonfinite(float x) {
    return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u;
}


// NaN-fills matrix blockIdx.x's outputs and sets its info to `code`.
__device__ void smem_nan_fill(float* hm, float* taum, int* info, int n, int code) {
    const float nan = qr_nan_f32();
    for (int idx = threadIdx.x; idx < n * n; idx += blockDim.x) hm[idx] = nan;
    for (int i = threadIdx.x; i < n; i += blockDim.x) taum[i] = nan;
    if (threadIdx.x == 0) info[blockIdx.x] = code;
}

// Largest `x` over the block (every thread gets it).
__device__ float smem_block_max(float x, double* scratch) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = (double)x;
    __syncthreads();
    float m = 0.0f;
    for (int w = 0; w < (blockDim.x + 31) >> 5; ++w) m = fmaxf(m, (float)scratch[w]);
    return m;
}

// Loads matrix blockIdx.x into s (leading dimension lda) scaled by 2^-ex,
// the power of two that brings its largest entry into [0.5, 1). A matrix
// holding a NaN or an infinity is flagged (info 1) and NaN-filled instead
// (the block owns the whole matrix, so it does the batch-wide helpers' work
// of util.cu itself; a corner is left to them); false then, for the whole
// block.
__device__ bool smem_load_scaled(const float* am, float* hm, float* taum, int* info, float* s,
                                 int n, int lda, int ldg, int corner, double* scratch, int& ex) {
    const int tid = threadIdx.x, nt = blockDim.x;
    float amax = 0.0f;
    int bad = 0;
    for (int idx = tid; idx < n * n; idx += nt) {
        const float x = am[(long long)(idx / n) * ldg + idx % n];
        s[(idx / n) * lda + idx % n] = x;
        amax = fmaxf(amax, fabsf(x));
        bad |= smem_nonfinite(x);
    }
    if (__syncthreads_or(bad)) {
        if (!corner) smem_nan_fill(hm, taum, info, n, 1);
        return false;
    }
    ex = qr_scale_exponent(smem_block_max(amax, scratch));
    for (int idx = tid; idx < n * n; idx += nt) {
        float* e = s + (idx / n) * lda + idx % n;
        *e = ldexpf(*e, -ex);
    }
    __syncthreads();
    return true;
}

// Writes the factored matrix (R scaled back by 2^ex) and info. A finite
// matrix whose R or reflectors do not fit float32, or a non-finite tau
// (`bad`), is flagged OVERFLOW (info 2) and NaN-filled, as
// util_overflow_f32 does (a corner is written as it is, for that check).
__device__ void smem_store(const float* s, float* hm, float* taum, int* info, int n, int lda,
                           int ldg, int corner, int ex, int bad) {
    const int tid = threadIdx.x, nt = blockDim.x;
    if (!corner) {  // uniform: the barrier below sees every thread or none
        for (int idx = tid; idx < n * n; idx += nt) {
            const int i = idx / n, c = idx % n;
            const float x = s[i * lda + c];
            bad |= smem_nonfinite(i <= c ? ldexpf(x, ex) : x);
        }
        if (__syncthreads_or(bad)) {
            smem_nan_fill(hm, taum, info, n, 2);
            return;
        }
    }
    for (int idx = tid; idx < n * n; idx += nt) {
        const int i = idx / n, c = idx % n;
        const float x = s[i * lda + c];
        hm[(long long)i * ldg + c] = i <= c ? ldexpf(x, ex) : x;
    }
    if (tid == 0 && !corner) info[blockIdx.x] = 0;
}

// Sum over the SMEM_TPC lanes of a column group, in a fixed order.
__device__ __forceinline__ float group_sum(float p, u32 gmask) {
    for (int o = 1; o < SMEM_TPC; o <<= 1) p += __shfl_xor_sync(gmask, p, o);
    return p;
}

// One block barrier per column. Step j reads what step j - 1 left behind:
//   piv[j&1][i]  column j as updated by step j - 1 (rows >= j), and at
//                row j - 1 that column's R entry;
//   sums[j&1][k] sum over rows i > j of piv[j&1][i] * A[i][k] for k >= j:
//                at k = j that is ||x[1..]||^2, at k > j it gives
//                v^T A[., k] = A[j][k] + scale * sums[k] (v = scale * x
//                below row j, 1 at row j), so reflector j and every
//                column's coefficient follow without another reduction.
// Every thread forms reflector j itself (the same bits everywhere); column
// j goes to its place (R entry, beta, v); each column group updates its
// columns k > j and, in the same pass, sums the next step's products with
// the updated column j + 1, which every group computes for itself from
// column j + 1 as it stood at the start of the step. That column is
// therefore not written in place during the step: its owner writes it (and
// its row-j R entry) to piv[(j+1)&1] instead, and the next step moves it
// into place. Everything a step reads was written before the barrier that
// ends the previous step, and what it writes is read only after the barrier
// that ends it.
//
// Range and tiny norms as in the header: a scaled squared norm under
// SMEM_TINY is recomputed in double by the block (a uniform branch).
extern "C" __global__ void __launch_bounds__(1024) smem_onebarrier_f32(const float* __restrict__ a,
                                               float* __restrict__ h,
                                               float* __restrict__ tau,
                                               int* __restrict__ info, int n, int lda,
                                               long long mstride, int ldg, int tstride,
                                               int corner) {
    extern __shared__ float s[];  // the matrix, then piv[2][n], then sums[2][n]
    __shared__ double scratch[32];

    const int tid = threadIdx.x, nt = blockDim.x;
    const int sub = tid & (SMEM_TPC - 1);
    const int grp = tid / SMEM_TPC;
    const int ngrp = nt / SMEM_TPC;
    const u32 gmask = group_mask(tid & 31);
    const long long off = (long long)blockIdx.x * mstride;
    const float* am = a + off;
    float* hm = h + off;
    float* taum = tau + (long long)blockIdx.x * tstride;
    float* piv = s + n * lda;
    float* sums = piv + 2 * n;

    int ex = 0, bad = 0;
    if (!smem_load_scaled(am, hm, taum, info, s, n, lda, ldg, corner, scratch, ex)) return;

    // Step 0's inputs: column 0 and its products with every column.
    for (int i = tid; i < n; i += nt) piv[i] = s[i * lda];
    for (int k = grp; k < n; k += ngrp) {
        float p = 0.0f;
        for (int i = 1 + sub; i < n; i += SMEM_TPC) p = fmaf(s[i * lda], s[i * lda + k], p);
        p = group_sum(p, gmask);
        if (sub == 0) sums[k] = p;
    }
    __syncthreads();

    for (int j = 0; j < n; ++j) {
        const float* pc = piv + (j & 1) * n;
        float* pn = piv + ((j + 1) & 1) * n;
        const float* sc = sums + (j & 1) * n;
        float* sn = sums + ((j + 1) & 1) * n;
        double xn2 = (double)sc[j];
        // sc[j] is shared, so the whole block takes this branch or none.
        if (xn2 < SMEM_TINY) {
            double q = 0.0;
            for (int i = j + 1 + tid; i < n; i += nt) {
                const double x = (double)pc[i];
                q += x * x;
            }
            xn2 = block_sum_f64(q, scratch);
        }
        const Reflector rf = scaled_matrix_reflector(pc[j], xn2);
        if (tid == 0) {
            taum[j] = rf.tau;
            bad |= smem_nonfinite(rf.tau);
        }
        // Scaled, |alpha - beta| >= ||x|| >= 2^-30 unless the norm was
        // redone in double, so a float32 scale is exact to rounding. With
        // tau = 0 the columns keep their bits (negative zeros included).
        const bool fast = fabs(rf.scale) < 1.0e30;
        const float fs = (float)rf.scale;

        // Column j to its place: row j - 1's R entry, beta, v (or x as it
        // is when tau = 0). Nothing else touches column j during this step.
        for (int i = max(j - 1, 0) + tid; i < n; i += nt) {
            const float x = pc[i];
            float y = x;
            if (i == j && rf.tau != 0.0f) y = rf.beta;
            if (i > j && rf.tau != 0.0f) y = fast ? x * fs : (float)((double)x * rf.scale);
            s[i * lda + j] = y;
        }

        const int lo = j + 1;
        if (lo < n) {
            // Coefficient of column j + 1, which every group updates for itself.
            const float wn =
                rf.tau == 0.0f
                    ? 0.0f
                    : (float)((double)rf.tau * ((double)s[j * lda + lo] + rf.scale * (double)sc[lo]));
            for (int k = lo + grp; k < n; k += ngrp) {
                const bool next = k == lo;
                const float rk = s[j * lda + k];
                const float wk =
                    rf.tau == 0.0f
                        ? 0.0f
                        : (float)((double)rf.tau * ((double)rk + rf.scale * (double)sc[k]));
                if (sub == 0) {
                    if (next)
                        pn[j] = rk - wk;
                    else
                        s[j * lda + k] = rk - wk;
                }
                float* dst = next ? pn : s + k;
                const int dld = next ? 1 : lda;
                float acc = 0.0f;
                int i = lo + sub;
                // Four rows loaded before any is stored: the compiler cannot
                // prove the column-k stores miss the later rows' loads.
                for (; i + 3 * SMEM_TPC < n; i += 4 * SMEM_TPC) {
                    float x[4], y[4], z[4];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int r = i + u * SMEM_TPC;
                        x[u] = pc[r];
                        y[u] = s[r * lda + lo];
                        z[u] = s[r * lda + k];
                    }
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int r = i + u * SMEM_TPC;
                        const float v = fast ? x[u] * fs : (float)((double)x[u] * rf.scale);
                        const float yn = rf.tau == 0.0f ? y[u] : fmaf(-v, wn, y[u]);
                        const float zn = rf.tau == 0.0f ? z[u] : fmaf(-v, wk, z[u]);
                        dst[r * dld] = zn;
                        acc = fmaf(r > lo ? yn : 0.0f, zn, acc);
                    }
                }
                for (; i < n; i += SMEM_TPC) {
                    const float v = fast ? pc[i] * fs : (float)((double)pc[i] * rf.scale);
                    const float y = s[i * lda + lo], z = s[i * lda + k];
                    const float yn = rf.tau == 0.0f ? y : fmaf(-v, wn, y);
                    const float zn = rf.tau == 0.0f ? z : fmaf(-v, wk, z);
                    dst[i * dld] = zn;
                    acc = fmaf(i > lo ? yn : 0.0f, zn, acc);
                }
                acc = group_sum(acc, gmask);
                if (sub == 0) sn[k] = acc;
            }
        }
        __syncthreads();
    }

    smem_store(s, hm, taum, info, n, lda, ldg, corner, ex, bad);
}

// smem_onebarrier_f32's steps with the matrix in registers: column group k
// (SMEM_TPC threads) owns column k for the whole factorization, thread
// `sub` of it rows sub + SMEM_TPC * t (t < SMEM_ROWS). Shared memory holds
// only what step j needs of other columns, each written by its owner in
// step j - 1:
//   px[j&1][i]   column j as updated by step j - 1 (the pivot, rows > j - 1);
//   py[j&1][i]   column j + 1 likewise, from which every group forms the
//                updated column j + 1 for its sums;
//   row[j&1][k]  row j of column k (for the coefficient of column k);
//   sums[j&1][k] as in smem_onebarrier_f32.
// Per step a thread reads two broadcast values per row and no shared-memory
// traffic of its own column, which bounded smem_onebarrier_f32. The planner
// uses it while the rows fit: threads = n * SMEM_TPC <= 1024 and
// SMEM_ROWS >= ceil(n / SMEM_TPC).
extern "C" __global__ void __launch_bounds__(SMEM_REG_THREADS) smem_registers_f32(const float* __restrict__ a,
                                                                      float* __restrict__ h,
                                                                      float* __restrict__ tau,
                                                                      int* __restrict__ info,
                                                                      int n, int lda,
                                                                      long long mstride, int ldg,
                                                                      int tstride, int corner) {
    // `lda` is the shared-memory kernels' own; this one keeps no matrix there.
    (void)lda;
    extern __shared__ float s[];  // px, py, row, sums: [2][np] each
    __shared__ double scratch[32];
    constexpr int np = SMEM_RT * SMEM_TPC;  // rows, padded with zeros
    float* px = s;
    float* py = px + 2 * np;
    float* row = py + 2 * np;
    float* sums = row + 2 * np;

    const int tid = threadIdx.x;
    const int sub = tid & (SMEM_TPC - 1);
    const int k = tid / SMEM_TPC;  // this group's column (none when k >= n)
    const u32 gmask = group_mask(tid & 31);
    const long long off = (long long)blockIdx.x * mstride;
    const float* am = a + off;
    float* hm = h + off;
    float* taum = tau + (long long)blockIdx.x * tstride;

    float z[SMEM_RT];
    float amax = 0.0f;
    int bad = 0;
#pragma unroll
    for (int t = 0; t < SMEM_RT; ++t) {
        const int r = sub + SMEM_TPC * t;
        z[t] = k < n && r < n ? am[(long long)r * ldg + k] : 0.0f;
        amax = fmaxf(amax, fabsf(z[t]));
        bad |= smem_nonfinite(z[t]);
    }
    if (__syncthreads_or(bad)) {
        if (!corner) smem_nan_fill(hm, taum, info, n, 1);
        return;
    }
    const int ex = qr_scale_exponent(smem_block_max(amax, scratch));
    for (int i = tid; i < 8 * np; i += blockDim.x) s[i] = 0.0f;
    __syncthreads();
#pragma unroll
    for (int t = 0; t < SMEM_RT; ++t) {
        const int r = sub + SMEM_TPC * t;
        z[t] = ldexpf(z[t], -ex);
        if (k == 0) px[r] = z[t];
        if (k == 1) py[r] = z[t];
    }
    if (sub == 0 && k < n) row[k] = z[0];
    __syncthreads();
    if (k < n) {
        float p = 0.0f;
#pragma unroll
        for (int t = 0; t < SMEM_RT; ++t) {
            const int r = sub + SMEM_TPC * t;
            p = fmaf(r >= 1 ? px[r] : 0.0f, z[t], p);
        }
        p = group_sum(p, gmask);
        if (sub == 0) sums[k] = p;
    }
    __syncthreads();

    for (int j = 0; j < n; ++j) {
        const int c = (j & 1) * np, d = np - c;  // this step's half, the next's
        double xn2 = (double)sums[c + j];
        // Shared, so the whole block takes this branch or none.
        if (xn2 < SMEM_TINY) {
            double q = 0.0;
            for (int i = j + 1 + tid; i < n; i += blockDim.x) {
                const double x = (double)px[c + i];
                q += x * x;
            }
            xn2 = block_sum_f64(q, scratch);
        }
        const Reflector rf = scaled_matrix_reflector(px[c + j], xn2);
        if (tid == 0) {
            taum[j] = rf.tau;
            bad |= smem_nonfinite(rf.tau);
        }
        // Scaled, |alpha - beta| >= ||x|| >= 2^-30 unless the norm was
        // redone in double, so a float32 scale is exact to rounding.
        const bool fast = fabs(rf.scale) < 1.0e30;
        const float fs = (float)rf.scale;
        if (k == j && rf.tau != 0.0f) {
            // The pivot's own group: beta and v, its final values.
#pragma unroll
            for (int t = 0; t < SMEM_RT; ++t) {
                const int r = sub + SMEM_TPC * t;
                if (r == j) z[t] = rf.beta;
                if (r > j) z[t] = fast ? z[t] * fs : (float)((double)z[t] * rf.scale);
            }
        } else if (k > j && k < n) {
            const int lo = j + 1;
            const float wn = rf.tau == 0.0f ? 0.0f
                                            : (float)((double)rf.tau *
                                                      ((double)row[c + lo] +
                                                       rf.scale * (double)sums[c + lo]));
            const float wk = rf.tau == 0.0f ? 0.0f
                                            : (float)((double)rf.tau *
                                                      ((double)row[c + k] +
                                                       rf.scale * (double)sums[c + k]));
            float acc = 0.0f;
#pragma unroll
            for (int t = 0; t < SMEM_RT; ++t) {
                const int r = sub + SMEM_TPC * t;
                // Rows above j are final; a group's rows there are skipped
                // (the test is uniform over the group but for one step of t).
                if (SMEM_TPC * t + SMEM_TPC - 1 < j) continue;
                if (r >= j && rf.tau != 0.0f) {
                    const float x = px[c + r];
                    const float v = r == j ? 1.0f
                                           : (fast ? x * fs : (float)((double)x * rf.scale));
                    z[t] = fmaf(-v, wk, z[t]);
                    const float y = fmaf(-v, wn, py[c + r]);
                    acc = fmaf(r > lo ? y : 0.0f, z[t], acc);
                } else if (r > lo) {
                    acc = fmaf(py[c + r], z[t], acc);
                }
                if (r == lo) row[d + k] = z[t];
                if (k == lo && r > j) px[d + r] = z[t];
                if (k == lo + 1 && r > j) py[d + r] = z[t];
            }
            acc = group_sum(acc, gmask);
            if (sub == 0) sums[d + k] = acc;
        }
        __syncthreads();
    }

    // R goes back to the input's scale; overflow as in smem_store.
    float o[SMEM_RT];
#pragma unroll
    for (int t = 0; t < SMEM_RT; ++t) {
        const int r = sub + SMEM_TPC * t;
        o[t] = r <= k ? ldexpf(z[t], ex) : z[t];
        if (k < n && r < n) bad |= smem_nonfinite(o[t]);
    }
    // A corner leaves overflow to the batch-wide check (uniform branch).
    if (!corner && __syncthreads_or(bad)) {
        smem_nan_fill(hm, taum, info, n, 2);
        return;
    }
#pragma unroll
    for (int t = 0; t < SMEM_RT; ++t) {
        const int r = sub + SMEM_TPC * t;
        if (k < n && r < n) hm[(long long)r * ldg + k] = o[t];
    }
    if (tid == 0 && !corner) info[blockIdx.x] = 0;
}

#if SMEM_WARP
// One warp per matrix of order n <= 32, no block barrier: lane c holds
// column c in z[] (rows past n are zeros, so they add nothing to any sum),
// the step loop is unrolled so that every row index is a register. Step j:
//   1. lane j, whose column step j - 1 left updated, stores it (every row;
//      those above j are not read) to xs[j & 1], and the warp meets once;
//   2. every lane loads that column x and sums, in one fixed order,
//      xn2 = sum_{i>j} x_i^2 and s_c = sum_{i>j} x_i z_c[i]: the same xn2
//      bits in every lane, so every lane forms reflector j itself;
//   3. lane j writes beta at row j and keeps x below it; every lane c > j
//      takes w_c = tau (z_c[j] + scale s_c) and updates its rows,
//      z_c[i] -= x_i (w_c scale), z_c[j] -= w_c; the other lanes apply w = 0,
//      so the warp never branches apart.
// The column a step publishes is its input unscaled, so the sums of step 2
// need no reflector and run beside xn2's; the reflector is the only
// scalar chain per step. Each lane scales its own x into v, and stores its
// tau, once at the end. Two buffers: step j + 1's store goes to the one
// step j - 1 read, which step j's meeting put behind every lane.
//
// Range, tiny norms (redone in double from x, which every lane holds),
// non-finite inputs, overflow and corners as in smem_registers_f32.
extern "C" __global__ void __launch_bounds__(32, 1) smem_warp_f32(const float* __restrict__ a,
                                                               float* __restrict__ h,
                                                               float* __restrict__ tau,
                                                               int* __restrict__ info, int n,
                                                               int lda, long long mstride,
                                                               int ldg, int tstride, int corner) {
    (void)lda;
    __shared__ __align__(16) float xs[2][32];

    const int c = threadIdx.x & 31;
    const long long off = (long long)blockIdx.x * mstride;
    const float* am = a + off;
    float* hm = h + off;
    float* taum = tau + (long long)blockIdx.x * tstride;

    float z[32];
    float amax = 0.0f;
    int bad = 0;
#pragma unroll
    for (int r = 0; r < 32; ++r) {
        z[r] = c < n && r < n ? am[(long long)r * ldg + c] : 0.0f;
        amax = fmaxf(amax, fabsf(z[r]));
        bad |= smem_nonfinite(z[r]);
    }
    if (__any_sync(0xffffffffu, bad)) {
        if (!corner) smem_nan_fill(hm, taum, info, n, 1);
        return;
    }
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const int ex = qr_scale_exponent(amax);
#pragma unroll
    for (int r = 0; r < 32; ++r) z[r] = ldexpf(z[r], -ex);

    // This lane's own reflector (column c), from its step.
    float my_tau = 0.0f, my_fs = 1.0f;
    double my_sc = 1.0;
    bool my_fast = true;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        if (j >= n) break;  // uniform
        float4* xb = reinterpret_cast<float4*>(xs[j & 1]);
        if (c == j) {
#pragma unroll
            for (int q = j / 4; q < 8; ++q)
                xb[q] = make_float4(z[4 * q], z[4 * q + 1], z[4 * q + 2], z[4 * q + 3]);
        }
        __syncwarp();
        float x[32];
#pragma unroll
        for (int q = j / 4; q < 8; ++q) {
            const float4 v = xb[q];
            x[4 * q] = v.x;
            x[4 * q + 1] = v.y;
            x[4 * q + 2] = v.z;
            x[4 * q + 3] = v.w;
        }
        // Four interleaved partial sums each (a quarter of the chain), met
        // pairwise: the same order in every lane.
        float q2[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int i = j + 1; i < 32; ++i) {
            q2[i & 3] = fmaf(x[i], x[i], q2[i & 3]);
            sc[i & 3] = fmaf(x[i], z[i], sc[i & 3]);
        }
        double xn2 = (double)((q2[0] + q2[1]) + (q2[2] + q2[3]));
        const float s = (sc[0] + sc[1]) + (sc[2] + sc[3]);
        // The same xn2 in every lane: a uniform branch.
        if (xn2 < SMEM_TINY) {
            double d = 0.0;
#pragma unroll
            for (int i = j + 1; i < 32; ++i) d += (double)x[i] * (double)x[i];
            xn2 = d;
        }
        const Reflector rf = scaled_matrix_reflector(x[j], xn2);
        // Scaled, |alpha - beta| >= ||x|| >= 2^-30 unless the norm was
        // redone in double, so a float32 scale is exact to rounding.
        const bool fast = fabs(rf.scale) < 1.0e30;
        const float fs = (float)rf.scale;
        if (c == j) {
            my_tau = rf.tau;
            my_sc = rf.tau == 0.0f ? 1.0 : rf.scale;
            my_fs = (float)my_sc;
            my_fast = fabs(my_sc) < 1.0e30;
        }
        // w_c for the lanes right of j, 0 elsewhere: lane j keeps x below its
        // diagonal (scaled once at the end), the lanes left of it their
        // values but for the sign of a zero, so no lane branches off.
        const float w = c > j && rf.tau != 0.0f
                            ? (float)((double)rf.tau * ((double)z[j] + rf.scale * (double)s))
                            : 0.0f;
        z[j] = c == j ? rf.beta : z[j] - w;
        if (rf.tau != 0.0f) {  // uniform, and so is `fast`
            if (fast) {
                const float a = w * fs;
#pragma unroll
                for (int i = j + 1; i < 32; ++i) z[i] = fmaf(-x[i], a, z[i]);
            } else {
#pragma unroll
                for (int i = j + 1; i < 32; ++i)
                    z[i] = fmaf(-(float)((double)x[i] * rf.scale), w, z[i]);
            }
        }
    }

    // Each lane's reflector below its diagonal: x times its scale.
#pragma unroll
    for (int r = 0; r < 32; ++r)
        if (r > c) z[r] = my_fast ? z[r] * my_fs : (float)((double)z[r] * my_sc);
    if (c < n) {
        taum[c] = my_tau;
        bad |= smem_nonfinite(my_tau);
    }
    // R goes back to the input's scale; overflow as in smem_store.
#pragma unroll
    for (int r = 0; r < 32; ++r) {
        z[r] = r <= c ? ldexpf(z[r], ex) : z[r];
        if (c < n && r < n) bad |= smem_nonfinite(z[r]);
    }
    // A corner leaves overflow to the batch-wide check (uniform branch).
    if (!corner && __any_sync(0xffffffffu, bad)) {
        smem_nan_fill(hm, taum, info, n, 2);
        return;
    }
#pragma unroll
    for (int r = 0; r < 32; ++r)
        if (c < n && r < n) hm[(long long)r * ldg + c] = z[r];
    if (c == 0 && !corner) info[blockIdx.x] = 0;
}
#endif  // SMEM_WARP
