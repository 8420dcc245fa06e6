// Shared prelude of every qr-gpu kernel family, joined in front of each
// family's source. NVRTC on a stock driver finds no CUDA headers, so nothing
// here includes one: only NVRTC's built-ins (barriers, shuffles, atomics and
// the device math library) are used.

typedef unsigned int u32;

// Quiet NaN, the fill of a matrix flagged as non-finite.
__device__ __forceinline__ float qr_nan_f32() { return __int_as_float(0x7fc00000); }

// Exponent all ones: an infinity or a NaN (the input scan and the overflow
// checks of the values the kernels write).
__device__ __forceinline__ bool qr_nonfinite(float x) {
    return (__float_as_uint(x) & 0x7f800000u) == 0x7f800000u;
}

// The writers' overflow check (`oflow`, null when the plan checks H and tau
// by separate passes): a warp with a non-finite value written marks its
// matrix. Every writer stores the same 1, so the order does not matter; the
// NaN fill turns the mark into info 2 unless the input was non-finite.
__device__ __forceinline__ void qr_mark_overflow(int* oflow, long long m, bool bad) {
    if (oflow != nullptr && __any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) oflow[m] = 1;
}

// One Householder reflector in geqrf's convention, from alpha = x[0] and
// xn2 = ||x[1..]||^2 accumulated in double. Squares of float32 normals can
// neither overflow nor underflow in double, so this is the scaled norm LAPACK's
// slarfg gets by rescaling, without the rescaling loop.
struct Reflector {
    float beta;   // R[j][j]
    float tau;    // (beta - alpha) / beta, 0 when x[1..] is exactly zero
    // 1 / (alpha - beta): v[1..] = x[1..] * scale. Kept in double: when the
    // column is near the bottom of float32's range (a rank-deficient matrix of
    // 1e-30s leaves residues of 1e-38 and below) its float32 reciprocal would
    // overflow, where LAPACK's slarfg rescales instead.
    double scale;
};

__device__ __forceinline__ Reflector make_reflector(float alpha, double xn2) {
    Reflector r;
    if (xn2 == 0.0) {
        r.beta = alpha;
        r.tau = 0.0f;
        r.scale = 0.0;
    } else {
        double a = (double)alpha;
        double beta = -copysign(sqrt(a * a + xn2), a);
        r.beta = (float)beta;
        r.tau = (float)((beta - a) / beta);
        r.scale = 1.0 / (a - beta);
    }
    return r;
}

// Reflector from alpha and xn2 = ||x[1..]||^2 >= 2^-60 of a panel scaled
// so that its largest entry lies in [0.5, 1) (so |beta| and |alpha - beta|
// lie in [2^-30, 2^6]): make_reflector's values with one double division
// instead of two, tau = -d / beta and scale = 1 / d both from 1 / (d beta),
// d = alpha - beta. The one-barrier panels form the reflector in every
// thread, so its latency is on the reflector's chain (ncu, 40 x 176: a
// quarter of the panel's stall samples with two divisions).
__device__ __forceinline__ Reflector scaled_reflector(float alpha, double xn2) {
    const double a = (double)alpha;
    const double beta = -copysign(sqrt(fma(a, a, xn2)), a);
    const double d = a - beta;
    const double q = 1.0 / (d * beta);
    Reflector r;
    r.beta = (float)beta;
    r.tau = (float)(-(d * d) * q);
    r.scale = beta * q;
    return r;
}

// scaled_reflector in float32 arithmetic, as LAPACK's slarfg forms it, for
// the same scaled panels (largest entry in [0.5, 1), xn2 >= 2^-60, at most
// 4096 rows: |beta| and |alpha - beta| lie in [2^-30, 2^7], d * beta in
// [2^-60, 2^14], so nothing overflows or underflows). Its float square root
// and division are a shorter chain than double's, on every reflector's
// critical path in the one-barrier panels.
struct ReflectorF32 {
    float beta;
    float tau;
    float scale;  // 1 / (alpha - beta)
};

