#!/usr/bin/env bash
# The device call of the sixth session's changes, most wanted first, each
# step while the call's CALL_S seconds (570 unless set) allow: Q's result
# checks in slices (issue 30's 2 x 4096) and the warp kernel's batch rule.
# Stage one build with its wheel (from the repository root):
#   MATURIN=... bash tools/devrun/prepare.sh NAME --wheel
# then, with carry [".devrun"]:
#   [CALL_S=S] bash tools/devrun/pending_call.sh NAME
# Logs under $OUT: log.txt (the device, each step's status and seconds),
# tests.log (every GPU test), suites.txt (geqrf, orgqr, qr and ormqr,
# seed 0), anchor_q.txt (torch.linalg.qr and friends), py.txt (the host's
# share of qr_rs.geqrf at 20 x 32, then the CUDA pytest), sweep.txt.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
b=.devrun/${1:?usage: pending_call.sh NAME}
cap() { local r; r=$(rest); echo $(( r < $1 ? r : $1 )); }
export QR_GPU_CACHE_DIR=/tmp/qr-ptx PYTHONUNBUFFERED=1
QR_REQUIRE_GPU=1 t timeout -k 5 $(cap 240) "$b/gpu_tests" >"$out/tests.log" 2>&1
for op in geqrf orgqr qr; do
    left 50 && t timeout -k 5 $(cap 60) "$b/qr" suite --backend gpu --set benchmarks --op $op --seed 0 >>"$out/suites.txt" 2>&1
done
left 30 && (cd .devrun && t timeout -k 5 $(cap 50) python3 -u anchor_q.py 640,512 60,1024 >"$out/anchor_q.txt" 2>&1)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$b"/qr_rs-*.whl >>"$out/log.txt" 2>&1
left 40 && PYTHONPATH=/tmp/site t timeout -k 5 $(cap 60) python3 tools/devrun/py_overhead.py 20 32 >"$out/py.txt" 2>&1
left 40 && (cd crates/qr-py && PYTHONPATH=/tmp/site t timeout -k 5 $(cap 60) python3 -m pytest -q -rs tests/test_gpu.py >>"$out/py.txt" 2>&1)
left 30 && t timeout -k 5 $(cap 60) "$b/bench_suite" --sweep --only smem_warp_min_batch_per_sm >"$out/sweep.txt" 2>&1
left 30 && t timeout -k 5 $(cap 90) "$b/qr" suite --backend gpu --set benchmarks --op ormqr --seed 0 >>"$out/suites.txt" 2>&1
true
