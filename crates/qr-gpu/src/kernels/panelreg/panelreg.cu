// Register-resident panel factorization of the `blocked` and `cluster` paths.
//
// One launch factors the 32-column panel at column p of every matrix: rows
// p..n split into PREG_CLUSTER chunks (1 when PREG_CLUSTER is 0), one block
// per chunk (grid = (chunks, matrices)), each thread holding PREG_RPT whole
// rows of its block's chunk in registers (thread t owns chunk rows t,
// t + PREG_THREADS, ...).
//
// Why: the shared-memory panel kernel (panel.cu) streams its rows through
// shared memory three times per reflector (the dot products, the update's
// read and its write), so a few blocks per SM run at the shared-memory
// port's rate. Here a thread's rows never leave its registers: per
// reflector it adds x * A[i][c] over its own rows for all 32 columns, a
// warp-level transposing butterfly (31 shuffles) leaves column c's warp sum
// in lane c, the warps' sums meet in shared memory, and with PREG_CLUSTER
// > 0 the blocks' sums meet through distributed shared memory. Either way
// the block meets once per reflector and every thread forms the reflector
// (panel.cu's one-barrier loop); scaled reflectors are formed in float32,
// tiny ones in double.
//
// Numerics are panel.cu's: the panel is scaled by a power of two into
// [0.5, 1); sums are float32 per thread and warp, across warps in float32
// (alone) or double (clusters), in a fixed order (every block forms the same
// reflector, every run the same bits); a reflector whose scaled
// ||x[1..]||^2 falls below PREG_TINY has its sums redone in double.
//
// Input: the panel is read from `src` (h itself, or the caller's input for
// the first panel of an out-of-place factorization) and written to h; a
// panel at or right of zcol[m] (in place) only writes tau = 0. The
// arguments `vprev`, `tprev` and `fold` are not read (they were the
// register panel's fold, deleted: measured slower, docs/PERF.md); the
// kernels keep them so that their code stays the one measured.
// Outputs are panel.cu's: H's panel, tau, the explicit unit-lower V (zero
// padded to 32 columns) and the 32 x 32 upper-triangular T of LAPACK's larft
// (forward, columnwise). With `oflow`, a block that writes a non-finite
// value of H's panel or tau marks its matrix (qr_mark_overflow): these
// values are final, so no later pass needs to read them again.
//
// With PREG_HALVES (a block alone), each thread holds 16 columns of
// PREG_RPT rows instead (the kernel at the end of this file): the same
// one-barrier loop with half-warp butterflies.
//
// The planner keeps ceil((n - p) / chunks) <= PREG_THREADS * PREG_RPT
// (PREG_THREADS / 2 * PREG_RPT with PREG_HALVES).

#ifndef PREG_THREADS
#error "PREG_THREADS (block size) must be defined by the plan"
#endif
#ifndef PREG_RPT
#error "PREG_RPT (panel rows per thread) must be defined by the plan"
#endif
#ifndef PREG_CLUSTER
#error "PREG_CLUSTER (blocks per thread-block cluster, 0 for one block per matrix) must be defined by the plan"
#endif
#ifndef PREG_HALVES
#error "PREG_HALVES (1: each thread holds half of its rows' columns, a block alone) must be defined by the plan"
#endif
#if PREG_HALVES && (PREG_CLUSTER > 0 || PREG_THREADS < 64)
#error "PREG_HALVES is for a block alone of 64 threads or more"
#endif
#define PREG_NB 32
#define PREG_WARPS (PREG_THREADS / 32)
#define PREG_GROUPS (PREG_CLUSTER > 0 ? PREG_CLUSTER : 1)
// 2^-60: below it a scaled squared norm may have lost bits to underflow.
#define PREG_TINY 8.673617379884035e-19
// Blocks per SM the register budget allows: the rows, the 32 partial sums and
// about 32 registers of addressing per thread. A cluster's few blocks per SM
// take what they need instead (the remote loads of the meeting add some).
#define PREG_REGS ((PREG_HALVES ? 16 : 32) * PREG_RPT + 64)
#if PREG_CLUSTER > 0
#define PREG_MIN_BLOCKS 1
#else
#define PREG_MIN_BLOCKS \
    (65536 / (PREG_THREADS * PREG_REGS) > 0 ? 65536 / (PREG_THREADS * PREG_REGS) : 1)
#endif

#if PREG_CLUSTER > 0
#define PREG_CLUSTER_ATTR __cluster_dims__(PREG_CLUSTER, 1, 1)
#else
#define PREG_CLUSTER_ATTR
#endif

// One halving step of preg_transpose_sum: lanes whose bit `H` is set keep
// v[H..2H) and send v[0..H), the others the reverse; v[c] becomes the kept
// value plus the partner's. A template bound: as a loop over `half >>= 1`,
// NVRTC 13.5 left the steps rolled and put v in local memory (a 128-byte
// stack frame and 64 local accesses per reflector; the first measurements
// of this kernel paid for them: docs/history/qr-gpu-sessions.md, "the
// register panel, measured without local memory").
template <int H, int N>
__device__ __forceinline__ void preg_transpose_step(float (&v)[N], int lane) {
    const bool up = (lane & H) != 0;
#pragma unroll
    for (int c = 0; c < H; ++c) {
        const float send = up ? v[c] : v[c + H];
        const float keep = up ? v[c + H] : v[c];
        v[c] = keep + __shfl_xor_sync(0xffffffffu, send, H);
    }
}

