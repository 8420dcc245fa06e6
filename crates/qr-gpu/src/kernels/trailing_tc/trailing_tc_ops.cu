// Fused compact-WY trailing update on tensor cores, at float32 accuracy.
//
// For every matrix b of a batch: A2 -= V (T^T (V^T A2)), where A2 is the
// trailing block (nrow x ntrail, row-major, leading dimension lda), V the
// explicit unit-lower panel (nrow x 32, row-major, leading dimension 32) and
// T the 32 x 32 upper-triangular compact-WY factor (row-major; only c >= r
// and r, c < w are read). README.md beside this file is the launch contract.
//
// One block owns a BN-column tile of A2 for one matrix:
//   1. W = V^T A2 (32 x BN): the warps split the rows in 16-row slabs, each
//      keeps a full 32 x BN partial in registers, the partials meet in
//      shared memory in a fixed order (deterministic bits);
//   2. W2 = T^T W in plain float32 FMAs (32 x 32 x BN, a rounding error's
//      worth of work);
//   3. A2 -= V W2: each warp holds a 32 x 32 slice of W2 as mma operands and
//      streams 16-row tiles of V and A2 through it.
// The tile is read twice; the second read mostly hits L2 (a tile is
// nrow x BN x 4 bytes).
//
// Float32 operands are split x = hi + lo into two narrower values and every
// product is formed as hi*hi + hi*lo + lo*hi with float32 accumulation
// (lo*lo is below float32 rounding). TC_SPLIT picks the format:
//   0  tf32 (mma m16n8k8): float32's exponent range, 11 + 11 bits;
//   1  f16  (mma m16n8k16): twice the rate, but no range: values past 65504
//      overflow and lo parts of values under ~2^-3 lose bits (not for QR
//      inputs, kept to measure the difference);
//   2  bf16 (mma m16n8k16): range kept, only 8 + 8 bits (~1e-5 relative).
// docs/perf/trailing_tc.md has the measurements that chose TC_SPLIT = 0.
//
// Fragment layouts. Each lane of a warp is (g, tq) = (lane / 4, lane % 4).
// The mma's logical k, m and n indices are permuted onto physical rows and
// columns so that every lane loads 16-byte vectors and each warp-wide load
// covers whole 32-byte sectors; the sums over k do not care about the order.
//   W pass, one 8-row step (A = V^T: m = reflector, k = row; B = A2 tile):
//     k = tq + 4e            <-> row 4e + tq of the step          (e = 0, 1)
//     m = g + 8h in m-tile mt <-> reflector 4g + 2mt + h
//     n = g in n-tile nt      <-> column 32(nt/4) + 4g + nt%4
//   update, one 16-row tile (A = V: m = row, k = reflector; B = W2):
//     k = tq + 4h in step ks  <-> reflector 16(ks/2) + 4tq + 2(ks%2) + h
//     n = g in n-tile nt      <-> column 16(nt/2) + 4(g/2) + 2(nt%2) + g%2
//   The 16-bit formats' k16 step is two tf32 k8 steps: its k = 2tq + e + 8s
//   is the k8 index tq + 4e of step s, so one set of loads serves all three.
//
// Header-free: NVRTC on a stock driver has no CUDA headers, so conversions
// and mma are inline PTX on plain unsigned / float values.

