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
#ifndef TC_REVERSE
#error "TC_REVERSE (1: the update pass takes the warp's slabs last to first) must be defined by the plan"
#endif
#if TC_REVERSE && !TC_STAGE
#error "TC_REVERSE needs TC_STAGE"
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
// One tf32 register per value (prelude.cu's qr_tf32: rounded to nearest,
// ties away, in two integer instructions); a NaN stays a NaN in A2 itself
// (only its split operand may change), so its matrix is still flagged.
__device__ __forceinline__ void tc_split1(float x, unsigned& hi, unsigned& lo) {
    hi = qr_tf32(x);
    const float rest = x - qr_bits_f32(hi);  // exact
    // The tensor cores read a tf32 operand's top 19 bits, so the unrounded
    // rest enters the product truncated: its dropped bits lie below 2^-21
    // of x, beside the 2^-22 of the lo * lo product the split leaves out
    // anyway. (Rounding it too, two integer instructions more, was slower:
    // docs/PERF.md.)
    lo = qr_f32_bits(rest);
}
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
    for (int i = 0; i < 4; ++i) tc_split1(x[0][i], hi[i], lo[i]);
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
    tc_split1(x[0][0], hi[0], lo[0]);
    tc_split1(x[0][1], hi[1], lo[1]);
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
// batches several times L2 (`Tuning::tensor_l2_hints_min_l2`).
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

#if TC_STAGE
// ---- staging through shared memory (TC_STAGE = pipeline depth D) ----
//
// Each warp's 16-row slabs of V and of A2 pass through a ring of D slots
// (a slot holds a V slab and an A2 slab), in both passes: A2 is read from
// global memory twice, as unstaged, but every copy is a 16-byte cp.async
// issued D - 1 slabs ahead of its use, so a warp never waits on a global
// load it has just issued. (Keeping the block's whole A2 tile resident
// between the passes instead was slower: docs/PERF.md.) Each warp stages exactly the rows it consumes
// (a W slab and an update tile of warp k cover the same 16 rows), so only
// __syncwarp orders the copies and their readers. Rows past nrow and
// columns past the tile's edge are zero-filled by the copy itself.
//
// A row is eight 16-byte units; unit u of row r lives at u ^ qr_swz(r)
// (prelude.cu: neither pass has a bank conflict).
// As qr_cp16, the copy's L2 lines taking the eviction policy `pol`
// (TC_L2HINT).
__device__ __forceinline__ void tc_cp16_hint(unsigned dst, const float* src, int bytes,
                                             unsigned long long pol) {
#ifdef CUDASIM
    sim_cp_async16(dst, src, bytes, pol);
#else
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(dst),
                 "l"(src), "r"(bytes), "l"(pol)
                 : "memory");
#endif
}

// A2's copy in a ring: `apol` 0 plain, 1 evict first (its last read), 2
// evict last (its first read, to be read again by the update pass).
template <int apol>
__device__ __forceinline__ void tc_cp16_a(unsigned dst, const float* src, int bytes) {
    if (apol == 1)
        tc_cp16_hint(dst, src, bytes, tc_policy_evict_first());
    else if (apol == 2)
        tc_cp16_hint(dst, src, bytes, tc_policy_evict_last());
    else
        qr_cp16(dst, src, bytes);
}

// One thread's share of staging a warp's 16-row slabs: unit u = lane % 8 of
// rows rr = lane / 8 + 4i (i = 0..3). rr % 4 does not depend on i, nor
// does the swizzled unit, so the four copies lie 512 bytes apart in shared
// memory, 4 rows apart in V and in A2: one source address each, advanced a
// slab per call. (Each copy's own row arithmetic, 64-bit, cost about 150
// instructions per slab, as much as the slab's tensor-core work;
// docs/history/qr-gpu-sessions.md, "a leaner tensor-core update".) V
// columns at or past the panel width are zero-filled by the copy itself, so the passes read them as zeros.
struct tc_stager {
    unsigned dst;        // shared address of this thread's unit in a slab at offset 0
    const float* vsrc;   // its V unit in the next slab to stage
    const float* asrc;   // its A2 unit likewise
    long long lda4;      // 4 rows of A2, elements
    int rows;            // nrow minus this thread's first row of the next slab
    int bytes;           // bytes of its V unit left of the panel width (low
                         // 5 bits), 16 << 5 if its A2 unit lies inside the tile
};