// On entry every lane holds v[0..32); on return lane c holds the warp's sum of
// v[c]. Each halving step trades the half of the values the partner keeps, so
// 16 + 8 + 4 + 2 + 1 shuffles replace 32 separate warp reductions. The order of
// the additions is fixed, so every run gets the same bits.
__device__ __forceinline__ float preg_transpose_sum(float (&v)[PREG_NB], int lane) {
    preg_transpose_step<16>(v, lane);
    preg_transpose_step<8>(v, lane);
    preg_transpose_step<4>(v, lane);
    preg_transpose_step<2>(v, lane);
    preg_transpose_step<1>(v, lane);
    return v[0];
}

// 16-byte global accesses through PTX (the vector types live in headers);
// element by element under the host emulator (tools/cudasim).
__device__ __forceinline__ void preg_ld4(const float* p, float& x0, float& x1, float& x2,
                                         float& x3) {
#ifdef CUDASIM
    x0 = p[0], x1 = p[1], x2 = p[2], x3 = p[3];
#else
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(x0), "=f"(x1), "=f"(x2), "=f"(x3)
                 : "l"(p));
#endif
}

__device__ __forceinline__ void preg_st4(float* p, float x0, float x1, float x2, float x3) {
#ifdef CUDASIM
    p[0] = x0, p[1] = x1, p[2] = x2, p[3] = x3;
#else
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x0), "f"(x1), "f"(x2),
                 "f"(x3)
                 : "memory");
#endif
}

// Column c of a row (or half row), for a run-time c (the cold double path).
template <int N>
__device__ __forceinline__ float preg_pick(const float (&row)[N], int c) {
    float x = 0.0f;
#pragma unroll
    for (int q = 0; q < N; ++q) x = q == c ? row[q] : x;
    return x;
}

struct alignas(16) preg_f4 {
    float x[4];
};

// The registers move one slot left (slot 0 to slot 31): a compile-time
// renaming of every slot, so each step's pivot is slot 0.
template <int N>
__device__ __forceinline__ void preg_rotate(float (&a)[PREG_RPT][N]) {
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k) {
        const float t = a[k][0];
#pragma unroll
        for (int c = 0; c + 1 < N; ++c) a[k][c] = a[k][c + 1];
        a[k][N - 1] = t;
    }
}

// A row's N slots (32, or a half row's 16) into shared memory, 16 bytes at a
// time.
template <int N>
__device__ __forceinline__ void preg_publish(const float (&row)[N], float* dst) {
#pragma unroll
    for (int c = 0; c < N; c += 4) {
        preg_f4 q4;
        q4.x[0] = row[c];
        q4.x[1] = row[c + 1];
        q4.x[2] = row[c + 2];
        q4.x[3] = row[c + 3];
        *reinterpret_cast<preg_f4*>(dst + c) = q4;
    }
}

// Reflector r's sums of the warp (one-barrier loop, slot 0 the pivot
// column): lane c gets the sum over the warp's rows below r of
// x * A[., slot c], x = slot 0, in a fixed order. `rb` is the block's first
// panel row (0 for a block alone).
__device__ __forceinline__ void preg_dots(const float (&a)[PREG_RPT][PREG_NB], int r, int rb,
                                          int tid, int rows, int lane, float* out) {
    float part[PREG_NB];
#pragma unroll
    for (int c = 0; c < PREG_NB; ++c) part[c] = 0.0f;
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k) {
        const int lr = tid + k * PREG_THREADS;
        const float x = rb + lr > r && lr < rows ? a[k][0] : 0.0f;
#pragma unroll
        for (int c = 0; c < PREG_NB; ++c) part[c] = fmaf(x, a[k][c], part[c]);
    }
    out[lane] = preg_transpose_sum(part, lane);
}

// The cold path's sums of reflector r in double, slot by slot: out[c] (the
// warp's slice) gets the warp's sum over its rows below r of
// x * A[., slot c], x = slot 0. `rb` is the block's first panel row.
__device__ __forceinline__ void preg_dots_f64(const float (&a)[PREG_RPT][PREG_NB], int r, int rb,
                                              int tid, int rows, int lane, double* out) {
#pragma unroll 1
    for (int c = 0; c < PREG_NB; ++c) {
        double d = 0.0;
#pragma unroll
        for (int k = 0; k < PREG_RPT; ++k) {
            const int lr = tid + k * PREG_THREADS;
            const double x = rb + lr > r && lr < rows ? (double)a[k][0] : 0.0;
            d = fma(x, (double)preg_pick(a[k], c), d);
        }
        d = warp_sum_f64(d);
        if (lane == c) out[c] = d;
    }
}


// Where the blocks of one matrix meet (cluster only): two slots, so that a
// block writing meeting k + 2 cannot overwrite what a slower block still
// reads of meeting k (it has passed meeting k + 1's barrier by then).
struct PregMeet {
    double part[2][PREG_NB];
    float row[2][PREG_NB];
    u32 any[2];
    float max;
};

