// Two-level panels of the blocked path: the 32-column panel at column po is
// factored as two 16-column halves, A (columns po..po+16) and B (po+16..
// po+32), each one launch of panel16_factor_f32. Half the panel's width
// halves its shared memory (twice the blocks per SM: a batch of 640 512-row
// panels fits one wave of an H200 instead of two), and a warp instruction
// covers two rows of 16 columns instead of one row of 32, so a reflector
// takes half the instructions. B's launch first applies A's reflectors to
// its columns (rows po.., R12 included) and ends by joining the outer T, so
// V and T leave as the single-level panel leaves them.
//
// The factorization is the one-barrier loop of panel.cu (PANEL_ONEBAR) on
// 16 columns: lane = (half, c) with half = lane / 16 the row parity and
// c = lane % 16 the column; warp k takes row pairs k, k + WARPS, ... . The
// update pass of reflector r - 1 leaves reflector r's per-warp partial sums
// (both halves added) in one of two float buffers; after the single barrier
// every thread adds them in warp order (the same bits in every thread) and
// forms reflector r itself. The pivot row is stored one step later, after
// the barrier that follows every thread's read of it. The same scaling by a
// power of two, double redo of vanishing columns and larft as panel.cu.
//
// Outputs (sub = 0 for A, 16 for B; rows of V counted from row po):
//   H: the half's columns from row po (B: R12 as updated by A's reflectors),
//      R scaled back; tau[p..p+w);
//   V: the outer V's columns sub..sub+16 (unit lower from row sub, zeros
//      above and in columns >= w);
//   T: the half's 16 x 16 larft factor at T[sub..][sub..] of the outer
//      32 x 32 T; B also writes the block T[0..16][16..32].
// A half right of the matrix's last non-zero column (in place) writes tau = 0
// only: the updates that would read its V and T skip the same columns.

#ifndef P16_THREADS
#error "P16_THREADS (threads per block, a multiple of 32) must be defined by the plan"
#endif
#ifndef P16_MIN_BLOCKS
#error "P16_MIN_BLOCKS (resident blocks per SM asked of the compiler) must be defined by the plan"
#endif

#if P16_THREADS < 256
#error "P16_THREADS must be at least 256: B's prologue and T join take a thread per 16 x 16 entry"
#endif

#define P16_W 16
#define P16_NB 32  // the outer panel: V's leading dimension, T's order
#define P16_WARPS (P16_THREADS / 32)
// 2^-60: below it a scaled squared norm may have lost bits to underflow.
#define P16_TINY 8.673617379884035e-19

// Reflector r's update of this warp's rows (from r + 1) and, in the same
// pass, the sums of reflector `next` (< 0: none) into out[warp]: lane c
// gets the sum over rows below next's pivot of A[., next] * A[., c]. Column
// r turns into v (x * scale); columns r < c < w take A[., c] -= v * wc.
template <bool fast>
__device__ __forceinline__ void p16_update(float* s, int r, int next, int rows, int warp, int half,
                                           int c, float fs, double scale, float wc, int w,
                                           float (*out)[P16_W]) {
    const bool store = c >= r && c < w;
    const int src = (half << 4) | (next < 0 ? 0 : next);
    const int sum_from = next < 0 ? rows : next + 1;
    const int first = r + 1;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int q = (first >> 1) + warp;
    // Four pairs a step while all their rows exist; the pivot row r (half 0
    // of the first pair when r is even) is read but neither stored nor summed.
    for (; 2 * (q + 3 * P16_WARPS) + 1 < rows; q += 4 * P16_WARPS) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int l = 2 * (q + u * P16_WARPS) + half;
            float* row = s + l * P16_W;
            const float x = row[r];
            const float v = fast ? x * fs : (float)((double)x * scale);
            const float a0 = row[c];
            const float a = c == r ? v : fmaf(-v, wc, a0);
            if (store && l >= first) row[c] = a;
            const float y = __shfl_sync(0xffffffffu, a, src);
            acc[u] = fmaf(l >= sum_from ? y : 0.0f, a, acc[u]);
        }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u, q += P16_WARPS) {
        // Warp-uniform condition: the shuffle needs every lane.
        if (2 * q < rows) {
            const int l = 2 * q + half;
            const bool in = l < rows;
            float* row = s + (in ? l : 0) * P16_W;
            const float x = in ? row[r] : 0.0f;
            const float v = fast ? x * fs : (float)((double)x * scale);
            const float a0 = in ? row[c] : 0.0f;
            const float a = c == r ? v : fmaf(-v, wc, a0);
            if (in && store && l >= first) row[c] = a;
            const float y = __shfl_sync(0xffffffffu, a, src);
            acc[u] = fmaf(in && l >= sum_from ? y : 0.0f, a, acc[u]);
        }
    }
    if (next >= 0) {
        double t = ((double)acc[0] + (double)acc[1]) + ((double)acc[2] + (double)acc[3]);
        t += __shfl_xor_sync(0xffffffffu, t, 16);  // commutative: both halves get the same bits
        if (half == 0) out[warp][c] = (float)t;
    }
}