// A stager at the warp's first slab (row r0 of V and A2).
__device__ __forceinline__ tc_stager tc_stager_at(unsigned dyn, const float* __restrict__ vm,
                                                  const float* as, int lda, int r0, int nrow,
                                                  int ncols, int w, int lane) {
    const int rr = lane >> 3, u = lane & 7;
    tc_stager st;
    st.dst = dyn + 4 * (rr * 32 + 4 * (u ^ qr_swz(rr)));
    st.vsrc = vm + (r0 + rr) * TC_NB + 4 * u;
    st.asrc = as + (long long)(r0 + rr) * lda + 4 * u;
    st.lda4 = 4LL * lda;
    st.rows = nrow - r0 - rr;
    const int wv = w - 4 * u;
    st.bytes = (wv >= 4 ? 16 : wv > 0 ? 4 * wv : 0) | (4 * u < ncols ? 16 << 5 : 0);
    return st;
}

// Stages the next slab: V into the slab at float offset `voff` of the
// dynamic shared memory and, with `a_too`, A2 into the one at `aoff`; then
// moves the stager a slab (`step` rows) down. `vm` and `as` (the matrix's
// V and A2) are the source address of the copies of rows past nrow, which
// read nothing.
template <int step, int apol = 0, int dir = 1>
__device__ __forceinline__ void tc_stage(tc_stager& st, int voff, int aoff, bool a_too,
                                         const float* vm, const float* as) {
    static_assert(step % 4 == 0, "a slab step is whole groups of a thread's four rows");
    const unsigned vd = st.dst + 4 * voff, ad = st.dst + 4 * aoff;
    const int vbytes = st.bytes & 31, abytes = st.bytes >> 5;
    if (st.rows > 12) {  // all four rows exist: every slab but the last
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            qr_cp16(vd + 512 * i, st.vsrc + 4 * TC_NB * i, vbytes);
            if (a_too) tc_cp16_a<apol>(ad + 512 * i, st.asrc + i * st.lda4, abytes);
        }
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const bool in = 4 * i < st.rows;
            qr_cp16(vd + 512 * i, in ? st.vsrc + 4 * TC_NB * i : vm, in ? vbytes : 0);
            if (a_too)
                tc_cp16_a<apol>(ad + 512 * i, in ? st.asrc + i * st.lda4 : as, in ? abytes : 0);
        }
    }
    st.vsrc += dir * step * TC_NB;
    st.asrc += dir * (step / 4) * st.lda4;
    st.rows -= dir * step;
}

__device__ __forceinline__ tc_f4 tc_lds4(const float* rowp, int row, int u) {
    return *reinterpret_cast<const tc_f4*>(rowp + 4 * (u ^ qr_swz(row)));
}

// The W pass's slab from shared memory (tc_load_slab's layout): V at
// `ring`, A2 at `sa` (16 x 32 each).
__device__ __forceinline__ void tc_slab_from_smem(tc_slab& sl, const float* ring, const float* sa,
                                                  int g, int tq) {
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int rr = 8 * s + 4 * e + tq;
            sl.v[s][e] = tc_lds4(ring + rr * 32, rr, g);
            sl.x[s][e][0] = tc_lds4(sa + rr * 32, rr, g);
        }
}

// The update's tile from shared memory (tc_load_tile's layout): V at
// `ring`, A2 at `sa`. V's columns past the panel width were staged as
// zeros (tc_stager::bytes).
__device__ __forceinline__ void tc_tile_from_smem(tc_tile& tl, const float* ring, const float* sa,
                                                  int g, int tq) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int rr = g + 8 * h;
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            tl.v[h][c] = tc_lds4(ring + rr * 32, rr, 4 * c + tq);
            tl.x[h][c] = tc_lds4(sa + rr * 32, rr, 4 * c + tq);
        }
    }
}
#endif

