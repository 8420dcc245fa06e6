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
