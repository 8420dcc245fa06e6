// Batch-wide helpers: the per-matrix non-finite and overflow checks and the
// NaN fill (the device side of qr-core's Info), and the row-major <-> column-major transpose
// the vendor peers need.

// info[b] = 1 when matrix b holds a NaN or an infinity; info is zeroed first.
// When zcol is not null (zeroed first too), zcol[b] becomes one past the last
// column of matrix b holding a non-zero entry: columns from there on are
// exactly zero in every row, which the blocked path skips (they stay zero
// under every reflector). Grid: (matrices, slices per matrix): each block
// scans one slice, so that a few large matrices still spread over the whole
// device.
extern "C" __global__ void util_nonfinite_f32(const float* __restrict__ a, int* __restrict__ info,
                                              int* __restrict__ zcol, int n) {
    const long long len = (long long)n * n;
    const long long per = (len + gridDim.y - 1) / gridDim.y;
    const long long lo = min(len, (long long)blockIdx.y * per), hi = min(len, lo + per);
    const float* m = a + (long long)blockIdx.x * len;
    int bad = 0, last = 0;
    // The column follows the flat index by additions (no division per element).
    int c = (int)((lo + threadIdx.x) % n);
    const int step = (int)(blockDim.x % n);
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const float x = m[i];
        bad |= qr_nonfinite(x);
        if (x != 0.0f) last = max(last, c + 1);
        c += step;
        if (c >= n) c -= n;
    }
    if (zcol != nullptr) {
        for (int o = 16; o > 0; o >>= 1) last = max(last, __shfl_xor_sync(0xffffffffu, last, o));
        if ((threadIdx.x & 31) == 0 && last > 0) atomicMax(zcol + blockIdx.x, last);
    }
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0 && bad) atomicMax(info + blockIdx.x, 1);
}

// info[b] = 2 (OVERFLOW) when matrix b was finite (info 0) but its H or tau
// holds a NaN or an infinity: its R or a reflector did not fit f32. Checks
// rows r0..r1 x columns c0..c1 of H and tau[t0..t1) (a region whose values
// are final, so that part of the check may run before the factorization
// ends). Grid: (matrices, slices of the region). Runs before the fill;
// sibling slices may store 2 at once, which atomicMax orders.
extern "C" __global__ void util_overflow_f32(const float* __restrict__ h,
                                             const float* __restrict__ tau, int* __restrict__ info,
                                             int n, int r0, int r1, int c0, int c1, int t0,
                                             int t1) {
    const int b = blockIdx.x;
    // Non-finite inputs (1) were flagged before and stay; uniform per
    // block, so the early return leaves no thread at the barrier.
    if (info[b] == 1) return;
    const int wd = c1 - c0;
    const long long len = (long long)(r1 - r0) * wd;
    const long long per = (len + gridDim.y - 1) / gridDim.y;
    const long long lo = min(len, (long long)blockIdx.y * per), hi = min(len, lo + per);
    const float* m = h + (long long)b * n * n;
    int bad = 0;
    // The position follows the flat index by additions (no division per element).
    int r = r0 + (int)((lo + threadIdx.x) / wd), c = (int)((lo + threadIdx.x) % wd);
    const int dr = (int)(blockDim.x / wd), dc = (int)(blockDim.x % wd);
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        bad |= qr_nonfinite(m[(long long)r * n + c0 + c]);
        r += dr;
        c += dc;
        if (c >= wd) {
            c -= wd;
            r += 1;
        }
    }
    if (blockIdx.y == 0)
        for (int j = t0 + threadIdx.x; j < t1; j += blockDim.x)
            bad |= qr_nonfinite(tau[(long long)b * n + j]);
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0 && bad) atomicMax(info + b, 2);
}

// Fills H and tau of every matrix whose info is non-zero with NaN. With
// `oflow` (the writers' overflow marks, qr_mark_overflow; null when separate
// passes checked H and tau), a marked matrix whose input was finite (info
// 0) becomes info 2 (OVERFLOW) first: every block of the matrix decides the
// same from info and the mark, and only block y = 0 stores it.
// Grid: (matrices, blocks per matrix): matrices on x, whose limit is 2^31 - 1
// rather than y's 65535.
extern "C" __global__ void util_nanfill_f32(float* __restrict__ h, float* __restrict__ tau,
                                            int* __restrict__ info,
                                            const int* __restrict__ oflow, int n) {
    const int b = blockIdx.x;
    const int code = info[b];
    if (code == 0 && oflow != nullptr && oflow[b] != 0) {
        if (blockIdx.y == 0 && threadIdx.x == 0) info[b] = 2;
    } else if (code == 0) {
        return;
    }
    const long long len = (long long)n * n;
    float* m = h + (long long)b * len;
    const float nan = qr_nan_f32();
    for (long long i = (long long)blockIdx.y * blockDim.x + threadIdx.x; i < len;
         i += (long long)gridDim.y * blockDim.x)
        m[i] = nan;
    if (blockIdx.y == 0)
        for (int i = threadIdx.x; i < n; i += blockDim.x) tau[(long long)b * n + i] = nan;
}

// dst[b] = src[b]^T for n x n matrices. Grid: (ceil(n/32), ceil(n/32), batch),
// block (32, 8). The tile's odd leading dimension keeps the transposed reads
// free of bank conflicts.
extern "C" __global__ void util_transpose_f32(const float* __restrict__ src, float* __restrict__ dst,
                                              int n) {
    __shared__ float tile[32][33];
    const long long off = (long long)blockIdx.z * n * n;
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int i = threadIdx.y; i < 32; i += 8) {
        int r = r0 + i, c = c0 + threadIdx.x;
        if (r < n && c < n) tile[i][threadIdx.x] = src[off + (long long)r * n + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        int r = c0 + i, c = r0 + threadIdx.x;
        if (r < n && c < n) dst[off + (long long)r * n + c] = tile[threadIdx.x][i];
    }
}
