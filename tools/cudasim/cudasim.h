// Host emulation of the CUDA C subset the qr-gpu kernels use, for checking a
// kernel's logic on a machine without a GPU: every thread of a block is a
// fiber, blocks run one after another, warp collectives meet on a per-warp
// barrier that all 32 lanes must reach (a lane reading outside its mask
// aborts). Inline PTX is not emulated: the prelude keeps its own behind
// __CUDA_ARCH__, and kernels give a plain-C++ alternative under CUDASIM.
// Shared memory: `cudasim.py` rewrites `__shared__` locals as statics (one
// block at a time shares them) and `extern __shared__ T s[]` as a pointer
// into sim_dyn_smem. Arithmetic is the host's IEEE float/double; fmaf is
// fused as on the device, while a * b + c is contracted there and not here.
#pragma once

#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <memory>
#include <ucontext.h>
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

// One cp.async copy, applied when a wait_group completes its group.
struct SimCopy {
    unsigned char* dst;
    const unsigned char* src;
    int bytes;
};

// A copy lands: its bytes, then zeros to 16.
inline void sim_land(const SimCopy& c) {
    std::memcpy(c.dst, c.src, (size_t)c.bytes);
    std::memset(c.dst + c.bytes, 0, (size_t)(16 - c.bytes));
}

struct SimBarrier {
    unsigned expected = 0, arrived = 0, generation = 0;
    bool warp = false;  // a warp's own (shuffles, __syncwarp, mma)
};

// Every thread of a block is a fiber (ucontext) on one host thread; a
// barrier parks a fiber until its party has arrived, and the order the
// warps run in is sim_launch's (the same every run for one CUDASIM_SEED).
struct SimFiber {
    sim_dim3 tid, bid;
    ucontext_t ctx;
    std::vector<unsigned char> stack;
    bool done = false;
    const SimBarrier* wait = nullptr;  // where it is parked, and that barrier's
    unsigned wait_gen = 0;             // generation when it arrived
    std::vector<SimCopy> cp_open;                 // issued, not committed
    std::vector<std::vector<SimCopy>> cp_groups;  // committed, pending
};

struct SimBlock {
    explicit SimBlock(unsigned threads) : warps((threads + 31) / 32) {
        if (threads % 32 != 0) {
            std::fprintf(stderr, "cudasim: the emulator runs whole warps (%u threads)\n", threads);
            std::abort();
        }
        bar.expected = threads;
        for (auto& w : warps) {
            w.expected = 32;
            w.warp = true;
        }
    }
    SimBarrier bar;
    std::vector<SimBarrier> warps;
    SimBarrier named[16];
    uint64_t slot[1024];
    uint32_t mma[1024][6];
    int reduce[2] = {0, 0};
};

inline SimBlock* sim_block = nullptr;
inline SimFiber* sim_cur = nullptr;
inline ucontext_t sim_main;

#define threadIdx (sim_cur->tid)
#define blockIdx (sim_cur->bid)

inline void sim_yield() { swapcontext(&sim_cur->ctx, &sim_main); }

// Arrivals and releases so far: the scheduler's measure of progress.
inline unsigned long long sim_events = 0;

inline void sim_arrive(SimBarrier& b) {
    ++sim_events;
    const unsigned g = b.generation;
    if (++b.arrived == b.expected) {
        b.arrived = 0;
        ++b.generation;
        return;
    }
    sim_cur->wait = &b;
    sim_cur->wait_gen = g;
    while (b.generation == g) sim_yield();
    sim_cur->wait = nullptr;
}

inline void sim_check_mask(unsigned mask, int src) {
    if (!((mask >> (src & 31)) & 1u) || !((mask >> (threadIdx.x & 31)) & 1u)) {
        std::fprintf(stderr, "cudasim: lane %u reads lane %d outside mask %08x\n",
                     threadIdx.x & 31, src, mask);
        std::abort();
    }
}

