extern "C" __global__ void PANEL_CLUSTER_ATTR __launch_bounds__(PANEL_THREADS, PANEL_MIN_BLOCKS)
    panel_factor_f32(float* h, const float* src, const int* __restrict__ zcol,
                     float* __restrict__ vbuf, float* __restrict__ tbuf,
                     float* __restrict__ tau, double* partials, float* rowbuf, u32* counters,
                     int n, int p, int w, int groups, int mat0, const float* __restrict__ vprev,
                     const float* __restrict__ tprev, int fold) {
    // 16-byte aligned: the fold (qr_fold_apply) reads rows as 16-byte quads.
    extern __shared__ __attribute__((aligned(16))) float s[];
    __shared__ double red[PANEL_WARPS][PANEL_NB];
    __shared__ double gram[PANEL_NB][PANEL_NB + 1];
    __shared__ float taus[PANEL_NB];
#if !PANEL_ONEBAR
    // The meetings' buffers (a block alone with one barrier needs none, and
    // without them three 512-row panels fit an SM).
    __shared__ double tot[PANEL_NB];
    __shared__ float rowv[PANEL_NB];
    __shared__ double xpart[2][PANEL_XN];
    __shared__ float xrow[2][PANEL_NB];
    __shared__ u32 base_s;
    __shared__ Reflector s_rf;
#endif

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = blockIdx.x, m = mat0 + blockIdx.y;
    const int nrow = n - p;
    const int chunk = (nrow + groups - 1) / groups;
    const int r0 = min(nrow, g * chunk);
    const int rows = min(nrow, r0 + chunk) - r0;
    float* hm = h + (long long)m * n * n + (long long)p * n + p;
    // The panel is read from `src` (h itself, or the input on the first
    // panel of an out-of-place factorization) and written to h.
    const float* sm = src + (long long)m * n * n + (long long)p * n + p;
    // Columns from zcol[m] on are zero in the input and stay zero: such a
    // panel's factorization is tau = 0 and nothing else (H keeps its zeros;
    // the trailing update skips it, so V and T are not needed). The same
    // for every block of the matrix, so none waits for another. Out of place
    // (the first panel) the pass also copies, so it always runs. Checked once
    // the panel's own loads are issued, so the two latencies overlap.
    const bool zero_panel = src == h && p >= zcol[m];

#if PANEL_CLUSTER == 0 && !PANEL_ONEBAR
    if (groups > 1 && tid == 0) base_s = ((volatile u32*)counters)[2 * m + 1];
#endif
    // PANEL_LOADS loads in flight per thread before the first is used: one
    // at a time, a 176-row panel spent about a tenth of its launch here
    // (ncu), one global latency per 32 x 8 entries.
    float amax = 0.0f;
#if PANEL_FOLD
    // fold and zero_panel are the same for the whole block: uniform. A zero
    // panel's columns are zero in every row, which the fold would keep.
    if (fold && !zero_panel) {
        __shared__ __attribute__((aligned(16))) float top[PANEL_NB][PANEL_NB];
        __shared__ float tt[PANEL_NB][PANEL_NB + 1];
        qr_fold_apply<PANEL_THREADS, PANEL_LD>(s, top, tt, vprev + (long long)m * n * PANEL_NB,
                   tprev + (long long)m * PANEL_NB * PANEL_NB, sm - (long long)PANEL_NB * n,
                   hm - (long long)PANEL_NB * n, n, rows, w, tid);
        for (int idx = tid; idx < rows * PANEL_NB; idx += PANEL_THREADS)
            amax = fmaxf(amax, fabsf(s[(idx >> 5) * PANEL_LD + (idx & 31)]));
    } else
#endif
    for (int base = tid; base < rows * PANEL_NB; base += PANEL_LOADS * PANEL_THREADS) {
        float x[PANEL_LOADS];
#pragma unroll
        for (int u = 0; u < PANEL_LOADS; ++u) {
            const int idx = base + u * PANEL_THREADS, lr = idx >> 5, c = idx & 31;
            x[u] = idx < rows * PANEL_NB && c < w ? sm[(long long)(r0 + lr) * n + c] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < PANEL_LOADS; ++u) {
            const int idx = base + u * PANEL_THREADS;
            if (idx < rows * PANEL_NB) s[(idx >> 5) * PANEL_LD + (idx & 31)] = x[u];
            amax = fmaxf(amax, fabsf(x[u]));
        }
    }
    if (zero_panel) {  // uniform over the matrix's blocks: no barrier is left waiting
        if (g == 0 && tid < w) tau[(long long)m * n + p + tid] = 0.0f;
        return;
    }
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (lane == 0) red[warp][0] = (double)amax;
    __syncthreads();
#if PANEL_CLUSTER > 0
    // Every block's mbarriers exist before any block stores into it; one
    // arrival (this block's, with the phase's bytes) per phase.
    __shared__ unsigned long long s_mbar[2];
    if (groups > 1) {
        if (tid == 0) {
            mbar_init(&s_mbar[0], 1u);
            mbar_init(&s_mbar[1], 1u);
            mbar_init_fence();
        }
        cluster_barrier();
    }
    unsigned long long* mbar = s_mbar;
#elif !PANEL_ONEBAR
    unsigned long long* mbar = nullptr;
#endif
#if PANEL_ONEBAR
    // Alone: every thread takes the max itself (the barrier after the
    // scaling orders these reads before red is written again).
    double pmax = 0.0;
    for (int q = 0; q < PANEL_WARPS; ++q) pmax = fmax(pmax, red[q][0]);
#else
    Meet mt{partials, rowbuf, counters, groups, g, m, groups > 1 ? base_s : 0u, 0, mbar};
    {
        double bmax = 0.0;
        if (warp == 0)
            for (int q = 0; q < PANEL_WARPS; ++q) bmax = fmax(bmax, red[q][0]);
        meet<true>(mt, lane == 0 ? bmax : 0.0, 0.0f, 0, tot, rowv, xpart, xrow, -1, &s_rf);
    }
    const double pmax = tot[0];
#endif
    // Non-finite panels (their matrix is NaN-filled later) keep scale 1.
    int ex = 0;
    if (pmax > 0.0 && pmax <= 3.4028234663852886e38) frexpf((float)pmax, &ex);
    for (int idx = tid; idx < rows * PANEL_NB; idx += PANEL_THREADS) {
        const int lr = idx >> 5, c = idx & 31;
        s[lr * PANEL_LD + c] = ldexpf(s[lr * PANEL_LD + c], -ex);
    }
    __syncthreads();

#if PANEL_ONEBAR
    // Two buffers of float partials in the room of red.
    float(*redf)[PANEL_WARPS][PANEL_NB] = reinterpret_cast<float(*)[PANEL_WARPS][PANEL_NB]>(red);
    dot_rows(s, 0, 1, rows, warp, lane, redf[0]);
    // The pivot row of the previous reflector, stored after the next barrier.
    float pend = 0.0f;
    bool pend_on = false;
    for (int r = 0; r < w; ++r) {
        const int par = r & 1;
        __syncthreads();  // redf[par] holds reflector r's partial sums, s the updated panel
        if (warp == 0 && pend_on) s[(r - 1) * PANEL_LD + lane] = pend;
        float xs[PANEL_WARPS];
#pragma unroll
        for (int q = 0; q < PANEL_WARPS; ++q) xs[q] = redf[par][q][lane];
        const float rv = s[r * PANEL_LD + lane];
        const float alpha = __shfl_sync(0xffffffffu, rv, r);
        {
            // The scaled reflector in float32 (prelude.cu); the tiny and
            // unscaled ones below keep double.
            const float tlf = pairwise_sum_f32(xs);
            const float trf = __shfl_sync(0xffffffffu, tlf, r);
            if (trf >= (float)PANEL_TINY) {  // the same in every thread: uniform
                const ReflectorF32 rf = scaled_reflector_f32(alpha, trf);
                const float vta = fmaf(rf.scale, tlf, rv);
                const float wc = lane > r && lane < w ? rf.tau * vta : 0.0f;
                if (warp == 0) {
                    gram[lane][r] = lane < r ? (double)vta : 0.0;
                    if (lane == 0) taus[r] = rf.tau;
                }
                pend_on = lane >= r && lane < w;
                pend = lane == r ? rf.beta : rv - wc;
                update_rows_f32(s, r, r + 1 < w ? r + 1 : -1, r + 1, rows, warp, lane,
                                lane == r ? rf.scale : -(rf.scale * wc), lane == r, w,
                                redf[par ^ 1]);
                continue;
            }
        }
        double tl = warps_sum(xs);  // this lane's column: its product with column r
        double tr = __shfl_sync(0xffffffffu, tl, r);  // ||x[1..]||^2, the same in every warp
        // tr is the same in every thread, so this branch is uniform.
        const bool tiny = tr < PANEL_TINY;
        if (tiny) {
            __syncthreads();  // every warp has read redf[par]; red is free as doubles
            double acc = 0.0;
            for (int lr = r + 1 + warp; lr < rows; lr += PANEL_WARPS)
                acc += (double)s[lr * PANEL_LD + r] * (double)s[lr * PANEL_LD + lane];
            red[warp][lane] = acc;
            __syncthreads();
            tl = 0.0;
#pragma unroll
            for (int q = 0; q < PANEL_WARPS; ++q) tl += red[q][lane];
            tr = __shfl_sync(0xffffffffu, tl, r);
            __syncthreads();  // read before the update stores float partials over them
        }
        const Reflector rf = tiny ? make_reflector(alpha, tr) : scaled_reflector(alpha, tr);
        // v^T A[., lane] with v = x * scale below the pivot and 1 on it.
        const double vta = (double)rv + rf.scale * tl;
        float wc = 0.0f;
        if (lane > r && lane < w && rf.tau != 0.0f) wc = (float)((double)rf.tau * vta);
        if (warp == 0) {
            gram[lane][r] = lane < r ? vta : 0.0;
            if (lane == 0) taus[r] = rf.tau;
        }
        pend_on = rf.tau != 0.0f && lane >= r && lane < w;
        pend = lane == r ? rf.beta : rv - wc;
        const int next = r + 1 < w ? r + 1 : -1;
        float(*out)[PANEL_NB] = redf[par ^ 1];
        if (rf.tau == 0.0f)
            update_rows<true>(s, r, next, r + 1, rows, 0, warp, lane, 1.0f, 1.0, wc, w, out);
        else if (fabs(rf.scale) < 1.0e30)
            update_rows<true>(s, r, next, r + 1, rows, 0, warp, lane, (float)rf.scale, rf.scale,
                              wc, w, out);
        else
            update_rows<false>(s, r, next, r + 1, rows, 0, warp, lane, 0.0f, rf.scale, wc, w, out);
    }
    __syncthreads();
    if (warp == 0 && pend_on) s[(w - 1) * PANEL_LD + lane] = pend;
    __syncthreads();
#elif PANEL_CLUSTER == 0
    // Blocks of one matrix alone or meeting through global memory (the
    // saturated batches): one pass per reflector updates the panel and forms
    // the next reflector's sums, the reflector is formed once per block, and
    // the block meets twice per reflector (13% fewer instructions and time
    // at 640 x 512; docs/history/qr-gpu-sessions.md, "where the time goes at
    // 640 x 512").
    // Reflector 0's sums; later reflectors get theirs from the previous
    // step's update loop.
    dot_rows(s, 0, max(0, 1 - r0), rows, warp, lane, red);
    for (int r = 0; r < w; ++r) {
        const int first = max(0, r + 1 - r0);
        const bool owner = r >= r0 && r < r0 + rows;
        const int owner_g = r / chunk;
        __syncthreads();  // red holds reflector r's partial sums, s the updated panel
        {
            double t = 0.0;
            if (warp == 0) {
                double x[PANEL_WARPS];
#pragma unroll
                for (int q = 0; q < PANEL_WARPS; ++q) x[q] = red[q][lane];
#pragma unroll
                for (int q = 0; q < PANEL_WARPS; ++q) t += x[q];
            }
            const float rv = owner && warp == 0 ? s[(r - r0) * PANEL_LD + lane] : 0.0f;
            meet<false>(mt, t, rv, owner_g, tot, rowv, xpart, xrow, r, &s_rf);
        }
        // tot is the same in every block of the matrix, so this branch is too.
        if (tot[r] < PANEL_TINY) {
            double acc = 0.0;
            for (int lr = first + warp; lr < rows; lr += PANEL_WARPS)
                acc += (double)s[lr * PANEL_LD + r] * (double)s[lr * PANEL_LD + lane];
            red[warp][lane] = acc;
            __syncthreads();
            double t = 0.0;
            if (warp == 0)
                for (int q = 0; q < PANEL_WARPS; ++q) t += red[q][lane];
            const float rv = owner && warp == 0 ? s[(r - r0) * PANEL_LD + lane] : 0.0f;
            meet<false>(mt, t, rv, owner_g, tot, rowv, xpart, xrow, r, &s_rf);
        }

        const Reflector rf = s_rf;
        float wc = 0.0f;
        if (lane > r && lane < w && rf.tau != 0.0f)
            wc = (float)((double)rf.tau * ((double)rowv[lane] + rf.scale * tot[lane]));
        if (warp == 0) {
            gram[lane][r] = lane < r ? (double)rowv[lane] + rf.scale * tot[lane] : 0.0;
            if (lane == 0) taus[r] = rf.tau;
            // The pivot row: nothing else touches it from here on.
            if (owner && rf.tau != 0.0f) {
                if (lane == r)
                    s[(r - r0) * PANEL_LD + r] = rf.beta;
                else if (lane > r && lane < w)
                    s[(r - r0) * PANEL_LD + lane] = rowv[lane] - wc;
            }
        }
        // Scaled, |alpha - beta| >= ||x|| >= 2^-30 unless the sums were
        // redone in double, so a float32 scale is exact to rounding. tau = 0
        // leaves the panel as it is (scale 1 and no update: wc is 0).
        const int next = r + 1 < w ? r + 1 : -1;
        if (rf.tau == 0.0f)
            update_rows<true>(s, r, next, first, rows, r0, warp, lane, 1.0f, 1.0, wc, w, red);
        else if (fabs(rf.scale) < 1.0e30)
            update_rows<true>(s, r, next, first, rows, r0, warp, lane, (float)rf.scale, rf.scale,
                              wc, w, red);
        else
            update_rows<false>(s, r, next, first, rows, r0, warp, lane, 0.0f, rf.scale, wc, w,
                               red);
    }
    __syncthreads();
#else
    // Clusters (few matrices, latency-bound): the fused pass measured slower
    // there (its per-row shuffle lengthens the chain), so the sums, the update
    // and the scaling of v stay three passes.
    for (int r = 0; r < w; ++r) {
        const int first = max(0, r + 1 - r0);
        const bool owner = r >= r0 && r < r0 + rows;
        const int owner_g = r / chunk;
        // The reflector's latency is this pass's.
        dot_rows(s, r, first, rows, warp, lane, red);
        __syncthreads();
        {
            double t = 0.0;
            if (warp == 0) {
                double x[PANEL_WARPS];
#pragma unroll
                for (int q = 0; q < PANEL_WARPS; ++q) x[q] = red[q][lane];
#pragma unroll
                for (int q = 0; q < PANEL_WARPS; ++q) t += x[q];
            }
            const float rv = owner && warp == 0 ? s[(r - r0) * PANEL_LD + lane] : 0.0f;
            meet<false>(mt, t, rv, owner_g, tot, rowv, xpart, xrow, -1, &s_rf);
        }
        // tot is the same in every block of the matrix, so this branch is too.
        if (tot[r] < PANEL_TINY) {
            double acc = 0.0;
            for (int lr = first + warp; lr < rows; lr += PANEL_WARPS)
                acc += (double)s[lr * PANEL_LD + r] * (double)s[lr * PANEL_LD + lane];
            red[warp][lane] = acc;
            __syncthreads();
            double t = 0.0;
            if (warp == 0)
                for (int q = 0; q < PANEL_WARPS; ++q) t += red[q][lane];
            const float rv = owner && warp == 0 ? s[(r - r0) * PANEL_LD + lane] : 0.0f;
            meet<false>(mt, t, rv, owner_g, tot, rowv, xpart, xrow, -1, &s_rf);
        }

        const Reflector rf = meet_reflector(rowv[r], tot[r]);
        if (warp == 0) {
            gram[lane][r] = lane < r ? (double)rowv[lane] + rf.scale * tot[lane] : 0.0;
            if (lane == 0) taus[r] = rf.tau;
        }
        if (rf.tau != 0.0f) {
            float wc = 0.0f;
            if (lane > r && lane < w)
                wc = (float)((double)rf.tau * ((double)rowv[lane] + rf.scale * tot[lane]));
            // Scaled, |alpha - beta| >= ||x|| >= 2^-30 unless the sums were
            // redone in double, so a float32 scale is exact to rounding.
            const bool fast = fabs(rf.scale) < 1.0e30;
            const float fs = (float)rf.scale;
            // Column r is only read here (it becomes v after the barrier), so
            // the rows need no ordering among the lanes and unroll freely.
            if (lane > r && lane < w) {
                // Float32 reflectors fold v = x scale into the row's FMA.
                if (fast) {
                    const float k = -(fs * wc);
#pragma unroll 4
                    for (int lr = first + warp; lr < rows; lr += PANEL_WARPS) {
                        const float x = s[lr * PANEL_LD + r];
                        s[lr * PANEL_LD + lane] = fmaf(x, k, s[lr * PANEL_LD + lane]);
                    }
                } else
#pragma unroll 4
                    for (int lr = first + warp; lr < rows; lr += PANEL_WARPS) {
                        const float x = s[lr * PANEL_LD + r];
                        const float v = fast ? x * fs : (float)((double)x * rf.scale);
                        s[lr * PANEL_LD + lane] = fmaf(-v, wc, s[lr * PANEL_LD + lane]);
                    }
            }
            __syncthreads();
            for (int lr = first + tid; lr < rows; lr += PANEL_THREADS) {
                const float x = s[lr * PANEL_LD + r];
                s[lr * PANEL_LD + r] = fast ? x * fs : (float)((double)x * rf.scale);
            }
            if (owner && warp == 0) {
                if (lane == r)
                    s[(r - r0) * PANEL_LD + r] = rf.beta;
                else if (lane > r && lane < w)
                    s[(r - r0) * PANEL_LD + lane] = rowv[lane] - wc;
            }
        }
        __syncthreads();
    }
#endif
#if PANEL_CLUSTER > 0
    // No block may leave while another can still read its shared memory.
    if (groups > 1) cluster_barrier();
#elif !PANEL_ONEBAR
    if (groups > 1 && g == 0 && tid == 0)
        counters[2 * m + 1] = mt.base + (u32)groups * (u32)mt.k;
#endif

    for (int idx = tid; idx < rows * PANEL_NB; idx += PANEL_THREADS) {
        const int lr = idx >> 5, c = idx & 31, pr = r0 + lr;
        const float x = s[lr * PANEL_LD + c];
        // R (on and above the diagonal) goes back to the input's scale.
        if (c < w) hm[(long long)pr * n + c] = pr <= c ? ldexpf(x, ex) : x;
        const float v = (c >= w || pr < c) ? 0.0f : (pr == c ? 1.0f : x);
        vbuf[(long long)m * n * PANEL_NB + (long long)pr * PANEL_NB + c] = v;
    }
    if (g != 0) return;

    // T from the Gram columns.
    larft_blocked<PANEL_NB, PANEL_NB + 1, PANEL_THREADS>(gram, taus, w, tid);
    for (int idx = tid; idx < PANEL_NB * PANEL_NB; idx += PANEL_THREADS) {
        const int k = idx >> 5, c = idx & 31;
        const float t = (k < w && c < w && k <= c) ? (float)gram[k][c] : 0.0f;
        tbuf[(long long)m * PANEL_NB * PANEL_NB + idx] = t;
    }
    if (tid < w) tau[(long long)m * n + p + tid] = taus[tid];
}