extern "C" __global__ void TC_CLUSTER_ATTR __launch_bounds__(TC_THREADS, TC_MIN_BLOCKS)
    // In place, src == a: restrict still holds in effect, as every element is
    // read (via src) before this thread writes it (via a) and never after.
    trailing_tc_apply_f32(float* __restrict__ a, const float* __restrict__ src, long long a_stride,
                          int lda,
                          const float* __restrict__ v, long long v_stride,
                          const float* __restrict__ t, long long t_stride, int nrow_all,
                          int ntrail, int w, const int* __restrict__ zcol, int panel_col,
                          int trail_col, int* __restrict__ oflow) {
    // Partial sums of W in mma-fragment order, later W2 (row stride TC_LDW).
    __shared__ float s_part[(TC_WARPS / 2) * TC_NB * TC_BN];
    __shared__ float s_w[TC_NB * TC_LDW];
    // T's used triangle, zeros elsewhere, laid out for step 2: entry (r, c)
    // with c = cw + TC_WARPS j at [r][cw][j], so that warp cw reads its
    // TC_TC values of row r as 16-byte broadcasts.
    __shared__ __attribute__((aligned(16))) float s_t[TC_NB * TC_NB];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tq = lane & 3;
    const int tiles = (ntrail + TC_BN - 1) / TC_BN;
#if TC_ROWSPLIT > 1
    // A cluster of TC_ROWSPLIT blocks per tile, each taking a chunk of its
    // rows (whole 16-row slabs): the block's rank is its part.
    const unsigned tb = blockIdx.x / TC_ROWSPLIT;
    const int part = (int)(blockIdx.x % TC_ROWSPLIT);
    const int chunk = ((nrow_all + TC_ROWSPLIT - 1) / TC_ROWSPLIT + 15) / 16 * 16;
    const int row0 = min(nrow_all, part * chunk);
    const int nrow = min(nrow_all, row0 + chunk) - row0;
#else
    const unsigned tb = blockIdx.x;
    const int nrow = nrow_all;
#endif
    const int mat = tb / tiles;
    const int col0 = (tb - mat * tiles) * TC_BN;
    const int ncols = ntrail - col0;  // columns of this tile that exist (may exceed TC_BN)

    // In place, columns at or right of zcol[mat] are zero in every row and
    // stay so: a zero panel (W2 = 0) or a zero tile leaves the tile as it
    // is. Out of place this pass also copies, so it always runs. The check
    // waits until T's loads are in flight too, so the two latencies overlap.
    const int z = a == src ? zcol[mat] : 0x7fffffff;
    const bool full = ncols >= TC_BN;
    float* at = a + mat * a_stride + col0;
    // Read side: A2 itself, or (the first panel of an out-of-place
    // factorization) the caller's input at the same offsets, so that the copy
    // into H rides on this pass.
    const float* as = src + mat * a_stride + col0;
    const float* vm = v + mat * v_stride;
#if TC_ROWSPLIT > 1
    // This block's rows are the tile's from row0 on.
    at += (long long)row0 * lda;
    as += (long long)row0 * lda;
    vm += (long long)row0 * TC_NB;
#endif
    const float* tm = t + mat * t_stride;

    // T's used triangle (r <= c < w); read in step 2, after two barriers.
    for (int e = tid; e < TC_NB * TC_NB; e += TC_THREADS) {
        const int r = e >> 5, c = e & 31;
        s_t[(r * TC_WARPS + c % TC_WARPS) * TC_TC + c / TC_WARPS] =
            (r <= c && c < w) ? tm[e] : 0.0f;
    }
    // The whole block (with TC_ROWSPLIT, the whole cluster: the test is the
    // same in every block of a tile, so no block waits at a cluster barrier
    // for one that left).
    if (panel_col >= z || trail_col + col0 >= z) return;

    // ---- 1. W = V^T A2: warp `warp` takes 16-row slabs warp, warp + WARPS, ...
    // The mma's float32 accumulation is not IEEE round-to-nearest: its error
    // grows with the chain of products summed into one register. With
    // TC_FLUSH > 0 the tensor cores sum only TC_FLUSH slabs into `acc`, which
    // is then added to `tot` by ordinary (rounded) float32 adds.
    float acc[2][TC_NTW][4];
#if TC_FLUSH > 0
    float tot[2][TC_NTW][4];
    int pending = 0;
#endif
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < TC_NTW; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                acc[mt][nt][i] = 0.0f;
#if TC_FLUSH > 0
                tot[mt][nt][i] = 0.0f;
#endif
            }

    constexpr int kRowStep = TC_WARPS * 16;
    // L2 eviction priorities of A2's ring copies (TC_L2HINT; tc_cp16_a):
    // its first read stays (level 2), its last read leaves first.
    constexpr int kFirstRead = TC_L2HINT >= 2 ? 2 : 0;
    constexpr int kLastRead = TC_L2HINT >= 1 ? 1 : 0;
    // The stores leave L2 first too, but for the launch's first tile: its
    // columns are the next panel's (or the next look-ahead update's, or
    // with the fold the one after), read before the rest of the batch's
    // trailing matrices pass.
    const bool hint = TC_L2HINT && col0 > 0;