// Totals over the matrix's blocks of warp 0's per-lane block sums `t`, the
// "any non-zero" flags and the reflector's row (from the block `owner` that
// holds it). Called by every thread; the results are valid in warp 0.
__device__ __forceinline__ void preg_meet(PregMeet& mt, int& slot, int owner, double& t, u32& any,
                                          float& rv) {
#if PREG_CLUSTER > 0
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp == 0) {
        mt.part[slot][lane] = t;
        mt.row[slot][lane] = rv;
        if (lane == 0) mt.any[slot] = any;
    }
    cluster_barrier();
    if (warp == 0) {
        // All remote loads first: issued back to back, their latencies overlap.
        double x[PREG_CLUSTER];
        u32 f[PREG_CLUSTER];
#pragma unroll
        for (int q = 0; q < PREG_CLUSTER; ++q) {
            x[q] = cluster_ld_f64(&mt.part[slot][lane], (u32)q);
            f[q] = cluster_ld_u32(&mt.any[slot], (u32)q);
        }
        rv = cluster_ld_f32(&mt.row[slot][lane], (u32)owner);
        t = 0.0;
        any = 0;
#pragma unroll
        for (int q = 0; q < PREG_CLUSTER; ++q) {
            t += x[q];
            any |= f[q];
        }
    }
    slot ^= 1;
#endif
}

// One step's reflector as every thread of the one-barrier loops forms it,
// from the block's sums `tlf` of this lane's slot (column `col`), the pivot
// row's entry `rv` there and the pivot's alpha and squared norm `trf`
// (scaled, at least PREG_TINY): in float32, scaled_reflector_f32. Returns
// the step's w_c for this lane (0 unless `upd`, the columns the reflector
// updates) and sets the row scale and beta; warp 0 writes T's Gram column
// and tau.
__device__ __forceinline__ float preg_reflector_f32(float alpha, float trf, float tlf, float rv,
                                                    bool upd, int col, int r, int warp,
                                                    int lane, double (*gram)[PREG_NB + 1],
                                                    float* taus, float& fs, double& sc,
                                                    float& beta) {
    const ReflectorF32 rf = scaled_reflector_f32(alpha, trf);
    const float vta = fmaf(rf.scale, tlf, rv);
    const float wc = upd ? rf.tau * vta : 0.0f;
    if (warp == 0) {
        gram[col][r] = col < r ? (double)vta : 0.0;
        if (lane == 0) taus[r] = rf.tau;
    }
    fs = rf.scale;
    sc = (double)rf.scale;
    beta = rf.beta;
    return wc;
}

// As preg_reflector_f32 from the sums redone in double (`tl`, the pivot's
// `tr`; make_reflector): the row scale `sc` in double and whether its float
// `fs` holds it (`fast`). tau = 0 leaves x as it is (v = x, panel.cu's
// convention).
__device__ __forceinline__ float preg_reflector_f64(float alpha, double tr, double tl, float rv,
                                                    bool upd, int col, int r, int warp,
                                                    int lane, double (*gram)[PREG_NB + 1],
                                                    float* taus, float& fs, double& sc,
                                                    float& beta, bool& fast) {
    const Reflector rf = make_reflector(alpha, tr);
    const double vta = (double)rv + rf.scale * tl;
    const float wc = upd && rf.tau != 0.0f ? (float)((double)rf.tau * vta) : 0.0f;
    if (warp == 0) {
        gram[col][r] = col < r ? vta : 0.0;
        if (lane == 0) taus[r] = rf.tau;
    }
    sc = rf.tau == 0.0f ? 1.0 : rf.scale;
    fs = (float)sc;
    beta = rf.beta;
    fast = fabs(sc) < 1.0e30;
    return wc;
}

// preg_store_row and prelude.cu's qr_block_max and qr_panel_finish serve
// the halves kernel. The whole-row kernel keeps its own copies of those
// steps: routed through them, NVRTC 13.5 scheduled its cluster variant's
// prologue differently, and the measured kernels stay byte-identical until
// a device run measures such a change.

// Panel row `row` of NC columns from column `cb` (`x`, slot c = column
// cb + c) into H (`hrow`, R back at the input's scale 2^ex) and into V
// (`vrow`: unit lower, zero padded to the panel width); `bad` notes a
// non-finite value of H written (qr_mark_overflow).
template <int NC>
__device__ __forceinline__ void preg_store_row(const float (&x)[NC], float* hrow, float* vrow,
                                               int row, int cb, int w, int ex, bool vec,
                                               bool& bad) {
    float hv[NC], vv[NC];
#pragma unroll
    for (int c = 0; c < NC; ++c) {
        const int cc = cb + c;
        // R (on and above the diagonal) goes back to the input's scale.
        hv[c] = row <= cc ? ldexpf(x[c], ex) : x[c];
        vv[c] = (cc >= w || row < cc) ? 0.0f : (row == cc ? 1.0f : x[c]);
        bad |= cc < w && qr_nonfinite(hv[c]);
    }
    // V's rows are 128-byte aligned (32 floats from an aligned base).
#pragma unroll
    for (int c = 0; c < NC; c += 4) preg_st4(vrow + c, vv[c], vv[c + 1], vv[c + 2], vv[c + 3]);
    if (vec) {
#pragma unroll
        for (int c = 0; c < NC; c += 4) preg_st4(hrow + c, hv[c], hv[c + 1], hv[c + 2], hv[c + 3]);
    } else {
#pragma unroll
        for (int c = 0; c < NC; ++c)
            if (cb + c < w) hrow[c] = hv[c];
    }
}