// Every lane of the warp publishes `v` and reads lane `src`'s value. All 32
// lanes must take part, whatever the mask (the kernels' partial masks name
// lane groups that shuffle side by side); `src` must lie in the mask.
template <class T>
inline T sim_exchange(unsigned mask, T v, int src) {
    static_assert(sizeof(T) <= 8);
    sim_check_mask(mask, src);
    SimBarrier& w = sim_block->warps[threadIdx.x / 32];
    const unsigned base = threadIdx.x & ~31u;
    std::memcpy(&sim_block->slot[threadIdx.x], &v, sizeof(T));
    sim_arrive(w);
    T r;
    std::memcpy(&r, &sim_block->slot[base + (src & 31)], sizeof(T));
    sim_arrive(w);
    return r;
}

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    assert(width == 32);
    return sim_exchange(mask, v, src);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int x, int width = 32) {
    assert(width == 32);
    return sim_exchange(mask, v, (int)(threadIdx.x & 31) ^ x);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
    assert(width == 32);
    const int lane = threadIdx.x & 31;
    return sim_exchange(mask, v, lane + (int)d < 32 ? lane + (int)d : lane);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
    assert(width == 32);
    const int lane = threadIdx.x & 31;
    return sim_exchange(mask, v, lane >= (int)d ? lane - (int)d : lane);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    unsigned b = 0;
    const int lane = threadIdx.x & 31;
    for (int l = 0; l < 32; ++l) {
        const unsigned bit = sim_exchange(0xffffffffu, pred ? 1u : 0u, l);
        if ((mask >> l) & 1u) b |= bit << l;
    }
    sim_check_mask(mask, lane);
    return b;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    sim_check_mask(mask, threadIdx.x & 31);
    sim_arrive(sim_block->warps[threadIdx.x / 32]);
}
inline void __syncthreads() { sim_arrive(sim_block->bar); }
// Blocks run one at a time on the host: an atomic is a plain update.
inline int atomicMax(int* a, int v) {
    const int old = *a;
    if (v > old) *a = v;
    return old;
}
inline int __syncthreads_or(int pred) {
    // Two slots in turn: a slot is cleared a barrier before its next use.
    static int turn[1024];
    const int t = turn[threadIdx.x];
    turn[threadIdx.x] ^= 1;
    if (pred) sim_block->reduce[t] = 1;
    __syncthreads();
    const int r = sim_block->reduce[t];
    __syncthreads();
    if (threadIdx.x == 0) sim_block->reduce[t] = 0;
    return r;
}

// `bar.sync id, count`: a named barrier of `count` threads (whole warps).
inline void sim_bar_sync(int id, unsigned count) {
    SimBarrier& b = sim_block->named[id & 15];
    if (b.expected == 0) b.expected = count;
    if (b.expected != count) {
        std::fprintf(stderr, "cudasim: barrier %d used with %u and %u threads\n", id, b.expected,
                     count);
        std::abort();
    }
    sim_arrive(b);
}

// Shared-memory addresses as the kernels pass them to PTX: 32-bit offsets,
// here from the emulated dynamic shared memory (the static arrays lie
// within 2 GiB of it).
inline unsigned sim_smem_u32(const void* p) {
    return (unsigned)(int)(static_cast<const unsigned char*>(p) - sim_dyn_smem);
}

inline unsigned long long sim_seed_next();

// cp.async of 16 bytes, the first `bytes` read and the rest zeros. The
// copy lands when a wait_group completes its group; with CUDASIM_SEED, half
// the copies land at once instead (the device may land them anywhere in
// between): a read of the destination that no wait orders after the copy,
// or a copy that no barrier orders after another thread's last read, then
// shows as other bits.
inline void sim_cp_async16(unsigned dst, const void* src, int bytes, unsigned long long) {
    const SimCopy c{sim_dyn_smem + (int)dst, static_cast<const unsigned char*>(src), bytes};
    if (sim_seed_next() & 1)
        sim_land(c);
    else
        sim_cur->cp_open.push_back(c);
}
inline void sim_cp_commit() {
    sim_cur->cp_groups.push_back(std::move(sim_cur->cp_open));
    sim_cur->cp_open.clear();
}
inline void sim_cp_wait(unsigned pending) {
    auto& g = sim_cur->cp_groups;
    while (g.size() > pending) {
        for (const SimCopy& c : g.front()) sim_land(c);
        g.erase(g.begin());
    }
}