#if TC_STAGE
    static_assert(TC_WN == 1, "a warp's W slabs and update tiles are the same rows");
    // The warp's ring of TC_STAGE slots, each a V slab and an A2 slab.
    extern __shared__ __attribute__((aligned(16))) float tc_dyn[];
    constexpr int kSlab = 16 * 32;
    constexpr int kSlots = TC_STAGE;
    constexpr int kSlot = 2 * kSlab;
    // Float offset in tc_dyn of the warp's ring.
    const int ring_off = warp * (kSlots * kSlot);
    float* ring = tc_dyn + ring_off;
    // Where slot q's A2 slab lives (offset, pointer).
    auto a_off = [&](int q) { return ring_off + q * kSlot + kSlab; };
    auto a_at = [&](int q) { return tc_dyn + a_off(q); };
    const unsigned dyn = qr_smem_u32(tc_dyn);
    const int nslab = nrow > warp * 16 ? (nrow - warp * 16 + kRowStep - 1) / kRowStep : 0;
    tc_stager st = tc_stager_at(dyn, vm, as, lda, warp * 16, nrow, ncols, w, lane);
#pragma unroll
    for (int k = 0; k < TC_STAGE - 1; ++k) {
        if (k < nslab)
            tc_stage<kRowStep, kFirstRead>(st, ring_off + k * kSlot, a_off(k), true, vm, as);
        qr_cp_commit();
    }
    for (int k = 0; k < nslab; ++k) {
        const int r0 = warp * 16 + k * kRowStep, ahead = k + TC_STAGE - 1;
        const int qa = ahead % kSlots, qk = k % kSlots;
        // Slot qa was last read at slab k - 1, before its __syncwarp.
        if (ahead < nslab)
            tc_stage<kRowStep, kFirstRead>(st, ring_off + qa * kSlot, a_off(qa), true, vm, as);
        qr_cp_commit();
        qr_cp_wait<TC_STAGE - 1>();  // slab k's group (the (k + 1)-th) has landed
        __syncwarp();  // every lane's copies of slab k before any lane reads them
        tc_slab cur;
        tc_slab_from_smem(cur, ring + qk * kSlot, a_at(qk), g, tq);
        __syncwarp();
        tc_w_slab(cur, acc);
#else
    for (int r0 = warp * 16; r0 < nrow; r0 += kRowStep) {
        tc_slab cur;
        if (full && r0 + 16 <= nrow)
            tc_load_slab<false>(cur, vm, as, lda, r0, nrow, ncols, g, tq);
        else
            tc_load_slab<true>(cur, vm, as, lda, r0, nrow, ncols, g, tq);
        tc_w_slab(cur, acc);
#endif
#if TC_FLUSH > 0
        if (++pending == TC_FLUSH) {
            pending = 0;
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
                for (int nt = 0; nt < TC_NTW; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        tot[mt][nt][i] += acc[mt][nt][i];
                        acc[mt][nt][i] = 0.0f;
                    }
        }
#endif
    }
#if TC_FLUSH > 0
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < TC_NTW; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[mt][nt][i] += tot[mt][nt][i];
#endif

    // Partials meet in a fixed order: the upper half of the warps hands its
    // sums to the lower half, which adds them, then all threads add the
    // lower half's buffers. Fragment order keeps both passes conflict-free.
    float* mine = s_part + (warp % (TC_WARPS / 2)) * (TC_NB * TC_BN) + lane;
    if (warp >= TC_WARPS / 2) {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int nt = 0; nt < TC_NTW; ++nt)
#pragma unroll
                for (int ci = 0; ci < 4; ++ci)
                    mine[((mt * TC_NTW + nt) * 4 + ci) * 32] = acc[mt][nt][ci];
    }
    __syncthreads();
    if (warp < TC_WARPS / 2) {
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int nt = 0; nt < TC_NTW; ++nt)
#pragma unroll
                for (int ci = 0; ci < 4; ++ci)
                    mine[((mt * TC_NTW + nt) * 4 + ci) * 32] += acc[mt][nt][ci];
    }
    __syncthreads();
    // Thread (warp, lane) takes fragments i = warp * kFrag + k of its own
    // lane, k unrolled, so that the fragment-to-(reflector, column) mapping
    // is mostly compile-time (a strided loop over elements spent about 30
    // instructions an element on it; docs/history/qr-gpu-sessions.md, "a
    // leaner tensor-core update").
    constexpr int kFrag = TC_NB * TC_BN / 32 / TC_WARPS;
    static_assert(kFrag % 4 == 0, "a thread's fragments are whole groups of four");