#if !PREG_HALVES
extern "C" __global__ void PREG_CLUSTER_ATTR __launch_bounds__(PREG_THREADS, PREG_MIN_BLOCKS)
    panelreg_factor_f32(float* h, const float* src, const int* __restrict__ zcol,
                        float* __restrict__ vbuf, float* __restrict__ tbuf,
                        float* __restrict__ tau, int n, int p, int w, int mat0,
                        const float* __restrict__ vprev, const float* __restrict__ tprev,
                        int fold, int* __restrict__ oflow) {
    __shared__ double red[PREG_WARPS][PREG_NB];
    __shared__ double red2[PREG_WARPS][PREG_NB];
    __shared__ float wmax[PREG_WARPS];
    __shared__ double gram[PREG_NB][PREG_NB + 1];
    __shared__ float taus[PREG_NB];
    __shared__ PregMeet mt;
#if PREG_CLUSTER > 0
    __shared__ unsigned long long pmbar[2];  // one per meeting slot
#endif

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = blockIdx.x, m = mat0 + blockIdx.y;
    const int nrow = n - p;
    const int chunk = (nrow + PREG_GROUPS - 1) / PREG_GROUPS;
    const int r0 = min(nrow, g * chunk);
    const int rows = min(nrow, r0 + chunk) - r0;
    float* hm = h + (long long)m * n * n + (long long)p * n + p;
    // The panel is read from `src` (h itself, or the input on the first
    // panel of an out-of-place factorization) and written to h.
    const float* sm = src + (long long)m * n * n + (long long)p * n + p;
    // Columns from zcol[m] on are zero in the input and stay zero: such a
    // panel's factorization is tau = 0 and nothing else (panel.cu's rule;
    // the same for every block of the matrix).
    const bool zero_panel = src == h && p >= zcol[m];
#if PREG_CLUSTER > 0
    int slot = 0;
#endif

    // Whole 16-byte row pieces when every panel row is 16-byte aligned.
    const bool vec = w == PREG_NB && (n & 3) == 0 && ((unsigned long long)hm & 15) == 0 &&
                     ((unsigned long long)sm & 15) == 0;
    float a[PREG_RPT][PREG_NB];
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k) {
        const int lr = tid + k * PREG_THREADS;
        const float* row = sm + (long long)(r0 + lr) * n;
        if (vec && lr < rows) {
#pragma unroll
            for (int c = 0; c < PREG_NB; c += 4)
                preg_ld4(row + c, a[k][c], a[k][c + 1], a[k][c + 2], a[k][c + 3]);
        } else {
#pragma unroll
            for (int c = 0; c < PREG_NB; ++c) a[k][c] = (lr < rows && c < w) ? row[c] : 0.0f;
        }
#pragma unroll
        for (int c = 0; c < PREG_NB; ++c) amax = fmaxf(amax, fabsf(a[k][c]));
    }
    if (zero_panel) {  // uniform over the matrix's blocks: no barrier is left waiting
        if (g == 0 && tid < w) tau[(long long)m * n + p + tid] = 0.0f;
        return;
    }
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (lane == 0) wmax[warp] = amax;
    __syncthreads();
    float bmax = 0.0f;
#pragma unroll
    for (int q = 0; q < PREG_WARPS; ++q) bmax = fmaxf(bmax, wmax[q]);
#if PREG_CLUSTER > 0
    if (tid == 0) {
        mt.max = bmax;
        // Every block's mbarriers exist before any block pushes into them:
        // the cluster barrier below orders the inits before the first meeting.
        mbar_init(&pmbar[0], 1u);
        mbar_init(&pmbar[1], 1u);
        mbar_init_fence();
    }
    cluster_barrier();
    bmax = 0.0f;
#pragma unroll
    for (int q = 0; q < PREG_CLUSTER; ++q) bmax = fmaxf(bmax, cluster_ld_f32(&mt.max, (u32)q));
