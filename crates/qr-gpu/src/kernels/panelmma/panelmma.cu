// Leaf panel of the `blocked` path on tensor cores (a block alone per
// matrix; `Tuning::reg_panel_mma`).
//
// One launch factors the 32-column panel at column p of every matrix: one
// block of nw warps per matrix (as many as the panel's rows need, at most
// PMMA_WARPS, which sizes the shared arrays: one module serves every
// panel of a factorization), warp q holding the panel rows
// q * PM_R .. q * PM_R + PM_R - 1 (PM_R = 8 * PMMA_G) in the layout of an
// mma.sync.m16n8k8 operand: lane (g = lane / 4, t = lane % 4) holds, of
// every group k of 8 rows and every block j of 8 columns, rows 2t and
// 2t + 1 of column 8j + g. The current leaf's block lies in registers
// (z[k][0..1]), the other three in the lane's own slots of the dynamic
// shared memory (slot q: block q + 1 until leaf q ends, then leaf q's V and
// R), so a thread holds 2 * PMMA_G panel values in registers and three
// blocks of 256 threads share an SM. Warp 0 holds the first 32 rows, where
// every pivot lies (PMMA_G >= 4).
//
// Why: the row panel (panelreg.cu) spends about 450 instructions a thread
// per reflector at 256 x 2 (Session 18), because every reflector reads and
// updates all 32 columns and sums 32 partials per warp by a butterfly. Here
// the panel is factored as four leaves of 8 columns. A reflector only
// touches its own leaf's columns (2 * PMMA_G FMAs for its sums and as many
// for its update, its partial summed over 4 lanes), and at the end of a
// leaf its 8 reflectors reach the columns right of it at once, as compact
// WY on the tensor cores: W = V_L^T A_R and A_R -= V_L (T_L^T W), both with
// the operands already in the registers' mma layout (3-pass tf32 split,
// float32 accumulation: trailing_tc.cu's arithmetic). The same pass forms
// V_L's Gram entries with the earlier leaves' V (the Gram matrix of the
// panel's T).
//
// Reflector r = 8L + i of leaf L, one block barrier (the one-barrier loop
// of panelcol.cu):
//   1. every lane takes the pivot column's values at its own rows (x) from
//      the lanes (g = i, same t) that hold them, by shuffles; rows at and
//      above r read zero;
//   2. lane (g, t) adds x * a over its rows of column 8L + g, the 4 lanes of
//      a column meet by two shuffles, and lane t = 0 stores the warp's
//      partial; warp 0 stores row r of the leaf's columns;
//   3. the block meets; every lane adds the warps' partials in one fixed
//      order (S_g) and forms reflector r from alpha = row r of column r and
//      ||x[1..]||^2 = S_i;
//   4. lanes of columns right of r update their rows below r,
//      z -= x (tau (z[r] + scale S_g) scale), and row r, z[r] -= w_g; the
//      pivot column's lanes write beta at row r.
// As in panelcol.cu, a pivot column keeps x (v / scale) below the diagonal,
// so later sums over it are its Gram entries over its scale, and is scaled
// when its V is formed (the leaf's end, the stores). Numerics otherwise are
// panelcol.cu's: the panel scaled by a power of two into [0.5, 1), float32
// reflectors (scaled_reflector_f32), a norm below PM_TINY redone in double
// (cold, uniform), tau = 0 keeping x.
//
// Input and outputs are panelcol.cu's (and panelreg.cu's): the panel read
// from `src`, H's panel, tau, the explicit unit-lower V (zero padded to 32
// columns), the 32 x 32 T of larft (forward, columnwise), a panel at or
// right of zcol[m] (in place) writing tau = 0 only, and with `oflow` the
// matrix marked where a value of H's panel or tau written is not finite.
// No fold: the planner uses this kernel where the plan does not fold.

