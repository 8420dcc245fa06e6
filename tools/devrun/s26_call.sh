#!/usr/bin/env bash
# One device call of this session's, most wanted first: the qr_rs CUDA
# tests (the DLPack exchange path), its bench beside the geqrf suite (the
# binding's cost), the sweep of q_block_rows (orgqr), every GPU test, and
# one ncu profile of orgqr's on-chip kernel, each while CALL_S allows.
# Run with carry [".devrun"]:
#   CALL_S=SECONDS BENCH_ARGS="..." bash tools/devrun/s26_call.sh NAME
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
b=.devrun/${1:?usage: s26_call.sh NAME}
export QR_GPU_CACHE_DIR=/tmp/qr-ptx PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$b"/qr_rs-*.whl >>"$out/log.txt" 2>&1
export PYTHONPATH=/tmp/site
(cd crates/qr-py && t timeout -k 5 60 python3 -m pytest -q -rs tests/test_gpu.py >"$out/pytest.log" 2>&1)
left 30 && t timeout -k 5 $(( $(rest) < 120 ? $(rest) : 120 )) python3 -m qr_rs.bench --device cuda ${BENCH_ARGS:---cases dense --budget 0.3} >"$out/bench.txt" 2>&1
left 25 && t timeout -k 5 30 "$b/qr" suite --backend gpu --set benchmarks --op geqrf --seed 0 --filter dense >"$out/suite_geqrf.txt" 2>&1
left 40 && t timeout -k 5 $(( $(rest) < 90 ? $(rest) : 90 )) "$b/bench_suite" --sweep --only q_block_rows >"$out/sweep_q.txt" 2>&1
left 30 && QR_REQUIRE_GPU=1 t timeout -k 5 $(( $(rest) < 200 ? $(rest) : 200 )) "$b/gpu_tests" >"$out/tests.log" 2>&1
left 60 && t timeout -k 5 $(rest) ncu --set full -k q_apply_f32 --launch-skip 1 --launch-count 1 \
    "$b/qr" suite --backend gpu --set benchmarks --op orgqr --filter 60,1024,2,dense --max-inputs 1 >"$out/ncu_orgqr_60x1024.txt" 2>&1
true
