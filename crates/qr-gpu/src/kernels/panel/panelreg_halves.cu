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
    // panel.cu's rule, as in the whole-row kernel (panelreg.cu).
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
