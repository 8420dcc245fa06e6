// Runs trailing_tc_apply_f32 under the emulator on one panel's update of a
// batch read from a file (tools/cudasim/check_trailing_tc.py drives it).
// Usage: trailing_tc_harness THREADS BLOCKS P W IN OUT
// IN: int32 batch, n; then H (batch x n x n), V (batch x n x 32), T (batch x
// 32 x 32), float32. A2 is H's block from row P, column P + 32, updated in
// place; OUT: H after the update, then the overflow marks (int32 per matrix).
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
    if (argc != 7) {
        std::cerr << "usage: trailing_tc_harness THREADS BLOCKS P W IN OUT\n";
        return 2;
    }
    const unsigned threads = (unsigned)std::stoul(argv[1]), blocks = (unsigned)std::stoul(argv[2]);
    const int p = std::stoi(argv[3]), w = std::stoi(argv[4]);
    std::ifstream in(argv[5], std::ios::binary);
    int32_t dims[2];
    in.read(reinterpret_cast<char*>(dims), sizeof dims);
    const int batch = dims[0], n = dims[1];
    // 16-byte aligned buffers, as the device's allocations are.
    std::vector<float4> hb(((size_t)batch * n * n + 3) / 4 + 1), vb(((size_t)batch * n * 32) / 4 + 1),
        tb((size_t)batch * 32 * 32 / 4 + 1);
    float* h = reinterpret_cast<float*>(hb.data());
    float* v = reinterpret_cast<float*>(vb.data());
    float* t = reinterpret_cast<float*>(tb.data());
    in.read(reinterpret_cast<char*>(h), (std::streamsize)((size_t)batch * n * n * 4));
    in.read(reinterpret_cast<char*>(v), (std::streamsize)((size_t)batch * n * 32 * 4));
    in.read(reinterpret_cast<char*>(t), (std::streamsize)((size_t)batch * 32 * 32 * 4));
    if (!in) {
        std::cerr << "short input\n";
        return 2;
    }
    std::vector<int> zcol(batch, n), oflow(batch, 0);
    float* a = h + (size_t)p * n + p + 32;
    const int nrow = n - p, ntrail = n - p - 32;
    sim_launch(trailing_tc_apply_f32, blocks, threads, a, (const float*)a, (long long)n * n, n,
               (const float*)v, (long long)n * 32, (const float*)t, 1024LL, nrow, ntrail, w,
               (const int*)zcol.data(), p, p + 32, oflow.data());
    std::ofstream out(argv[6], std::ios::binary);
    out.write(reinterpret_cast<const char*>(h), (std::streamsize)((size_t)batch * n * n * 4));
    out.write(reinterpret_cast<const char*>(oflow.data()), (std::streamsize)(oflow.size() * 4));
    return 0;
}
