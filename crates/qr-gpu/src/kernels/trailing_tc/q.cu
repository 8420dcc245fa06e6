// Forming and applying Q from geqrf's (H, tau): the per-block operands of
// the tensor-core update (trailing_tc), the columns orgqr forms directly,
// the result checks and a rectangular transpose. mod.rs beside this file is
// the launch contract.
//
// Block k of a matrix holds the reflectors of columns p = 32 k ..
// p + w - 1 (w = min(32, n - p)), Q_k = H_p ... H_{p+w-1} = I - V T V^T
// with V (n - p rows, unit lower) and T (w x w upper triangular, LAPACK's
// larft, forward columnwise). trailing_tc applies I - V T^T V^T = Q_k^T.
// Q_k itself is the same update on the reflectors in reverse order:
// with J reversing the w columns, V T V^T = (V J) (J T J) (V J)^T, and
// J T^T J is upper triangular, so trailing_tc given V' = V J and
// S = J T^T J (S[i][j] = T[w-1-j][w-1-i]) applies I - V' S^T V'^T = Q_k.

// Threads of every kernel here but the transpose, and the rows of V that
// q_prepare_f32 holds in shared memory at a time.
#define Q_THREADS 256
#define Q_ROWS 64

// Offset (floats) of block k's V inside one matrix's V area: block j holds
// n - 32 j rows of 32.
__device__ __forceinline__ long long q_v_offset(int n, int k) {
    return 32LL * ((long long)k * n - 16LL * k * (k - 1));
}

// The reflector entry V[r][c] of block p (r, c relative to (p, p); c < w):
// the implicit one on the diagonal, zero above it.
__device__ __forceinline__ float q_v_entry(const float* hm, int n, int p, int r, int c) {
    if (r == c) return 1.0f;
    return r > c ? hm[(long long)(p + r) * n + p + c] : 0.0f;
}