__device__ __forceinline__ ReflectorF32 scaled_reflector_f32(float alpha, float xn2) {
    const float beta = -copysignf(sqrtf(fmaf(alpha, alpha, xn2)), alpha);
    const float d = alpha - beta;
    const float q = 1.0f / (d * beta);
    ReflectorF32 r;
    r.beta = beta;
    r.tau = -(d * d) * q;
    r.scale = beta * q;
    return r;
}

// 2^-60: below it a scaled squared norm may have lost bits to underflow
// (the panels and the smem kernels redo such a norm in double).
#define QR_TINY 8.673617379884035e-19

// The reflector of a panel or matrix scaled as above: from
// scaled_reflector_f32 where xn2 >= QR_TINY; else (a tiny norm, redone in
// double by the caller) from make_reflector. (Double reflectors
// throughout were slower: docs/PERF.md.)
__device__ __forceinline__ Reflector scaled_matrix_reflector(float alpha, double xn2) {
    if (xn2 >= QR_TINY) {
        const ReflectorF32 f = scaled_reflector_f32(alpha, (float)xn2);
        Reflector r;
        r.beta = f.beta;
        r.tau = f.tau;
        r.scale = (double)f.scale;
        return r;
    }
    return make_reflector(alpha, xn2);
}

// larft (forward, columnwise) in place, by the whole block (it holds block
// barriers: every thread must call it). On entry gram holds V^T V in its
// strict upper triangle (gram[q][r] = v_q^T v_r, q < r < w); on return its
// upper triangle holds T, zero outside the w x w block, and its strict lower
// triangle is scratch. Recursive doubling instead of the column recurrence:
// when T1 and T2 are the T factors of two adjacent groups of columns, the
// T of both is [T1, -T1 G12 T2; 0, T2] with G12 = V1^T V2, the Gram block
// between them, still untouched when its level comes. Five levels for 32
// columns chain about 2 x 31 products, where the recurrence along one warp
// chained 496 while the other warps waited (ncu, a 176-row panel launch:
// 20% of the samples at that barrier). Fixed order: the same bits every run.
// With B0 > 1 the caller's diagonal blocks of B0 columns already hold their
// T (upper triangle, tau on the diagonal, zero in the columns from w on),
// and the doubling starts at groups of B0 (two barriers a level fewer).
// `nthreads`: the block's threads where fewer than THREADS run it.
template <int NC, int LD, int THREADS, int B0 = 1>
__device__ __forceinline__ void larft_blocked(double (*gram)[LD], const float* taus, int w,
                                              int tid, int nthreads = THREADS) {
    for (int idx = tid; idx < NC * NC; idx += nthreads) {
        const int k = idx / NC, c = idx % NC;
        if (k == c)
            gram[k][c] = k < w ? (double)taus[k] : 0.0;
        else if (k < c && c >= w)
            gram[k][c] = 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int b = B0; b < NC; b *= 2) {
        // Per pair of b-column groups at o: X = G12 T2 (T2 upper triangular),
        // kept transposed in the pair's strict lower block, X[i][j] at
        // gram[o + b + j][o + i].
        for (int idx = tid; idx < NC / 2 * b; idx += nthreads) {
            const int o = idx / (b * b) * 2 * b, i = idx % (b * b) / b, j = idx % b;
            double x = 0.0;
            for (int q = 0; q <= j; ++q) x = fma(gram[o + i][o + b + q], gram[o + b + q][o + b + j], x);
            gram[o + b + j][o + i] = x;
        }
        __syncthreads();
        // T12 = -T1 X (T1 upper triangular).
        for (int idx = tid; idx < NC / 2 * b; idx += nthreads) {
            const int o = idx / (b * b) * 2 * b, i = idx % (b * b) / b, j = idx % b;
            double t = 0.0;
            for (int q = i; q < b; ++q) t = fma(gram[o + i][o + q], gram[o + b + j][o + q], t);
            gram[o + i][o + b + j] = -t;
        }
        __syncthreads();
    }
}

// The exponent that brings a largest magnitude `m` into [0.5, 1): the
// power of two the kernels scale a matrix or panel by (0 for zero or
// non-finite `m`: such a matrix is NaN-filled later, so it keeps scale 1).
__device__ __forceinline__ int qr_scale_exponent(float m) {
    int ex = 0;
    if (m > 0.0f && m <= 3.40282347e38f) frexpf(m, &ex);
    return ex;
}

