// Column-per-lane register panel of the `blocked` path (a block alone per
// matrix; `Tuning::reg_panel_columns`).
//
// One launch factors the 32-column panel at column p of every matrix: one
// block of PCOL_WARPS warps per matrix. Lane c of every warp holds column c
// of that warp's rows in registers: warp 0 the panel's first 32 rows (the
// rows the reflectors' pivots lie in; its step loop is unrolled, so that
// every row index is a register, and short, so that its code stays small),
// warp q >= 1 the PCOL_R rows from 32 + (q - 1) * PCOL_R (a rolled loop).
// With PCOL_TOP_ROLLED warp 0's loop is rolled too and every warp holds
// PCOL_ZR = max(PCOL_R, 32) rows, warp q those from q * PCOL_ZR. The
// launcher picks PCOL_WARPS so that the rows fit.
//
// Why: the row-per-thread register panel (panelreg.cu) sums each column's
// products over a warp's rows with a transposing butterfly (31 shuffles,
// 62 selects and 31 adds a warp per reflector, or 71 instructions through
// shared memory). With a column per lane those sums are each lane's own
// chain over its rows; what a warp shares instead is the pivot column,
// which its lane stores and every lane loads back (rows / 4 loads of 16
// bytes).
//
// Reflector r, one barrier (the one-barrier loop of panel.cu and
// panelreg.cu):
//   1. lane r of each warp publishes its rows of column r (as step r - 1
//      left them) in the warp's buffer; the warp meets (__syncwarp) and
//      every lane loads them back as x;
//   2. lane c adds s_c = sum over its warp's rows below r of x * z_c and
//      stores it as the warp's partial; warp 0 also stores its row r
//      (column c's entry there);
//   3. the block meets; every lane adds the warps' partials in one fixed
//      order (S_c, the same bits in every warp) and forms reflector r from
//      alpha = row r's entry of column r and ||x[1..]||^2 = S_r;
//   4. lanes c > r update their rows below r, z -= x (tau (z[r] + scale S_c)
//      scale), and row r, z[r] -= w_c; lane r writes beta at row r.
// Lane r keeps x itself below the diagonal (v / scale): its sums in later
// steps are then the Gram entries v_r^T v_j over its scale, and its column
// is scaled once at the end. Everything else is panelreg.cu's numerics: the
// panel scaled by a power of two into [0.5, 1), float32 sums in a fixed
// order, float32 reflectors (scaled_reflector_f32), a norm below PCOL_TINY
// redone in double by every warp (cold, uniform), tau = 0 keeping x.
//
// Input and outputs are panelreg.cu's: the panel read from `src`, H's
// panel, tau, the explicit unit-lower V (zero padded to 32 columns), the
// 32 x 32 T of larft (forward, columnwise), a panel at or right of zcol[m]
// (in place) writing tau = 0 only, and with `oflow` the matrix marked where
// a value of H's panel or tau written is not finite. With PCOL_FOLD and
// `fold` (every panel but the first of a folding plan) the block first
// applies the previous panel's reflectors (`vprev`, `tprev`) to its columns
// (prelude.cu's qr_fold_apply, into the dynamic shared memory the launcher
// sizes) and loads its rows from there.

#ifndef PCOL_WARPS
#error "PCOL_WARPS (warps per block) must be defined by the launcher"
#endif
#ifndef PCOL_R
#error "PCOL_R (rows per lane of warps 1 and up) must be defined by the launcher"
#endif
#ifndef PCOL_FOLD
#error "PCOL_FOLD (1: the previous panel's update of these columns folded in) must be defined by the launcher"
#endif
#ifndef PCOL_TOP_ROLLED
#error "PCOL_TOP_ROLLED (1: warp 0's steps in a rolled loop, rows masked) must be defined by the launcher"
#endif
#if PCOL_FOLD && PCOL_WARPS % 2 != 0
#error "PCOL_FOLD maps its W pass onto groups of 64 threads: an even PCOL_WARPS"
#endif
#if PCOL_R % 4 != 0 || PCOL_R < 4
#error "PCOL_R must be a positive multiple of 4"
#endif
#define PCOL_NB 32
#define PCOL_THREADS (PCOL_WARPS * 32)
#define PCOL_TINY 8.673617379884035e-19
// Register rows of a lane (warp 0 holds 32).
#define PCOL_ZR (PCOL_R > 32 ? PCOL_R : 32)
// Blocks per SM the register budget allows (the rows and about 56 more),
// at most 4: more would only cap the registers of the short panels' small
// blocks, of which a batch puts few on an SM.
#define PCOL_REGS (PCOL_ZR + 56)
#define PCOL_FIT (65536 / (PCOL_THREADS * PCOL_REGS))
#define PCOL_MIN_BLOCKS (PCOL_FIT < 1 ? 1 : (PCOL_FIT > 4 ? 4 : PCOL_FIT))