// One block of Q_THREADS threads per (matrix, 32-column block): matrix
// blockIdx.x / kb, block blockIdx.x % kb. Writes V (or V' with `reverse`)
// into v (per matrix `v_stride` floats, block k at q_v_offset: n - p rows
// of 32, zero in columns from w on) and T (or S with `reverse`) into t (per
// matrix kb * 1024 floats, block k at k * 1024, zero outside the w x w
// upper triangle). Sets bad[m] = 1 when the reflectors the block reads
// (H strictly below the diagonal, tau) hold a NaN or an infinity. With
// `q` not null (orgqr), also writes the columns of Q that the block forms
// alone, Q[p..n][p..p+w] = (I - V T V^T)[.., 0..w] (the identity's columns
// under Q_k, as every later block leaves them), and zeroes Q[p..p+w][p+w..n],
// the rows that block k's update reads before any block writes them.
extern "C" __global__ void __launch_bounds__(Q_THREADS)
    q_prepare_f32(const float* __restrict__ h, const float* __restrict__ tau,
                  float* __restrict__ v, long long v_stride, float* __restrict__ t,
                  float* __restrict__ q, int* __restrict__ bad, int n, int reverse) {
    __shared__ double gram[32][33];
    __shared__ double y[32][33];
    __shared__ float taus[32];
    __shared__ float rows_s[Q_ROWS][32];
    const int kb = (n + 31) / 32;
    const int m = blockIdx.x / kb, k = blockIdx.x % kb;
    const int p = 32 * k, w = min(32, n - p), nrow = n - p;
    const int tid = threadIdx.x;
    const float* hm = h + (long long)m * n * n;
    float* vm = v + m * v_stride + q_v_offset(n, k);
    float* tm = t + (long long)m * kb * 1024 + (long long)k * 1024;

    bool nonfinite = false;
    if (tid < 32) {
        const float x = tid < w ? tau[(long long)m * n + p + tid] : 0.0f;
        taus[tid] = x;
        nonfinite = qr_nonfinite(x);
    }
    // Gram entries (a, b), a < b < w: this thread's four of the 1024.
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    for (int r0 = 0; r0 < nrow; r0 += Q_ROWS) {
        __syncthreads();  // the previous chunk's readers are done
        for (int e = tid; e < Q_ROWS * 32; e += Q_THREADS) {
            const int r = r0 + e / 32, c = e % 32;
            float x = 0.0f;
            if (r < nrow && c < w) {
                x = q_v_entry(hm, n, p, r, c);
                nonfinite |= qr_nonfinite(x);
            }
            rows_s[e / 32][c] = x;
            if (r < nrow) vm[(long long)r * 32 + (reverse && c < w ? w - 1 - c : c)] = x;
        }
        __syncthreads();
        const int rows = min(Q_ROWS, nrow - r0);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int e = tid + Q_THREADS * j, a = e / 32, b = e % 32;
            if (a < b && b < w)
                for (int r = 0; r < rows; ++r)
                    acc[j] = fma((double)rows_s[r][a], (double)rows_s[r][b], acc[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int e = tid + Q_THREADS * j, a = e / 32, b = e % 32;
        if (a < b) gram[a][b] = acc[j];
    }
    if (__syncthreads_or(nonfinite) && tid == 0) bad[m] = 1;
    larft_blocked<32, 33, Q_THREADS>(gram, taus, w, tid);
    for (int e = tid; e < 1024; e += Q_THREADS) {
        const int i = e / 32, j = e % 32;
        float x = 0.0f;
        if (i <= j && j < w) x = (float)(reverse ? gram[w - 1 - j][w - 1 - i] : gram[i][j]);
        tm[e] = x;
    }
    if (q == nullptr) return;

    // Y = T V1^T (w x w), V1 the top w rows of V: Y[a][c] = sum over
    // a <= b <= c of T[a][b] V[c][b].
    for (int e = tid; e < 1024; e += Q_THREADS) {
        const int a = e / 32, c = e % 32;
        double s = 0.0;
        if (a <= c && c < w)
            for (int b = a; b <= c; ++b) s = fma(gram[a][b], (double)q_v_entry(hm, n, p, c, b), s);
        y[a][c] = s;
    }
    __syncthreads();
    float* qm = q + (long long)m * n * n;
    for (long long e = tid; e < (long long)nrow * w; e += Q_THREADS) {
        const int r = (int)(e / w), c = (int)(e % w);
        double s = r == c ? 1.0 : 0.0;
        const int top = min(r, c);  // V[r][a] = 0 for a > r, Y[a][c] = 0 for a > c
        for (int a = 0; a <= top; ++a) s -= (double)q_v_entry(hm, n, p, r, a) * y[a][c];
        qm[(long long)(p + r) * n + p + c] = (float)s;
    }
    const int right = n - p - w;
    for (long long e = tid; e < (long long)w * right; e += Q_THREADS) {
        const int r = (int)(e / right), c = (int)(e % right);
        qm[(long long)(p + r) * n + p + w + c] = 0.0f;
    }
}

// R = the upper triangle of H (zero below), per matrix blockIdx.y, rows in
// slices of blockIdx.x; NaN throughout where info[m] is not 0 (geqrf left
// NaN in H there already; this keeps R's zeros from hiding it).
extern "C" __global__ void __launch_bounds__(Q_THREADS)
    q_upper_f32(const float* __restrict__ h, float* __restrict__ r, const int* __restrict__ info,
                int n) {
    const int m = blockIdx.y;
    const long long off = (long long)m * n * n, len = (long long)n * n;
    const bool failed = info[m] != 0;
    for (long long e = (long long)blockIdx.x * Q_THREADS + threadIdx.x; e < len;
         e += (long long)gridDim.x * Q_THREADS) {
        const int i = (int)(e / n), j = (int)(e % n);
        r[off + e] = failed ? qr_nan_f32() : (j >= i ? h[off + e] : 0.0f);
    }
}

// The half-open range of slice blockIdx.y (of gridDim.y) of a matrix's
// `len` floats.
__device__ __forceinline__ void q_slice(long long len, long long& lo, long long& hi) {
    const long long per = (len + gridDim.y - 1) / gridDim.y;
    lo = min(len, (long long)blockIdx.y * per);
    hi = min(len, lo + per);
}

// After the updates, per matrix blockIdx.x and slice blockIdx.y of its
// result `out` (`len` floats per matrix): a matrix whose reflectors were
// flagged (bad[m], from q_prepare_f32) gets info 1; one whose result holds
// a non-finite value while its input was finite (cbad, null for orgqr: a
// non-finite C of ormqr stays in its product, as in LAPACK) gets info 2;
// both are filled with NaN. Whether the result holds one is obad[m]
// (q_scan_f32 of `out`, queued before), or with obad null, on a grid of
// one slice per matrix, the block's own scan. info, when not null, is
// written for every matrix (qr passes null: its info is geqrf's).
extern "C" __global__ void __launch_bounds__(Q_THREADS)
    q_finish_f32(float* __restrict__ out, long long len, const int* __restrict__ bad,
                 const int* __restrict__ cbad, const int* __restrict__ obad,
                 int* __restrict__ info) {
    const int m = blockIdx.x, tid = threadIdx.x;
    float* om = out + (long long)m * len;
    long long lo, hi;
    q_slice(len, lo, hi);
    int code = bad[m] ? 1 : 0;
    // Uniform per block: every thread meets the barrier or none does.
    if (code == 0 && (cbad == nullptr || cbad[m] == 0)) {
        if (obad != nullptr) {
            code = obad[m] ? 2 : 0;
        } else {
            bool nonfinite = false;
            for (long long i = tid; i < len; i += Q_THREADS) nonfinite |= qr_nonfinite(om[i]);
            if (__syncthreads_or(nonfinite)) code = 2;
        }
    }
    if (code != 0) {
        const float nan = qr_nan_f32();
        for (long long i = lo + tid; i < hi; i += Q_THREADS) om[i] = nan;
    }
    if (blockIdx.y == 0 && tid == 0 && info != nullptr) info[m] = code;
}

// flag[m] = 1 where slice blockIdx.y of matrix blockIdx.x of c (`len` floats
// each) holds a NaN or an infinity; the flags are zeroed first. Slices
// spread a few large matrices over the whole device.
extern "C" __global__ void __launch_bounds__(Q_THREADS)
    q_scan_f32(const float* __restrict__ c, long long len, int* __restrict__ flag) {
    const float* cm = c + (long long)blockIdx.x * len;
    long long lo, hi;
    q_slice(len, lo, hi);
    bool nonfinite = false;
    for (long long i = lo + threadIdx.x; i < hi; i += Q_THREADS) nonfinite |= qr_nonfinite(cm[i]);
    if (__syncthreads_or(nonfinite) && threadIdx.x == 0) atomicMax(flag + blockIdx.x, 1);
}

// dst[b] = src[b]^T for rows x cols matrices (dst is cols x rows). Grid:
// (ceil(cols/32), ceil(rows/32), batch), block 256 (eight rows of 32).
extern "C" __global__ void __launch_bounds__(256)
    q_transpose_f32(const float* __restrict__ src, float* __restrict__ dst, int rows, int cols) {
    __shared__ float tile[32][33];
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const long long off = (long long)blockIdx.z * rows * cols;
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int i = ty; i < 32; i += 8) {
        const int r = r0 + i, c = c0 + tx;
        if (r < rows && c < cols) tile[i][tx] = src[off + (long long)r * cols + c];
    }
    __syncthreads();
    for (int i = ty; i < 32; i += 8) {
        const int r = c0 + i, c = r0 + tx;
        if (r < cols && c < rows) dst[off + (long long)r * rows + c] = tile[tx][i];
    }
}

// ---- blocks of reflectors applied to column tiles held on chip ----
//
// q_apply_f32 gives each block one 32-column tile of the result (all n
// rows, in shared memory) and applies every block of reflectors to it in
// turn, so the tile crosses global memory once each way, where applying
// one block to the whole result at a time (trailing_tc per block) streams
// it through global memory twice per block. Each step is the tensor-core
// update of trailing_tc at the same accuracy (float32 operands split into
// tf32 hi + lo, three products, each 16-row slab's partial added in
// float32), with the same fragment layouts (trailing_tc_ops.cu's header):
//   W  = V^T X   the warps split the rows in 16-row slabs, each keeps a
//                32 x 32 partial; the partials meet in a fixed order;
//   W2 = op(T) W in float32 FMAs (op(T) = T applies Q_k, T^T applies Q_k^T);
//   X -= V W2    each warp holds W2 as mma operands and streams its 16-row
//                tiles of V and X through it.
// A tile too tall for one block's shared memory is split by rows over a
// cluster of Q_CLUSTER blocks (sm_90): each block sums its rows' W, the
// blocks add the cluster's partial W in block order through distributed
// shared memory (the same bits in every block), and each updates its rows.
// Each warp's 16-row slabs of V pass through a ring of two slots in shared
// memory (the space of its W partial, free in both passes), copied by
// cp.async a slab ahead of their use, so the loads from L2 overlap the
// tensor-core work.

#define QA_WARPS (Q_THREADS / 32)

#ifndef Q_CLUSTER
#error "Q_CLUSTER (blocks of a cluster sharing one tile's rows in q_apply_f32; 1: a block a tile) must be defined by the plan"
#endif
#if Q_CLUSTER != 1 && Q_CLUSTER != 2 && Q_CLUSTER != 4 && Q_CLUSTER != 8
#error "Q_CLUSTER is 1, 2, 4 or 8"
#endif
#if Q_CLUSTER > 1
#define Q_CLUSTER_ATTR __cluster_dims__(Q_CLUSTER, 1, 1)
#else
#define Q_CLUSTER_ATTR
#endif

struct alignas(16) q_f4 {
    float x[4];
};

// Float offset of unit u (four columns) of row `row` in the tile or a ring
// slot: it lives at unit u ^ qr_swz(row) (prelude.cu: the passes' reads
// are free of bank conflicts).
__device__ __forceinline__ int q_at(int row, int u) { return row * 32 + 4 * (u ^ qr_swz(row)); }

__device__ __forceinline__ q_f4& q_unit(float* xs, int row, int u) {
    return *reinterpret_cast<q_f4*>(xs + q_at(row, u));
}

__device__ __forceinline__ q_f4 q_zero4() {
    q_f4 r;
#pragma unroll
    for (int i = 0; i < 4; ++i) r.x[i] = 0.0f;
    return r;
}

// Copies V's 16-row slab from block-relative row `r` (zeros at and past
// `nrow`) into the ring slot at shared address `slot`, swizzled as the
// tile, and commits the copies as one group: each lane four 16-byte units,
// unit lane % 8 of rows lane / 8 + 4i.
__device__ __forceinline__ void q_stage_v(unsigned slot, const float* __restrict__ vk, int r,
                                          int nrow, int lane) {
    const int rr = lane >> 3, u = lane & 7;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int row = rr + 4 * i;
        const bool in = r + row < nrow;
        qr_cp16(slot + 4 * q_at(row, u),
                in ? vk + (long long)(r + row) * 32 + 4 * u : vk, in ? 16 : 0);
    }
    qr_cp_commit();
}