#pragma unroll 4
    for (int k = 0; k < kFrag; ++k) {
        const int e = (warp * kFrag + k) * 32 + lane;
        float sum = 0.0f;
#pragma unroll
        for (int p = 0; p < TC_WARPS / 2; ++p) sum += s_part[p * (TC_NB * TC_BN) + e];
        // Fragment (i, lane) -> (reflector, column) of the W pass mapping,
        // i = 4 q + ci.
        const int q = warp * (kFrag / 4) + (k >> 2), ci = k & 3;
        const int mt = q / TC_NTW, nt = q % TC_NTW;
        const int r = 4 * (lane >> 2) + 2 * mt + (ci >> 1);
        const int c = 32 * (nt >> 2) + 4 * (2 * (lane & 3) + (ci & 1)) + (nt & 3);
        // Rows of W past the panel width come from V columns that may hold
        // anything (unstaged): they are stored as zeros, never used.
        s_w[r * TC_LDW + c] = r < w ? sum : 0.0f;
    }
    __syncthreads();
#if TC_ROWSPLIT > 1
    // The tile's row blocks meet: each adds the cluster's W in block order
    // (the same bits in every block) into s_part, free since the barrier
    // above; W2 then goes to s_w once no block reads it any more.
    cluster_barrier();
    for (int e = tid; e < TC_NB * TC_BN; e += TC_THREADS) {
        const int idx = (e / TC_BN) * TC_LDW + e % TC_BN;
        float x[TC_ROWSPLIT];
#pragma unroll
        for (int q = 0; q < TC_ROWSPLIT; ++q) x[q] = cluster_ld_f32(&s_w[idx], (u32)q);
        float sum = x[0];
#pragma unroll
        for (int q = 1; q < TC_ROWSPLIT; ++q) sum += x[q];
        s_part[idx] = sum;
    }
    cluster_barrier();
    const float* s_wt = s_part;
    float* s_w2 = s_w;
#else
    const float* s_wt = s_w;
    float* s_w2 = s_part;
#endif

    // ---- 2. W2 = T^T W in float32, into s_part (free after the barrier).
    // Thread (warp cw, lane) computes rows c = cw + TC_WARPS j of columns
    // lane + 32 q: per row r of W, TC_NQ loads of W and TC_TC / 4 broadcast
    // loads of T feed TC_TC * TC_NQ FMAs. (One output per loop, as before,
    // cost two loads per FMA: a quarter of the launch's instructions at
    // n = 512; docs/history/qr-gpu-sessions.md, "a leaner tensor-core
    // update".) Each sum runs over r in
    // order from 0; T's zeros past the triangle add zeros.
    {
        float sum[TC_TC][TC_NQ];
#pragma unroll
        for (int j = 0; j < TC_TC; ++j)
#pragma unroll
            for (int q = 0; q < TC_NQ; ++q) sum[j][q] = 0.0f;
#pragma unroll 8
        for (int r = 0; r < TC_NB; ++r) {
            float wr[TC_NQ], tr[TC_TC];
#pragma unroll
            for (int q = 0; q < TC_NQ; ++q) wr[q] = s_wt[r * TC_LDW + lane + 32 * q];
#pragma unroll
            for (int j = 0; j < TC_TC; j += 4) {
                const tc_f4 t4 =
                    *reinterpret_cast<const tc_f4*>(s_t + (r * TC_WARPS + warp) * TC_TC + j);
#pragma unroll
                for (int i = 0; i < 4; ++i) tr[j + i] = t4.x[i];
            }
#pragma unroll
            for (int j = 0; j < TC_TC; ++j)
#pragma unroll
                for (int q = 0; q < TC_NQ; ++q) sum[j][q] += tr[j] * wr[q];
        }
#pragma unroll
        for (int j = 0; j < TC_TC; ++j)
#pragma unroll
            for (int q = 0; q < TC_NQ; ++q)
                s_w2[(warp + TC_WARPS * j) * TC_LDW + lane + 32 * q] = sum[j][q];
    }
    __syncthreads();

    // ---- 3. A2 -= V W2: warp = (row group rg, column group cg).
    const int cg = warp % TC_WN, rg = warp / TC_WN;
    // With `oflow`, the tile's first TC_NB rows of A2 (R's rows of this
    // panel, final from here on) are checked as they are stored: the tiles
    // of this block starting above row TC_NB of the tile (a row split's
    // later chunks start further down).
