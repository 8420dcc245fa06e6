#!/usr/bin/env bash
# The device call that verifies a build staged by prepare.sh NAME: every GPU
# test, the benchmark set of each operation (seed 0; geqrf, orgqr, qr,
# ormqr), torch's anchor for the Q operations (anchor_q.py, copied into
# .devrun/ from ../shared/bench), then seeds 1 and 2 of the Q suites while
# time is left. Run with carry [".devrun"]:
#   bash tools/devrun/verify_call.sh NAME
# Logs under $OUT (8 files at most come back): log.txt (the device, each
# step's status and seconds), tests.log,
# suite_OP[_sS].txt, anchor_q.txt.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
name=${1:?usage: verify_call.sh NAME}
b=.devrun/$name
QR_REQUIRE_GPU=1 t timeout -k 5 ${TESTS_S:-240} "$b/gpu_tests" ${TESTS_FILTER:-} >"$out/tests.log" 2>&1
for op in geqrf orgqr qr ormqr; do
    left 60 && t timeout -k 5 ${SUITE_S:-60} "$b/qr" suite --backend gpu --set benchmarks --op $op --seed 0 >"$out/suite_$op.txt" 2>&1
done
left 50 && t timeout -k 5 50 python3 -u .devrun/anchor_q.py 640,512 60,1024 >"$out/anchor_q.txt" 2>&1
for s in 1 2; do
    for op in orgqr qr ormqr; do
        left 45 && t timeout -k 5 $(( (570 - SECONDS) < 100 ? 570 - SECONDS - 5 : 100 )) "$b/qr" suite --backend gpu --set benchmarks --op $op --seed $s >>"$out/suite_seeds.txt" 2>&1
    done
done
true