#endif
    const int ex = qr_scale_exponent(bmax);
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k)
#pragma unroll
        for (int c = 0; c < PREG_NB; ++c) a[k][c] = ldexpf(a[k][c], -ex);

    // One meeting per reflector, as panel.cu's one-barrier loop. The pass
    // that updates the rows for reflector r also forms reflector r + 1's
    // per-warp sums (slot c: column r + 1 + c) and the thread holding row
    // r + 1 publishes it; after the meeting every thread adds the sums for
    // its lane's slot and forms the reflector itself, in float32 from the
    // scaled panel (double where the norm is tiny), so nothing else waits
    // for one warp. A warp shares its lanes' row coefficients w_c through
    // its own slice of shared memory. The rows rotate left by one register
    // per step, so the pivot column is always register 0 and every index is
    // a compile-time one: register c holds column (r + c) mod 32, and after
    // 32 steps the order is back.
    // A block alone meets at one barrier. A cluster meets at one barrier and
    // one mbarrier wait: after the barrier, warp 0 adds its block's warp
    // sums and pushes them with st.async into every block's shared memory
    // (the block owning the pivot row pushes the row too); each block waits
    // on its own mbarrier for the cluster's sums and adds them in block
    // order, so every block forms the same reflector. (A cluster that met
    // twice per reflector, with a cluster barrier, remote loads and warp
    // 0's serial reflector, was slower: docs/PERF.md.)
    {
        __shared__ float redf[2][PREG_WARPS][PREG_NB];
        __shared__ __attribute__((aligned(16))) float rowf[2][PREG_NB];
        __shared__ __attribute__((aligned(16))) float wsh[PREG_WARPS][PREG_NB];
#if PREG_CLUSTER > 0
        // The first panel row of this block; a block alone has 0 as a
        // constant, so its code stays that of the plain loop.
        const int rb = r0;
        // Slot s of meeting r = s mod 2: every block's sums, the pivot row.
        __shared__ float xsum[2][PREG_CLUSTER][PREG_NB];
        __shared__ float xrow[2][PREG_NB];
        // Whether this block holds panel row r (r < w <= nrow, so exactly one
        // block does): a compare instead of the division of r / chunk on
        // warp 0's way to the meeting.
        const auto owns = [&](int r) { return (unsigned)(r - rb) < (unsigned)rows; };
#else
        constexpr int rb = 0;
#endif
        preg_dots(a, 0, rb, tid, rows, lane, redf[0][warp]);
#if PREG_CLUSTER > 0
        if (owns(0) && tid == 0) preg_publish(a[0], rowf[0]);
#else
        if (tid == 0) preg_publish(a[0], rowf[0]);
#endif
        // Two steps per iteration: the second step's slots are the first's
        // renamed, so the registers move (the rotation's moves at the back
        // edge) once per two steps (NVRTC 13.5, 256 threads x 2 rows: 455
        // instructions a step against 593 at one step; 4 and 8 steps, with
        // fewer instructions, measured no faster on the H100,
        // docs/PERF.md).
#pragma unroll 2
        for (int r = 0; r < w; ++r) {
            const int par = r & 1;
            __syncthreads();  // redf[par]: reflector r's sums; rowf[par]: row r
#if PREG_CLUSTER > 0
            if (warp == 0) {
                float xb[PREG_WARPS];
#pragma unroll
                for (int q = 0; q < PREG_WARPS; ++q) xb[q] = redf[par][q][lane];
                const float bs = pairwise_sum_f32(xb);
                // This phase of slot par: every block's 32 sums and the row.
                // Bytes may land before the expectation. A block stores into
                // slot par again two meetings on, after its wait for meeting
                // r + 1, whose sums every block pushes only after its
                // barrier of that step, when its threads have read this
                // meeting's slot: no overrun.
                if (lane == 0)
                    mbar_arrive_expect_tx(&pmbar[par], (u32)((PREG_CLUSTER + 1) * PREG_NB * 4));
                const bool own = owns(r);
                const float rv = rowf[par][lane];
#pragma unroll
                for (int q = 0; q < PREG_CLUSTER; ++q) {
                    cluster_st_async_f32(&xsum[par][g][lane], (u32)q, bs, &pmbar[par]);
                    if (own) cluster_st_async_f32(&xrow[par][lane], (u32)q, rv, &pmbar[par]);
                }
            }
            // Each slot's mbarrier completes one phase every second meeting.
            mbar_wait(&pmbar[par], (u32)(r >> 1) & 1u);
            float xs[PREG_CLUSTER];
#pragma unroll
            for (int q = 0; q < PREG_CLUSTER; ++q) xs[q] = xsum[par][q][lane];
            const float rv = xrow[par][lane];
#else
            float xs[PREG_WARPS];
#pragma unroll
            for (int q = 0; q < PREG_WARPS; ++q) xs[q] = redf[par][q][lane];
            const float rv = rowf[par][lane];
#endif
            const float alpha = __shfl_sync(0xffffffffu, rv, 0);
            const int col = (r + lane) & (PREG_NB - 1);  // this lane's slot's column
            const int lim = w - r;  // slots 1 .. lim - 1: the columns the reflector updates
            const float tlf = pairwise_sum_f32(xs);
            const float trf = __shfl_sync(0xffffffffu, tlf, 0);
            float wc, fs, beta;
            double sc;
            bool fast;
            if (trf >= (float)PREG_TINY) {  // the same in every thread (and block): uniform
                const ReflectorF32 rf = scaled_reflector_f32(alpha, trf);
                const float vta = fmaf(rf.scale, tlf, rv);
                wc = lane >= 1 && lane < lim ? rf.tau * vta : 0.0f;
                if (warp == 0) {
                    gram[col][r] = col < r ? (double)vta : 0.0;
                    if (lane == 0) taus[r] = rf.tau;
                }
                fs = rf.scale;
                sc = (double)rf.scale;
                beta = rf.beta;
                fast = true;
            } else {
                // A (nearly) vanished column: its sums again in double, slot
                // by slot (cold: rank-deficient and structured matrices).
                preg_dots_f64(a, r, rb, tid, rows, lane, red2[warp]);
                __syncthreads();
                double tl = 0.0;
#pragma unroll
                for (int q = 0; q < PREG_WARPS; ++q) tl += red2[q][lane];
#if PREG_CLUSTER > 0
                {
                    // The blocks' double sums meet by a pull meeting
                    // (preg_meet; the row and flags it also passes are not
                    // needed here), then reach every warp.
                    u32 any = 0;
                    float row = 0.0f;
                    preg_meet(mt, slot, 0, tl, any, row);
                    if (warp == 0) red[0][lane] = tl;
                    __syncthreads();
                    tl = red[0][lane];
                }
#endif
                const double tr = __shfl_sync(0xffffffffu, tl, 0);
                wc = preg_reflector_f64(alpha, tr, tl, rv, lane >= 1 && lane < lim, col, r, warp,
                                        lane, gram, taus, fs, sc, beta, fast);
            }
            wsh[warp][lane] = wc;
            __syncwarp();
            float wv[PREG_NB];
#pragma unroll
            for (int c = 0; c < PREG_NB; c += 4) {
                const preg_f4 q4 = *reinterpret_cast<const preg_f4*>(&wsh[warp][c]);
                wv[c] = q4.x[0];
                wv[c + 1] = q4.x[1];
                wv[c + 2] = q4.x[2];
                wv[c + 3] = q4.x[3];
            }
#pragma unroll
            for (int k = 0; k < PREG_RPT; ++k) {
                const int lr = tid + k * PREG_THREADS;
                // Rows above the pivot are final; padding rows stay zero.
                if (rb + lr >= r && lr < rows) {
                    const float x = a[k][0];
                    const float v =
                        rb + lr == r ? 1.0f : (fast ? x * fs : (float)((double)x * sc));
                    // w_c is 0 outside the columns the reflector updates,
                    // which keeps them but for the sign of a zero (-0 may
                    // become +0: a predicate per slot cost a quarter more
                    // instructions per step, NVRTC 13.5).
#pragma unroll
                    for (int c = 1; c < PREG_NB; ++c) a[k][c] = fmaf(-v, wv[c], a[k][c]);
                    a[k][0] = rb + lr == r ? beta : v;
                }
            }
            preg_rotate(a);
            if (r + 1 < w) {
                preg_dots(a, r + 1, rb, tid, rows, lane, redf[par ^ 1][warp]);
                // Row r + 1 lies in its thread's first register row.
#if PREG_CLUSTER > 0
                if (owns(r + 1) && tid == r + 1 - rb) preg_publish(a[0], rowf[par ^ 1]);
#else
                if (tid == r + 1) preg_publish(a[0], rowf[par ^ 1]);
#endif
            }
        }
        // Back to slot c = column c (w < 32 leaves the rotation short).
#pragma unroll 1
        for (int r = w; r < PREG_NB; ++r) preg_rotate(a);
        __syncthreads();  // gram and taus complete before larft
    }
