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
    // The row of the warp's k-th slab of this pass: the pass starts from
    // the slabs the W pass read last, the likeliest still in L2 (each tile
    // row is updated on its own, so the order changes no bit).
    const auto slab_row = [&](int k) { return warp * 16 + (nslab - 1 - k) * kTileStep; };
    constexpr int kDir = -1;
    st = tc_stager_at(dyn, vm, as, lda, slab_row(nslab == 0 ? -1 : 0), nrow, ncols, w, lane);
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