// How the emulated tensor cores add (CUDASIM_MMA): "rn" sums exactly and
// rounds once to nearest; otherwise (the default) a pessimistic model of
// the hardware's non-IEEE accumulation: c and each group of 4 products are
// aligned to the largest magnitude among them, every addend cut toward zero
// to 24 bits below that magnitude's leading bit, summed, and the sum cut
// toward zero to float; the second group of 4 adds onto that. (Published
// measurements of V100 to H100 find exact products, alignment to the
// largest exponent with truncation and a few extra bits at most, and
// truncated normalization; this model keeps no extra bit.)
inline const bool sim_mma_rn = [] {
    const char* e = std::getenv("CUDASIM_MMA");
    return e != nullptr && std::strcmp(e, "rn") == 0;
}();

// c + p[0] + .. + p[n - 1] by the truncating model above.
inline float sim_fused_sum_rz(double c, const double* p, int n) {
    double mx = std::fabs(c), exact = c;
    for (int k = 0; k < n; ++k) {
        mx = std::fmax(mx, std::fabs(p[k]));
        exact += p[k];
    }
    if (mx == 0.0 || !std::isfinite(exact)) return (float)exact;
    int e;
    std::frexp(mx, &e);  // mx = f 2^e, f in [0.5, 1): the leading bit is 2^(e - 1)
    const double q = std::ldexp(1.0, e - 24);
    double sum = std::trunc(c / q) * q;  // exact: at most 26 bits a term
    for (int k = 0; k < n; ++k) sum += std::trunc(p[k] / q) * q;
    float r = (float)sum;
    if (std::fabs((double)r) > std::fabs(sum)) r = std::nextafter(r, 0.0f);
    return r;
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, d = a b + d, with the
// PTX ISA's fragments (g = lane / 4, t = lane % 4): a0..a3 hold A[g][t],
// A[g + 8][t], A[g][t + 4], A[g + 8][t + 4]; b0, b1 hold B[t][g], B[t + 4][g];
// d0..d3 hold D[g][2t], D[g][2t + 1], D[g + 8][2t], D[g + 8][2t + 1]. The
// operands' top 19 bits are read (tf32); products are exact, their sum with
// d is sim_fused_sum_rz's (or exact and rounded once with CUDASIM_MMA=rn).
inline void sim_mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    SimBarrier& w = sim_block->warps[threadIdx.x / 32];
    const unsigned base = threadIdx.x & ~31u;
    uint32_t* mine = sim_block->mma[threadIdx.x];
    for (int i = 0; i < 4; ++i) mine[i] = a[i];
    mine[4] = b[0];
    mine[5] = b[1];
    sim_arrive(w);
    const auto tf32 = [](uint32_t u) { return (double)__uint_as_float(u & 0xffffe000u); };
    const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; ++r) {
        const int row = g + 8 * (r / 2), col = 2 * t + r % 2;
        double p[8];
        for (int k = 0; k < 8; ++k) {
            const double av = tf32(sim_block->mma[base + (row % 8) * 4 + k % 4][row / 8 + 2 * (k / 4)]);
            const double bv = tf32(sim_block->mma[base + col * 4 + k % 4][4 + k / 4]);
            p[k] = av * bv;  // exact: 11 x 11 significant bits
        }
        if (sim_mma_rn) {
            double acc = d[r];
            for (int k = 0; k < 8; ++k) acc += p[k];
            d[r] = (float)acc;
        } else {
            d[r] = sim_fused_sum_rz(sim_fused_sum_rz(d[r], p, 4), p + 4, 4);
        }
    }
    sim_arrive(w);
}

// The scheduling order's random state (CUDASIM_SEED; 0: round-robin).
inline unsigned long long sim_seed = [] {
    const char* e = std::getenv("CUDASIM_SEED");
    return e ? std::strtoull(e, nullptr, 10) : 0ULL;
}();

