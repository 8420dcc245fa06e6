#!/usr/bin/env bash
# The device call that verifies a build staged by `prepare.sh NAME
# [--wheel]`, most wanted first, each step while the call's CALL_S seconds
# (570 unless set) allow: every GPU test; with a staged qr_rs wheel, its
# CUDA tests (pytest) and `python -m qr_rs.bench --device cuda` on the dense
# cases; the benchmark set of each operation (seed 0; geqrf, orgqr, qr,
# ormqr); torch's anchor for the Q operations (anchor_q.py, copied into
# .devrun/ from ../shared/bench); seeds 1 and 2 of the Q suites. Run with
# carry [".devrun"]:
#   [CALL_S=S] [TESTS_FILTER=...] bash tools/devrun/verify_call.sh NAME
# Logs under $OUT (8 files at most come back): log.txt (the device, each
# step's status and seconds), tests.log, pytest.log, bench.txt,
# suites.txt (seed 0, the four operations in turn), anchor_q.txt,
# suite_seeds.txt.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
name=${1:?usage: verify_call.sh NAME}
b=.devrun/$name
cap() { local r; r=$(rest); echo $(( r < $1 ? r : $1 )); }
QR_REQUIRE_GPU=1 t timeout -k 5 $(cap ${TESTS_S:-240}) "$b/gpu_tests" ${TESTS_FILTER:-} >"$out/tests.log" 2>&1
if ls "$b"/qr_rs-*.whl >/dev/null 2>&1; then
    export QR_GPU_CACHE_DIR=/tmp/qr-ptx PYTHONUNBUFFERED=1
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$b"/qr_rs-*.whl >>"$out/log.txt" 2>&1
    export PYTHONPATH=/tmp/site
    left 40 && (cd crates/qr-py && t timeout -k 5 $(cap 90) python3 -m pytest -q -rs tests/test_gpu.py >"$out/pytest.log" 2>&1)
    left 60 && t timeout -k 5 $(cap 120) python3 -m qr_rs.bench --device cuda --cases dense --budget 0.3 >"$out/bench.txt" 2>&1
fi
for op in geqrf orgqr qr ormqr; do
    left 60 && t timeout -k 5 $(cap ${SUITE_S:-60}) "$b/qr" suite --backend gpu --set benchmarks --op $op --seed 0 >>"$out/suites.txt" 2>&1
done
left 50 && [ -f .devrun/anchor_q.py ] && t timeout -k 5 50 python3 -u .devrun/anchor_q.py 640,512 60,1024 >"$out/anchor_q.txt" 2>&1
for s in 1 2; do
    for op in orgqr qr ormqr; do
        left 45 && t timeout -k 5 $(cap 100) "$b/qr" suite --backend gpu --set benchmarks --op $op --seed $s >>"$out/suite_seeds.txt" 2>&1
    done
done
true
