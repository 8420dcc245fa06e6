// Host emulation of the CUDA C subset the qr-gpu kernels use, for checking a
// kernel's logic on a machine without a GPU: every thread of a block is a
// host thread, blocks run one after another, warp collectives meet on a
// per-warp barrier. Only full-mask warp collectives are emulated (a partial
// mask aborts); inline PTX is not (the prelude keeps it behind __CUDA_ARCH__).
// Shared memory: `cudasim.py` rewrites `__shared__` locals as statics (one
// block at a time shares them) and `extern __shared__ T s[]` as a pointer
// into sim_dyn_smem. Arithmetic is the host's IEEE float/double; fmaf is
// fused as on the device, while a * b + c is contracted there and not here.
#pragma once

#include <barrier>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct sim_dim3 {
    unsigned x = 0, y = 0, z = 0;
};
inline thread_local sim_dim3 threadIdx, blockIdx;
inline sim_dim3 blockDim, gridDim;

struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

inline int max(int a, int b) { return a > b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }

template <class To, class From>
inline To sim_bits(From v) {
    static_assert(sizeof(To) == sizeof(From));
    To t;
    std::memcpy(&t, &v, sizeof(To));
    return t;
}
inline float __int_as_float(int i) { return sim_bits<float>(i); }
inline float __uint_as_float(unsigned i) { return sim_bits<float>(i); }
inline int __float_as_int(float f) { return sim_bits<int>(f); }
inline unsigned __float_as_uint(float f) { return sim_bits<unsigned>(f); }
inline long long __double_as_longlong(double d) { return sim_bits<long long>(d); }
inline double __longlong_as_double(long long i) { return sim_bits<double>(i); }

// Dynamic shared memory of the running block (cudasim.py points
// `extern __shared__` arrays here).
alignas(16) inline unsigned char sim_dyn_smem[232448];

struct SimWarp {
    std::barrier<> bar{32};
    uint64_t slot[32];
};

struct SimBlock {
    explicit SimBlock(unsigned threads) : bar(threads), warps((threads + 31) / 32) {
        assert(threads % 32 == 0 && "the emulator runs whole warps");
        for (auto& w : warps) w = std::make_unique<SimWarp>();
    }
    std::barrier<> bar;
    std::vector<std::unique_ptr<SimWarp>> warps;
    int reduce[2] = {0, 0};
};
inline thread_local SimBlock* sim_block = nullptr;

inline void sim_full_mask(unsigned mask) {
    if (mask != 0xffffffffu) {
        std::fprintf(stderr, "cudasim: partial warp mask %08x is not emulated\n", mask);
        std::abort();
    }
}

// Every lane publishes `v` and reads lane `src`'s value.
template <class T>
inline T sim_exchange(T v, int src) {
    static_assert(sizeof(T) <= 8);
    SimWarp& w = *sim_block->warps[threadIdx.x / 32];
    const int lane = threadIdx.x & 31;
    std::memcpy(&w.slot[lane], &v, sizeof(T));
    w.bar.arrive_and_wait();
    T r;
    std::memcpy(&r, &w.slot[src & 31], sizeof(T));
    w.bar.arrive_and_wait();
    return r;
}

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    sim_full_mask(mask);
    assert(width == 32);
    return sim_exchange(v, src);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int x, int width = 32) {
    sim_full_mask(mask);
    assert(width == 32);
    return sim_exchange(v, (int)(threadIdx.x & 31) ^ x);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    sim_full_mask(mask);
    assert(width == 32);
    const int lane = threadIdx.x & 31;
    return sim_exchange(v, lane + (int)d < 32 ? lane + (int)d : lane);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    sim_full_mask(mask);
    assert(width == 32);
    const int lane = threadIdx.x & 31;
    return sim_exchange(v, lane >= (int)d ? lane - (int)d : lane);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    sim_full_mask(mask);
    unsigned b = 0;
    for (int l = 0; l < 32; ++l) b |= (sim_exchange(pred ? 1u : 0u, l) << l);
    return b;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == 0xffffffffu; }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    sim_full_mask(mask);
    sim_block->warps[threadIdx.x / 32]->bar.arrive_and_wait();
}
inline void __syncthreads() { sim_block->bar.arrive_and_wait(); }
inline int __syncthreads_or(int pred) {
    // Two slots in turn, so that a slot is cleared a barrier before its
    // next use.
    static thread_local int turn = 0;
    const int t = turn;
    turn ^= 1;
    if (pred) __atomic_fetch_or(&sim_block->reduce[t], 1, __ATOMIC_SEQ_CST);
    __syncthreads();
    const int r = __atomic_load_n(&sim_block->reduce[t], __ATOMIC_SEQ_CST);
    __syncthreads();
    if (threadIdx.x == 0) sim_block->reduce[t] = 0;
    return r;
}
inline int __syncthreads_count(int) = delete;

// Runs `kernel(args...)` on a grid of `grid` blocks of `threads` threads,
// one block at a time.
template <class... P, class... A>
void sim_launch(void (*kernel)(P...), unsigned grid, unsigned threads, A... args) {
    gridDim = {grid, 1, 1};
    blockDim = {threads, 1, 1};
    for (unsigned b = 0; b < grid; ++b) {
        SimBlock block(threads);
        std::vector<std::thread> ts;
        ts.reserve(threads);
        for (unsigned t = 0; t < threads; ++t)
            ts.emplace_back([&, t] {
                threadIdx = {t, 0, 0};
                blockIdx = {b, 0, 0};
                sim_block = &block;
                kernel(args...);
            });
        for (auto& th : ts) th.join();
    }
}