// The block's largest magnitude from each thread's `amax` (`wmax`: a slot
// per warp, WARPS of them), in every thread.
template <int WARPS>
__device__ __forceinline__ float qr_block_max(float amax, float* wmax, int lane, int warp) {
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (lane == 0) wmax[warp] = amax;
    __syncthreads();
    float bmax = 0.0f;
#pragma unroll
    for (int q = 0; q < WARPS; ++q) bmax = fmaxf(bmax, wmax[q]);
    return bmax;
}

// Whether the panel at column p of matrix m is skipped: in place (`src` is
// h), columns from zcol[m] on are zero in the input and stay zero, so the
// panel's factorization is tau = 0 and nothing else, which this writes
// (panel.cu's rule; the same answer in every thread of the matrix).
__device__ __forceinline__ bool qr_zero_panel(const float* h, const float* src,
                                              const int* __restrict__ zcol,
                                              float* __restrict__ tau, int m, int n, int p, int w,
                                              int tid) {
    if (src != h || p < zcol[m]) return false;
    if (tid < w) tau[(long long)m * n + p + tid] = 0.0f;
    return true;
}

// A 32-column panel's last step, by every thread of a block of THREADS:
// T from the Gram columns in `gram` (larft_blocked, from groups of B0 whose
// T the caller formed) into tbuf (matrix m's 32 x 32, zero outside the
// w x w upper triangle), the taus into tau (row stride n, from column p),
// and tau's overflow mark (qr_mark_overflow); `nthreads` as larft_blocked's.
template <int THREADS, int B0 = 1>
__device__ __forceinline__ void qr_panel_finish(double (*gram)[33], const float* taus,
                                                float* __restrict__ tbuf, float* __restrict__ tau,
                                                int* __restrict__ oflow, int m, int n, int p,
                                                int w, int tid, int nthreads = THREADS) {
    larft_blocked<32, 33, THREADS, B0>(gram, taus, w, tid, nthreads);
    for (int idx = tid; idx < 32 * 32; idx += nthreads) {
        const int k = idx >> 5, c = idx & 31;
        const float t = (k < w && c < w && k <= c) ? (float)gram[k][c] : 0.0f;
        tbuf[(long long)m * 32 * 32 + idx] = t;
    }
    if (tid < w) tau[(long long)m * n + p + tid] = taus[tid];
    qr_mark_overflow(oflow, m, tid < w && qr_nonfinite(taus[tid & 31]));
}

// Sum of N float partials in double, pairwise in a fixed order: the same
// bits in every thread, depth log2 N instead of a chain of N additions.
template <int N>
__device__ __forceinline__ double pairwise_sum_f64(const float (&x)[N]) {
    double y[N];
#pragma unroll
    for (int q = 0; q < N; ++q) y[q] = (double)x[q];
#pragma unroll
    for (int h = 1; h < N; h *= 2)
#pragma unroll
        for (int q = 0; q + h < N; q += 2 * h) y[q] += y[q + h];
    return y[0];
}

// As pairwise_sum_f64, in float32.
template <int N>
__device__ __forceinline__ float pairwise_sum_f32(const float (&x)[N]) {
    float y[N];
#pragma unroll
    for (int q = 0; q < N; ++q) y[q] = x[q];
#pragma unroll
    for (int h = 1; h < N; h *= 2)
#pragma unroll
        for (int q = 0; q + h < N; q += 2 * h) y[q] += y[q + h];
    return y[0];
}

__device__ __forceinline__ double warp_sum_f64(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum of one double per thread over the whole block, in a fixed order, so
// that every thread (and every run) gets the same bits. `scratch` holds 32
// doubles; the leading barrier lets the caller reuse it back to back.
__device__ double block_sum_f64(double v, double* scratch) {
    v = warp_sum_f64(v);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int nwarps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    double t = 0.0;
    for (int w = 0; w < nwarps; ++w) t += scratch[w];
    return t;
}

// ---- tf32 operands of mma.sync (the tensor-core update) ----

// A float's bits and back, by PTX moves (casts under the host emulator).
__device__ __forceinline__ unsigned qr_f32_bits(float x) {
#ifdef CUDASIM
    return __float_as_uint(x);
#else
    unsigned u;
    asm("mov.b32 %0, %1;" : "=r"(u) : "f"(x));
    return u;
#endif
}

__device__ __forceinline__ float qr_bits_f32(unsigned u) {
#ifdef CUDASIM
    return __uint_as_float(u);
#else
    float f;
    asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u));
    return f;