#ifndef PMMA_WARPS
#error "PMMA_WARPS (most warps of a block: the first panel's) must be defined by the launcher"
#endif
#ifndef PMMA_G
#error "PMMA_G (groups of 8 rows per warp) must be defined by the launcher"
#endif
#if PMMA_G < 4
#error "PMMA_G >= 4: warp 0 holds the 32 pivot rows"
#endif
#define PM_NB 32
#define PM_R (8 * PMMA_G)
#define PM_THREADS (PMMA_WARPS * 32)
#define PM_TINY 8.673617379884035e-19
// Blocks per SM the register budget allows: the leaf's rows and their pivot
// values (4 * PMMA_G) and about 48 more, at most 4.
#define PM_REGS (4 * PMMA_G + 48)
#define PM_FIT (65536 / (PM_THREADS * PM_REGS))
#define PM_MIN_BLOCKS (PM_FIT < 1 ? 1 : (PM_FIT > 4 ? 4 : PM_FIT))
// A lane's slot entry: rows 2t, 2t + 1 of one column of one group.
#define PM_SLOT(dyn, warp, q, k, lane) ((dyn)[(((warp) * 3 + (q)) * PMMA_G + (k)) * 32 + (lane)])

// What one block shares.
struct PmShared {
    float red[2][PMMA_WARPS][8];    // the warps' partial sums per leaf column, by parity
    float rowv[2][8];               // row r of the leaf's columns, by parity
    double redd[PMMA_WARPS][8];     // the cold path's partials
    float xp[PMMA_WARPS][24][8];    // the warps' X = O^T V_L (other column, leaf column)
    float w2[8][PM_NB];             // W2 = T_L^T V_L^T A_R (leaf row, panel column)
    float tl[8][9];                 // the leaf's T, in float
    double gram[PM_NB][PM_NB + 1];  // V^T V, then T
    float taus[PM_NB];
    float wmax[PMMA_WARPS];
};

// x = hi + lo: hi tf32 (prelude.cu's qr_tf32), lo the exact rest, which
// the tensor cores read truncated to its top 19 bits (trailing_tc.cu's
// TC_LO_RZ, on by default there: its dropped bits lie below 2^-21 of x), so
// that hi * hi + hi * lo + lo * hi carries float32's product. Three
// instructions a value.
__device__ __forceinline__ void pm_split(float x, unsigned& hi, unsigned& lo) {
    hi = qr_tf32(x);
    lo = qr_f32_bits(x - qr_bits_f32(hi));
}

// d += a * b in three products of the split, small terms first.
__device__ __forceinline__ void pm_mma3(float (&d)[4], const float (&a)[4], const float (&b)[2]) {
    unsigned ahi[4], alo[4], bhi[2], blo[2];
#pragma unroll
    for (int q = 0; q < 4; ++q) pm_split(a[q], ahi[q], alo[q]);
    pm_split(b[0], bhi[0], blo[0]);
    pm_split(b[1], bhi[1], blo[1]);
    qr_mma_tf32(d, alo, bhi);
    qr_mma_tf32(d, ahi, blo);
    qr_mma_tf32(d, ahi, bhi);
}

// The other column blocks of leaf L (every block but L, in order) and
// their pairs of the 16-row mma tiles: block OTHER(L, q), q = 0, 1, 2.
#define PM_OTHER(L, q) ((q) < (L) ? (q) : (q) + 1)

// V at one register `x` of column `col` of a finished leaf (v itself below
// the diagonal): 1 on the diagonal, 0 above it and in the columns past w.
__device__ __forceinline__ float pm_v(float x, int row, int col, int w) {
    return col >= w ? 0.0f : (row > col ? x : (row == col ? 1.0f : 0.0f));
}

