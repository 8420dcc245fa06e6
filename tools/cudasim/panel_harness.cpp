// Runs the register panel kernel of a block alone per matrix
// (panelreg_factor_f32) under the emulator on the panel at column P (width
// W) of a batch read from a file (tools/cudasim/check_panelreg.py drives
// it). Usage:
//   panel_harness THREADS P W IN OUT
// IN: two int32 (batch, n), then the batch row-major; the panel is factored
// in place (src = h).
// OUT: H, tau, V (batch x n x 32), T (batch x 32 x 32) of the last panel
// as float32, then the overflow marks (int32 per matrix).
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
    if (argc != 6) {
        std::cerr << "usage: panel_harness THREADS P W IN OUT\n";
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
    const sim_dim3 grid{1, (unsigned)batch, 1};
    // vprev, tprev and fold: not read by the kernel (the deleted fold's).
    sim_launch(panelreg_factor_f32, grid, threads, h.data(), (const float*)h.data(),
               (const int*)zcol.data(), v.data(), t.data(), tau.data(), n, p, w, 0,
               (const float*)nullptr, (const float*)nullptr, 0, oflow.data());
    std::ofstream out(argv[5], std::ios::binary);
    for (auto* b : {&h, &tau, &v, &t})
        out.write(reinterpret_cast<const char*>(b->data()), (std::streamsize)(b->size() * 4));
    out.write(reinterpret_cast<const char*>(oflow.data()), (std::streamsize)(oflow.size() * 4));
    return 0;
}
