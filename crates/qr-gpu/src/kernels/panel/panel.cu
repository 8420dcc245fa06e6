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
#ifndef PANEL_PUSH
#error "PANEL_PUSH (1: clusters meet by remote stores and mbarriers) must be defined by the plan"
#endif
#ifndef PANEL_PAIRS
#error "PANEL_PAIRS (1: a block alone updates two rows per warp once 16 columns are done) must be defined by the plan"
#endif
#ifndef PANEL_QUAD
#error "PANEL_QUAD (1: without clusters, each lane updates four adjacent columns of a row) must be defined by the plan"
#endif
#if PANEL_QUAD && (PANEL_LD % 4 != 0 || PANEL_CLUSTER > 0 || PANEL_PAIRS)
#error "PANEL_QUAD needs 16-byte aligned rows (PANEL_LD % 4 == 0), no clusters and no PANEL_PAIRS"
#endif
#if PANEL_PAIRS && PANEL_THREADS != 256
#error "PANEL_PAIRS maps rows onto eight warps (PANEL_THREADS 256)"
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
#ifndef PANEL_TWOSTEP
#error "PANEL_TWOSTEP (1: the one-barrier loop takes two reflectors per barrier where it may) must be defined by the plan"
#endif
#ifndef PANEL_F32RF
#error "PANEL_F32RF (1: scaled reflectors in float32) must be defined by the plan"
#endif
#if PANEL_F32RF && PANEL_TWOSTEP
#error "PANEL_F32RF does not apply to the two-step loop, whose expansions need double"
#endif
#if PANEL_TWOSTEP && !PANEL_ONEBAR
#error "PANEL_TWOSTEP needs PANEL_ONEBAR"
#endif
#if PANEL_ONEBAR && (PANEL_CLUSTER > 0 || PANEL_PAIRS || PANEL_QUAD)
#error "PANEL_ONEBAR is the plain row update of a block alone: no clusters, PANEL_PAIRS or PANEL_QUAD"
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
// Cluster meetings: PANEL_PUSH = 0 pulls (every block publishes its sums in
// its own shared memory, a cluster barrier, then remote loads of every
// block's); 1 pushes (every block stores its sums into every block's shared
// memory with st.async, whose bytes complete on that block's mbarrier; each
// block waits on its own), which replaces the all-to-all barrier, its
// GPU-scope membar and the loads' round trip by one-way stores. Both add the
// same values in the same order.
#define PANEL_XN ((PANEL_CLUSTER > 0 && PANEL_PUSH ? PANEL_CLUSTER : 1) * PANEL_NB)
#define PANEL_NB 32
#define PANEL_WARPS (PANEL_THREADS / 32)
// Blocks per SM the register budget must allow: five 256-thread blocks (the
// most whose panels fit the H200's shared memory once the panel has 256 rows or
// fewer) need at most 48 registers a thread.
// The two-step loop keeps twice the sums and both reflectors live: at 48
// registers it spills (NVRTC 13.5), at 64 (four blocks) it does not.
// A folding panel (PANEL_FOLD) is alone on its SM by the plan: its fold
// keeps a column of W2 in registers.
#define PANEL_MIN_BLOCKS                                                       \
    (PANEL_CLUSTER == 0 && PANEL_THREADS <= 256 && !PANEL_FOLD                 \
         ? (PANEL_TWOSTEP ? 1024 : 1280) / PANEL_THREADS                       \
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

#if PANEL_TWOSTEP
// Two reflectors per barrier (PANEL_TWOSTEP). Before column j the loop holds,
// for every lane's column c, the sums over the rows below j + 1 (both pivot
// rows excluded) P[c] = sum A[., j] A[., c] and Q[c] = sum A[., j+1] A[., c].
// Reflector j takes the pivot rows' terms from the rows themselves. When
// the second column's norm below its pivot after H_j, expanded from the
// sums, loses at most half of its terms' magnitude to cancellation (and is
// not tiny), reflectors j and j+1 are formed at once and one pass over the
// rows applies both; otherwise (the nearly collinear, the rank-deficient)
// reflector j is formed alone, from the same sums, as the one-barrier loop
// does. Either pass leaves the next column's P and Q.

// The sums of columns 0 and 1 over rows 2.. into (outp, outq)[warp].
__device__ __forceinline__ void pair_dots(const float* s, int rows, int warp, int lane,
                                          float (*outp)[PANEL_NB], float (*outq)[PANEL_NB]) {
    float ap[2] = {0.0f, 0.0f}, aq[2] = {0.0f, 0.0f};
    int lr = 2 + warp;
    for (; lr + PANEL_WARPS < rows; lr += 2 * PANEL_WARPS) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
            const float* row = s + (lr + u * PANEL_WARPS) * PANEL_LD;
            const float a = row[lane];
            ap[u] = fmaf(row[0], a, ap[u]);
            aq[u] = fmaf(row[1], a, aq[u]);
        }
    }
    if (lr < rows) {
        const float* row = s + lr * PANEL_LD;
        const float a = row[lane];
        ap[0] = fmaf(row[0], a, ap[0]);
        aq[0] = fmaf(row[1], a, aq[0]);
    }
    outp[warp][lane] = (float)((double)ap[0] + (double)ap[1]);
    outq[warp][lane] = (float)((double)aq[0] + (double)aq[1]);
}