#if TC_ROWSPLIT > 1
    const int top = TC_NB - row0;
#else
    constexpr int top = TC_NB;
#endif
    unsigned bhi[4 / TC_KPACK][4][2], blo[4 / TC_KPACK][4][2];
#pragma unroll
    for (int kk = 0; kk < 4 / TC_KPACK; ++kk)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
            const int c = 32 * cg + 16 * (nt >> 1) + 4 * (g >> 1) + 2 * (nt & 1) + (g & 1);
            float x[TC_KPACK][2];
#pragma unroll
            for (int s = 0; s < TC_KPACK; ++s) {
                const int ks = kk * TC_KPACK + s;
                const int r = 16 * (ks >> 1) + 4 * tq + 2 * (ks & 1);
                x[s][0] = s_w2[r * TC_LDW + c];
                x[s][1] = s_w2[(r + 1) * TC_LDW + c];
            }
            tc_split_b(x, bhi[kk][nt], blo[kk][nt]);
        }

    constexpr int kTileStep = TC_WR * 16;
#if TC_STAGE
    // A2 and V come through the ring again.
    static_assert(kTileStep == kRowStep, "the passes' slabs are the same rows");
    // The row of the warp's k-th slab of this pass. With TC_REVERSE the
    // pass starts from the slabs the W pass read last, the likeliest still
    // in L2 (each tile is updated on its own, so the order changes no bit).
    const auto slab_row = [&](int k) {
        return warp * 16 + (TC_REVERSE ? nslab - 1 - k : k) * kTileStep;
    };
    constexpr int kDir = TC_REVERSE ? -1 : 1;
    st = tc_stager_at(dyn, vm, as, lda, slab_row(TC_REVERSE && nslab == 0 ? -1 : 0), nrow, ncols,
                      w, lane);
#pragma unroll
    for (int k = 0; k < TC_STAGE - 1; ++k) {
        if (k < nslab)
            tc_stage<kTileStep, kLastRead, kDir>(st, ring_off + k * kSlot, a_off(k), true, vm, as);
        qr_cp_commit();
    }
    for (int k = 0; k < nslab; ++k) {
        const int i0 = slab_row(k), ahead = k + TC_STAGE - 1;
        const int qa = ahead % kSlots, qk = k % kSlots;
        if (ahead < nslab)
            tc_stage<kTileStep, kLastRead, kDir>(st, ring_off + qa * kSlot, a_off(qa), true, vm,
                                                 as);
        qr_cp_commit();
        qr_cp_wait<TC_STAGE - 1>();
        __syncwarp();  // every lane's copies of slab k before any lane reads them
        tc_tile tl;
        tc_tile_from_smem(tl, ring + qk * kSlot, a_at(qk), g, tq);
        __syncwarp();
        const bool chk = oflow != nullptr && i0 < top;  // uniform over the warp
        if (full && i0 + 16 <= nrow)
            tc_update_tile<false>(tl, bhi, blo, at, lda, i0, nrow, ncols, cg, g, tq, chk, oflow, ntrail, hint);
        else
            tc_update_tile<true>(tl, bhi, blo, at, lda, i0, nrow, ncols, cg, g, tq, chk, oflow, ntrail, hint);
    }
#else
    for (int i0 = rg * 16; i0 < nrow; i0 += kTileStep) {
        tc_tile tl;
        const bool chk = oflow != nullptr && i0 < top;
        if (full && i0 + 16 <= nrow) {
            tc_load_tile<false>(tl, vm, as, lda, i0, nrow, ncols, w, cg, g, tq);
            tc_update_tile<false>(tl, bhi, blo, at, lda, i0, nrow, ncols, cg, g, tq, chk, oflow, ntrail, hint);
        } else {
            tc_load_tile<true>(tl, vm, as, lda, i0, nrow, ncols, w, cg, g, tq);
            tc_update_tile<true>(tl, bhi, blo, at, lda, i0, nrow, ncols, cg, g, tq, chk, oflow, ntrail, hint);
        }
    }
#endif
}