// What one block shares.
struct PcolShared {
    float xs[PCOL_WARPS][2][PCOL_ZR];   // each warp's pivot column, by step parity
    float red[2][PCOL_WARPS][PCOL_NB];  // the warps' partial sums, by step parity
    float rowv[2][PCOL_NB];             // row r of every column, by step parity
    double redd[PCOL_WARPS][PCOL_NB];   // the cold path's partials
    double gram[PCOL_NB][PCOL_NB + 1];  // V^T V, then T
    float taus[PCOL_NB];
    float wmax[PCOL_WARPS];
};

// Rows 4q .. 4q + 3 of the warp's published pivot column.
__device__ __forceinline__ void pcol_x4(const float* xb, int q, float (&xv)[4]) {
    const float4 x4 = *reinterpret_cast<const float4*>(xb + 4 * q);
    xv[0] = x4.x, xv[1] = x4.y, xv[2] = x4.z, xv[3] = x4.w;
}

// Step r of one warp: NK rows in registers, TOP for warp 0 (rows from 0,
// so the pivot row r lies among its first 32), else rows below every pivot. Warp
// 0's caller unrolls the steps, so that every row index is a register; with
// PCOL_TOP_ROLLED it does not (about 16 K instructions of straight-line
// code fewer, NVRTC 13.5), and a step masks the pivot column's rows at and
// above r to zero instead (they then change nothing but the sign of a zero)
// and picks row r by selects. Sets, in lane r, my_sc / my_fs / my_fast: the
// scale of the lane's own reflector.
template <int NK, bool TOP>
__device__ __forceinline__ void pcol_step(float (&z)[PCOL_ZR], PcolShared& sh, int r, int lane,
                                          int warp, double& my_sc, float& my_fs, bool& my_fast) {
    {
        constexpr bool kMask = TOP && PCOL_TOP_ROLLED;
        const int par = r & 1;
        float* const xb = sh.xs[warp][par];
        // Rows of this warp below the pivot: unrolled TOP k > r, else all of
        // them (masked TOP: the rows at and above r read x as zero).
        const int k0 = TOP && !kMask ? r + 1 : 0;
        const auto xmask = [&](int k, float x) { return kMask && k <= r ? 0.0f : x; };
        // Row r of this lane's column (warp 0): a register, or a select.
        float zr = 0.0f;
        if (TOP) {
            if (kMask) {
#pragma unroll
                for (int k = 0; k < 32; ++k) zr = k == r ? z[k] : zr;
            } else {
                zr = z[r];
            }
        }
        // 1. The pivot column's rows, from lane r.
        if (lane == r) {
#pragma unroll
            for (int q = k0 / 4; q < NK / 4; ++q)
                *reinterpret_cast<float4*>(xb + 4 * q) =
                    make_float4(z[4 * q], z[4 * q + 1], z[4 * q + 2], z[4 * q + 3]);
        }
        __syncwarp();
        // 2. This lane's partial, four chains met pairwise.
        float s4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int q = k0 / 4; q < NK / 4; ++q) {
            float xv[4];
            pcol_x4(xb, q, xv);
#pragma unroll
            for (int u = 0; u < 4; ++u)
                if (4 * q + u >= k0) s4[u] = fmaf(xmask(4 * q + u, xv[u]), z[4 * q + u], s4[u]);
        }
        sh.red[par][warp][lane] = (s4[0] + s4[1]) + (s4[2] + s4[3]);
        if (TOP) sh.rowv[par][lane] = zr;
        __syncthreads();
        // 3. The block's sums and reflector r, in every lane.
        float xq[PCOL_WARPS];
#pragma unroll
        for (int q = 0; q < PCOL_WARPS; ++q) xq[q] = sh.red[par][q][lane];
        const float S = pairwise_sum_f32(xq);
        const float rv = sh.rowv[par][lane];
        const float alpha = sh.rowv[par][r];
        const float xn2 = __shfl_sync(0xffffffffu, S, r);
        QrStep st;
        if (xn2 >= (float)PCOL_TINY) {  // the same in every lane of the block: uniform
            st = qr_step_f32(alpha, xn2, S, rv, lane > r);
        } else {
            // A (nearly) vanished column: the sums again in double (cold).
            double d4[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
            for (int q = k0 / 4; q < NK / 4; ++q)
#pragma unroll
                for (int u = 0; u < 4; ++u)
                    if (4 * q + u >= k0)
                        d4[u] = fma((double)xmask(4 * q + u, xb[4 * q + u]), (double)z[4 * q + u],
                                    d4[u]);
            sh.redd[warp][lane] = (d4[0] + d4[1]) + (d4[2] + d4[3]);
            __syncthreads();
            double D = 0.0;
#pragma unroll
            for (int q = 0; q < PCOL_WARPS; ++q) D += sh.redd[q][lane];
            const double dn2 = __shfl_sync(0xffffffffu, D, r);
            st = qr_step_f64(alpha, dn2, D, rv, lane > r);
            // The partials are read before any warp's next cold pass writes.
            __syncthreads();
        }
        const float tau_r = st.tau, beta = st.beta, fs = st.fs, wc = st.wc, g = st.vta;
        const double sc = st.sc;
        const bool fast = st.fast;
        if (warp == 0) {
            // v_lane^T v_r over this lane's own scale (lane < r keeps x).
            if (lane < r) sh.gram[lane][r] = (double)my_fs * (double)g;
            if (lane == 0) sh.taus[r] = tau_r;
        }
        if (lane == r) {
            my_sc = sc;
            my_fs = fs;
            my_fast = fast;
        }
        // 4. The update of this warp's rows below r (and row r, warp 0).
        if (TOP) {
            const float zn = lane == r ? beta : zr - wc;
            if (kMask) {
#pragma unroll
                for (int k = 0; k < 32; ++k) z[k] = k == r ? zn : z[k];
            } else {
                z[r] = zn;
            }
        }
        if (tau_r != 0.0f) {  // uniform
            if (fast) {
                const float a = wc * fs;
#pragma unroll
                for (int q = k0 / 4; q < NK / 4; ++q) {
                    float xv[4];
                    pcol_x4(xb, q, xv);
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        if (4 * q + u >= k0)
                            z[4 * q + u] = fmaf(-xmask(4 * q + u, xv[u]), a, z[4 * q + u]);
                }
            } else {
#pragma unroll
                for (int q = k0 / 4; q < NK / 4; ++q)
#pragma unroll
                    for (int u = 0; u < 4; ++u)
                        if (4 * q + u >= k0) {
                            const float v = (float)((double)xmask(4 * q + u, xb[4 * q + u]) * sc);
                            z[4 * q + u] = fmaf(-v, wc, z[4 * q + u]);
                        }
            }
        }
    }
}