// The leaf L's 8 reflectors (steps 8L .. 8L + 7, those below w) on its
// block `z`.
template <int L>
__device__ __forceinline__ void pm_leaf_steps(float (&z)[PMMA_G][2], PmShared& sh, int w,
                                              int lane, int warp, float& lfs, double& lsc,
                                              bool& lfast) {
    const int g = lane >> 2, t = lane & 3;
    const bool top = warp == 0;
    const int nw = blockDim.x >> 5;
    const int steps = min(8, w - 8 * L);
#pragma unroll 1
    for (int i = 0; i < steps; ++i) {
        const int r = 8 * L + i, par = r & 1;
        // 1. The pivot column at this lane's rows; rows at and above r are
        // zero (warp 0's groups before L entirely, group L by row).
        float x[PMMA_G][2];
#pragma unroll
        for (int k = 0; k < PMMA_G; ++k)
#pragma unroll
            for (int s = 0; s < 2; ++s) {
                const float v = __shfl_sync(0xffffffffu, z[k][s], i * 4 + t);
                const bool above = top && (k < L || (k == L && 2 * t + s <= i));
                x[k][s] = above ? 0.0f : v;
            }
        // 2. This lane's partial of column 8L + g, four chains, then the
        // column's 4 lanes (the same bits in each: additions commute).
        float s4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int k = 0; k < PMMA_G; ++k)
#pragma unroll
            for (int s = 0; s < 2; ++s)
                s4[(k & 1) * 2 + s] = fmaf(x[k][s], z[k][s], s4[(k & 1) * 2 + s]);
        float d = (s4[0] + s4[1]) + (s4[2] + s4[3]);
        d += __shfl_xor_sync(0xffffffffu, d, 1);
        d += __shfl_xor_sync(0xffffffffu, d, 2);
        if (t == 0) sh.red[par][warp][g] = d;
        // Row r (group L of warp 0, row 2t + s = i).
        const float zr = (i & 1) ? z[L][1] : z[L][0];
        if (top && t == (i >> 1)) sh.rowv[par][g] = zr;
        __syncthreads();
        // 3. The block's sums and reflector r, in every lane.
        // Absent warps add zeros: the values of a tree over nw.
        float xq[PMMA_WARPS];
#pragma unroll
        for (int q = 0; q < PMMA_WARPS; ++q) xq[q] = q < nw ? sh.red[par][q][g] : 0.0f;
        const float S = pairwise_sum_f32(xq);
        const float rv = sh.rowv[par][g];
        const float alpha = sh.rowv[par][i];
        const float xn2 = __shfl_sync(0xffffffffu, S, i * 4);
        QrStep st;
        if (xn2 >= (float)PM_TINY) {  // the same in every lane of the block: uniform
            st = qr_step_f32(alpha, xn2, S, rv, g > i);
        } else {
            // A (nearly) vanished column: the sums again in double (cold).
            double d2[2] = {0.0, 0.0};
#pragma unroll
            for (int k = 0; k < PMMA_G; ++k)
#pragma unroll
                for (int s = 0; s < 2; ++s) d2[s] = fma((double)x[k][s], (double)z[k][s], d2[s]);
            double dd = d2[0] + d2[1];
            dd += __shfl_xor_sync(0xffffffffu, dd, 1);
            dd += __shfl_xor_sync(0xffffffffu, dd, 2);
            if (t == 0) sh.redd[warp][g] = dd;
            __syncthreads();
            double D = 0.0;
#pragma unroll
            for (int q = 0; q < PMMA_WARPS; ++q)
                if (q < nw) D += sh.redd[q][g];
            const double dn2 = __shfl_sync(0xffffffffu, D, i * 4);
            st = qr_step_f64(alpha, dn2, D, rv, g > i);
            // The partials are read before any warp's next cold pass writes.
            __syncthreads();
        }
        const float tau_r = st.tau, beta = st.beta, fs = st.fs, wc = st.wc, vta = st.vta;
        const double sc = st.sc;
        const bool fast = st.fast;
        if (top && t == 0) {
            // v_(8L+g)^T v_r over the earlier column's own scale.
            if (g < i) sh.gram[8 * L + g][r] = lsc * (double)vta;
            if (g == 0) sh.taus[r] = tau_r;
        }
        if (g == i) {
            lfs = fs;
            lsc = sc;
            lfast = fast;
        }
        // 4. The update of this lane's rows below r, and row r (warp 0).
        if (top && t == (i >> 1)) {
            const float zn = g == i ? beta : zr - wc;
            if (i & 1)
                z[L][1] = zn;
            else
                z[L][0] = zn;
        }
        if (tau_r != 0.0f) {  // uniform
            if (fast) {
                const float c = wc * fs;
#pragma unroll
                for (int k = 0; k < PMMA_G; ++k)
#pragma unroll
                    for (int s = 0; s < 2; ++s) z[k][s] = fmaf(-x[k][s], c, z[k][s]);
            } else {
#pragma unroll
                for (int k = 0; k < PMMA_G; ++k)
#pragma unroll
                    for (int s = 0; s < 2; ++s) {
                        const float v = (float)((double)x[k][s] * sc);
                        z[k][s] = fmaf(-v, wc, z[k][s]);
                    }
            }
        }
    }
}