// The slot of a warp's ring holding slab `it` (rows from `r`, the next
// slab from `next`, none at or past `end`): stages the next slab into the
// other slot, then waits for this one's copies and the warp's.
__device__ __forceinline__ const float* q_ring_slab(const float* ring, unsigned ring_at,
                                                   const float* __restrict__ vk, int it, int next,
                                                   int end, int p, int nrow, int lane) {
    if (next < end) {
        q_stage_v(ring_at + 2048 * ((it + 1) & 1), vk, next - p, nrow, lane);
        qr_cp_wait<1>();
    } else {
        qr_cp_wait<0>();
    }
    __syncwarp();
    return ring + 512 * (it & 1);
}

// A ring slot's four V values of slab row `row`, unit `u`.
__device__ __forceinline__ q_f4 q_slot4(const float* slot, int row, int u) {
    return *reinterpret_cast<const q_f4*>(slot + q_at(row, u));
}

__device__ __forceinline__ void q_mma3(float (&d)[4], const unsigned (&ahi)[4],
                                       const unsigned (&alo)[4], const unsigned (&bhi)[2],
                                       const unsigned (&blo)[2]) {
    qr_mma_tf32(d, alo, bhi);
    qr_mma_tf32(d, ahi, blo);
    qr_mma_tf32(d, ahi, bhi);
}