// Reflector j alone on rows j+1..rows (as update_rows), leaving the sums of
// columns j+1 and j+2 over the rows below j + 2.
template <bool fast>
__device__ __forceinline__ void pass_one(float* s, int j, int rows, int warp, int lane, float fs,
                                         double scale, float wc, int w, float (*outp)[PANEL_NB],
                                         float (*outq)[PANEL_NB]) {
    const bool store = lane >= j && lane < w;
    const int sp = min(j + 1, PANEL_NB - 1), sq = min(j + 2, PANEL_NB - 1);
    float ap[4] = {0.0f, 0.0f, 0.0f, 0.0f}, aq[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int l0 = j + 1 + warp; l0 < rows; l0 += 4 * PANEL_WARPS) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int l = l0 + u * PANEL_WARPS;
            // Warp-uniform: the shuffles need every lane.
            if (l < rows) {
                float* row = s + l * PANEL_LD;
                const float x = row[j];
                const float v = fast ? x * fs : (float)((double)x * scale);
                const float a = lane == j ? v : fmaf(-v, wc, row[lane]);
                if (store) row[lane] = a;
                const float yp = __shfl_sync(0xffffffffu, a, sp);
                const float yq = __shfl_sync(0xffffffffu, a, sq);
                const bool in = l > j + 2;
                ap[u] = fmaf(in ? yp : 0.0f, a, ap[u]);
                aq[u] = fmaf(in ? yq : 0.0f, a, aq[u]);
            }
        }
    }
    outp[warp][lane] = (float)(((double)ap[0] + (double)ap[1]) + ((double)ap[2] + (double)ap[3]));
    outq[warp][lane] = (float)(((double)aq[0] + (double)aq[1]) + ((double)aq[2] + (double)aq[3]));
}