// A_R -= V_L W2, transposed: A_R^T (a tile of 16 columns by 8 rows) -=
// W2^T V_L^T, the tile's entries the lane's own slot entries (block j in
// slot j - 1). The right blocks pair up: (L+1, L+2) and L+3, or L+1 alone.
// As trailing_tc.cu's update, the tensor cores sum the products from zero
// and one float32 subtraction takes them from A: their accumulation is not
// IEEE round-to-nearest, which onto A itself would cost up to an ulp of A
// per mma.
template <int L>
__device__ __forceinline__ void pm_leaf_update(const float (&z)[PMMA_G][2], const PmShared& sh,
                                               float2* dyn, int w, int rbase, int lane,
                                               int warp) {
    const int g = lane >> 2, t = lane & 3;
    constexpr int NT = (3 - L + 1) / 2;
    float wa[NT][4];
#pragma unroll
    for (int mt = 0; mt < NT; ++mt) {
        const int j0 = L + 1 + 2 * mt, j1 = j0 + 1;
        wa[mt][0] = sh.w2[t][8 * j0 + g];
        wa[mt][2] = sh.w2[t + 4][8 * j0 + g];
        wa[mt][1] = j1 <= 3 ? sh.w2[t][8 * j1 + g] : 0.0f;
        wa[mt][3] = j1 <= 3 ? sh.w2[t + 4][8 * j1 + g] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < PMMA_G; ++k) {
        // V_L^T's B operand: row g of the group, leaf columns t and t + 4,
        // from the lanes holding them (column t: lane t * 4 + g / 2, row
        // slot g & 1).
        const int s0 = t * 4 + (g >> 1), s1 = (t + 4) * 4 + (g >> 1);
        const float p0 = __shfl_sync(0xffffffffu, z[k][0], s0);
        const float p1 = __shfl_sync(0xffffffffu, z[k][1], s0);
        const float q0 = __shfl_sync(0xffffffffu, z[k][0], s1);
        const float q1 = __shfl_sync(0xffffffffu, z[k][1], s1);
        const int row = rbase + 8 * k + g;
        const float b[2] = {pm_v((g & 1) ? p1 : p0, row, 8 * L + t, w),
                            pm_v((g & 1) ? q1 : q0, row, 8 * L + t + 4, w)};
#pragma unroll
        for (int mt = 0; mt < NT; ++mt) {
            const int j0 = L + 1 + 2 * mt, j1 = j0 + 1;
            float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            pm_mma3(d, wa[mt], b);
            float2& e0 = PM_SLOT(dyn, warp, j0 - 1, k, lane);
            e0 = make_float2(e0.x - d[0], e0.y - d[1]);
            if (j1 <= 3) {
                float2& e1 = PM_SLOT(dyn, warp, j1 - 1, k, lane);
                e1 = make_float2(e1.x - d[2], e1.y - d[3]);
            }
        }
    }
}

