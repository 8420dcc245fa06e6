#!/usr/bin/env bash
# The first device call after session 18, which had no device: everything
# written since session 17's last run, in one call of at most 585 s (costs
# from session 17: GPU tests 212 s before this session's three new tests,
# a suite 31 s, a sweep variant under 1 s plus its compile, the seed
# anchor about 110 s). Seeds 1 and 2 run last, as time allows.
# Stage the build first:
#   bash tools/devrun/prepare.sh NAME
# then the device tool's `run` with carry [".devrun"] and
#   bash tools/devrun/next_call.sh NAME
# Logs under $OUT: smi.txt, gpu_tests.log, sweep.txt, suite0..2.txt,
# anchor.txt, log.txt (each step's exit status and seconds). The table for
# issue 5 is then, on the development machine,
#   python3 tools/devrun/side_by_side.py OUT/suite0.txt OUT/anchor.txt
# What it checks:
# - gpu_tests: every test, among them the unrun register_panel_halves
#   (session 17), tensor_lo_rounded (the default flipped to truncation),
#   tensor_l2_hints (with the reversed update pass) and tensor_tile_pairs
#   (session 18, bitwise equal to the plain kernel), register_panel_smem_sum
#   (session 18), smem_warp and register_panel_columns (session 19: the
#   warp kernel for orders <= 32, the column-per-lane register panel);
# - the sweep of the six unmeasured switches (the halves, the panel's
#   shared-memory sums, the reversed update pass and tile pairs, the last
#   two crossed with the L2 hints, the smem warp kernel and the column
#   panel);
# - the suites with tensor_lo_truncate on by default, seed 0 first;
# - the seed beside them.
set -uo pipefail
name=${1:?usage: next_call.sh NAME}
out=${OUT:-/tmp/devrun_out}
mkdir -p "$out"
b=.devrun/$name
t() {
    local s=$SECONDS
    "$@"
    echo "$* rc $? $((SECONDS - s)) s" | cut -c1-160 >>"$out/log.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/smi.txt" 2>&1
# The sweep first: it is the measurement this call is for. It does not
# gate what it times; the GPU tests after it say whether each switch is
# right (a device fault in the sweep ends only the sweep's process).
t timeout 150 "$b/bench_suite" --sweep \
    --only "smem warp,register panel columns,register panel halves,register panel smem sum,tensor update reverse,tensor tile pairs" >"$out/sweep.txt" 2>&1
t timeout 45 "$b/qr" suite --backend gpu --set benchmarks --seed 0 >"$out/suite0.txt" 2>&1
# Session 17's 92 tests took 211 s; this session adds three longer ones.
QR_REQUIRE_GPU=1 t timeout 330 "$b/gpu_tests" >"$out/gpu_tests.log" 2>&1
left=$((585 - SECONDS))
if [ "$left" -gt 100 ]; then
    SEED=$PWD/.devrun/qr_v2_submission.txt t timeout "$left" \
        python3 -u .devrun/anchor_subset.py 20,32 40,176 40,352 640,512 >"$out/anchor.txt" 2>&1
else
    echo "anchor skipped: $left s left" >>"$out/log.txt"
fi
# Seeds 1 and 2 where time is left (the three seeds; else the
# next call).
for s in 1 2; do
    if [ $((585 - SECONDS)) -gt 40 ]; then
        t timeout 40 "$b/qr" suite --backend gpu --set benchmarks --seed "$s" >"$out/suite$s.txt" 2>&1
    fi
done
