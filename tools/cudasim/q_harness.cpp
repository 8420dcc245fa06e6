// Runs orgqr / ormqr as qr-gpu queues them (crates/qr-gpu/src/q.rs: every
// block's V and T by q_prepare_f32; then either the blocks on chip by
// q_apply_f32 (PATH 1) or one trailing_tc_apply_f32 per block (PATH 0);
// q_finish_f32; from the right through q_transpose_f32) under the emulator
// (tools/cudasim/check_q.py drives it; built from the q and trailing_tc
// families with the update's TC_* defines).
// Usage: q_harness OP K PATH IN OUT. OP: 0 orgqr, 1 Q C, 2 Q^T C, 3 C Q, 4 C Q^T.
// IN: int32 batch, n; then H (batch x n x n), tau (batch x n), C (batch x
// n x K, read for OP > 0), float32. OUT: the result (Q, or C), then info
// (int32 per matrix).
#include <climits>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

static std::vector<float4> sim_buffer(size_t floats) { return std::vector<float4>(floats / 4 + 2); }

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: q_harness OP K PATH IN OUT\n";
        return 2;
    }
    const int op = std::stoi(argv[1]), k = std::stoi(argv[2]);
    const bool on_chip = std::stoi(argv[3]) != 0;
    std::ifstream in(argv[4], std::ios::binary);
    int32_t dims[2];
    in.read(reinterpret_cast<char*>(dims), sizeof dims);
    const int batch = dims[0], n = dims[1];
    const int kb = (n + 31) / 32;
    const long long vfl = 32LL * ((long long)kb * n - 16LL * kb * (kb - 1));
    const int cols = op == 0 ? n : k;  // result: n x cols per matrix
    const size_t out_len = (size_t)n * cols;
    auto hb = sim_buffer((size_t)batch * n * n), taub = sim_buffer((size_t)batch * n),
         outb = sim_buffer((size_t)batch * out_len), ctb = sim_buffer((size_t)batch * out_len),
         vb = sim_buffer((size_t)batch * vfl), tb = sim_buffer((size_t)batch * kb * 1024);
    float* h = reinterpret_cast<float*>(hb.data());
    float* tau = reinterpret_cast<float*>(taub.data());
    float* out = reinterpret_cast<float*>(outb.data());
    float* ct = reinterpret_cast<float*>(ctb.data());
    float* v = reinterpret_cast<float*>(vb.data());
    float* t = reinterpret_cast<float*>(tb.data());
    in.read(reinterpret_cast<char*>(h), (std::streamsize)((size_t)batch * n * n * 4));
    in.read(reinterpret_cast<char*>(tau), (std::streamsize)((size_t)batch * n * 4));
    if (op > 0) in.read(reinterpret_cast<char*>(out), (std::streamsize)(batch * out_len * 4));
    if (!in) {
        std::cerr << "short input\n";
        return 2;
    }
    // Q's entries the kernels must write: start from garbage.
    if (op == 0)
        for (size_t i = 0; i < batch * out_len; ++i) out[i] = 1e30f;
    std::vector<int> bad(batch, 0), cbad(batch, 0), obad(batch, 0), zcol(batch, INT_MAX),
        info(batch, -1);
    // The finish as qr-gpu queues it: the result scanned in slices first
    // (here 3) into obad, or (on chip here) each matrix in one block.
    auto finish = [&](bool sliced, const int* cb) {
        const unsigned slices = sliced ? 3u : 1u;
        if (sliced)
            sim_launch(q_scan_f32, sim_dim3{(unsigned)batch, slices, 1u}, 256u, (const float*)out,
                       (long long)out_len, obad.data());
        sim_launch(q_finish_f32, sim_dim3{(unsigned)batch, slices, 1u}, 256u, out,
                   (long long)out_len, (const int*)bad.data(), cb,
                   sliced ? (const int*)obad.data() : (const int*)nullptr, info.data());
    };
    const unsigned tc_threads = 32 * TC_WARPS;
    auto update = [&](float* a2, long long stride, int lda, int ntrail, int kblk) {
        const int p = 32 * kblk, nrow = n - p, w = nrow < 32 ? nrow : 32;
        const int tiles = (ntrail + 31) / 32;
        const long long voff = 32LL * ((long long)kblk * n - 16LL * kblk * (kblk - 1));
        sim_launch(trailing_tc_apply_f32, (unsigned)(tiles * batch), tc_threads, a2,
                   (const float*)a2, stride, lda, (const float*)(v + voff), vfl,
                   (const float*)(t + kblk * 1024), (long long)kb * 1024, nrow, ntrail, w,
                   (const int*)zcol.data(), p, p + 32, (int*)nullptr);
    };
    if (op == 0 && on_chip) {
        sim_launch(q_prepare_f32, (unsigned)(batch * kb), 256u, (const float*)h, (const float*)tau,
                   v, vfl, t, (float*)nullptr, bad.data(), n, 0);
        sim_launch(q_apply_f32, (unsigned)(batch * kb), 256u, (const float*)v, vfl,
                   (const float*)t, out, (long long)n * n, n, n, n, 0);
        finish(false, nullptr);
    } else if (op == 0) {
        sim_launch(q_prepare_f32, (unsigned)(batch * kb), 256u, (const float*)h, (const float*)tau,
                   v, vfl, t, out, bad.data(), n, 1);
        for (int kblk = kb - 1; kblk >= 0; --kblk) {
            const int p = 32 * kblk;
            if (n > p + 32) update(out + (size_t)p * n + p + 32, (long long)n * n, n, n - p - 32, kblk);
        }
        finish(true, nullptr);
    } else {
        sim_launch(q_scan_f32, sim_dim3{(unsigned)batch, 2u, 1u}, 256u, (const float*)out,
                   (long long)out_len, cbad.data());
        const bool right = op >= 3;
        // Left: 1 Q C (reversed, backward), 2 Q^T C (forward). Right: C Q =
        // (Q^T C^T)^T, C Q^T = (Q C^T)^T.
        const bool apply_q = right ? op == 4 : op == 1;
        float* c = out;
        if (right) {
            sim_launch(q_transpose_f32, sim_dim3{(unsigned)((n + 31) / 32), (unsigned)((k + 31) / 32),
                                                 (unsigned)batch},
                       256u, (const float*)out, ct, k, n);
            c = ct;
        }
        sim_launch(q_prepare_f32, (unsigned)(batch * kb), 256u, (const float*)h, (const float*)tau,
                   v, vfl, t, (float*)nullptr, bad.data(), n, apply_q && !on_chip ? 1 : 0);
        if (on_chip) {
            sim_launch(q_apply_f32, (unsigned)(batch * ((k + 31) / 32)), 256u, (const float*)v, vfl,
                       (const float*)t, c, (long long)n * k, k, k, n, apply_q ? 1 : 2);
        } else {
            for (int i = 0; i < kb; ++i) {
                const int kblk = apply_q ? kb - 1 - i : i;
                update(c + (size_t)32 * kblk * k, (long long)n * k, k, k, kblk);
            }
        }
        if (right)
            sim_launch(q_transpose_f32, sim_dim3{(unsigned)((k + 31) / 32), (unsigned)((n + 31) / 32),
                                                 (unsigned)batch},
                       256u, (const float*)ct, out, n, k);
        finish(!on_chip, (const int*)cbad.data());
    }
    std::ofstream o(argv[5], std::ios::binary);
    o.write(reinterpret_cast<const char*>(out), (std::streamsize)(batch * out_len * 4));
    o.write(reinterpret_cast<const char*>(info.data()), (std::streamsize)(info.size() * 4));
    return 0;
}