#if PREG_CLUSTER > 0
    // No block may leave while another can still read its shared memory.
    cluster_barrier();
#endif

    bool bad = false;  // a non-finite value written (qr_mark_overflow)
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k) {
        const int lr = tid + k * PREG_THREADS, pr = r0 + lr;
        if (lr < rows) {
            float* row = hm + (long long)pr * n;
            float* vrow = vbuf + (long long)m * n * PREG_NB + (long long)pr * PREG_NB;
            float hv[PREG_NB], vv[PREG_NB];
#pragma unroll
            for (int c = 0; c < PREG_NB; ++c) {
                const float x = a[k][c];
                // R (on and above the diagonal) goes back to the input's scale.
                hv[c] = pr <= c ? ldexpf(x, ex) : x;
                vv[c] = (c >= w || pr < c) ? 0.0f : (pr == c ? 1.0f : x);
                bad |= c < w && qr_nonfinite(hv[c]);
            }
            // V's rows are 128-byte aligned (32 floats from an aligned base).
#pragma unroll
            for (int c = 0; c < PREG_NB; c += 4)
                preg_st4(vrow + c, vv[c], vv[c + 1], vv[c + 2], vv[c + 3]);
            if (vec) {
#pragma unroll
                for (int c = 0; c < PREG_NB; c += 4)
                    preg_st4(row + c, hv[c], hv[c + 1], hv[c + 2], hv[c + 3]);
            } else {
#pragma unroll
                for (int c = 0; c < PREG_NB; ++c)
                    if (c < w) row[c] = hv[c];
            }
        }
    }
    qr_mark_overflow(oflow, m, bad);
    if (g != 0) return;

    // T from the Gram columns.
    larft_blocked<PREG_NB, PREG_NB + 1, PREG_THREADS>(gram, taus, w, tid);
    for (int idx = tid; idx < PREG_NB * PREG_NB; idx += PREG_THREADS) {
        const int k = idx >> 5, c = idx & 31;
        const float t = (k < w && c < w && k <= c) ? (float)gram[k][c] : 0.0f;
        tbuf[(long long)m * PREG_NB * PREG_NB + idx] = t;
    }
    if (tid < w) tau[(long long)m * n + p + tid] = taus[tid];
    qr_mark_overflow(oflow, m, tid < w && qr_nonfinite(taus[tid & (PREG_NB - 1)]));
}
#endif  // !PREG_HALVES