// Moves the tile between global memory (`g`, leading dimension `ld`,
// columns 0..cols-1 of it, rows 0..n-1) and shared memory, in 16-byte
// units where `vec` (every row 16-byte aligned), else column by column.
template <bool store>
__device__ __forceinline__ void q_tile_copy(float* xs, float* g, int ld, int n, int cols, bool vec,
                                            int tid) {
    for (int e = tid; e < n * 8; e += Q_THREADS) {
        const int r = e >> 3, u = e & 7, c = 4 * u;
        q_f4& s = q_unit(xs, r, u);
        float* gr = g + (long long)r * ld + c;
        if (vec && c + 4 <= cols) {
            if (store)
                *reinterpret_cast<q_f4*>(gr) = s;
            else
                s = *reinterpret_cast<const q_f4*>(gr);
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                if (store) {
                    if (c + i < cols) gr[i] = s.x[i];
                } else {
                    s.x[i] = c + i < cols ? gr[i] : 0.0f;
                }
            }
        }
    }
}

// Grid: batch * tiles * Q_CLUSTER (tiles = ceil(cols / 32)), the tiles of
// one matrix neighbours (they read the same V from L2), the widest-reaching
// first, the blocks of a tile one cluster, block r holding rows
// r * share .. (r + 1) * share - 1 (share = round_up(ceil(n / Q_CLUSTER),
// 16)); block Q_THREADS; dynamic shared memory 128 * share + 4224 bytes
// (the rows, then T).
// mode 0 (orgqr): c is Q (ld n, cols n); tile j starts as the identity's
// columns and takes Q_j, ..., Q_0 (the later blocks leave those columns
// alone). mode 1 (Q C) and 2 (Q^T C): c is C (n x cols, leading dimension
// ld), updated in place: Q_{K-1} first with T, or Q_0^T first with T^T.
// v and t as q_prepare_f32 writes them with reverse 0.
// A cluster's block holds more than half of the tallest tile one block
// fits, so one block an SM: it may take the registers that keep it free of
// spills.
extern "C" __global__ void Q_CLUSTER_ATTR __launch_bounds__(Q_THREADS, Q_CLUSTER > 1 ? 1 : 2)
    q_apply_f32(const float* __restrict__ v, long long v_stride, const float* __restrict__ t,
                float* c, long long c_stride, int ld, int cols, int n, int mode) {
    extern __shared__ __attribute__((aligned(16))) float q_dyn[];
    __shared__ __attribute__((aligned(16))) float part[QA_WARPS][32 * 32];
    // This block's W, by step parity: with a cluster the other blocks read
    // step s's while this one may already sum step s + 1's.
    __shared__ float wloc[2][32][33];
    __shared__ float w2s[32][33];
    const int tiles = (cols + 31) / 32, kb = (n + 31) / 32;
    const int tile = blockIdx.x / Q_CLUSTER, rank = blockIdx.x % Q_CLUSTER;
    const int m = tile / tiles, j = tiles - 1 - tile % tiles;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tq = lane & 3;
    const int share = ((n + Q_CLUSTER - 1) / Q_CLUSTER + 15) & ~15;
    const int row0 = rank * share;
    const int row1 = Q_CLUSTER == 1 ? n : min(n, row0 + share), rows = max(0, row1 - row0);
    const int c0 = 32 * j, width = min(32, cols - c0);
    float* xs = q_dyn;  // local row r is row row0 + r of the tile
    float(*ts)[33] = reinterpret_cast<float(*)[33]>(q_dyn + share * 32);
    float* cm = c + (long long)m * c_stride + c0 + (long long)row0 * ld;
    const bool vec = ld % 4 == 0 && (reinterpret_cast<unsigned long long>(c) & 15) == 0;

    if (mode == 0) {
        for (int e = tid; e < share * 8; e += Q_THREADS) q_unit(xs, e >> 3, e & 7) = q_zero4();
        __syncthreads();
        const int r = c0 + tid - row0;
        if (tid < width && r >= 0 && r < rows)
            xs[q_at(r, tid >> 2) + (tid & 3)] = 1.0f;
    } else {
        for (int e = rows * 8 + tid; e < share * 8; e += Q_THREADS)
            q_unit(xs, e >> 3, e & 7) = q_zero4();
        q_tile_copy<false>(xs, cm, ld, rows, width, vec, tid);
    }
    __syncthreads();

    const int first = mode == 2 ? 0 : mode == 0 ? j : kb - 1;
    const int steps = mode == 0 ? j + 1 : kb;
    for (int s = 0; s < steps; ++s) {
        const int k = mode == 2 ? first + s : first - s;
        const int p = 32 * k, nrow = n - p;
        const float* vk = v + m * v_stride + q_v_offset(n, k);
        const float* tk = t + ((long long)m * kb + k) * 1024;
        for (int e = tid; e < 1024; e += Q_THREADS) ts[e >> 5][e & 31] = tk[e];
        // Rows of X that can be non-zero: orgqr's tile holds only its
        // identity rows before Q_j, and nothing in rows p..p+31 after it
        // until Q_k writes them; this block's rows of those.
        const int lo = max(row0, mode == 0 && k < j ? p + 32 : p);
        const int hi = min(row1, mode == 0 && k == j ? min(n, p + 32) : n);

        float acc[2][4][4];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;
        float* ring = part[warp];
        const unsigned ring_at = qr_smem_u32(ring);
        if (lo + 16 * warp < hi) q_stage_v(ring_at, vk, lo + 16 * warp - p, nrow, lane);
        int it = 0;
        for (int r0 = lo + 16 * warp; r0 < hi; r0 += 16 * QA_WARPS, ++it) {
            const float* slot =
                q_ring_slab(ring, ring_at, vk, it, r0 + 16 * QA_WARPS, hi, p, nrow, lane);
            q_f4 vv[2][2], xx[2][2];
#pragma unroll
            for (int sl = 0; sl < 2; ++sl)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int row = 8 * sl + 4 * e + tq;
                    vv[sl][e] = q_slot4(slot, row, g);
                    xx[sl][e] = q_unit(xs, r0 - row0 + row, g);
                }
            float d[2][4][4];
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
                for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) d[mt][nt][i] = 0.0f;
#pragma unroll
            for (int sl = 0; sl < 2; ++sl) {
                unsigned ahi[2][4], alo[2][4];
#pragma unroll
                for (int mt = 0; mt < 2; ++mt) {
                    qr_split_tf32(vv[sl][0].x[2 * mt], ahi[mt][0], alo[mt][0]);
                    qr_split_tf32(vv[sl][0].x[2 * mt + 1], ahi[mt][1], alo[mt][1]);
                    qr_split_tf32(vv[sl][1].x[2 * mt], ahi[mt][2], alo[mt][2]);
                    qr_split_tf32(vv[sl][1].x[2 * mt + 1], ahi[mt][3], alo[mt][3]);
                }
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
                    unsigned bhi[2], blo[2];
                    qr_split_tf32(xx[sl][0].x[nt], bhi[0], blo[0]);
                    qr_split_tf32(xx[sl][1].x[nt], bhi[1], blo[1]);
#pragma unroll
                    for (int mt = 0; mt < 2; ++mt) q_mma3(d[mt][nt], ahi[mt], alo[mt], bhi, blo);
                }
            }
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
                for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[mt][nt][i] += d[mt][nt][i];
            __syncwarp();  // the slot is read before it is staged again
        }
        // Each lane's 32 partials in its own layout (conflict-free), summed
        // over the warps in warp order; the ring's copies have all landed.
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) part[warp][(16 * mt + 4 * nt + i) * 32 + lane] = acc[mt][nt][i];
        __syncthreads();
        float(*wl)[33] = wloc[s & 1];
        for (int e = tid; e < 1024; e += Q_THREADS) {
            float sum = 0.0f;
#pragma unroll
            for (int w = 0; w < QA_WARPS; ++w) sum += part[w][e];
            // acc[mt][nt][2h + i] of lane (g, tq) is W[4g + 2mt + h][4(2tq + i) + nt].
            const int idx = e >> 5, ln = e & 31, mt = idx >> 4, nt = (idx >> 2) & 3;
            const int h = (idx >> 1) & 1, i = idx & 1;
            wl[4 * (ln >> 2) + 2 * mt + h][4 * (2 * (ln & 3) + i) + nt] = sum;
        }