// The w steps of this warp (see pcol_step).
template <int NK, bool TOP>
__device__ __forceinline__ void pcol_steps(float (&z)[PCOL_ZR], PcolShared& sh, int w, int lane,
                                           int warp, double& my_sc, float& my_fs, bool& my_fast) {
    if (TOP && !PCOL_TOP_ROLLED) {
#pragma unroll
        for (int r = 0; r < PCOL_NB; ++r) {
            if (r >= w) break;
            pcol_step<NK, TOP>(z, sh, r, lane, warp, my_sc, my_fs, my_fast);
        }
    } else {
#pragma unroll 1
        for (int r = 0; r < w; ++r) pcol_step<NK, TOP>(z, sh, r, lane, warp, my_sc, my_fs, my_fast);
    }
}

// Rows of this warp (NK from `base`) into H (R at the input's scale 2^ex)
// and V, with the lane's reflector scaled in.
template <int NK>
__device__ __forceinline__ bool pcol_store(float (&z)[PCOL_ZR], float* hm, float* vm, int n,
                                           int base, int rows, int w, int lane, int ex,
                                           double my_sc, float my_fs, bool my_fast) {
    bool bad = false;
#pragma unroll
    for (int k = 0; k < NK; ++k) {
        const int i = base + k;
        if (i >= rows) break;
        // Below the diagonal: x, scaled into v (tau = 0 left x as it was).
        float x = z[k];
        if (i > lane) x = my_fast ? x * my_fs : (float)((double)x * my_sc);
        const float hv = i <= lane ? ldexpf(x, ex) : x;
        if (lane < w) {
            hm[(long long)i * n + lane] = hv;
            bad |= qr_nonfinite(hv);
        }
        vm[(long long)i * PCOL_NB + lane] = (lane >= w || i < lane) ? 0.0f : (i == lane ? 1.0f : x);
    }
    return bad;
}

