#!/usr/bin/env bash
# Stages what one device call needs, from the repository root of the
# development machine: release builds of `qr`, the GPU test binary and the
# `bench_suite` example in .devrun/NAME/ (stripped), and the seed anchor
# (anchor_qr_v2.py, the seed submission) from ../shared in .devrun/.
# Then: the device tool's `run` with carry [".devrun"] and
# `bash tools/devrun/check.sh NAME [anchor CASES...]`; with --wheel, the
# qr_rs wheel too, for py_call.sh.
set -euo pipefail
name=${1:?usage: tools/devrun/prepare.sh NAME [--wheel]}
grep -qx '/.devrun/' .git/info/exclude 2>/dev/null || echo '/.devrun/' >>.git/info/exclude
cargo build --release -p qr-cli
cargo build --release -p qr-gpu --example bench_suite
tests=$(cargo test -p qr-gpu --release --no-run 2>&1 |
    sed -n 's/.*Executable tests\/gpu.rs (\(.*\))/\1/p')
[ -n "$tests" ] || { echo "no GPU test binary found" >&2; exit 1; }
mkdir -p ".devrun/$name"
cp target/release/qr ".devrun/$name/qr"
cp "$tests" ".devrun/$name/gpu_tests"
cp target/release/examples/bench_suite ".devrun/$name/bench_suite"
strip ".devrun/$name"/{qr,gpu_tests,bench_suite}
if [ "${2:-}" = --wheel ]; then
    # The qr_rs wheel (abi3), for py_call.sh; maturin from PATH or $MATURIN.
    ${MATURIN:-maturin} build --release --strip -m crates/qr-py/Cargo.toml --out ".devrun/$name"
fi
for f in ../shared/bench/anchor_qr_v2.py ../shared/seed/qr_v2_submission.txt; do
    [ -f "$f" ] && cp "$f" .devrun/
done
cp tools/devrun/anchor_subset.py .devrun/
du -sh .devrun