#ifndef TC_SPLIT
#error "TC_SPLIT (0 tf32, 1 f16, 2 bf16) must be defined by the plan"
#endif
#ifndef TC_BN
#error "TC_BN (columns per block: 32 or 64) must be defined by the plan"
#endif
#ifndef TC_WARPS
#error "TC_WARPS (warps per block: 4 or 8) must be defined by the plan"
#endif
#ifndef TC_MIN_BLOCKS
#error "TC_MIN_BLOCKS (resident blocks per SM asked of the compiler) must be defined by the plan"
#endif
#ifndef TC_FLUSH
#error "TC_FLUSH (16-row slabs per tensor-core partial of W; 0: one partial) must be defined by the plan"
#endif
#ifndef TC_VEC4
#error "TC_VEC4 (1: A2 rows are 16-byte aligned, lda % 4 == 0) must be defined by the plan"
#endif
#ifndef TC_STAGE
#error "TC_STAGE (0, or the depth of the cp.async pipeline that keeps A2 in shared memory) must be defined by the plan"
#endif
#if TC_STAGE && (TC_BN != 32 || !TC_VEC4)
#error "TC_STAGE needs TC_BN 32 and TC_VEC4 1"
#endif
#ifndef TC_ROWSPLIT
#error "TC_ROWSPLIT (blocks of a cluster splitting a tile's rows; 1: one block per tile) must be defined by the plan"
#endif
#ifndef TC_L2HINT
#error "TC_L2HINT (0: no L2 eviction hints; 1: A2's last read and its stores evict first; 2: also its first read evicts last) must be defined by the plan"
#endif
#if TC_L2HINT && !TC_STAGE
#error "TC_L2HINT needs TC_STAGE (the hints ride on the ring's copies)"
#endif
#if TC_ROWSPLIT != 1 && TC_ROWSPLIT != 2 && TC_ROWSPLIT != 4 && TC_ROWSPLIT != 8
#error "TC_ROWSPLIT is 1, 2, 4 or 8"
#endif
#if TC_ROWSPLIT > 1
#define TC_CLUSTER_ATTR __cluster_dims__(TC_ROWSPLIT, 1, 1)
#else
#define TC_CLUSTER_ATTR
#endif

#define TC_NB 32                     // panel width: V columns, T order
#define TC_THREADS (TC_WARPS * 32)
#define TC_NQ (TC_BN / 32)           // 32-column chunks of a tile
#define TC_NTW (TC_BN / 8)           // n8-tiles of W per warp
#define TC_WN (TC_BN / 32)           // column groups of the update
#define TC_WR (TC_WARPS / TC_WN)     // row groups of the update
#define TC_LDW (TC_BN + 4)           // W / W2 rows in shared memory: 2-way reads at most
#define TC_KPACK (TC_SPLIT == 0 ? 1 : 2)  // k8 steps per mma
#define TC_TC (TC_NB / TC_WARPS)     // rows of W2 per thread in step 2

static_assert(TC_FLUSH >= 0, "TC_FLUSH is a slab count");
static_assert(TC_SPLIT >= 0 && TC_SPLIT <= 2, "TC_SPLIT is 0, 1 or 2");
static_assert(TC_BN == 32 || TC_BN == 64, "TC_BN is 32 or 64");
static_assert(TC_WARPS == 4 || TC_WARPS == 8, "TC_WARPS is 4 or 8");
static_assert(TC_LDW * TC_NB <= (TC_WARPS / 2) * TC_NB * TC_BN,
              "W2 reuses the partial-sum buffer");

struct alignas(16) tc_f4 {
    float x[4];
};

// ---- splits: x = hi + lo, each part in the mma's input format ----

#if TC_SPLIT == 0
// One tf32 register per value (prelude.cu's qr_split_tf32); a NaN stays a
// NaN in A2 itself (only its split operand may change), so its matrix is
// still flagged.
#else
// Two 16-bit values per register, `e0` in the low half (the lower k index).
__device__ __forceinline__ unsigned tc_pack(float e0, float e1) {
    unsigned r;
#if TC_SPLIT == 1
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(e1), "f"(e0));
#else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(e1), "f"(e0));
#endif
    return r;
}
__device__ __forceinline__ void tc_unpack(unsigned p, float& e0, float& e1) {
#if TC_SPLIT == 1
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\t"
        "cvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
        : "=f"(e0), "=f"(e1)
        : "r"(p));
#else
    e0 = qr_bits_f32(p << 16);
    e1 = qr_bits_f32(p & 0xffff0000u);
#endif
}
__device__ __forceinline__ void tc_split2(float e0, float e1, unsigned& hi, unsigned& lo) {
    hi = tc_pack(e0, e1);
    float h0, h1;
    tc_unpack(hi, h0, h1);
    lo = tc_pack(e0 - h0, e1 - h1);
}
#endif

