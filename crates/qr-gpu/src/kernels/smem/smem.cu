// Unblocked Householder QR with the whole matrix in shared memory: one block
// per matrix, SMEM_TPC threads per column (a power of two up to 32) so that a
// block of a few hundred threads keeps enough warps in flight.
//
// The matrix is stored row-major with an odd leading dimension (n | 1): the
// SMEM_TPC lanes of a column group read one column down consecutive rows, and
// a stride coprime with the 32 banks puts those rows in different banks.
//
// Step j: thread 0 forms the reflector of column j from the norm the previous
// step left in s_xn2; the block scales column j into v; every column group
// then applies H_j to its columns k > j. The group owning column j + 1 also
// accumulates that column's new sub-diagonal norm (in double) for the next
// step, which saves one block-wide reduction per column.

#ifndef SMEM_TPC
#error "SMEM_TPC (threads per column) must be defined by the plan"
#endif

// Lanes of this thread's column group, for group-local shuffles (the groups
// of one warp run different numbers of columns, so a full mask would hang).
__device__ __forceinline__ u32 group_mask(int lane) {
    if (SMEM_TPC >= 32) return 0xffffffffu;
    const u32 ones = (1u << (SMEM_TPC & 31)) - 1u;
    return ones << (lane & ~(SMEM_TPC - 1));
}

extern "C" __global__ void smem_householder_f32(const float* __restrict__ a,
                                                float* __restrict__ h,
                                                float* __restrict__ tau, int n) {
    extern __shared__ float s[];
    __shared__ double scratch[32];
    __shared__ double s_xn2;
    __shared__ float s_tau;
    __shared__ double s_scale;

    const int lda = n | 1;
    const int tid = threadIdx.x, nt = blockDim.x;
    const int lane = tid & 31;
    const int sub = tid & (SMEM_TPC - 1);
    const int grp = tid / SMEM_TPC;
    const int ngrp = nt / SMEM_TPC;
    const u32 gmask = group_mask(lane);
    const long long off = (long long)blockIdx.x * n * n;
    const float* am = a + off;
    float* hm = h + off;
    float* taum = tau + (long long)blockIdx.x * n;

    for (int idx = tid; idx < n * n; idx += nt) s[(idx / n) * lda + idx % n] = am[idx];
    __syncthreads();

    double part = 0.0;
    for (int i = 1 + tid; i < n; i += nt) {
        double x = (double)s[i * lda];
        part += x * x;
    }
    double xn2 = block_sum_f64(part, scratch);
    if (tid == 0) s_xn2 = xn2;
    __syncthreads();

    for (int j = 0; j < n; ++j) {
        if (tid == 0) {
            Reflector r = make_reflector(s[j * lda + j], s_xn2);
            s[j * lda + j] = r.beta;
            s_tau = r.tau;
            s_scale = r.scale;
            taum[j] = r.tau;
        }
        __syncthreads();
        const float t = s_tau;
        if (t != 0.0f) {
            const double sc = s_scale;
            for (int i = j + 1 + tid; i < n; i += nt) s[i * lda + j] = (float)((double)s[i * lda + j] * sc);
        }
        __syncthreads();

        const int lo = j + 1;
        for (int k = lo + grp; k < n; k += ngrp) {
            if (t != 0.0f) {
                const float rj = s[j * lda + k];
                float p0 = 0.0f, p1 = 0.0f;
                int i = lo + sub;
                for (; i + SMEM_TPC < n; i += 2 * SMEM_TPC) {
                    p0 += s[i * lda + j] * s[i * lda + k];
                    p1 += s[(i + SMEM_TPC) * lda + j] * s[(i + SMEM_TPC) * lda + k];
                }
                if (i < n) p0 += s[i * lda + j] * s[i * lda + k];
                float p = p0 + p1;
                for (int o = 1; o < SMEM_TPC; o <<= 1) p += __shfl_xor_sync(gmask, p, o);
                const float w = t * (rj + p);
                if (sub == 0) s[j * lda + k] = rj - w;
                for (int i2 = lo + sub; i2 < n; i2 += SMEM_TPC) s[i2 * lda + k] -= s[i2 * lda + j] * w;
            }
            if (k == lo) {
                double q = 0.0;
                // The rows this lane updated itself, so no group barrier is needed.
                for (int i2 = lo + sub; i2 < n; i2 += SMEM_TPC) {
                    double x = (double)s[i2 * lda + k];
                    if (i2 > lo) q += x * x;
                }
                for (int o = 1; o < SMEM_TPC; o <<= 1) q += __shfl_xor_sync(gmask, q, o);
                if (sub == 0) s_xn2 = q;
            }
        }
        __syncthreads();
    }

    for (int idx = tid; idx < n * n; idx += nt) hm[idx] = s[(idx / n) * lda + idx % n];
}