// Reflector 0's sums (rows 1..) into out[warp].
__device__ __forceinline__ void p16_dots(const float* s, int rows, int warp, int half, int c,
                                         float (*out)[P16_W]) {
    float acc = 0.0f;
    for (int q = warp; 2 * q < rows; q += P16_WARPS) {
        const int l = 2 * q + half;
        if (l >= 1 && l < rows) acc = fmaf(s[l * P16_W], s[l * P16_W + c], acc);
    }
    double t = (double)acc;
    t += __shfl_xor_sync(0xffffffffu, t, 16);
    if (half == 0) out[warp][c] = (float)t;
}

struct alignas(16) tc16_f4 {
    float x[4];
};

// Half B's prologue: A's reflectors applied to the block's rows, the 16
// rows of R12 above B's own included (s holds rows po..n of B's columns):
// W = V1^T B, W2 = T1^T W (T1 upper triangular), B -= V1 W2, in float32 as
// the tensor-core update's own float32 accumulation, in a fixed order.
__device__ void p16_apply_a(float* s, int rows_all, const float* __restrict__ v1,
                            const float* __restrict__ t1, float (*wsh)[P16_W + 1],
                            float (*w2sh)[P16_W + 1]) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int half = lane >> 4, c = lane & 15;
    if (tid < P16_W * P16_W) {
        const int i = tid >> 4, cc = tid & 15;
        float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int l = 0;
        for (; l + 3 < rows_all; l += 4)
#pragma unroll
            for (int u = 0; u < 4; ++u)
                a[u] = fmaf(v1[(l + u) * P16_NB + i], s[(l + u) * P16_W + cc], a[u]);
        for (; l < rows_all; ++l) a[0] = fmaf(v1[l * P16_NB + i], s[l * P16_W + cc], a[0]);
        wsh[i][cc] = (a[0] + a[1]) + (a[2] + a[3]);
    }
    __syncthreads();
    if (tid < P16_W * P16_W) {
        const int i = tid >> 4, cc = tid & 15;
        float acc = 0.0f;
        for (int k = 0; k <= i; ++k) acc = fmaf(t1[k * P16_NB + i], wsh[k][cc], acc);
        w2sh[i][cc] = acc;
    }
    __syncthreads();
    float w2c[P16_W];