// A operand of one mma from the tf32-layout values of its TC_KPACK k8 steps
// (x[s][i] is a_i of k8 step s: a0 (m, k), a1 (m+8, k), a2 (m, k+4), a3 (m+8, k+4)).
__device__ __forceinline__ void tc_split_a(const float (&x)[TC_KPACK][4], unsigned (&hi)[4],
                                           unsigned (&lo)[4]) {
#if TC_SPLIT == 0
#pragma unroll
    for (int i = 0; i < 4; ++i) qr_split_tf32(x[0][i], hi[i], lo[i]);
#else
    tc_split2(x[0][0], x[0][2], hi[0], lo[0]);
    tc_split2(x[0][1], x[0][3], hi[1], lo[1]);
    tc_split2(x[1][0], x[1][2], hi[2], lo[2]);
    tc_split2(x[1][1], x[1][3], hi[3], lo[3]);
#endif
}

// B operand likewise (x[s][i] is b_i of k8 step s: b0 (k, n), b1 (k+4, n)).
__device__ __forceinline__ void tc_split_b(const float (&x)[TC_KPACK][2], unsigned (&hi)[2],
                                           unsigned (&lo)[2]) {
#if TC_SPLIT == 0
    qr_split_tf32(x[0][0], hi[0], lo[0]);
    qr_split_tf32(x[0][1], hi[1], lo[1]);
#else
    tc_split2(x[0][0], x[0][1], hi[0], lo[0]);
    tc_split2(x[1][0], x[1][1], hi[1], lo[1]);
#endif
}

// d += a * b on one 16 x 8 tile.
__device__ __forceinline__ void tc_mma(float (&d)[4], const unsigned (&a)[4],
                                       const unsigned (&b)[2]) {
#if TC_SPLIT == 0
    qr_mma_tf32(d, a, b);
#elif defined(CUDASIM)
#error "the host emulator has the tf32 split only"
#elif TC_SPLIT == 1
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// The three products of a split, small terms first.
__device__ __forceinline__ void tc_mma3(float (&d)[4], const unsigned (&ahi)[4],
                                        const unsigned (&alo)[4], const unsigned (&bhi)[2],
                                        const unsigned (&blo)[2]) {
    tc_mma(d, alo, bhi);
    tc_mma(d, ahi, blo);
    tc_mma(d, ahi, bhi);
}

// ---- memory ----

__device__ __forceinline__ tc_f4 tc_zero4() {
    tc_f4 r;
#pragma unroll
    for (int i = 0; i < 4; ++i) r.x[i] = 0.0f;
    return r;
}

// Four consecutive A2 values of one row from column `col` (tile-relative
// columns are checked against `ncols` when `edge`); zeros past the edge.
// The loops take the unchecked variants (edge = false) for the 16-row steps
// that lie wholly inside a full tile, which is every step but the last few.
template <bool edge>
__device__ __forceinline__ tc_f4 tc_load_a4(const float* p, int col, int ncols) {
#if TC_VEC4
    return !edge || col < ncols ? *reinterpret_cast<const tc_f4*>(p) : tc_zero4();
#else
    tc_f4 r;
#pragma unroll
    for (int i = 0; i < 4; ++i) r.x[i] = !edge || col + i < ncols ? p[i] : 0.0f;
    return r;
#endif
}

// ---- L2 eviction priorities (TC_L2HINT) ----
//
// Why: a block reads its A2 tile twice, the W pass and then the update
// pass, and between the two every other resident block streams its own
// tile through L2 and writes it back; at 640 x 512 only half of the
// launch's L2 lookups hit (ncu; docs/history/qr-gpu-sessions.md, "a leaner
// tensor-core update", run 8), so
// the second read largely goes to DRAM again. Lines not read again before
// the whole batch's trailing matrices have streamed through L2 (the second
// read, and the stores, which the next step's bulk update reads) are
// marked to leave L2 first, so that first reads and V stay. Where the batch
// fits in L2 they would have stayed, so the plan sets TC_L2HINT only for
// batches of at least two L2s (`L2_HINTS_MIN_L2`, plan/choose.rs).
// A policy is an opaque 64-bit value made by createpolicy (sm_80+).
// Under the host emulator a policy is its level (1 first, 2 last).
__device__ __forceinline__ unsigned long long tc_policy_evict_first() {
#ifdef CUDASIM
    return 1;
#else
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
#endif
}
__device__ __forceinline__ unsigned long long tc_policy_evict_last() {
#ifdef CUDASIM
    return 2;
#else
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    return pol;
#endif
}

// `hint` (uniform over the block): the
// store's lines leave L2 first (TC_L2HINT); the kernel sets it for all
// tiles but the launch's first, whose columns the chain reads next.
template <bool edge>
__device__ __forceinline__ void tc_store_a4(float* p, int col, int ncols, const tc_f4& v,
                                            bool hint) {
#if TC_VEC4
    // One 16-byte store: the compiler splits a store of the struct into four
    // 4-byte ones (docs/history/qr-gpu-sessions.md, "16-byte stores in the
    // tensor update"). The values depend on this
    // thread's own load of the same elements, so no other ordering is needed.
    if (!edge || col < ncols) {
#ifdef CUDASIM
        (void)hint;
        for (int i = 0; i < 4; ++i) p[i] = v.x[i];
#else
#if TC_L2HINT
        if (hint) {
            asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p),
                         "f"(v.x[0]), "f"(v.x[1]), "f"(v.x[2]), "f"(v.x[3]),
                         "l"(tc_policy_evict_first()));
            return;
        }
#endif
        asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x[0]),
                     "f"(v.x[1]), "f"(v.x[2]), "f"(v.x[3]));
