// Panel factorization of the blocked (compact-WY) paths.
//
// One launch factors the 32-column panel that starts at column p of every
// matrix: rows p..n, columns p..p+w (w <= 32). The panel's rows are split over
// `groups` blocks per matrix (grid = (groups, matrices)); each block keeps its
// row chunk in shared memory (odd leading dimension PANEL_LD) for the whole
// panel. Lane c of every warp owns panel column c; warps split the rows.
//
// The blocks of one matrix meet once per reflector to add their partial sums:
//   PANEL_CLUSTER = 0, groups = 1: no meeting;
//   PANEL_CLUSTER = 0, groups > 1: through global memory behind a counter
//     barrier (a cooperative launch keeps the blocks resident);
//   PANEL_CLUSTER = k > 0: the k blocks form a thread-block cluster and read
//     each other's shared memory after a hardware cluster barrier (sm_90+).
// Every block adds the partials in the same order, so all of them form the
// same reflector, and every run gets the same bits.
//
// Reflector r needs one reduction: for every lane c, the sum over the rows
// below r of x * A[., c] (x = column r). Lane r's sum is ||x[1..]||^2, lanes
// c > r give v^T A[., c] once scaled, and lanes c < r give v_c^T x, the Gram
// column of the compact-WY T, for free.
//
// Range: the panel is scaled by a power of two (exact) so that its largest
// entry lies in [0.5, 1); Householder steps keep every entry below sqrt(rows)
// then, so float32 products and sums cannot overflow, and a float32 square
// only underflows for entries below 2^-63 of the panel's largest, far under
// float32's rounding of the panel. Sums are float32 per lane (float32 is
// what cuBLAS's and LAPACK's own updates use), added across warps and blocks
// in double. A reflector whose scaled ||x[1..]||^2 falls below PANEL_TINY
// (a column that has all but vanished, e.g. in a rank-deficient matrix) has
// its sums redone in double, so that tau = 0 stays exactly "x[1..] is zero".
// R's entries are scaled back when the panel is written out; V, T and tau do
// not depend on the scale.
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
#ifndef PANEL_CLUSTER
#error "PANEL_CLUSTER (blocks per thread-block cluster, 0 for none) must be defined by the plan"
#endif
#ifndef PANEL_PIPE
#error "PANEL_PIPE (1: the one-barrier float32 loop software-pipelines its rows) must be defined by the plan"
#endif
#ifndef PANEL_FOLD
#error "PANEL_FOLD (1: a one-barrier panel first applies the previous panel's reflectors to its columns) must be defined by the plan"
#endif
#if PANEL_FOLD && !PANEL_ONEBAR
#error "PANEL_FOLD needs PANEL_ONEBAR (a block alone per matrix)"
#endif
#if PANEL_FOLD && PANEL_THREADS % 64 != 0
#error "PANEL_FOLD maps its W pass onto groups of 64 threads"
#endif
#ifndef PANEL_ONEBAR
#error "PANEL_ONEBAR (1: one block per matrix, one block barrier per reflector) must be defined by the plan"
#endif
#if PANEL_ONEBAR && PANEL_CLUSTER > 0
#error "PANEL_ONEBAR is the row update of a block alone: no clusters"
#endif
// One barrier per reflector (PANEL_ONEBAR, launched with groups = 1 only):
// the update pass of reflector r - 1 leaves reflector r's per-warp partial
// sums in one of two float buffers; after the single barrier every thread
// adds them in warp order (the same bits in every thread), reads the pivot
// row and forms reflector r and its column's coefficient itself. No lane
// forms it for the others, so no second barrier publishes it. The pivot row
// is stored one reflector later (other warps may still read it before),
// which is safe as no pass reads a row above its next pivot. Every row is
// read along its 32 columns (lanes), never down a column, so PANEL_LD = 32
// (no padding) keeps accesses conflict-free, and with the float partials
// three blocks of a 512-row panel fit an SM's shared memory.
// Cluster meetings push: every block stores its sums into every block's
// shared memory with st.async, whose bytes complete on that block's
// mbarrier, and each block waits on its own. (Pulling them, a cluster
// barrier and remote loads of every block's, was slower: docs/PERF.md.)
#define PANEL_XN ((PANEL_CLUSTER > 0 ? PANEL_CLUSTER : 1) * PANEL_NB)
#define PANEL_NB 32
#define PANEL_WARPS (PANEL_THREADS / 32)
// Blocks per SM the register budget must allow: five 256-thread blocks (the
// most whose panels fit the H200's shared memory once the panel has 256 rows or
// fewer) need at most 48 registers a thread.
// A folding panel (PANEL_FOLD) is alone on its SM by the plan: its fold
// keeps a column of W2 in registers.
#define PANEL_MIN_BLOCKS                                                       \
    (PANEL_CLUSTER == 0 && PANEL_THREADS <= 256 && !PANEL_FOLD                 \
         ? 1280 / PANEL_THREADS                                                \
         : 1)
