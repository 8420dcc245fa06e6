// Runs one smem-family kernel under the emulator on a batch read from a
// file and writes H, tau and info back (tools/cudasim/check_smem.py drives
// it). Usage: smem_harness ENTRY THREADS IN OUT, where IN holds two int32
// (batch, n) and the batch row-major, OUT receives H, tau (float32) and info
// (int32).
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
    if (argc != 5) {
        std::cerr << "usage: smem_harness ENTRY THREADS IN OUT\n";
        return 2;
    }
    const std::string entry = argv[1];
    const unsigned threads = (unsigned)std::stoul(argv[2]);
    std::ifstream in(argv[3], std::ios::binary);
    int32_t dims[2];
    in.read(reinterpret_cast<char*>(dims), sizeof dims);
    const int batch = dims[0], n = dims[1];
    std::vector<float> a((size_t)batch * n * n), h(a.size()), tau((size_t)batch * n);
    std::vector<int> info(batch, -7);
    in.read(reinterpret_cast<char*>(a.data()), (std::streamsize)(a.size() * 4));
    if (!in) {
        std::cerr << "short input\n";
        return 2;
    }
    const long long mstride = (long long)n * n;
    auto kernel = entry == "warp" ? smem_warp_f32 : nullptr;
    if (!kernel) {
        std::cerr << "unknown entry " << entry << "\n";
        return 2;
    }
    sim_launch(kernel, (unsigned)batch, threads, (const float*)a.data(), h.data(), tau.data(),
               info.data(), n, n, mstride, n, n, 0);
    std::ofstream out(argv[4], std::ios::binary);
    out.write(reinterpret_cast<const char*>(h.data()), (std::streamsize)(h.size() * 4));
    out.write(reinterpret_cast<const char*>(tau.data()), (std::streamsize)(tau.size() * 4));
    out.write(reinterpret_cast<const char*>(info.data()), (std::streamsize)(info.size() * 4));
    return 0;
}