#endif
}

// x as a tf32 register, rounded to nearest with ties away from zero
// (cvt.rna's rounding): half a tf32 ulp (bit 12) added to the magnitude bits,
// then the 13 low bits cleared; a carry into the exponent is the correct
// rounding up. Two integer instructions, where sm_90 expands cvt.rna.tf32
// into a longer sequence (its range checks were a quarter of the update's
// instructions; docs/history/qr-gpu-sessions.md, "where the time goes at
// 640 x 512"). Same bits as cvt.rna for
// every finite value and infinities; a NaN stays a NaN.
__device__ __forceinline__ unsigned qr_tf32(float x) {
    return (qr_f32_bits(x) + 0x1000u) & 0xffffe000u;
}

// x = hi + lo as two tf32 registers: hi = qr_tf32(x), lo the exact rest.
// The tensor cores read a tf32 operand's top 19 bits, so the unrounded
// rest enters a product truncated: its dropped bits lie below 2^-21 of x,
// beside the 2^-22 of the lo * lo product a 3-pass split leaves out
// anyway. (Rounding it too, two integer instructions more, was slower:
// docs/PERF.md.)
__device__ __forceinline__ void qr_split_tf32(float x, unsigned& hi, unsigned& lo) {
    hi = qr_tf32(x);
    const float rest = x - qr_bits_f32(hi);  // exact
    lo = qr_f32_bits(rest);
}

// d += a * b on one 16 x 8 tile of mma.sync.m16n8k8 with tf32 operands and
// float32 accumulation (the emulator's form under CUDASIM).
__device__ __forceinline__ void qr_mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                            const unsigned (&b)[2]) {
#ifdef CUDASIM
    sim_mma_m16n8k8_tf32(d, a, b);
#else
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// ---- 16-row slabs of 32 floats in shared memory, and cp.async (sm_80+) ----

// A slab row is eight 16-byte units; unit u of row r lives at unit
// u ^ qr_swz(r). The tensor-core W passes' quarter-warps read units
// {2k, 2k + 1} of four consecutive rows, the updates' units 4c + 0..3 of
// rows r, r + 1 (r even): with swz(r) = 4 (r & 1) | (r & 2) both touch
// eight distinct units, so neither has a bank conflict.
__device__ __forceinline__ int qr_swz(int row) { return ((row & 1) << 2) | (row & 2); }

// A shared-memory pointer as the 32-bit address cp.async takes.
__device__ __forceinline__ unsigned qr_smem_u32(const void* p) {
#ifdef CUDASIM
    return sim_smem_u32(p);
#else
    unsigned r;
    asm("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }" : "=r"(r) : "l"(p));
    return r;
#endif
}

// 16 bytes from global `src` to shared address `dst`; the `bytes` (0..16)
// first of them are read, the rest written as zeros.
__device__ __forceinline__ void qr_cp16(unsigned dst, const float* src, int bytes) {
#ifdef CUDASIM
    sim_cp_async16(dst, src, bytes, 0);
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(bytes)
                 : "memory");
#endif
}

__device__ __forceinline__ void qr_cp_commit() {
#ifdef CUDASIM
    sim_cp_commit();
#else
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Waits until at most `ahead` of this thread's groups are pending.
template <int ahead>
__device__ __forceinline__ void qr_cp_wait() {
#ifdef CUDASIM
    sim_cp_wait(ahead);
#else
    asm volatile("cp.async.wait_group %0;" ::"n"(ahead) : "memory");
#endif
}

// Thread-block cluster helpers (sm_90 and later; compiled only there, so
// that the prelude stays valid for older architectures).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void cluster_barrier() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The address of `p` (this block's shared memory) in block `rank`'s window.
__device__ __forceinline__ u32 cluster_addr(const void* p, u32 rank) {
    u32 local, remote;
    asm volatile("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }"
                 : "=r"(local)
                 : "l"(p));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}

__device__ __forceinline__ double cluster_ld_f64(const void* p, u32 rank) {
    double v;
    asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(cluster_addr(p, rank)) : "memory");
    return v;
}