// The next random number (xorshift), 0 while CUDASIM_SEED is unset.
inline unsigned long long sim_seed_next() {
    if (sim_seed == 0) return 0;
    sim_seed ^= sim_seed << 13, sim_seed ^= sim_seed >> 7, sim_seed ^= sim_seed << 17;
    return sim_seed;
}

inline void (*sim_entry)(void*) = nullptr;
inline void* sim_entry_arg = nullptr;
// A thread that exits no longer counts at its barriers (as on the device).
inline void sim_leave(SimBarrier& b) {
    --b.expected;
    if (b.expected > 0 && b.arrived == b.expected) {
        b.arrived = 0;
        ++b.generation;
    }
}

inline void sim_fiber_main() {
    sim_entry(sim_entry_arg);
    sim_leave(sim_block->bar);
    sim_leave(sim_block->warps[threadIdx.x / 32]);
    sim_cur->done = true;
    swapcontext(&sim_cur->ctx, &sim_main);
}

// Runs `kernel(args...)` on a grid of `grid` (x, y, z) blocks of `threads`
// threads, one block at a time.
template <class... P, class... A>
void sim_launch(void (*kernel)(P...), sim_dim3 grid, unsigned threads, A... args) {
    gridDim = grid;
    blockDim = {threads, 1, 1};
    auto call = [&] { kernel(args...); };
    sim_entry = [](void* c) { (*static_cast<decltype(call)*>(c))(); };
    sim_entry_arg = &call;
    std::vector<SimFiber> fibers(threads);
    for (auto& f : fibers) f.stack.resize(256 * 1024);
    for (unsigned bz = 0; bz < std::max(grid.z, 1u); ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
            SimBlock block(threads);
            sim_block = &block;
            for (unsigned t = 0; t < threads; ++t) {
                SimFiber& f = fibers[t];
                f.tid = {t, 0, 0};
                f.bid = {bx, by, bz};
                f.done = false;
                f.wait = nullptr;
                f.cp_open.clear();
                f.cp_groups.clear();
                getcontext(&f.ctx);
                f.ctx.uc_stack.ss_sp = f.stack.data();
                f.ctx.uc_stack.ss_size = f.stack.size();
                f.ctx.uc_link = nullptr;
                makecontext(&f.ctx, sim_fiber_main, 0);
            }
            // A warp runs until each of its lanes is done or parked at a
            // block-wide or named barrier (its own collectives meet on the
            // way); then the next warp runs. Warps take turns round-robin,
            // or with CUDASIM_SEED (non-zero) in a random order each round,
            // so that a warp may get far ahead of another between two of
            // their barriers: a missing barrier then shows.
            const unsigned nwarps = threads / 32;
            std::vector<unsigned> order(nwarps);
            for (unsigned q = 0; q < nwarps; ++q) order[q] = q;
            const auto parked = [](const SimFiber& f) {
                return f.done || (f.wait && !f.wait->warp && f.wait->generation == f.wait_gen);
            };
            for (unsigned done = 0; done < threads;) {
                for (unsigned q = nwarps; q > 1 && sim_seed != 0; --q)
                    std::swap(order[q - 1], order[sim_seed_next() % q]);
                const unsigned long long before = sim_events;
                for (unsigned q : order) {
                    for (;;) {
                        const unsigned long long at = sim_events;
                        bool all_parked = true;
                        for (unsigned l = 0; l < 32; ++l) {
                            SimFiber& f = fibers[q * 32 + l];
                            if (parked(f)) continue;
                            all_parked = false;
                            sim_cur = &f;
                            swapcontext(&sim_main, &f.ctx);
                        }
                        if (all_parked || sim_events == at) break;
                    }
                }
                done = 0;
                for (auto& f : fibers) done += f.done;
                if (done < threads && sim_events == before) {
                    std::fprintf(stderr, "cudasim: block (%u, %u) deadlocked\n", bx, by);
                    std::abort();
                }
            }
        }
}

template <class... P, class... A>
void sim_launch(void (*kernel)(P...), unsigned grid, unsigned threads, A... args) {
    sim_launch(kernel, sim_dim3{grid, 1, 1}, threads, args...);
}