#if PREG_HALVES
// Halves (PREG_HALVES, a block alone): the two halves of a warp hold the
// same PREG_RPT rows, lanes 0..15 their columns 0..15 and lanes 16..31
// their columns 16..31, row lane rl = 16 warp + lane % 16 holding rows rl,
// rl + PREG_THREADS / 2, ... Why: the transposing butterfly reduces each
// half's 16 partial sums over its 16 lanes, 15 exchanges where whole rows
// take 31 for 32 sums (a quarter of a step's instructions at 256 threads x
// 2 rows, docs/history/qr-gpu-sessions.md), and a thread keeps 16 partials
// instead of 32. The price: each step's pivot column lives in one half, so the other half
// fetches its rows' pivot values by a shuffle (PREG_RPT a step). The
// registers of both halves rotate one slot per step; with 16 slots the
// rotation repeats every 16 steps, so the pivot is slot 0 of the lower half
// in steps 0..15 and of the upper half in steps 16..31. Sums run in a fixed
// order (the same bits every run), in another order than whole rows.
#define PREG_HNC 16                   // columns per thread
#define PREG_HROWS (PREG_THREADS / 2)  // row lanes of a block

__device__ __forceinline__ float preg_half_sum(float (&v)[PREG_HNC], int lane) {
    preg_transpose_step<8>(v, lane);
    preg_transpose_step<4>(v, lane);
    preg_transpose_step<2>(v, lane);
    preg_transpose_step<1>(v, lane);
    return v[0];
}

// The pivot column's value in each of the thread's rows at step r (slot 0
// of the half that holds column r).
__device__ __forceinline__ void preg_hpivot(const float (&a)[PREG_RPT][PREG_HNC], int r, int lane,
                                            float (&x)[PREG_RPT]) {
    const int src = (lane & 15) | (r >= PREG_HNC ? 16 : 0);
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k) x[k] = __shfl_sync(0xffffffffu, a[k][0], src);
}

// Reflector r's sums of the warp: lane 16 h + s gets the sum over the
// warp's rows below r of x * A[., slot s of half h].
__device__ __forceinline__ void preg_hdots(const float (&a)[PREG_RPT][PREG_HNC],
                                           const float (&x)[PREG_RPT], int r, int rl, int rows,
                                           int lane, float* out) {
    float part[PREG_HNC];
#pragma unroll
    for (int c = 0; c < PREG_HNC; ++c) part[c] = 0.0f;
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k) {
        const int row = rl + k * PREG_HROWS;
        const float xk = row > r && row < rows ? x[k] : 0.0f;
#pragma unroll
        for (int c = 0; c < PREG_HNC; ++c) part[c] = fmaf(xk, a[k][c], part[c]);
    }
    out[lane] = preg_half_sum(part, lane);
}

// The cold path's sums of reflector r in double, slot by slot, over each
// half's 16 lanes in a fixed order.
__device__ __forceinline__ void preg_hdots_f64(const float (&a)[PREG_RPT][PREG_HNC],
                                               const float (&x)[PREG_RPT], int r, int rl,
                                               int rows, int lane, double* out) {
#pragma unroll 1
    for (int c = 0; c < PREG_HNC; ++c) {
        double d = 0.0;
#pragma unroll
        for (int k = 0; k < PREG_RPT; ++k) {
            const int row = rl + k * PREG_HROWS;
            const double xk = row > r && row < rows ? (double)x[k] : 0.0;
            d = fma(xk, (double)preg_pick(a[k], c), d);
        }
        for (int o = 8; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        if ((lane & 15) == c) out[lane] = d;
    }
}

extern "C" __global__ void __launch_bounds__(PREG_THREADS, PREG_MIN_BLOCKS)
    panelreg_factor_f32(float* h, const float* src, const int* __restrict__ zcol,
                        float* __restrict__ vbuf, float* __restrict__ tbuf,
                        float* __restrict__ tau, int n, int p, int w, int mat0,
                        const float* __restrict__ vprev, const float* __restrict__ tprev,
                        int fold, int* __restrict__ oflow) {
    __shared__ double red2[PREG_WARPS][PREG_NB];
    __shared__ float wmax[PREG_WARPS];
    __shared__ double gram[PREG_NB][PREG_NB + 1];
    __shared__ float taus[PREG_NB];
    __shared__ float redf[2][PREG_WARPS][PREG_NB];
    __shared__ __attribute__((aligned(16))) float rowf[2][PREG_NB];
    __shared__ __attribute__((aligned(16))) float wsh[PREG_WARPS][PREG_NB];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int m = mat0 + blockIdx.y;
    const int cb = lane & 16;                   // this half's first column
    const int rl = warp * 16 + (lane & 15);     // this thread's first row
    const int rows = n - p;
    float* hm = h + (long long)m * n * n + (long long)p * n + p;
    const float* sm = src + (long long)m * n * n + (long long)p * n + p;
    // panel.cu's rule, as in the whole-row kernel above.
    const bool zero_panel = src == h && p >= zcol[m];
    const bool vec = w == PREG_NB && (n & 3) == 0 && ((unsigned long long)hm & 15) == 0 &&
                     ((unsigned long long)sm & 15) == 0;

    float a[PREG_RPT][PREG_HNC];
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k) {
        const int row = rl + k * PREG_HROWS;
        const float* rp = sm + (long long)row * n + cb;
        if (vec && row < rows) {
#pragma unroll
            for (int c = 0; c < PREG_HNC; c += 4)
                preg_ld4(rp + c, a[k][c], a[k][c + 1], a[k][c + 2], a[k][c + 3]);
        } else {
#pragma unroll
            for (int c = 0; c < PREG_HNC; ++c)
                a[k][c] = (row < rows && cb + c < w) ? rp[c] : 0.0f;
        }
#pragma unroll
        for (int c = 0; c < PREG_HNC; ++c) amax = fmaxf(amax, fabsf(a[k][c]));
    }
    if (zero_panel) {
        if (tid < w) tau[(long long)m * n + p + tid] = 0.0f;
        return;
    }
    const int ex = qr_scale_exponent(qr_block_max<PREG_WARPS>(amax, wmax, lane, warp));
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k)
#pragma unroll
        for (int c = 0; c < PREG_HNC; ++c) a[k][c] = ldexpf(a[k][c], -ex);

    // The one-barrier loop of the whole-row kernel, by halves: the pass that
    // updates the rows for reflector r forms reflector r + 1's per-warp sums
    // (lane 16 h + s: slot s of half h) and both halves of row r + 1 publish
    // it; after the barrier every thread adds the warps' sums for its lane
    // and forms the reflector itself.
    float x[PREG_RPT];  // the pivot column in this thread's rows, this step
    preg_hpivot(a, 0, lane, x);
    preg_hdots(a, x, 0, rl, rows, lane, redf[0][warp]);
    if (rl == 0) preg_publish(a[0], rowf[0] + cb);
