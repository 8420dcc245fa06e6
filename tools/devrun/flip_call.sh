#!/usr/bin/env bash
# The device call that decides a flip of defaults: build BASE (the defaults
# as they are) against build FLIP (the candidate defaults), both staged in
# .devrun/ like prepare.sh does, run with carry [".devrun"]:
#   bash tools/devrun/flip_call.sh BASE FLIP
# Most important first: every GPU test of FLIP, the benchmark set on both
# builds twice, alternating (same process order both times, so drift shows),
# then the seed (anchor_subset.py) on the cases it runs in reasonable time.
# Logs under $OUT: log.txt, tests.log, suite_BUILD_I.txt, seed.txt.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
base=${1:?usage: flip_call.sh BASE FLIP}
flip=${2:?usage: flip_call.sh BASE FLIP}
QR_REQUIRE_GPU=1 t timeout -k 5 200 ".devrun/$flip/gpu_tests" >"$out/tests.log" 2>&1
for i in 1 2; do
    for b in "$base" "$flip"; do
        t timeout -k 5 45 ".devrun/$b/qr" suite --backend gpu --set benchmarks --seed 0 >"$out/suite_${b}_$i.txt" 2>&1
    done
done
if [ $((560 - SECONDS)) -gt 60 ]; then
    export SEED=qr_v2_submission.txt
    cd .devrun && t timeout -k 5 $((550 - SECONDS)) \
        python3 -u anchor_subset.py 20,32 40,176 40,352 640,512 >"$out/seed.txt" 2>&1
fi
true