// Reflectors j and j+1 on rows j+2..rows: v0 = x fs0, the second column
// y1 = y - v0 w0n, v1 = y1 fs1, and lane c takes A[., c] - v0 w0c - v1 w1c
// (w0c, w1c are 0 where a reflector leaves the column alone). Leaves the
// sums of columns j+2 and j+3 over the rows below j + 3.
__device__ __forceinline__ void pass_two(float* s, int j, int rows, int warp, int lane, float fs0,
                                         float fs1, float w0c, float w0n, float w1c, int w,
                                         float (*outp)[PANEL_NB], float (*outq)[PANEL_NB]) {
    const bool store = lane >= j && lane < w;
    const int sp = min(j + 2, PANEL_NB - 1), sq = min(j + 3, PANEL_NB - 1);
    float ap[4] = {0.0f, 0.0f, 0.0f, 0.0f}, aq[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int l0 = j + 2 + warp; l0 < rows; l0 += 4 * PANEL_WARPS) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int l = l0 + u * PANEL_WARPS;
            if (l < rows) {
                float* row = s + l * PANEL_LD;
                const float x = row[j], y = row[j + 1], a = row[lane];
                const float v0 = x * fs0;
                const float v1 = fmaf(-v0, w0n, y) * fs1;
                const float a2 = fmaf(-v1, w1c, fmaf(-v0, w0c, a));
                const float o = lane == j ? v0 : (lane == j + 1 ? v1 : a2);
                if (store) row[lane] = o;
                const float yp = __shfl_sync(0xffffffffu, o, sp);
                const float yq = __shfl_sync(0xffffffffu, o, sq);
                const bool in = l > j + 3;
                ap[u] = fmaf(in ? yp : 0.0f, o, ap[u]);
                aq[u] = fmaf(in ? yq : 0.0f, o, aq[u]);
            }
        }
    }
    outp[warp][lane] = (float)(((double)ap[0] + (double)ap[1]) + ((double)ap[2] + (double)ap[3]));
    outq[warp][lane] = (float)(((double)aq[0] + (double)aq[1]) + ((double)aq[2] + (double)aq[3]));
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
#define meet_reflector scaled_matrix_reflector<PANEL_F32RF>

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
#if PANEL_CLUSTER > 0 && PANEL_PUSH
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
#elif PANEL_CLUSTER > 0
    if (warp == 0) {
        xpart[slot][lane] = t;
        xrow[slot][lane] = rv;
    }
    cluster_barrier();
    if (warp == 0) {
        // All remote loads first: issued back to back, their latencies overlap.
        double x[PANEL_CLUSTER];
#pragma unroll
        for (int q = 0; q < PANEL_CLUSTER; ++q) x[q] = cluster_ld_f64(&xpart[slot][lane], (u32)q);
        meet_total<use_max>(x, cluster_ld_f32(&xrow[slot][lane], (u32)owner), lane, r, tot, rowv,
                            rf);
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

#if PANEL_F32RF
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
#endif

#if PANEL_QUAD
#ifndef PANEL_QUAD_U
#define PANEL_QUAD_U 1  // groups of four rows per loop step
#endif
// Four consecutive floats of a panel row (rows are 16-byte aligned).
struct alignas(16) panel_f4 {
    float x[4];
};

// Element `e` (warp-uniform) of a quad, by selects: a dynamic index would
// put the quad in local memory.
__device__ __forceinline__ float pick4(const panel_f4& a, int e) {
    const float lo = (e & 1) ? a.x[1] : a.x[0];
    const float hi = (e & 1) ? a.x[3] : a.x[2];
    return (e & 2) ? hi : lo;
}

// update_rows with each lane on four adjacent columns of one row: lanes
// 8j..8j+7 take row j of four consecutive rows, lane 8j + q columns
// 4q..4q+3, each with one 16-byte load and one 16-byte store (a row is one
// 128-byte wavefront: no bank conflicts with PANEL_LD = 32). A warp
// instruction so covers four rows, and the column-r value x and the next
// reflector's column come from the row's owning lane by shuffles of the
// loaded / updated quads (shuffles also order them before this row's store).
// `wc` is lane `lane`'s own column's coefficient, as for update_rows; the
// sums are added over the four rows of each lane quartet by shuffles in a
// fixed order.
template <bool fast>
__device__ __forceinline__ void update_quad(float* s, int r, int next, int first, int rows, int r0,
                                            int warp, int lane, float fs, double scale, float wc,
                                            double (*red)[PANEL_NB]) {
    const int j = lane >> 3, c0 = 4 * (lane & 7);
    const int sum_from = next < 0 ? rows : next + 1 - r0;  // first local row summed
    const int nx = next < 0 ? 0 : next;
    const int xsrc = (lane & 24) | (r >> 2), ysrc = (lane & 24) | (nx >> 2);
    // Columns left of r and past w have wc = 0: the update leaves them as
    // they are (v is finite: |v| <= 1).
    float wq[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) wq[e] = __shfl_sync(0xffffffffu, wc, c0 + e);
    float acc[PANEL_QUAD_U][4];
#pragma unroll
    for (int u = 0; u < PANEL_QUAD_U; ++u)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[u][e] = 0.0f;
    // Warp `warp` owns rows first + 4 warp + 4 PANEL_WARPS i + {0..3}, taken
    // PANEL_QUAD_U groups of four at a time; the loop test is warp-uniform.
    for (int l0 = first + 4 * warp; l0 < rows; l0 += 4 * PANEL_QUAD_U * PANEL_WARPS) {
#pragma unroll
        for (int u = 0; u < PANEL_QUAD_U; ++u) {
            const int l = l0 + 4 * PANEL_WARPS * u + j;
            const bool in = l < rows;
            panel_f4* row = reinterpret_cast<panel_f4*>(s + l * PANEL_LD + c0);
            panel_f4 a = {{0.0f, 0.0f, 0.0f, 0.0f}};
            if (in) a = *row;
            const float x = __shfl_sync(0xffffffffu, pick4(a, r & 3), xsrc);
            const float v = fast ? x * fs : (float)((double)x * scale);
#pragma unroll
            for (int e = 0; e < 4; ++e) a.x[e] = c0 + e == r ? v : fmaf(-v, wq[e], a.x[e]);
            if (in) *row = a;
            const float y = __shfl_sync(0xffffffffu, pick4(a, nx & 3), ysrc);
            const float ys = in && l >= sum_from ? y : 0.0f;
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[u][e] = fmaf(ys, a.x[e], acc[u][e]);
        }
    }
    if (next >= 0) {
        double d[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            d[e] = (double)acc[0][e];
#pragma unroll
            for (int u = 1; u < PANEL_QUAD_U; ++u) d[e] += (double)acc[u][e];
            d[e] += __shfl_xor_sync(0xffffffffu, d[e], 8);
            d[e] += __shfl_xor_sync(0xffffffffu, d[e], 16);
        }
        if (j == 0)
#pragma unroll
            for (int e = 0; e < 4; ++e) red[warp][c0 + e] = d[e];
    }
}
#endif

#if PANEL_PAIRS
// update_rows for reflectors r >= 16 of a block alone (groups == 1): only
// columns 16..31 still change, so each warp instruction takes two rows,
// lanes 0..15 one and lanes 16..31 another 16 rows further down (16 rows
// apart, their columns fall in different banks), which halves the passes'
// instructions for the second half of the panel. Sums land in
// red[warp][16..31] (red[warp][0..15] = 0): the Gram entries of columns
// below 16 come from pair_gram after the loop instead. `wc` is lane
// `lane`'s own column's coefficient (as for update_rows).
template <bool fast>
__device__ __forceinline__ void update_pairs(float* s, int r, int next, int first, int rows,
                                             int warp, int lane, float fs, double scale,
                                             float wc, int w, double (*red)[PANEL_NB]) {
    const int half = lane >> 4, col = 16 + (lane & 15);
    const float wcc = __shfl_sync(0xffffffffu, wc, col);
    const bool store = col >= r && col < w;
    const int src = next < 0 ? 0 : (lane & 16) | (next - 16);
    const int sum_from = next < 0 ? rows : next + 1;  // r0 = 0 alone
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    // Warp `warp` owns rows first + warp + 8i; step j takes i and i + 2 (this
    // lane's half), so four steps cover 32 rows of the block per warp group.
    const int base = first + warp + 16 * half;
    for (int j0 = 0;; j0 += 4) {
        const int l00 = first + warp + 32 * (j0 >> 1);
        if (l00 >= rows) break;  // warp-uniform: the lower half's first row
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int j = j0 + u;
            const int l = base + 32 * (j >> 1) + 8 * (j & 1);
            const bool in = l < rows;
            float* row = s + l * PANEL_LD;
            const float x = in ? row[r] : 0.0f;
            const float v = fast ? x * fs : (float)((double)x * scale);
            const float a0 = in ? row[col] : 0.0f;
            const float a = col == r ? v : fmaf(-v, wcc, a0);
            if (in && store) row[col] = a;
            const float y = __shfl_sync(0xffffffffu, a, src);
            acc[u] = fmaf(in && l >= sum_from ? y : 0.0f, a, acc[u]);
        }
    }
    if (next >= 0) {
        double d = ((double)acc[0] + (double)acc[1]) + ((double)acc[2] + (double)acc[3]);
        d += __shfl_xor_sync(0xffffffffu, d, 16);
        red[warp][half == 0 ? 16 + lane : lane - 16] = half == 0 ? d : 0.0;
    }
}

