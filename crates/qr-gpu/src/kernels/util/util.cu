// Batch-wide helpers: the per-matrix non-finite and overflow checks and the
// NaN fill (the device side of qr-core's Info), and the row-major <-> column-major transpose
// the vendor peers need.

// info[b] = 1 when matrix b holds a NaN or an infinity, else 0.
// Grid: one block per matrix.
extern "C" __global__ void util_nonfinite_f32(const float* __restrict__ a, int* __restrict__ info,
                                              int n) {
    const long long len = (long long)n * n;
    const float* m = a + (long long)blockIdx.x * len;
    int bad = 0;
    for (long long i = threadIdx.x; i < len; i += blockDim.x) {
        // Exponent all ones: infinity or NaN.
        bad |= (__float_as_uint(m[i]) & 0x7f800000u) == 0x7f800000u;
    }
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0) info[blockIdx.x] = bad ? 1 : 0;
}

// info[b] = 2 (OVERFLOW) when matrix b was finite (info 0) but its H or tau
// holds a NaN or an infinity: its R or a reflector did not fit f32.
// Grid: one block per matrix. Runs after the factorization, before the fill.
extern "C" __global__ void util_overflow_f32(const float* __restrict__ h,
                                             const float* __restrict__ tau, int* __restrict__ info,
                                             int n) {
    const int b = blockIdx.x;
    // Uniform per block, so the early return leaves no thread at the barrier.
    if (info[b] != 0) return;
    const long long len = (long long)n * n;
    const float* m = h + (long long)b * len;
    const float* t = tau + (long long)b * n;
    int bad = 0;
    for (long long i = threadIdx.x; i < len; i += blockDim.x)
        bad |= (__float_as_uint(m[i]) & 0x7f800000u) == 0x7f800000u;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        bad |= (__float_as_uint(t[i]) & 0x7f800000u) == 0x7f800000u;
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0 && bad) info[b] = 2;
}

// Fills H and tau of every matrix whose info is non-zero with NaN.
// Grid: (matrices, blocks per matrix): matrices on x, whose limit is 2^31 - 1
// rather than y's 65535.
extern "C" __global__ void util_nanfill_f32(float* __restrict__ h, float* __restrict__ tau,
                                            const int* __restrict__ info, int n) {
    const int b = blockIdx.x;
    if (info[b] == 0) return;
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