// The end of leaf L: its block turns into V below the diagonal; X = O^T
// V_L over the block (O: the other column blocks, V of the earlier leaves
// and A of the later ones); the earlier blocks' rows of X into the Gram
// matrix, W2 = T_L^T W for the later ones, and A_R -= V_L W2; then the next
// leaf's block moves into the registers and this leaf's into its slot.
// Holds block barriers: every thread calls it.
template <int L>
__device__ __forceinline__ void pm_leaf_end(float (&z)[PMMA_G][2], PmShared& sh, float2* dyn,
                                            int w, int rbase, int lane, int warp, int tid,
                                            float lfs, double lsc, bool lfast) {
    const int g = lane >> 2, t = lane & 3;
    const int col = 8 * L + g;
    const int nw = blockDim.x >> 5;
    // The leaf's columns become V below the diagonal (x times the column's
    // scale; tau = 0 left scale 1), as H stores them; R stays above.
    if (__all_sync(0xffffffffu, lfast)) {  // a float scale in every lane: the usual case
#pragma unroll
        for (int k = 0; k < PMMA_G; ++k)
#pragma unroll
            for (int s = 0; s < 2; ++s)
                if (rbase + 8 * k + 2 * t + s > col) z[k][s] *= lfs;
    } else {
#pragma unroll
        for (int k = 0; k < PMMA_G; ++k)
#pragma unroll
            for (int s = 0; s < 2; ++s) {
                const float x = z[k][s];
                const float v = lfast ? x * lfs : (float)((double)x * lsc);
                z[k][s] = rbase + 8 * k + 2 * t + s > col ? v : x;
            }
    }
    // X^T tiles: tile 0 the other blocks 0 and 1, tile 1 block 2 (and a
    // zero half).
    float acc[2][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][e] = 0.0f;
#pragma unroll
    for (int k = 0; k < PMMA_G; ++k) {
        const int row = rbase + 8 * k + 2 * t;
        const float b[2] = {pm_v(z[k][0], row, col, w), pm_v(z[k][1], row + 1, col, w)};
        float o[3][2];
#pragma unroll
        for (int q = 0; q < 3; ++q) {
            const int j = PM_OTHER(L, q);
            // Block j < L: V_j in slot j; j > L: A_j in slot j - 1.
            const float2 e = PM_SLOT(dyn, warp, j < L ? j : j - 1, k, lane);
            o[q][0] = j < L ? pm_v(e.x, row, 8 * j + g, w) : e.x;
            o[q][1] = j < L ? pm_v(e.y, row + 1, 8 * j + g, w) : e.y;
        }
        const float a0[4] = {o[0][0], o[1][0], o[0][1], o[1][1]};
        const float a1[4] = {o[2][0], 0.0f, o[2][1], 0.0f};
        // Each group's products from zero, added to the sums in float32
        // (trailing_tc.cu's TC_FLUSH 1: the tensor cores' accumulation is
        // not IEEE round-to-nearest, and its error grows with the chain).
        float d0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        pm_mma3(d0, a0, b);
        pm_mma3(d1, a1, b);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            acc[0][e] += d0[e];
            acc[1][e] += d1[e];
        }
    }
    // The warp's X: other column 16 mt + g (+ 8), leaf columns 2t, 2t + 1.
    sh.xp[warp][g][2 * t] = acc[0][0];
    sh.xp[warp][g][2 * t + 1] = acc[0][1];
    sh.xp[warp][8 + g][2 * t] = acc[0][2];
    sh.xp[warp][8 + g][2 * t + 1] = acc[0][3];
    sh.xp[warp][16 + g][2 * t] = acc[1][0];
    sh.xp[warp][16 + g][2 * t + 1] = acc[1][1];
    if (warp == 0) {
        // T_L by the leaf's column recurrence (larft) in double, lane l its
        // row l; the Gram entries and taus of this leaf are warp 0's own
        // stores. It replaces the leaf's Gram block in `gram` (after every
        // lane has read it), so the panel's T starts from groups of 8
        // (qr_panel_finish's B0), and goes to W2 in float.
        __syncwarp();
        double tr[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int r = 8 * L + i;
            const double tau_i = r < w ? (double)sh.taus[r] : 0.0;
            double s = 0.0;
#pragma unroll
            for (int m = 0; m < i; ++m)
                if (m >= lane) s = fma(tr[m], sh.gram[8 * L + m][r], s);
            tr[i] = lane == i ? tau_i : (lane < i ? -tau_i * s : 0.0);
        }
        __syncwarp();
        if (lane < 8) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                sh.tl[lane][i] = (float)tr[i];
                if (i >= lane) sh.gram[8 * L + lane][8 * L + i] = tr[i];
            }
        }
    }
    __syncthreads();
    // Sum over the warps of X (other column c, leaf column l): an earlier
    // block's row is a Gram entry, a later block's column is W; the 8 lanes
    // of a column meet by shuffles for W2 = T_L^T W.
    for (int e = tid; e < 24 * 8; e += 32 * nw) {
        const int c = e >> 3, l = e & 7;
        const int j = PM_OTHER(L, c >> 3);
        const int pc = 8 * j + (c & 7);
        float xq[PMMA_WARPS];
#pragma unroll
        for (int q = 0; q < PMMA_WARPS; ++q) xq[q] = q < nw ? sh.xp[q][c][l] : 0.0f;
        const float x = pairwise_sum_f32(xq);
        // Every lane of the warp takes part in the shuffles (the block's
        // threads and 192 are multiples of 32, so the loop keeps warps
        // whole).
        float y = 0.0f;
#pragma unroll
        for (int m = 0; m < 8; ++m) {
            const float xm = __shfl_sync(0xffffffffu, x, (lane & ~7) | m);
            if (m <= l) y = fmaf(sh.tl[m][l], xm, y);
        }
        if (j < L)
            sh.gram[pc][8 * L + l] = (double)x;
        else
            sh.w2[l][pc] = y;
    }
    if constexpr (L < 3) {
        if (8 * (L + 1) < w) {  // a next leaf (uniform)
            __syncthreads();
            pm_leaf_update<L>(z, sh, dyn, w, rbase, lane, warp);
            // Block L + 1 (slot L) into the registers, this leaf's V and R
            // into its slot.
#pragma unroll
            for (int k = 0; k < PMMA_G; ++k) {
                float2& e = PM_SLOT(dyn, warp, L, k, lane);
                const float2 nx = e;
                e = make_float2(z[k][0], z[k][1]);
                z[k][0] = nx.x;
                z[k][1] = nx.y;
            }
        }
    }
}

