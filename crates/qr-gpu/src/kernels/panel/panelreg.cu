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
