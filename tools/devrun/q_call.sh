#!/usr/bin/env bash
# The device call that measures the Q operations (issue 30) and checks them:
#   bash tools/devrun/prepare.sh NAME     (on the development machine)
#   copy ../shared/bench/anchor_q.py into .devrun/
#   device `run` with carry [".devrun"]:  bash tools/devrun/q_call.sh NAME
# About 330 s on a warm machine. Most important first, since a machine lost
# mid-call returns nothing: the q_* GPU tests, then the benchmark set per
# operation (orgqr, qr, then geqrf for the same-call comparison), torch's
# anchor (householder_product and linalg.qr, cuSOLVER per matrix) on the
# two large shapes, then ormqr and the other seeds where time is left.
# Logs under $OUT: log.txt (each step's status and seconds), tests_q.log,
# suite_OP.txt, anchor_q.txt, suite_OP_sS.txt, tests_NAME.log.
set -uo pipefail
name=${1:?usage: q_call.sh NAME}
out=${OUT:-/tmp/devrun_out}
mkdir -p "$out"
b=.devrun/$name
t() {
    local s=$SECONDS
    "$@"
    echo "$* rc $? $((SECONDS - s)) s" | cut -c1-160 >>"$out/log.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/smi.txt" 2>&1
QR_REQUIRE_GPU=1 t timeout -k 5 90 "$b/gpu_tests" q_ >"$out/tests_q.log" 2>&1
for op in orgqr qr geqrf; do
    t timeout -k 5 40 "$b/qr" suite --backend gpu --set benchmarks --op $op --seed 0 >"$out/suite_$op.txt" 2>&1
done
t timeout -k 5 60 python3 -u .devrun/anchor_q.py 640,512 60,1024 >"$out/anchor_q.txt" 2>&1
t timeout -k 5 40 "$b/qr" suite --backend gpu --set benchmarks --op ormqr --seed 0 >"$out/suite_ormqr.txt" 2>&1
for s in 1 2; do
    for op in orgqr qr; do
        if [ $((560 - SECONDS)) -gt 40 ]; then
            t timeout -k 5 40 "$b/qr" suite --backend gpu --set benchmarks --op $op --seed $s >"$out/suite_${op}_s$s.txt" 2>&1
        fi
    done
done
# The GPU tests of the two switches the H100 sweeps showed faster (the
# register panel by halves, the reversed update with L2 hints), which decide
# whether they become the defaults (issue 32).
for test in register_panel_halves tensor_l2_hints; do
    if [ $((560 - SECONDS)) -gt 90 ]; then
        QR_REQUIRE_GPU=1 t timeout -k 5 85 "$b/gpu_tests" --exact $test >"$out/tests_$test.log" 2>&1
    fi
done
true
