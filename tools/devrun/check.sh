#!/usr/bin/env bash
# One device call's checks of build NAME (staged by prepare.sh), from the
# repository root of the device machine; logs under $OUT (few files: the
# device tool returns at most 8). Costs measured on the H200 in session 6:
# GPU tests about 50 s (75-130 s in session 8), the benchmark suite 30 s,
# each per-kernel ncu run
# 5-9 s, the seed anchor about 20 s per 640 x 512 case and over 2 minutes
# for 8 x 2048 and 2 x 4096 together (plus about 20 s to start); session 9:
# the seed's two 60 x 1024 cases did not finish in 100 s (its rank-cap
# certification runs a full QR first), so give them a call of their own.
#   bash tools/devrun/check.sh NAME                  tests, suite, ncu
#   bash tools/devrun/check.sh NAME anchor SUBSTR... also the seed on the
#                                                    cases whose spec
#                                                    contains a SUBSTR
#   SWEEP="KNOB,KNOB" bash tools/devrun/check.sh ... also bench_suite's
#                                                    sweep of those knobs
#                                                    (after the suite)
set -uo pipefail
name=${1:?usage: check.sh NAME [anchor SUBSTR...]}
shift
out=${OUT:-/tmp/devrun_out}
mkdir -p "$out"
bin=.devrun/$name
t() {
    local step=$1 s=$SECONDS
    shift
    "$@"
    local rc=$?
    echo "$step rc $rc $((SECONDS - s)) s" >>"$out/log.txt"
    return $rc
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/log.txt" 2>&1
QR_REQUIRE_GPU=1 t gpu_tests timeout 240 "$bin/gpu_tests" >"$out/gpu_tests.log" 2>&1
t suite timeout 90 "$bin/qr" suite --backend gpu --set benchmarks >"$out/suite.txt" 2>&1
if [ -n "${SWEEP:-}" ]; then
    t sweep timeout 150 "$bin/bench_suite" --sweep --only "$SWEEP" >"$out/sweep.txt" 2>&1
fi
for s in 640,512,2,dense 60,1024,2,dense 8,2048,1,dense 40,176,1,dense; do
    echo "== $s" >>"$out/ncu.csv"
    t "ncu_$s" timeout 60 ncu --metrics gpu__time_duration.sum,launch__registers_per_thread \
        --csv "$bin/qr" check --backend gpu --spec "$s" >>"$out/ncu.csv" 2>&1
done
if [ "${1:-}" = anchor ]; then
    shift
    SEED=$PWD/.devrun/qr_v2_submission.txt t anchor timeout 400 \
        python3 -u .devrun/anchor_subset.py "$@" >"$out/anchor.txt" 2>&1
fi