#define PANEL_TINY QR_TINY
// Panel entries each thread loads before storing any (the prologue).
#define PANEL_LOADS 8

#if PANEL_ONEBAR
// Sum of the warps' partials in double, pairwise in a fixed order (the
// same bits in every thread; prelude.cu).
__device__ __forceinline__ double warps_sum(const float (&x)[PANEL_WARPS]) {
    return pairwise_sum_f64<PANEL_WARPS>(x);
}
#endif

#if PANEL_CLUSTER > 0
#define PANEL_CLUSTER_ATTR __cluster_dims__(PANEL_CLUSTER, 1, 1)
#else
#define PANEL_CLUSTER_ATTR
#endif

// Barrier among the `groups` blocks of one matrix through a counter that only
// grows during a factorization; `target` is the arrivals expected after it.
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

// The reflector a meeting forms from its totals (a tiny sum is redone in
// double and met again, which lands here too).
#define meet_reflector scaled_matrix_reflector

// Where the blocks of one matrix meet.
struct Meet {
    double* partials;  // global: [matrix][2 slots][groups][32]
    float* rowbuf;     // global: [matrix][2 slots][32]
    u32* counters;     // global: [matrix][arrivals, base]
    int groups, g, m;
    u32 base;          // arrivals before this launch
    int k;             // meetings so far in this launch
    unsigned long long* mbar;  // push meetings: this block's two mbarriers (one per slot)
};

#if PANEL_CLUSTER > 0
// The end of a cluster meeting, in warp 0: adds the blocks' values `x` in
// block order (or takes their max), publishes the total and the owner's row
// value `rv` of lane `lane`, and lane `r` forms reflector r.
template <bool use_max>
__device__ __forceinline__ void meet_total(const double (&x)[PANEL_CLUSTER], float rv, int lane,
                                           int r, double* tot, float* rowv, Reflector* rf) {
    double s = 0.0;
#pragma unroll
    for (int q = 0; q < PANEL_CLUSTER; ++q) s = use_max ? fmax(s, x[q]) : s + x[q];
    tot[lane] = s;
    rowv[lane] = rv;
    if (lane == r) *rf = meet_reflector(rv, s);
}
#endif

// Adds lane `lane`'s value `t` over the matrix's blocks (or takes the max when
// `use_max`), and fetches lane `lane` of `owner`'s row `rv`. Called by every
// thread of the block; `t`, `rv` are read from warp 0 only; the results land
// in `tot[lane]` and `rowv[lane]` for the whole block. Lane `r` of warp 0 also
// forms reflector r into `*rf` before the closing barrier publishes it (its
// double square root and divisions cost one thread instead of the block's;
// r < 0: no reflector).
template <bool use_max>
__device__ __forceinline__ void meet(Meet& mt, double t, float rv, int owner, double* tot,
                                     float* rowv, double (*xpart)[PANEL_XN],
                                     float (*xrow)[PANEL_NB], int r, Reflector* rf) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int slot = mt.k & 1;
    mt.k += 1;
    if (mt.groups == 1) {
        if (warp == 0) {
            tot[lane] = t;
            rowv[lane] = rv;
            if (lane == r) *rf = meet_reflector(rv, t);
        }
        __syncthreads();
        return;
    }
#if PANEL_CLUSTER > 0
    if (warp == 0) {
        // Slot `slot` is written again two meetings later, by a block that
        // has by then received this block's sums of the meeting in between,
        // which this lane sends only after its reads below: no overrun.
        const u32 me = (u32)mt.g;
        // This phase: every block's 32 sums and the owner's row. Bytes may
        // land before the expectation (the count goes below zero meanwhile).
        if (lane == 0)
            mbar_arrive_expect_tx(&mt.mbar[slot], (u32)(PANEL_CLUSTER * PANEL_NB * sizeof(double) +
                                                        PANEL_NB * sizeof(float)));
#pragma unroll
        for (int q = 0; q < PANEL_CLUSTER; ++q)
            cluster_st_async_f64(&xpart[slot][me * PANEL_NB + lane], (u32)q, t, &mt.mbar[slot]);
        if (mt.g == owner)
#pragma unroll
            for (int q = 0; q < PANEL_CLUSTER; ++q)
                cluster_st_async_f32(&xrow[slot][lane], (u32)q, rv, &mt.mbar[slot]);
        // Each slot's mbarrier completes one phase every second meeting.
        mbar_wait(&mt.mbar[slot], (u32)((mt.k - 1) >> 1) & 1u);
        double x[PANEL_CLUSTER];
#pragma unroll
        for (int q = 0; q < PANEL_CLUSTER; ++q) x[q] = xpart[slot][q * PANEL_NB + lane];
        meet_total<use_max>(x, xrow[slot][lane], lane, r, tot, rowv, rf);
    }
