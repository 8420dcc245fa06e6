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

// Per matrix (blockIdx.x), after the updates: a matrix whose reflectors were
// flagged (bad[m], from q_prepare_f32) gets info 1; one whose result `out`
// (`len` floats per matrix) holds a non-finite value while its input was
// finite (cbad, null for orgqr: a non-finite C of ormqr stays in its
// product, as in LAPACK) gets info 2; both are filled with NaN. info, when
// not null, is written for every matrix (qr passes null: its info is
// geqrf's).
extern "C" __global__ void __launch_bounds__(Q_THREADS)
    q_finish_f32(float* __restrict__ out, long long len, const int* __restrict__ bad,
                 const int* __restrict__ cbad, int* __restrict__ info) {
    const int m = blockIdx.x, tid = threadIdx.x;
    float* om = out + (long long)m * len;
    int code = bad[m] ? 1 : 0;
    if (code == 0 && (cbad == nullptr || cbad[m] == 0)) {
        bool nonfinite = false;
        for (long long i = tid; i < len; i += Q_THREADS) nonfinite |= qr_nonfinite(om[i]);
        if (__syncthreads_or(nonfinite)) code = 2;
    }
    if (code != 0) {
        const float nan = qr_nan_f32();
        for (long long i = tid; i < len; i += Q_THREADS) om[i] = nan;
    }
    if (tid == 0 && info != nullptr) info[m] = code;
}

// cbad[m] = 1 where matrix m of c (`len` floats each, blockIdx.x) holds a
// NaN or an infinity, else 0.
extern "C" __global__ void __launch_bounds__(Q_THREADS)
    q_scan_f32(const float* __restrict__ c, long long len, int* __restrict__ cbad) {
    const int m = blockIdx.x, tid = threadIdx.x;
    const float* cm = c + (long long)m * len;
    bool nonfinite = false;
    for (long long i = tid; i < len; i += Q_THREADS) nonfinite |= qr_nonfinite(cm[i]);
    const int any = __syncthreads_or(nonfinite);
    if (tid == 0) cbad[m] = any ? 1 : 0;
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
