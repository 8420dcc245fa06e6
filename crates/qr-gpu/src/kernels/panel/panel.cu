// Panel factorization of the blocked (compact-WY) paths.
//
// One launch factors the 32-column panel that starts at column p of every
// matrix: rows p..n, columns p..p+w (w <= 32). The panel's rows are split over
// `groups` blocks per matrix (grid = (groups, matrices)); each block keeps its
// row chunk in shared memory (odd leading dimension PANEL_LD) for the whole
// panel. Lane c of every warp owns panel column c; warps split the rows.
//
// Reflector r needs one reduction: for every lane c, the sum over the rows
// below r of x * A[., c] (x = column r), in double. Lane r's sum is
// ||x[1..]||^2, lanes c > r give v^T A[., c] once scaled, and lanes c < r
// give v_c^T x, the Gram column of the compact-WY T, for free. With
// groups > 1 the per-block sums meet in global memory behind a barrier
// among that matrix's blocks (a cooperative launch keeps them resident), and
// every block adds them in the same order, so all of them form the same
// reflector.
//
// Outputs: the factored panel in H, tau, the explicit unit-lower V (zero
// padded to 32 columns) and the 32 x 32 upper-triangular T with
// H_p ... H_{p+w-1} = I - V T V^T (LAPACK's larft, forward columnwise).

#ifndef PANEL_THREADS
#error "PANEL_THREADS (block size) must be defined by the plan"
#endif
#ifndef PANEL_LD
#error "PANEL_LD (shared leading dimension) must be defined by the plan"
#endif
#define PANEL_NB 32
#define PANEL_WARPS (PANEL_THREADS / 32)

// Barrier among the `groups` blocks of one matrix. `counter` only grows during
// a factorization (zeroed before it), so `target` is the number of arrivals
// expected after this barrier.
__device__ __forceinline__ void group_barrier(u32* counter, u32 target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(counter, 1u);
        while (*((volatile u32*)counter) < target) {
        }
        __threadfence();
    }
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(PANEL_THREADS)
    panel_factor_f32(float* __restrict__ h, float* __restrict__ vbuf, float* __restrict__ tbuf,
                     float* __restrict__ tau, double* partials, float* rowbuf, u32* counters,
                     int n, int p, int w, int groups, int mat0) {
    extern __shared__ float s[];
    __shared__ double red[PANEL_WARPS][PANEL_NB];
    __shared__ double tot[PANEL_NB];
    __shared__ float rowv[PANEL_NB];
    __shared__ double gram[PANEL_NB][PANEL_NB + 1];
    __shared__ float taus[PANEL_NB];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = blockIdx.x, m = mat0 + blockIdx.y;
    const int nrow = n - p;
    const int chunk = (nrow + groups - 1) / groups;
    const int r0 = min(nrow, g * chunk);
    const int rows = min(nrow, r0 + chunk) - r0;
    float* hm = h + (long long)m * n * n + (long long)p * n + p;

    for (int idx = tid; idx < rows * PANEL_NB; idx += PANEL_THREADS) {
        const int lr = idx >> 5, c = idx & 31;
        s[lr * PANEL_LD + c] = c < w ? hm[(long long)(r0 + lr) * n + c] : 0.0f;
    }
    __syncthreads();

    for (int r = 0; r < w; ++r) {
        const int first = max(0, r + 1 - r0);
        const bool owner = r >= r0 && r < r0 + rows;
        double acc = 0.0;
        for (int lr = first + warp; lr < rows; lr += PANEL_WARPS)
            acc += (double)s[lr * PANEL_LD + r] * (double)s[lr * PANEL_LD + lane];
        red[warp][lane] = acc;
        __syncthreads();
        if (warp == 0) {
            double t = 0.0;
            for (int q = 0; q < PANEL_WARPS; ++q) t += red[q][lane];
            const float rv = owner ? s[(r - r0) * PANEL_LD + lane] : 0.0f;
            if (groups == 1) {
                tot[lane] = t;
                rowv[lane] = rv;
            } else {
                const long long slot = (long long)m * 2 + ((p + r) & 1);
                partials[(slot * groups + g) * PANEL_NB + lane] = t;
                if (owner) rowbuf[slot * PANEL_NB + lane] = rv;
            }
        }
        if (groups > 1) {
            group_barrier(counters + m, (u32)groups * (u32)(p + r + 1));
            if (warp == 0) {
                const long long slot = (long long)m * 2 + ((p + r) & 1);
                const volatile double* pp = partials + slot * groups * PANEL_NB + lane;
                double t = 0.0;
                for (int q = 0; q < groups; ++q) t += pp[q * PANEL_NB];
                tot[lane] = t;
                rowv[lane] = ((const volatile float*)rowbuf)[slot * PANEL_NB + lane];
            }
        }
        __syncthreads();

        const Reflector rf = make_reflector(rowv[r], tot[r]);
        if (warp == 0) {
            gram[lane][r] = lane < r ? (double)rowv[lane] + rf.scale * tot[lane] : 0.0;
            if (lane == 0) taus[r] = rf.tau;
        }
        if (rf.tau != 0.0f) {
            float wc = 0.0f;
            if (lane > r && lane < w)
                wc = (float)((double)rf.tau * ((double)rowv[lane] + rf.scale * tot[lane]));
            for (int lr = first + warp; lr < rows; lr += PANEL_WARPS) {
                const float x = s[lr * PANEL_LD + r];
                __syncwarp();
                const float v = (float)((double)x * rf.scale);
                if (lane == r)
                    s[lr * PANEL_LD + r] = v;
                else if (lane > r && lane < w)
                    s[lr * PANEL_LD + lane] -= v * wc;
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

    for (int idx = tid; idx < rows * PANEL_NB; idx += PANEL_THREADS) {
        const int lr = idx >> 5, c = idx & 31, pr = r0 + lr;
        const float x = s[lr * PANEL_LD + c];
        if (c < w) hm[(long long)pr * n + c] = x;
        const float v = (c >= w || pr < c) ? 0.0f : (pr == c ? 1.0f : x);
        vbuf[(long long)m * n * PANEL_NB + (long long)pr * PANEL_NB + c] = v;
    }
    if (g != 0) return;

    // T from the Gram columns, one column at a time: T[k][r] = -tau_r *
    // sum_{k <= q < r} T[k][q] gram[q][r], overwriting gram's upper triangle.
    if (warp == 0) {
        for (int r = 0; r < w; ++r) {
            double y = 0.0;
            if (lane < r)
                for (int q = lane; q < r; ++q) y += gram[lane][q] * gram[q][r];
            __syncwarp();
            if (lane < r) gram[lane][r] = -(double)taus[r] * y;
            if (lane == r) gram[r][r] = (double)taus[r];
            __syncwarp();
        }
    }
    __syncthreads();
    for (int idx = tid; idx < PANEL_NB * PANEL_NB; idx += PANEL_THREADS) {
        const int k = idx >> 5, c = idx & 31;
        const float t = (k < w && c < w && k <= c) ? (float)gram[k][c] : 0.0f;
        tbuf[(long long)m * PANEL_NB * PANEL_NB + idx] = t;
    }
    if (tid < w) tau[(long long)m * n + p + tid] = taus[tid];
}