#else
    const long long sl = (long long)mt.m * 2 + slot;
    if (warp == 0) {
        mt.partials[(sl * mt.groups + mt.g) * PANEL_NB + lane] = t;
        if (mt.g == owner) mt.rowbuf[sl * PANEL_NB + lane] = rv;
    }
    group_barrier(mt.counters + 2 * mt.m, mt.base + (u32)mt.groups * (u32)mt.k);
    if (warp == 0) {
        const volatile double* pp = mt.partials + sl * mt.groups * PANEL_NB + lane;
        double s = 0.0;
        // Eight loads in flight at a time, added in block order.
        for (int q0 = 0; q0 < mt.groups; q0 += 8) {
            double x[8];
#pragma unroll
            for (int q = 0; q < 8; ++q) x[q] = q0 + q < mt.groups ? pp[(q0 + q) * PANEL_NB] : 0.0;
#pragma unroll
            for (int q = 0; q < 8; ++q)
                if (q0 + q < mt.groups) s = use_max ? fmax(s, x[q]) : s + x[q];
        }
        const float rv_owner = ((const volatile float*)mt.rowbuf)[sl * PANEL_NB + lane];
        tot[lane] = s;
        rowv[lane] = rv_owner;
        if (lane == r) *rf = meet_reflector(rv_owner, s);
    }
#endif
    __syncthreads();
}

// Sums of reflector r over rows first..rows of this block into red[warp]:
// lane c gets sum x * A[., c] with x = column r. Four independent chains keep
// several shared-memory loads in flight. `R` is the partials' type (double,
// or float for the one-barrier loop, whose two buffers take the room of one).
template <typename R>
__device__ __forceinline__ void dot_rows(const float* s, int r, int first, int rows, int warp,
                                         int lane, R (*red)[PANEL_NB]) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int lr = first + warp;
    for (; lr + 3 * PANEL_WARPS < rows; lr += 4 * PANEL_WARPS) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const float* row = s + (lr + u * PANEL_WARPS) * PANEL_LD;
            acc[u] = fmaf(row[r], row[lane], acc[u]);
        }
    }
#pragma unroll
    for (int u = 0; u < 3; ++u, lr += PANEL_WARPS)
        if (lr < rows) acc[u] = fmaf(s[lr * PANEL_LD + r], s[lr * PANEL_LD + lane], acc[u]);
    red[warp][lane] = (R)(((double)acc[0] + (double)acc[1]) + ((double)acc[2] + (double)acc[3]));
}

// Applies reflector r to rows first..rows of this block and, in the same pass,
// forms reflector `next`'s sums into red[warp] (next < 0: none). Lane r turns
// x into v (x * scale); lanes r < c < w take A[., c] -= v * wc[c]; the other
// lanes keep their column. The updated row is in registers, so the next
// reflector's column comes from lane `next` by a shuffle: one pass over the
// rows and no barrier between the update and the next sums. Rows up to the
// next pivot (global row next) are updated but not summed.
template <bool fast, typename R>
__device__ __forceinline__ void update_rows(float* s, int r, int next, int first, int rows, int r0,
                                            int warp, int lane, float fs, double scale, float wc,
                                            int w, R (*red)[PANEL_NB]) {
    const bool store = lane >= r && lane < w;
    const int src = next < 0 ? 0 : next;
    const int sum_from = next < 0 ? rows : next + 1 - r0;  // first local row summed
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int lr = first + warp;
    for (; lr + 3 * PANEL_WARPS < rows; lr += 4 * PANEL_WARPS) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int l = lr + u * PANEL_WARPS;
            float* row = s + l * PANEL_LD;
            const float x = row[r];
            const float v = fast ? x * fs : (float)((double)x * scale);
            const float a0 = row[lane];
            const float a = lane == r ? v : fmaf(-v, wc, a0);
            if (store) row[lane] = a;
            const float y = __shfl_sync(0xffffffffu, a, src);
            acc[u] = fmaf(l >= sum_from ? y : 0.0f, a, acc[u]);
        }
    }