// x * 2^-ex as ldexpf(x, -ex) gives it (a power of two times x rounds
// once, as ldexpf does), in one or two multiplications by exact powers of
// two instead of ldexpf's sequence: `lo` = 2^-ex where ex >= -126 (2^-ex a
// normal or, up to ex = 128, subnormal float), else `hi` = 2^64 and `lo` =
// 2^(-ex-64) (scaling up by a finite power of two is exact).
struct PmScale {
    float hi, lo;
};

__device__ __forceinline__ PmScale pm_scale(int ex) {
    PmScale s;
    s.hi = ex >= -126 ? 1.0f : 18446744073709551616.0f;
    s.lo = ldexpf(1.0f, ex >= -126 ? -ex : -ex - 64);
    return s;
}

__device__ __forceinline__ float pm_scaled(float x, PmScale s) { return x * s.hi * s.lo; }

template <int L>
__device__ __forceinline__ void pm_leaf(float (&z)[PMMA_G][2], PmShared& sh, float2* dyn, int w,
                                        int rbase, int lane, int warp, int tid) {
    if (8 * L >= w) return;  // uniform
    float lfs = 1.0f;
    double lsc = 1.0;
    bool lfast = true;
    pm_leaf_steps<L>(z, sh, w, lane, warp, lfs, lsc, lfast);
    pm_leaf_end<L>(z, sh, dyn, w, rbase, lane, warp, tid, lfs, lsc, lfast);
}