#if Q_CLUSTER > 1
        // The cluster's W, in block order, into the partials' space (free
        // until the update's ring).
        cluster_barrier();
        float(*wsum)[33] = reinterpret_cast<float(*)[33]>(&part[0][0]);
        for (int e = tid; e < 1024; e += Q_THREADS) {
            float sum = 0.0f;
#pragma unroll
            for (int q = 0; q < Q_CLUSTER; ++q) sum += cluster_ld_f32(&wl[e >> 5][e & 31], (u32)q);
            wsum[e >> 5][e & 31] = sum;
        }
#else
        float(*wsum)[33] = wl;
#endif
        __syncthreads();
        {
            // Rows warp + 8i of W2, four independent sums over all 32 terms
            // (T's zeros outside its upper triangle add exact zeros).
            float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int b = 0; b < 32; ++b) {
                const float w = wsum[b][lane];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int a = warp + QA_WARPS * i;
                    sum[i] = fmaf(mode == 2 ? ts[b][a] : ts[a][b], w, sum[i]);
                }
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) w2s[warp + QA_WARPS * i][lane] = sum[i];
        }
        __syncthreads();
        // W2 as the update's B operands: step ks, n-tile nt of lane (g, tq)
        // is reflectors 16(ks/2) + 4tq + 2(ks%2) + {0, 1}, column
        // 16(nt/2) + 4(g/2) + 2(nt%2) + g%2.
        unsigned bhi[4][4][2], blo[4][4][2];
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                const int r = 16 * (ks >> 1) + 4 * tq + 2 * (ks & 1);
                const int col = 16 * (nt >> 1) + 4 * (g >> 1) + 2 * (nt & 1) + (g & 1);
                qr_split_tf32(w2s[r][col], bhi[ks][nt][0], blo[ks][nt][0]);
                qr_split_tf32(w2s[r + 1][col], bhi[ks][nt][1], blo[ks][nt][1]);
            }
        const int top = max(p, row0);
        if (top + 16 * warp < row1) q_stage_v(ring_at, vk, top + 16 * warp - p, nrow, lane);
        it = 0;
        for (int i0 = top + 16 * warp; i0 < row1; i0 += 16 * QA_WARPS, ++it) {
            const float* slot =
                q_ring_slab(ring, ring_at, vk, it, i0 + 16 * QA_WARPS, row1, p, nrow, lane);
            q_f4 vq[2][2], xq[2][2];
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int cc = 0; cc < 2; ++cc) {
                    const int row = g + 8 * h, u = 4 * cc + tq;
                    vq[h][cc] = q_slot4(slot, row, u);
                    xq[h][cc] = q_unit(xs, i0 - row0 + row, u);
                }
            float d[4][4];
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) d[nt][i] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < 4; ++ks) {
                const int cc = ks >> 1, jj = 2 * (ks & 1);
                unsigned ahi[4], alo[4];
                qr_split_tf32(vq[0][cc].x[jj], ahi[0], alo[0]);
                qr_split_tf32(vq[1][cc].x[jj], ahi[1], alo[1]);
                qr_split_tf32(vq[0][cc].x[jj + 1], ahi[2], alo[2]);
                qr_split_tf32(vq[1][cc].x[jj + 1], ahi[3], alo[3]);
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) q_mma3(d[nt], ahi, alo, bhi[ks][nt], blo[ks][nt]);
            }
            // d[nt][ci] is row g + 8(ci/2), column 16(nt/2) + 4tq + 2(nt%2) + ci%2.
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = i0 + g + 8 * h;
                if (row >= row1) continue;  // padding rows stay zero
#pragma unroll
                for (int cc = 0; cc < 2; ++cc) {
                    q_f4 o = xq[h][cc];
#pragma unroll
                    for (int jj = 0; jj < 4; ++jj) o.x[jj] -= d[2 * cc + (jj >> 1)][2 * h + (jj & 1)];
                    q_unit(xs, row - row0, 4 * cc + tq) = o;
                }
            }
            __syncwarp();  // the slot is read before it is staged again
        }
        __syncthreads();
    }
    q_tile_copy<true>(xs, cm, ld, rows, width, vec, tid);
#if Q_CLUSTER > 1
    cluster_barrier();  // no block leaves while another may read its W
#endif
}