#pragma unroll 2
    for (int r = 0; r < w; ++r) {
        const int par = r & 1;
        __syncthreads();  // redf[par]: reflector r's sums; rowf[par]: row r
        float xs[PREG_WARPS];
#pragma unroll
        for (int q = 0; q < PREG_WARPS; ++q) xs[q] = redf[par][q][lane];
        const float rv = rowf[par][lane];
        const int pl = r >= PREG_HNC ? 16 : 0;  // the lane of the pivot's slot 0
        const float alpha = __shfl_sync(0xffffffffu, rv, pl);
        const int col = cb + ((r + lane) & (PREG_HNC - 1));  // this lane's slot's column
        const bool upd = col > r && col < w;  // the columns the reflector updates
        const float tlf = pairwise_sum_f32(xs);
        const float trf = __shfl_sync(0xffffffffu, tlf, pl);
        float wc, fs, beta;
        double sc;
        bool fast;
        if (trf >= (float)PREG_TINY) {  // uniform over the block
            wc = preg_reflector_f32(alpha, trf, tlf, rv, upd, col, r, warp, lane, gram, taus, fs, sc,
                                    beta);
            fast = true;
        } else {
            // A (nearly) vanished column: its sums again in double.
            preg_hdots_f64(a, x, r, rl, rows, lane, red2[warp]);
            __syncthreads();
            double tl = 0.0;
#pragma unroll
            for (int q = 0; q < PREG_WARPS; ++q) tl += red2[q][lane];
            const double tr = __shfl_sync(0xffffffffu, tl, pl);
            wc = preg_reflector_f64(alpha, tr, tl, rv, upd, col, r, warp, lane, gram, taus, fs, sc,
                                    beta, fast);
        }
        wsh[warp][lane] = wc;
        __syncwarp();
        float wv[PREG_HNC];
#pragma unroll
        for (int c = 0; c < PREG_HNC; c += 4) {
            const preg_f4 q4 = *reinterpret_cast<const preg_f4*>(&wsh[warp][cb + c]);
            wv[c] = q4.x[0];
            wv[c + 1] = q4.x[1];
            wv[c + 2] = q4.x[2];
            wv[c + 3] = q4.x[3];
        }
        // Slot 0 of the pivot's half is the pivot column (w_c = 0 there);
        // the other half's slot 0 is a column like the rest.
        const bool owner = cb == pl;
#pragma unroll
        for (int k = 0; k < PREG_RPT; ++k) {
            const int row = rl + k * PREG_HROWS;
            // Rows above the pivot are final; padding rows stay zero.
            if (row >= r && row < rows) {
                const float v =
                    row == r ? 1.0f : (fast ? x[k] * fs : (float)((double)x[k] * sc));
#pragma unroll
                for (int c = 0; c < PREG_HNC; ++c) a[k][c] = fmaf(-v, wv[c], a[k][c]);
                if (owner) a[k][0] = row == r ? beta : v;
            }
        }
        preg_rotate(a);
        if (r + 1 < w) {
            preg_hpivot(a, r + 1, lane, x);
            preg_hdots(a, x, r + 1, rl, rows, lane, redf[par ^ 1][warp]);
            // Row r + 1 lies in its threads' first register row.
            if (rl == r + 1) preg_publish(a[0], rowf[par ^ 1] + cb);
        }
    }
    // Back to slot c = column cb + c: 32 rotations in all, a multiple of 16.
#pragma unroll 1
    for (int r = w; r < PREG_NB; ++r) preg_rotate(a);
    __syncthreads();  // gram and taus complete before larft

    bool bad = false;  // a non-finite value written (qr_mark_overflow)
#pragma unroll
    for (int k = 0; k < PREG_RPT; ++k) {
        const int row = rl + k * PREG_HROWS;
        if (row < rows)
            preg_store_row<PREG_HNC>(
                a[k], hm + (long long)row * n + cb,
                vbuf + (long long)m * n * PREG_NB + (long long)row * PREG_NB + cb, row, cb, w, ex,
                vec, bad);
    }
    qr_mark_overflow(oflow, m, bad);
    qr_panel_finish<PREG_THREADS>(gram, taus, tbuf, tau, oflow, m, n, p, w, tid);
}
#endif  // PREG_HALVES