#pragma unroll
    for (int i = 0; i < P16_W; ++i) w2c[i] = w2sh[i][c];
    for (int q = warp; 2 * q < rows_all; q += P16_WARPS) {
        const int l = 2 * q + half;
        if (l < rows_all) {
            const tc16_f4* vr = reinterpret_cast<const tc16_f4*>(v1 + l * P16_NB);
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const tc16_f4 v = vr[k];
#pragma unroll
                for (int e = 0; e < 4; ++e) acc = fmaf(v.x[e], w2c[4 * k + e], acc);
            }
            s[l * P16_W + c] -= acc;
        }
    }
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(P16_THREADS, P16_MIN_BLOCKS)
    panel16_factor_f32(float* h, const float* src, const int* __restrict__ zcol,
                       float* __restrict__ vbuf, float* __restrict__ tbuf,
                       float* __restrict__ tau, int n, int p, int w, int sub, int mat0) {
    extern __shared__ __attribute__((aligned(16))) float s_all[];
    __shared__ float red[2][P16_WARPS][P16_W];
    __shared__ double dred[P16_WARPS][P16_W];
    __shared__ double gram[P16_W][P16_W + 1];
    __shared__ float taus[P16_W];
    __shared__ float fx[2][P16_W][P16_W + 1];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int half = lane >> 4, c = lane & 15;
    const int m = mat0 + blockIdx.y;
    const int rows = n - p;          // the half's own rows, from its first pivot
    const int rows_all = rows + sub;  // B also holds the 16 rows of R12 above
    float* hm = h + (long long)m * n * n + (long long)(p - sub) * n + p;
    const float* sm = src + (long long)m * n * n + (long long)(p - sub) * n + p;
    float* vm = vbuf + (long long)m * n * P16_NB;  // the outer V, row 0 = row p - sub
    float* tm = tbuf + (long long)m * P16_NB * P16_NB;
    const bool zero_panel = src == h && p >= zcol[m];
    float* s = s_all + sub * P16_W;  // the half's own rows

    for (int idx = tid; idx < rows_all * P16_W; idx += P16_THREADS) {
        const int lr = idx >> 4, cc = idx & 15;
        s_all[idx] = cc < w ? sm[(long long)lr * n + cc] : 0.0f;
    }
    if (zero_panel) {  // uniform over the block; the columns are zero and stay so
        if (tid < w) tau[(long long)m * n + p + tid] = 0.0f;
        return;
    }
    __syncthreads();
    if (sub > 0) p16_apply_a(s_all, rows_all, vm, tm, fx[0], fx[1]);

    float amax = 0.0f;
    for (int idx = tid; idx < rows * P16_W; idx += P16_THREADS) amax = fmaxf(amax, fabsf(s[idx]));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (lane == 0) red[0][warp][0] = amax;
    __syncthreads();
    float pmax = 0.0f;
    for (int k = 0; k < P16_WARPS; ++k) pmax = fmaxf(pmax, red[0][k][0]);
    // Non-finite panels (their matrix is NaN-filled later) keep scale 1.
    int ex = 0;
    if (pmax > 0.0f && pmax <= 3.4028234663852886e38f) frexpf(pmax, &ex);
    for (int idx = tid; idx < rows * P16_W; idx += P16_THREADS) s[idx] = ldexpf(s[idx], -ex);
    __syncthreads();  // also: every thread has read red[0] before it is overwritten

    p16_dots(s, rows, warp, half, c, red[0]);
    float pend = 0.0f;
    bool pend_on = false;
    for (int r = 0; r < w; ++r) {
        const int par = r & 1;
        __syncthreads();  // red[par] holds reflector r's sums, s the updated panel
        if (warp == 0 && half == 0 && pend_on) s[(r - 1) * P16_W + c] = pend;
        double tl;  // column c's product with column r below the pivot
        {
            float x[P16_WARPS];
#pragma unroll
            for (int k = 0; k < P16_WARPS; ++k) x[k] = red[par][k][c];
            tl = pairwise_sum_f64<P16_WARPS>(x);
        }
        double tr = __shfl_sync(0xffffffffu, tl, r);  // ||x[1..]||^2, the same everywhere
        const float rv = s[r * P16_W + c];
        const float alpha = __shfl_sync(0xffffffffu, rv, r);
        const bool tiny = tr < P16_TINY;  // uniform
        if (tiny) {
            __syncthreads();  // rare; the rows read below were final at the top barrier already
            double acc = 0.0;
            for (int q = warp; 2 * q < rows; q += P16_WARPS) {
                const int l = 2 * q + half;
                if (l > r && l < rows)
                    acc += (double)s[l * P16_W + r] * (double)s[l * P16_W + c];
            }
            acc += __shfl_xor_sync(0xffffffffu, acc, 16);
            if (half == 0) dred[warp][c] = acc;
            __syncthreads();
            tl = 0.0;
            for (int k = 0; k < P16_WARPS; ++k) tl += dred[k][c];
            tr = __shfl_sync(0xffffffffu, tl, r);
        }
        const Reflector rf = tiny ? make_reflector(alpha, tr) : scaled_reflector(alpha, tr);
        const double vta = (double)rv + rf.scale * tl;  // v^T A[., c]
        float wc = 0.0f;
        if (c > r && c < w && rf.tau != 0.0f) wc = (float)((double)rf.tau * vta);
        if (warp == 0 && half == 0) {
            gram[c][r] = c < r ? vta : 0.0;
            if (c == 0) taus[r] = rf.tau;
        }
        pend_on = rf.tau != 0.0f && c >= r && c < w;
        pend = c == r ? rf.beta : rv - wc;
        const int next = r + 1 < w ? r + 1 : -1;
        float(*out)[P16_W] = red[par ^ 1];
        if (rf.tau == 0.0f)
            p16_update<true>(s, r, next, rows, warp, half, c, 1.0f, 1.0, wc, w, out);
        else if (fabs(rf.scale) < 1.0e30)
            p16_update<true>(s, r, next, rows, warp, half, c, (float)rf.scale, rf.scale, wc, w,
                             out);
        else
            p16_update<false>(s, r, next, rows, warp, half, c, 0.0f, rf.scale, wc, w, out);
    }
    __syncthreads();
    if (warp == 0 && half == 0 && pend_on) s[(w - 1) * P16_W + c] = pend;
    __syncthreads();

    // H: R12 rows as updated, the half's rows with R scaled back.
    for (int idx = tid; idx < rows_all * P16_W; idx += P16_THREADS) {
        const int lr = idx >> 4, cc = idx & 15, l = lr - sub;
        if (cc < w) hm[(long long)lr * n + cc] = l < 0 ? s_all[idx] : l <= cc ? ldexpf(s_all[idx], ex) : s_all[idx];
        if (l >= 0) {
            const float v = (cc >= w || l < cc) ? 0.0f : (l == cc ? 1.0f : s_all[idx]);
            vm[(long long)lr * P16_NB + sub + cc] = v;
        } else {
            vm[(long long)lr * P16_NB + sub + cc] = 0.0f;
        }
    }

    // T from the Gram columns.
    larft_blocked<P16_W, P16_W + 1, P16_THREADS>(gram, taus, w, tid);
    for (int idx = tid; idx < P16_W * P16_W; idx += P16_THREADS) {
        const int k = idx >> 4, cc = idx & 15;
        tm[(sub + k) * P16_NB + sub + cc] = (k < w && cc < w && k <= cc) ? (float)gram[k][cc] : 0.0f;
    }
    if (tid < w) tau[(long long)m * n + p + tid] = taus[tid];
    if (sub == 0) return;

    // The outer T's upper-right block, -T1 (V1^T V2) T2 (larft blockwise),
    // V1^T V2 over the half's rows (V2 is zero above them) with exact
    // products summed in double in a fixed order; T1 from half A's launch,
    // T2 still in gram (k <= j < w).
    float(*pp)[P16_W + 1] = fx[0];
    float(*yy)[P16_W + 1] = fx[1];
    const int i = tid >> 4, j = tid & 15;
    const bool mine = tid < P16_W * P16_W;
    if (mine) {
        double acc = 0.0;
        if (j < w) {
            acc = (double)vm[(long long)(sub + j) * P16_NB + i];  // V2[j][j] = 1
            for (int l = j + 1; l < rows; ++l)
                acc += (double)vm[(long long)(sub + l) * P16_NB + i] * (double)s[l * P16_W + j];
        }
        pp[i][j] = (float)acc;
    }
    __syncthreads();
    if (mine) {
        double y = 0.0;  // (T1 P)[i][j], T1 upper triangular
        for (int k = i; k < P16_W; ++k) y += (double)tm[i * P16_NB + k] * (double)pp[k][j];
        yy[i][j] = (float)y;
    }
    __syncthreads();
    if (mine) {
        double x = 0.0;  // (T1 P T2)[i][j]
        for (int k = 0; k <= j && k < w; ++k) x += (double)yy[i][k] * gram[k][j];
        tm[i * P16_NB + P16_W + j] = j < w ? (float)(-x) : 0.0f;
    }
}