#pragma unroll
    for (int u = 0; u < 3; ++u, lr += PANEL_WARPS) {
        // Warp-uniform condition: the shuffle needs every lane.
        if (lr < rows) {
            float* row = s + lr * PANEL_LD;
            const float x = row[r];
            const float v = fast ? x * fs : (float)((double)x * scale);
            const float a0 = row[lane];
            const float a = lane == r ? v : fmaf(-v, wc, a0);
            if (store) row[lane] = a;
            const float y = __shfl_sync(0xffffffffu, a, src);
            acc[u] = fmaf(lr >= sum_from ? y : 0.0f, a, acc[u]);
        }
    }
    if (next >= 0)
        red[warp][lane] =
            (R)(((double)acc[0] + (double)acc[1]) + ((double)acc[2] + (double)acc[3]));
}

// update_rows for a float32 reflector of the one-barrier loop, with each
// row's arithmetic folded into one FMA: lane c takes A[., c] + x k with
// k = -scale wc[c] (0 for the columns the reflector leaves alone), and lane
// r (isr) takes x k + 0 with k = scale, i.e. v. Row `first` (the next pivot,
// warp 0's first row) is updated but not summed, so it is peeled off the
// loop and no row carries a test for it.
// One row of update_rows_f32: the updated entry of this lane, stored.
__device__ __forceinline__ float fold_row(float* row, int r, int lane, float k, bool isr,
                                          bool store) {
    const float x = row[r];
    const float a0 = row[lane];
    const float a = fmaf(x, k, isr ? 0.0f : a0);
    if (store) row[lane] = a;
    return a;
}

__device__ __forceinline__ void update_rows_f32(float* s, int r, int next, int first, int rows,
                                                int warp, int lane, float k, bool isr, int w,
                                                float (*red)[PANEL_NB]) {
    const bool store = lane >= r && lane < w;
    const int src = next < 0 ? 0 : next;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int lr = first + warp;
    if (warp == 0 && lr < rows) {  // warp-uniform
        fold_row(s + lr * PANEL_LD, r, lane, k, isr, store);
        lr += PANEL_WARPS;
    }
#if PANEL_PIPE
    // Groups of four rows, software-pipelined (PANEL_PIPE): the next
    // group's entries are loaded before this group's arithmetic, so the
    // shared-memory latency hides behind it (ncu, a 176-row panel: the FMAs
    // waiting on these loads were the loop's top stall with two warps per
    // scheduler; with more warps per scheduler the extra instructions cost
    // more than they hide, docs/history/qr-gpu-sessions.md). Rows past the
    // panel load zeros and are neither stored nor summed (x = a0 = 0 gives
    // a = 0), so the last group needs no branch of its own; the row-to-chain
    // assignment (row lr + u W into acc[u]) is the plain loop's.
    // Column r's and this lane's entries of the group's rows: fixed offsets
    // from two pointers that step a group at a time.
    constexpr int G = 4 * PANEL_WARPS * PANEL_LD;
    const float* px = s + lr * PANEL_LD + r;
    float* pa = s + lr * PANEL_LD + lane;
    float x[4], a0[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const bool in = lr + u * PANEL_WARPS < rows;  // warp-uniform
        x[u] = in ? px[u * PANEL_WARPS * PANEL_LD] : 0.0f;
        a0[u] = in ? pa[u * PANEL_WARPS * PANEL_LD] : 0.0f;
    }
    for (; lr < rows; lr += 4 * PANEL_WARPS, px += G, pa += G) {
        float xn[4], an[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const bool in = lr + (4 + u) * PANEL_WARPS < rows;
            xn[u] = in ? px[G + u * PANEL_WARPS * PANEL_LD] : 0.0f;
            an[u] = in ? pa[G + u * PANEL_WARPS * PANEL_LD] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const float a = fmaf(x[u], k, isr ? 0.0f : a0[u]);
            if (store && lr + u * PANEL_WARPS < rows) pa[u * PANEL_WARPS * PANEL_LD] = a;
            acc[u] = fmaf(__shfl_sync(0xffffffffu, a, src), a, acc[u]);
            x[u] = xn[u];
            a0[u] = an[u];
        }
    }
#else
    for (; lr + 3 * PANEL_WARPS < rows; lr += 4 * PANEL_WARPS) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const float a = fold_row(s + (lr + u * PANEL_WARPS) * PANEL_LD, r, lane, k, isr, store);
            acc[u] = fmaf(__shfl_sync(0xffffffffu, a, src), a, acc[u]);
        }
    }
#pragma unroll
    for (int u = 0; u < 3; ++u, lr += PANEL_WARPS) {
        // Warp-uniform condition: the shuffle needs every lane.
        if (lr < rows) {
            const float a = fold_row(s + lr * PANEL_LD, r, lane, k, isr, store);
            acc[u] = fmaf(__shfl_sync(0xffffffffu, a, src), a, acc[u]);
        }
    }
#endif
    if (next >= 0)
        red[warp][lane] = (float)(((double)acc[0] + (double)acc[1]) + ((double)acc[2] + (double)acc[3]));
}

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