extern "C" __global__ void __launch_bounds__(PCOL_THREADS, PCOL_MIN_BLOCKS)
    panelcol_factor_f32(float* h, const float* src, const int* __restrict__ zcol,
                        float* __restrict__ vbuf, float* __restrict__ tbuf,
                        float* __restrict__ tau, int n, int p, int w, int mat0,
                        const float* __restrict__ vprev, const float* __restrict__ tprev,
                        int fold, int* __restrict__ oflow) {
    __shared__ __align__(16) PcolShared sh;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int m = mat0 + blockIdx.y;
    const int rows = n - p;
    float* hm = h + (long long)m * n * n + (long long)p * n + p;
    const float* sm = src + (long long)m * n * n + (long long)p * n + p;
    if (qr_zero_panel(h, src, zcol, tau, m, n, p, w, tid)) return;  // uniform over the block
    // Warp 0 holds 32 rows when its steps unroll (its code stays short),
    // PCOL_ZR like every warp when they are rolled.
    constexpr int kTop = PCOL_TOP_ROLLED ? PCOL_ZR : 32;
    const int base = warp == 0 ? 0 : kTop + (warp - 1) * PCOL_R;
    const int nk = warp == 0 ? kTop : PCOL_R;
    // Where the rows come from: the source, or after the fold the dynamic
    // shared memory (leading dimension 32; fold is uniform).
    const float* rowsrc = sm;
    long long ld = n;
#if PCOL_FOLD
    if (fold) {
        extern __shared__ __align__(16) float pdyn[];
        __shared__ __align__(16) float ftop[PCOL_NB][PCOL_NB];
        __shared__ float ftt[PCOL_NB][PCOL_NB + 1];
        qr_fold_apply<PCOL_THREADS, PCOL_NB>(
            pdyn, ftop, ftt, vprev + (long long)m * n * PCOL_NB,
            tprev + (long long)m * PCOL_NB * PCOL_NB, sm - (long long)PCOL_NB * n,
            hm - (long long)PCOL_NB * n, n, rows, w, tid);
        rowsrc = pdyn;
        ld = PCOL_NB;
    }
#else
    (void)vprev, (void)tprev, (void)fold;
#endif
    float z[PCOL_ZR];
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < PCOL_ZR; ++k) {
        const int i = base + k;
        z[k] = k < nk && i < rows && lane < w ? rowsrc[i * ld + lane] : 0.0f;
        amax = fmaxf(amax, fabsf(z[k]));
    }
    for (int idx = tid; idx < PCOL_NB * (PCOL_NB + 1); idx += PCOL_THREADS)
        (&sh.gram[0][0])[idx] = 0.0;
    const int ex = qr_scale_exponent(qr_block_max<PCOL_WARPS>(amax, sh.wmax, lane, warp));
#pragma unroll
    for (int k = 0; k < PCOL_ZR; ++k) z[k] = ldexpf(z[k], -ex);

    double my_sc = 1.0;
    float my_fs = 1.0f;
    bool my_fast = true;
    if (warp == 0)
        pcol_steps<kTop, true>(z, sh, w, lane, warp, my_sc, my_fs, my_fast);
    else
        pcol_steps<PCOL_R, false>(z, sh, w, lane, warp, my_sc, my_fs, my_fast);
    __syncthreads();  // gram and taus complete before larft

    float* vm = vbuf + (long long)m * n * PCOL_NB;
    const bool bad =
        warp == 0
            ? pcol_store<kTop>(z, hm, vm, n, 0, rows, w, lane, ex, my_sc, my_fs, my_fast)
            : pcol_store<PCOL_R>(z, hm, vm, n, base, rows, w, lane, ex, my_sc, my_fs, my_fast);
    qr_mark_overflow(oflow, m, bad);

    qr_panel_finish<PCOL_THREADS>(sh.gram, sh.taus, tbuf, tau, oflow, m, n, p, w, tid);
}