#endif
    }
#else
    (void)hint;
#pragma unroll
    for (int i = 0; i < 4; ++i)
        if (!edge || col + i < ncols) p[i] = v.x[i];
#endif
}

// Four consecutive V values of one row (rows are 128 bytes, always aligned).
// A plain load: the const __restrict__ V lets the compiler use the
// read-only path, and unlike an asm load it is never hoisted past the row
// guard.
__device__ __forceinline__ tc_f4 tc_load_v4(const float* __restrict__ p) {
    return *reinterpret_cast<const tc_f4*>(p);
}

// ---- the two streaming loops' bodies ----

// One 16-row slab of the W pass: rows r0 + 8s + 4e + tq, V columns 4g..,
// A2 columns 32q + 4g.. (zeros past nrow).
struct tc_slab {
    tc_f4 v[2][2];
    tc_f4 x[2][2][TC_NQ];
};

template <bool edge>
__device__ __forceinline__ void tc_load_slab(tc_slab& sl, const float* __restrict__ vm,
                                             const float* at, int lda, int r0, int nrow,
                                             int ncols, int g, int tq) {
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int row = r0 + 8 * s + 4 * e + tq;
            const bool in = !edge || row < nrow;
            sl.v[s][e] = in ? tc_load_v4(vm + row * TC_NB + 4 * g) : tc_zero4();
#pragma unroll
            for (int q = 0; q < TC_NQ; ++q) {
                const int col = 32 * q + 4 * g;
                sl.x[s][e][q] =
                    in ? tc_load_a4<edge>(at + (long long)row * lda + col, col, ncols)
                       : tc_zero4();
            }
        }
}

// acc += V_slab^T A2_slab on the tensor cores.
__device__ __forceinline__ void tc_w_slab(const tc_slab& sl, float (&acc)[2][TC_NTW][4]) {
#pragma unroll
    for (int s0 = 0; s0 < 2; s0 += TC_KPACK) {
        unsigned ahi[2][4], alo[2][4];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
            float x[TC_KPACK][4];
#pragma unroll
            for (int s = 0; s < TC_KPACK; ++s) {
                x[s][0] = sl.v[s0 + s][0].x[2 * mt];
                x[s][1] = sl.v[s0 + s][0].x[2 * mt + 1];
                x[s][2] = sl.v[s0 + s][1].x[2 * mt];
                x[s][3] = sl.v[s0 + s][1].x[2 * mt + 1];
            }
            tc_split_a(x, ahi[mt], alo[mt]);
        }
#pragma unroll
        for (int nt = 0; nt < TC_NTW; ++nt) {
            float x[TC_KPACK][2];
#pragma unroll
            for (int s = 0; s < TC_KPACK; ++s) {
                x[s][0] = sl.x[s0 + s][0][nt >> 2].x[nt & 3];
                x[s][1] = sl.x[s0 + s][1][nt >> 2].x[nt & 3];
            }
            unsigned bhi[2], blo[2];
            tc_split_b(x, bhi, blo);
#pragma unroll
            for (int mt = 0; mt < 2; ++mt) tc_mma3(acc[mt][nt], ahi[mt], alo[mt], bhi, blo);
        }
    }
}