extern "C" __global__ void __launch_bounds__(PM_THREADS, PM_MIN_BLOCKS)
    panelmma_factor_f32(float* h, const float* src, const int* __restrict__ zcol,
                        float* __restrict__ vbuf, float* __restrict__ tbuf,
                        float* __restrict__ tau, int n, int p, int w, int mat0,
                        const float* __restrict__ vprev, const float* __restrict__ tprev,
                        int fold, int* __restrict__ oflow) {
    (void)vprev, (void)tprev, (void)fold;
    __shared__ __align__(16) PmShared sh;
    extern __shared__ __align__(16) float2 pmdyn[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nw = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int m = mat0 + blockIdx.y;
    const int rows = n - p;
    float* hm = h + (long long)m * n * n + (long long)p * n + p;
    const float* sm = src + (long long)m * n * n + (long long)p * n + p;
    if (qr_zero_panel(h, src, zcol, tau, m, n, p, w, tid)) return;  // uniform over the block
    const int rbase = warp * PM_R;
    // Block 0 into the registers, blocks 1 .. 3 into slots 0 .. 2.
    float z[PMMA_G][2];
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int k = 0; k < PMMA_G; ++k) {
            float e[2];
#pragma unroll
            for (int s = 0; s < 2; ++s) {
                const int i = rbase + 8 * k + 2 * t + s, c = 8 * j + g;
                e[s] = i < rows && c < w ? sm[(long long)i * n + c] : 0.0f;
                amax = fmaxf(amax, fabsf(e[s]));
            }
            if (j == 0) {
                z[k][0] = e[0];
                z[k][1] = e[1];
            } else {
                PM_SLOT(pmdyn, warp, j - 1, k, lane) = make_float2(e[0], e[1]);
            }
        }
    for (int idx = tid; idx < PM_NB * (PM_NB + 1); idx += 32 * nw) (&sh.gram[0][0])[idx] = 0.0;
    // The block max reads every warp's slot: absent warps hold zero.
    if (tid >= nw && tid < PMMA_WARPS) sh.wmax[tid] = 0.0f;
    if (tid < PM_NB) sh.taus[tid] = 0.0f;
    const int ex = qr_scale_exponent(qr_block_max<PMMA_WARPS>(amax, sh.wmax, lane, warp));
    const PmScale down = pm_scale(ex);
#pragma unroll
    for (int k = 0; k < PMMA_G; ++k) {
        z[k][0] = pm_scaled(z[k][0], down);
        z[k][1] = pm_scaled(z[k][1], down);
#pragma unroll
        for (int q = 0; q < 3; ++q) {
            float2& e = PM_SLOT(pmdyn, warp, q, k, lane);
            e = make_float2(pm_scaled(e.x, down), pm_scaled(e.y, down));
        }
    }

    pm_leaf<0>(z, sh, pmdyn, w, rbase, lane, warp, tid);
    pm_leaf<1>(z, sh, pmdyn, w, rbase, lane, warp, tid);
    pm_leaf<2>(z, sh, pmdyn, w, rbase, lane, warp, tid);
    pm_leaf<3>(z, sh, pmdyn, w, rbase, lane, warp, tid);
    __syncthreads();  // gram and taus complete

    // H's panel (R at the input's scale 2^ex, V below the diagonal) and V:
    // the last leaf's block from the registers, the earlier ones' from
    // their slots; blocks past w hold no column of the panel.
    // R goes back by 2^ex: R's entries are at most ||A||-sized, so up by
    // 2^ex (ex <= 128) overflows only where R itself does (then marked),
    // and down (ex < 0) is exact but for subnormal results, as ldexpf.
    const int last = (w - 1) >> 3;
    const PmScale up = pm_scale(-ex);
    const int r0 = rbase + 2 * t;
    float* const hb = hm + (long long)r0 * n + g;
    float* const vb = vbuf + (long long)m * n * PM_NB + (long long)r0 * PM_NB + g;
    bool bad = false;
#pragma unroll
    for (int k = 0; k < PMMA_G; ++k)
#pragma unroll
        for (int s = 0; s < 2; ++s) {
            const int i = r0 + 8 * k + s;
            if (i < rows) {
                float* const hr = hb + (8 * k + s) * n;
                float* const vr = vb + (8 * k + s) * PM_NB;
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int c = 8 * j + g;
                    float x = 0.0f;
                    if (j == last)
                        x = z[k][s];
                    else if (j < last)
                        x = s ? PM_SLOT(pmdyn, warp, j, k, lane).y : PM_SLOT(pmdyn, warp, j, k, lane).x;
                    const float hv = i <= c ? pm_scaled(x, up) : x;
                    if (c < w) {
                        hr[8 * j] = hv;
                        bad |= qr_nonfinite(hv);
                    }
                    vr[8 * j] = (c >= w || i < c) ? 0.0f : (i == c ? 1.0f : x);
                }
            }
        }
    qr_mark_overflow(oflow, m, bad);

    qr_panel_finish<PM_THREADS, 8>(sh.gram, sh.taus, tbuf, tau, oflow, m, n, p, w, tid, 32 * nw);
}
