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