__device__ __forceinline__ float cluster_ld_f32(const void* p, u32 rank) {
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(cluster_addr(p, rank)) : "memory");
    return v;
}

// Point-to-point exchange inside a cluster (the panel's push meeting): a
// block stores into the receivers' shared memory with st.async, each store
// completing its bytes on the receiver's mbarrier; a receiver expects the
// bytes of a phase and waits on its own mbarrier. No memory fence is needed
// (a release barrier or fence compiles to a full GPU-scope membar on sm_90).
__device__ __forceinline__ u32 smem_addr(const void* p) {
    u32 a;
    asm volatile("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }"
                 : "=r"(a)
                 : "l"(p));
    return a;
}

__device__ __forceinline__ void mbar_init(void* bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count)
                 : "memory");
}

// Makes this thread's mbarrier inits visible to the cluster (a cluster
// barrier must still follow before any remote store completes on them).
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// This thread's arrival on its block's mbarrier, expecting `bytes` more
// bytes of st.async data in the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(void* bar, u32 bytes) {
    asm volatile("{ .reg .b64 st;\n\t"
                 "mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}

// Stores `v` at the address of `p` in block `rank`, completing 8 (4) bytes
// on that block's mbarrier at the address of `bar`.
__device__ __forceinline__ void cluster_st_async_f64(void* p, u32 rank, double v, void* bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(
                     cluster_addr(p, rank)),
                 "l"(__double_as_longlong(v)), "r"(cluster_addr(bar, rank))
                 : "memory");
}

__device__ __forceinline__ void cluster_st_async_f32(void* p, u32 rank, float v, void* bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                     cluster_addr(p, rank)),
                 "r"(__float_as_uint(v)), "r"(cluster_addr(bar, rank))
                 : "memory");
}

// Waits until the phase of this block's mbarrier with parity `parity` has
// completed (its arrivals and expected bytes are all in).
__device__ __forceinline__ void mbar_wait(void* bar, u32 parity) {
    const u32 a = smem_addr(bar);
    u32 done = 0;
    while (!done)
        asm volatile("{ .reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
}

__device__ __forceinline__ u32 cluster_ld_u32(const void* p, u32 rank) {
    u32 v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(cluster_addr(p, rank)) : "memory");
    return v;
}
#endif

// The fold of the one-barrier shared-memory panel (panel_ops.cu's PANEL_FOLD,
// launched with fold = 1 for every panel but the first): the previous panel's update of this panel's own columns, which a
// launch of the tensor-core update would do, runs in the panel kernel
// first, so the chain of a few-matrix factorization has one launch per
// panel. Over rows
// p - 32.. of the columns p..p+w (A, the top 32 rows apart in `top`):
//   W = V^T A (32 x 32): thread (rg, i4, c4) sums a 4 x 4 block over the
//     rows rg, rg + G, ... (G = THREADS / 64 groups); the G partials meet
//     in order;
//   W2 = T^T W;
//   A -= V W2: lane c keeps W2's column c, warps take rows.
// V (staged in shared memory) and T are the previous panel's, from its
// buffers; float32 FMAs throughout, a fixed order, so the bits repeat. The
// top rows are final afterwards (R of the previous panel's rows) and go
// straight to H; the rest is this panel's input.