// Gram entries G[c][q] = v_c^T v_q for c < 16 <= q < w of a block alone,
// from the factored panel in shared memory (v_q is 1 at row q, zero above):
// s[q][c] + sum over rows > q of s[row][c] s[row][q]. Lane: q = 16 + lane % 16,
// c in 8 (lane / 16) .. + 8. Per-lane float sums, added over warps in double
// in warp order.
__device__ void pair_gram(const float* s, int rows, int w, int warp, int lane,
                          double (*red)[PANEL_NB], double (*gram)[PANEL_NB + 1]) {
    const int q = 16 + (lane & 15), c0 = 8 * (lane >> 4);
    float acc[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[k] = 0.0f;
    // Every lane of a warp on the same row (broadcast loads); rows above q
    // contribute nothing (v_q is zero there). No q is below 16.
    for (int l = 16 + warp; l < rows; l += PANEL_WARPS) {
        const float* row = s + l * PANEL_LD;
        const float vq = l < q ? 0.0f : (l == q ? 1.0f : row[q]);
#pragma unroll
        for (int k = 0; k < 8; ++k) acc[k] = fmaf(row[c0 + k], vq, acc[k]);
    }
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        __syncthreads();  // red is free (first round: the loop's last reader is done)
        red[warp][lane] = (double)acc[k];
        __syncthreads();
        if (warp == 0 && q < w) {
            double t = 0.0;
            for (int p = 0; p < PANEL_WARPS; ++p) t += red[p][lane];
            gram[c0 + k][q] = t;
        }
    }
    __syncthreads();  // gram complete before the T recurrence reads it
}
#endif


