// Runs the register panel kernel of a block alone per matrix
// (panelreg_factor_f32) under the emulator on the panel at column P (width
// W) of a batch read from a file (tools/cudasim/check_panelreg.py drives
// it). Usage:
//   panel_harness THREADS P W FOLD IN OUT
// IN: two int32 (batch, n), then the batch row-major; the panel is factored
// in place (src = h). With FOLD 1 (a build with the fold compiled in) the
// panel at P - 32 is factored first and the panel at P folds its update in.
// OUT: H, tau, V (batch x n x 32), T (batch x 32 x 32) of the last panel
// as float32, then the overflow marks (int32 per matrix).
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
    if (argc != 7) {
        std::cerr << "usage: panel_harness THREADS P W FOLD IN OUT\n";
        return 2;
    }
    const bool fold = std::stoi(argv[4]) == 1;
    const unsigned threads = (unsigned)std::stoul(argv[1]);
    const int p = std::stoi(argv[2]), w = std::stoi(argv[3]);
    std::ifstream in(argv[5], std::ios::binary);
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
    std::vector<float> v0(v.size(), -7.0f), t0(t.size(), -7.0f);
    const auto panel = [&](int pp, int ww, float* vb, float* tb, const float* vprev,
                           const float* tprev, int folds) {
        sim_launch(panelreg_factor_f32, grid, threads, h.data(), (const float*)h.data(),
                   (const int*)zcol.data(), vb, tb, tau.data(), n, pp, ww, 0, vprev, tprev, folds,
                   oflow.data());
    };
    if (fold) {
        panel(p - 32, 32, v0.data(), t0.data(), nullptr, nullptr, 0);
        panel(p, w, v.data(), t.data(), v0.data(), t0.data(), 1);
    } else {
        panel(p, w, v.data(), t.data(), nullptr, nullptr, 0);
    }
    std::ofstream out(argv[6], std::ios::binary);
    for (auto* b : {&h, &tau, &v, &t})
        out.write(reinterpret_cast<const char*>(b->data()), (std::streamsize)(b->size() * 4));
    out.write(reinterpret_cast<const char*>(oflow.data()), (std::streamsize)(oflow.size() * 4));
    return 0;
}