// One 16-row tile of the update: rows i0 + g + 8h, V columns 16c + 4tq..
// (zero past the panel width w), A2 columns 32cg + 16c + 4tq...
struct tc_tile {
    tc_f4 v[2][2];
    tc_f4 x[2][2];
};

template <bool edge>
__device__ __forceinline__ void tc_load_tile(tc_tile& tl, const float* __restrict__ vm,
                                             const float* at, int lda, int i0, int nrow,
                                             int ncols, int w, int cg, int g, int tq) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = i0 + g + 8 * h;
        const bool in = !edge || row < nrow;
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            const int vc = 16 * c + 4 * tq, col = 32 * cg + 16 * c + 4 * tq;
            tl.v[h][c] = in ? tc_load_v4(vm + row * TC_NB + vc) : tc_zero4();
            tl.x[h][c] =
                in ? tc_load_a4<edge>(at + (long long)row * lda + col, col, ncols) : tc_zero4();
#pragma unroll
            for (int j = 0; j < 4; ++j)  // columns past the panel width may hold anything
                if (vc + j >= w) tl.v[h][c].x[j] = 0.0f;
        }
    }
}

// The matrix of this block's tile (the launch's numbering), from the block
// index: recomputed where it is needed rather than held in a register
// through the loops.
__device__ __forceinline__ int tc_matrix(int ntrail) {
    return (int)(blockIdx.x / TC_ROWSPLIT) / ((ntrail + TC_BN - 1) / TC_BN);
}

// A2_tile -= V_tile W2 (this warp's 32 columns), stored. `check` (uniform
// over the warp): the tile's rows are final (R's rows of this panel), so a
// non-finite value stored marks the matrix in `oflow` (the writers'
// overflow check; nothing is held across tiles, as the loops have no
// register to spare). `hint`: the stores leave L2 first (TC_L2HINT).
template <bool edge>
__device__ __forceinline__ void tc_update_tile(const tc_tile& tl,
                                               const unsigned (&bhi)[4 / TC_KPACK][4][2],
                                               const unsigned (&blo)[4 / TC_KPACK][4][2],
                                               float* at, int lda, int i0, int nrow, int ncols,
                                               int cg, int g, int tq, bool check,
                                               int* oflow, int ntrail, bool hint) {
    bool bad = false;
    float d[4][4];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) d[nt][i] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < 4 / TC_KPACK; ++kk) {
        float x[TC_KPACK][4];
#pragma unroll
        for (int s = 0; s < TC_KPACK; ++s) {
            const int ks = kk * TC_KPACK + s, c = ks >> 1, j = 2 * (ks & 1);
            x[s][0] = tl.v[0][c].x[j];
            x[s][1] = tl.v[1][c].x[j];
            x[s][2] = tl.v[0][c].x[j + 1];
            x[s][3] = tl.v[1][c].x[j + 1];
        }
        unsigned ahi[4], alo[4];
        tc_split_a(x, ahi, alo);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) tc_mma3(d[nt], ahi, alo, bhi[kk][nt], blo[kk][nt]);
    }
    // d[nt][ci] is (row g + 8(ci/2), column 16(nt/2) + 4tq + 2(nt%2) + ci%2).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = i0 + g + 8 * h;
        if (edge && row >= nrow) continue;
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            tc_f4 o = tl.x[h][c];
#pragma unroll
            for (int j = 0; j < 4; ++j) o.x[j] -= d[2 * c + (j >> 1)][2 * h + (j & 1)];
            const int col = 32 * cg + 16 * c + 4 * tq;
            if (check)
#pragma unroll
                for (int j = 0; j < 4; ++j) bad |= (!edge || col + j < ncols) && qr_nonfinite(o.x[j]);
            tc_store_a4<edge>(at + (long long)row * lda + col, col, ncols, o, hint);
        }
    }
    if (check) qr_mark_overflow(oflow, tc_matrix(ntrail), bad);
}
