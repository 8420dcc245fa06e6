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
// PREG_RPT rows instead (the kernel of panelreg_halves.cu): the same
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
