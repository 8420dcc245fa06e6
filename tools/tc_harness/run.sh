#!/usr/bin/env bash
# Build and run the trailing_tc harness on a CUDA machine with an sm_90 GPU,
# from the repository root: NVRTC builds of every variant, accuracy against
# a float64 reference, timings beside cuBLAS. Logs go to $OUT.
set -uo pipefail
out=${OUT:-/tmp/tc_out}
mkdir -p "$out"
here=tools/tc_harness
prelude=crates/qr-gpu/src/kernels/prelude.cu
# The family's files joined in the launcher's order (kernels/trailing_tc/mod.rs).
kernel=$out/trailing_tc_joined.cu
tc=crates/qr-gpu/src/kernels/trailing_tc
cat "$tc/trailing_tc_ops.cu" "$tc/trailing_tc_stage.cu" "$tc/trailing_tc.cu" >"$kernel"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv \
    >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
nvcc --version | tail -2
cudadir=$(dirname "$(dirname "$(command -v nvcc)")")
build() {
    nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o /tmp/tc_harness \
        "$here/harness.cu" -lcublas -lnvrtc "$@" -lcuda
}
# libcuda.so may exist only as the toolkit's link stub.
build 2>"$out/build.log" || build -L"$cudadir/lib64/stubs" 2>>"$out/build.log" ||
    { cat "$out/build.log"; exit 1; }
/tmp/tc_harness "$kernel" "$prelude" "$out" 2>&1 | tee "$out/harness.log"
rc=${PIPESTATUS[0]}
cubin="$out/tf32_bn32_w8_f1.cubin"
if command -v cuobjdump >/dev/null && [ -f "$cubin" ]; then
    cuobjdump --dump-sass "$cubin" >/tmp/tc_sass.txt
    grep -oE '\b(HMMA|LDG|STG|LDS|STS|BAR|FFMA|FADD|LDL|STL|F2F|FRND|I2F|F2I)[.A-Z0-9_]*' \
        /tmp/tc_sass.txt | sort | uniq -c | sort -rn >"$out/sass_hist.txt"
    echo "== SASS of tf32_bn32_w8_f1"
    cat "$out/sass_hist.txt"
fi
exit "$rc"
