// Runs panelcol_factor_f32 under the emulator on the panel at column P
// (width W) of a batch read from a file, as panelreg_harness.cpp does
// (same files; tools/cudasim/check_panelreg.py drives both). Usage:
//   panelcol_harness THREADS P W IN OUT
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: panelcol_harness THREADS P W IN OUT\n";
        return 2;
    }
    const unsigned threads = (unsigned)std::stoul(argv[1]);
    const int p = std::stoi(argv[2]), w = std::stoi(argv[3]);
    std::ifstream in(argv[4], std::ios::binary);
    int32_t dims[2];
    in.read(reinterpret_cast<char*>(dims), sizeof dims);
    const int batch = dims[0], n = dims[1];
    std::vector<float> h((size_t)batch * n * n), tau((size_t)batch * n, -7.0f);
    std::vector<float> v((size_t)batch * n * 32, -7.0f), t((size_t)batch * 32 * 32, -7.0f);
    std::vector<int> zcol(batch, n), oflow(batch, 0);
    in.read(reinterpret_cast<char*>(h.data()), (std::streamsize)(h.size() * 4));
    if (!in) {
        std::cerr << "short input\n";
        return 2;
    }
    sim_launch(panelcol_factor_f32, sim_dim3{1, (unsigned)batch, 1}, threads, h.data(),
               (const float*)h.data(), (const int*)zcol.data(), v.data(), t.data(), tau.data(), n,
               p, w, 0, oflow.data());
    std::ofstream out(argv[5], std::ios::binary);
    for (auto* b : {&h, &tau, &v, &t})
        out.write(reinterpret_cast<const char*>(b->data()), (std::streamsize)(b->size() * 4));
    out.write(reinterpret_cast<const char*>(oflow.data()), (std::streamsize)(oflow.size() * 4));
    return 0;
}