extern "C" __global__ void PANEL_CLUSTER_ATTR __launch_bounds__(PANEL_THREADS, PANEL_MIN_BLOCKS)
    panel_factor_f32(float* h, const float* src, const int* __restrict__ zcol,
                     float* __restrict__ vbuf, float* __restrict__ tbuf,
                     float* __restrict__ tau, double* partials, float* rowbuf, u32* counters,
                     int n, int p, int w, int groups, int mat0, const float* __restrict__ vprev,
                     const float* __restrict__ tprev, int fold) {
    // 16-byte aligned: PANEL_QUAD moves rows as 16-byte quads.
    extern __shared__ __attribute__((aligned(16))) float s[];
    // Two-step: two buffers of P and Q float partials in the room of two.
    __shared__ double red[PANEL_WARPS * (PANEL_TWOSTEP ? 2 : 1)][PANEL_NB];
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
#if PANEL_CLUSTER > 0 && PANEL_PUSH
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

#if PANEL_TWOSTEP
    float(*rq)[2][PANEL_WARPS][PANEL_NB] = reinterpret_cast<float(*)[2][PANEL_WARPS][PANEL_NB]>(red);
    pair_dots(s, rows, warp, lane, rq[0][0], rq[0][1]);
    // Up to two pivot rows of the previous step, stored after the next barrier.
    float pend0 = 0.0f, pend1 = 0.0f;
    int prow0 = 0, prow1 = 0;
    bool pon0 = false, pon1 = false;
    int par = 0;
    for (int j = 0; j < w; par ^= 1) {
        __syncthreads();  // rq[par]: column j's P and Q; s: the updated panel
        if (warp == 0) {
            if (pon0) s[prow0 * PANEL_LD + lane] = pend0;
            if (pon1) s[prow1 * PANEL_LD + lane] = pend1;
        }
        double pl, ql;  // P[lane], Q[lane]
        {
            float x[PANEL_WARPS];
#pragma unroll
            for (int q = 0; q < PANEL_WARPS; ++q) x[q] = rq[par][0][q][lane];
            pl = warps_sum(x);
#pragma unroll
            for (int q = 0; q < PANEL_WARPS; ++q) x[q] = rq[par][1][q][lane];
            ql = warps_sum(x);
        }
        const float arow = s[j * PANEL_LD + lane];
        const float brow = j + 1 < rows ? s[(j + 1) * PANEL_LD + lane] : 0.0f;
        const float alpha = __shfl_sync(0xffffffffu, arow, j);
        const float x1 = __shfl_sync(0xffffffffu, brow, j);  // A[j+1][j]
        // Column j's products with this lane's column over the rows below j.
        const double sl = (double)x1 * (double)brow + pl;
        const double sj = __shfl_sync(0xffffffffu, sl, j);  // ||x[1..]||^2
        // Every value below is the same in every thread: uniform branches.
        bool two = false;
        if (j + 1 < w && sj >= PANEL_TINY) {
            const Reflector r0 = scaled_reflector(alpha, sj);
            const double s0 = r0.scale;
            const double vta0 = (double)arow + s0 * sl;  // v_j^T A[., lane]
            const float w0c = lane > j && lane < w ? (float)((double)r0.tau * vta0) : 0.0f;
            const float w0n = __shfl_sync(0xffffffffu, w0c, j + 1);
            const double pjn = __shfl_sync(0xffffffffu, pl, j + 1);  // sum x y
            const double pjj = __shfl_sync(0xffffffffu, pl, j);      // sum x^2
            const double qnn = __shfl_sync(0xffffffffu, ql, j + 1);  // sum y^2
            // ||y - al x||^2 below row j + 1: column j+1 after H_j.
            const double al = s0 * (double)w0n;
            const double t1 = 2.0 * al * pjn, t2 = al * al * pjj;
            const double xn2b = (qnn - t1) + t2;
            if (xn2b >= PANEL_TINY && xn2b >= 0.5 * (qnn + fabs(t1) + t2)) {
                two = true;
                const float fs0 = (float)s0;
                // Row j + 1 after H_j (lane j: v_j's entry there).
                const float v01 = x1 * fs0;
                const float b1 = lane == j ? v01 : fmaf(-v01, w0c, brow);
                const float alpha1 = __shfl_sync(0xffffffffu, b1, j + 1);
                const Reflector r1 = scaled_reflector(alpha1, xn2b);
                const double s1 = r1.scale;
                // sum (y - al x)(a - bl x) below row j + 1, bl this lane's al.
                const double bl = s0 * (double)w0c;
                const double qp = ((ql - bl * pjn) - al * pl) + al * bl * pjj;
                const double vta1 = (double)b1 + s1 * qp;  // v_{j+1}^T A'[., lane]
                const float w1c = lane > j + 1 && lane < w ? (float)((double)r1.tau * vta1) : 0.0f;
                if (warp == 0) {
                    gram[lane][j] = lane < j ? vta0 : 0.0;
                    gram[lane][j + 1] = lane < j ? vta1
                                        : lane == j ? (double)v01 + s0 * s1 * (pjn - al * pjj)
                                                    : 0.0;
                    if (lane == 0) {
                        taus[j] = r0.tau;
                        taus[j + 1] = r1.tau;
                    }
                }
                pon0 = pon1 = lane >= j && lane < w;
                prow0 = j;
                prow1 = j + 1;
                pend0 = lane == j ? r0.beta : arow - w0c;
                pend1 = lane == j + 1 ? r1.beta : (lane == j ? v01 : b1 - w1c);
                pass_two(s, j, rows, warp, lane, fs0, (float)s1, w0c, w0n, w1c, w,
                         rq[par ^ 1][0], rq[par ^ 1][1]);
            }
        }
        if (two) {
            j += 2;
            continue;
        }
        double tl = sl, tr = sj;
        const bool tiny = tr < PANEL_TINY;
        if (tiny) {
            __syncthreads();  // every warp has read rq[par]; red is free as doubles
            double acc = 0.0;
            for (int lr = j + 1 + warp; lr < rows; lr += PANEL_WARPS)
                acc += (double)s[lr * PANEL_LD + j] * (double)s[lr * PANEL_LD + lane];
            red[warp][lane] = acc;
            __syncthreads();
            tl = 0.0;
#pragma unroll
            for (int q = 0; q < PANEL_WARPS; ++q) tl += red[q][lane];
            tr = __shfl_sync(0xffffffffu, tl, j);
            __syncthreads();  // read before the pass stores float partials over them
        }
        const Reflector rf = tiny ? make_reflector(alpha, tr) : scaled_reflector(alpha, tr);
        const double vta = (double)arow + rf.scale * tl;
        float wc = 0.0f;
        if (lane > j && lane < w && rf.tau != 0.0f) wc = (float)((double)rf.tau * vta);
        if (warp == 0) {
            gram[lane][j] = lane < j ? vta : 0.0;
            if (lane == 0) taus[j] = rf.tau;
        }
        pon0 = rf.tau != 0.0f && lane >= j && lane < w;
        pon1 = false;
        prow0 = j;
        pend0 = lane == j ? rf.beta : arow - wc;
        if (rf.tau == 0.0f)
            pass_one<true>(s, j, rows, warp, lane, 1.0f, 1.0, wc, w, rq[par ^ 1][0], rq[par ^ 1][1]);
        else if (fabs(rf.scale) < 1.0e30)
            pass_one<true>(s, j, rows, warp, lane, (float)rf.scale, rf.scale, wc, w,
                           rq[par ^ 1][0], rq[par ^ 1][1]);
        else
            pass_one<false>(s, j, rows, warp, lane, 0.0f, rf.scale, wc, w, rq[par ^ 1][0],
                            rq[par ^ 1][1]);
        j += 1;
    }
    __syncthreads();
    if (warp == 0) {
        if (pon0) s[prow0 * PANEL_LD + lane] = pend0;
        if (pon1) s[prow1 * PANEL_LD + lane] = pend1;
    }
    __syncthreads();
#elif PANEL_ONEBAR
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
#if PANEL_F32RF
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
#endif
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
#if PANEL_PAIRS
        // groups is uniform, so is this branch.
        if (groups == 1 && r >= 16) {
            if (rf.tau == 0.0f)
                update_pairs<true>(s, r, next, first, rows, warp, lane, 1.0f, 1.0, wc, w, red);
            else if (fabs(rf.scale) < 1.0e30)
                update_pairs<true>(s, r, next, first, rows, warp, lane, (float)rf.scale,
                                   rf.scale, wc, w, red);
            else
                update_pairs<false>(s, r, next, first, rows, warp, lane, 0.0f, rf.scale, wc, w,
                                    red);
            continue;
        }
#endif
#if PANEL_QUAD
        if (rf.tau == 0.0f)
            update_quad<true>(s, r, next, first, rows, r0, warp, lane, 1.0f, 1.0, wc, red);
        else if (fabs(rf.scale) < 1.0e30)
            update_quad<true>(s, r, next, first, rows, r0, warp, lane, (float)rf.scale, rf.scale,
                              wc, red);
        else
            update_quad<false>(s, r, next, first, rows, r0, warp, lane, 0.0f, rf.scale, wc, red);
#else
        if (rf.tau == 0.0f)
            update_rows<true>(s, r, next, first, rows, r0, warp, lane, 1.0f, 1.0, wc, w, red);
        else if (fabs(rf.scale) < 1.0e30)
            update_rows<true>(s, r, next, first, rows, r0, warp, lane, (float)rf.scale, rf.scale,
                              wc, w, red);
        else
            update_rows<false>(s, r, next, first, rows, r0, warp, lane, 0.0f, rf.scale, wc, w,
                               red);
#endif
    }
    __syncthreads();
#if PANEL_PAIRS
    if (groups == 1 && w > 16) pair_gram(s, rows, w, warp, lane, red, gram);
#endif
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
#if PANEL_F32RF
                // Float32 reflectors fold v = x scale into the row's FMA.
                if (fast) {
                    const float k = -(fs * wc);
#pragma unroll 4
                    for (int lr = first + warp; lr < rows; lr += PANEL_WARPS) {
                        const float x = s[lr * PANEL_LD + r];
                        s[lr * PANEL_LD + lane] = fmaf(x, k, s[lr * PANEL_LD + lane]);
                    }
                } else
#endif
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