// The fold of a panel of `rows` rows (leading dimension LD, at least 32)
// by a block of THREADS threads (a multiple of 64). Its scratch follows the
// panel's rows in dynamic shared memory: V (rows + 32 rows), THREADS / 64
// partials of W, W and W2
// (Variant::fold_bytes on the host); `top` and
// `tt` (T) are the caller's static arrays.
template <int THREADS, int LD>
__device__ __forceinline__ void qr_fold_apply(float* s, float (*top)[32], float (*tt)[33],
                                              const float* __restrict__ vp,
                                              const float* __restrict__ tp, const float* ap,
                                              float* htop, int n, int rows, int w, int tid) {
    // The panel's width, warps, row groups and loads in flight per thread.
    constexpr int kNb = 32, kWarps = THREADS / 32, kGroups = THREADS / 64, kLoads = 8;
    static_assert(THREADS % 64 == 0, "the fold maps its W pass onto groups of 64 threads");
    const int lane = tid & 31, warp = tid >> 5;
    const int all = rows + kNb;
    float* sv = s + rows * LD;
    float* part = sv + all * kNb;
    float* fw = part + kGroups * kNb * kNb;
    float* fw2 = fw + kNb * kNb;
    // V, T and the columns, kLoads loads in flight per thread.
    for (int e = tid; e < kNb * kNb; e += THREADS) tt[e >> 5][e & 31] = tp[e];
    for (int base = tid; base < all * kNb; base += kLoads * THREADS) {
        float x[kLoads], v[kLoads];
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
            const int idx = base + u * THREADS, r = idx >> 5, c = idx & 31;
            const bool in = idx < all * kNb;
            v[u] = in ? vp[idx] : 0.0f;
            x[u] = in && c < w ? ap[(long long)r * n + c] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
            const int idx = base + u * THREADS, r = idx >> 5, c = idx & 31;
            if (idx < all * kNb) {
                sv[idx] = v[u];
                if (r < kNb)
                    top[r][c] = x[u];
                else
                    s[(r - kNb) * LD + c] = x[u];
            }
        }
    }
    __syncthreads();
    {
        const int c4 = tid & 7, i4 = (tid >> 3) & 7, rg = tid >> 6;
        float acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[i][c] = 0.0f;
#pragma unroll 2
        for (int r = rg; r < all; r += kGroups) {
            const float4 v = *reinterpret_cast<const float4*>(sv + r * kNb + 4 * i4);
            const float* arow = r < kNb ? top[r] : s + (r - kNb) * LD;
            const float4 a = *reinterpret_cast<const float4*>(arow + 4 * c4);
            const float vv[4] = {v.x, v.y, v.z, v.w}, aa[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[i][c] = fmaf(vv[i], aa[c], acc[i][c]);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int c = 0; c < 4; ++c)
                part[rg * (kNb * kNb) + (4 * i4 + i) * kNb + 4 * c4 + c] = acc[i][c];
    }
    __syncthreads();
    for (int e = tid; e < kNb * kNb; e += THREADS) {
        float x = 0.0f;
#pragma unroll
        for (int g = 0; g < kGroups; ++g) x += part[g * (kNb * kNb) + e];
        fw[e] = x;
    }
    __syncthreads();
    // W2[i][c] = sum over k <= i of T[k][i] W[k][c] (T upper triangular).
    for (int e = tid; e < kNb * kNb; e += THREADS) {
        const int i = e >> 5, c = e & 31;
        float x = 0.0f;
        for (int k = 0; k <= i; ++k) x = fmaf(tt[k][i], fw[k * kNb + c], x);
        fw2[e] = x;
    }
    __syncthreads();
    {
        float w2c[kNb];
#pragma unroll
        for (int i = 0; i < kNb; ++i) w2c[i] = fw2[i * kNb + lane];
        for (int r = warp; r < all; r += kWarps) {
            float* arow = r < kNb ? top[r] : s + (r - kNb) * LD;
            float x = arow[lane];
            const float4* vr = reinterpret_cast<const float4*>(sv + r * kNb);
#pragma unroll
            for (int q = 0; q < kNb / 4; ++q) {
                const float4 v = vr[q];
                x = fmaf(-v.x, w2c[4 * q], x);
                x = fmaf(-v.y, w2c[4 * q + 1], x);
                x = fmaf(-v.z, w2c[4 * q + 2], x);
                x = fmaf(-v.w, w2c[4 * q + 3], x);
            }
            arow[lane] = x;
        }
    }
    __syncthreads();
    for (int e = tid; e < kNb * kNb; e += THREADS) {
        const int r = e >> 5, c = e & 31;
        if (c < w) htop[(long long)r * n + c] = top[r][c];
    }
}
