#!/usr/bin/env bash
# The first device calls after sessions 18 to 22, which ran nothing on a
# device (session 21's one started call lost its machine, returned nothing
# and cost 464 s of device time): everything written since session 17's
# last run, in calls of at most 585 s each (costs from session 17: GPU
# tests 212 s for 92 tests, a suite 31 s, a sweep variant under 1 s plus its compiles,
# about 0.8 s a module for the new kernels, the seed anchor about 110 s).
# Stage the build first:
#   bash tools/devrun/prepare.sh NAME
# then the device tool's `run` with carry [".devrun"] and
#   bash tools/devrun/next_call.sh NAME base  (about 200 s: the set
#                                              beside the seed, kernels
#                                              already run in session 17)
#   bash tools/devrun/next_call.sh NAME mma   (about 160 s: the leaf
#                                              panel's test and sweep)
#   bash tools/devrun/next_call.sh NAME 1     (measure)
#   bash tools/devrun/next_call.sh NAME 2     (check)
# Short calls first, known kernels before new ones: a machine lost mid-call
# returns none of $OUT, so a call of one new thing says what lost it.
# The machine goes back 30 s after a call (status's idle_release_s, session
# 22): start the next part at once and read the logs afterwards, or each
# part pays a cold start. Every kernel module of every sweep row compiles
# for sm_90 before a call (`nvrtc_` tests in .ci/run, session 22); on the
# device `qr suite` and `bench_suite` compile their plans' modules ahead on
# every core into ~/.cache/qr-rs/ptx, which later processes of the same
# machine load instead of compiling (session 22, not yet run on a GPU).
# Logs under $OUT: smi.txt, log.txt (each step's exit status and seconds),
# and per part:
#   base: suite0.txt, anchor.txt: the benchmark set with
#      tensor_lo_truncate on by default, the seed beside it;
#   mma: tests_mma.log, sweep_mma.txt: the leaf panel (session 20);
#   1: tests_panel.log, tests_warp.log, sweep_panel.txt, sweep.txt: the
#      other new panels' and the warp kernel's tests, the sweeps of the
#      unmeasured switches (the column panel, the smem warp kernel, the
#      register panel by halves, its shared-memory sums and unrolling; then
#      the reversed update pass and tile pairs crossed with the L2 hints);
#   2: gpu_tests.log, suite1.txt, suite2.txt, ncu_*.txt: every GPU test,
#      among them the unrun register_panel_halves (session 17),
#      tensor_lo_rounded, tensor_l2_hints and tensor_tile_pairs,
#      register_panel_smem_sum (session 18), smem_warp and
#      register_panel_columns (session 19), register_panel_mma (session
#      20); the other two seeds of the issue; where time is left, ncu of
#      the leaf and column panels and the warp kernel beside the kernels
#      they would replace.
# The sweeps do not gate what they time: part 2 says whether each switch is
# right on the device. Sessions 19 and 20 checked every new kernel and switch under
# the host emulator (tools/cudasim/run_checks.sh), bits included.
# The table for issue 5 is then, on the development machine,
#   python3 tools/devrun/side_by_side.py OUT/suite0.txt OUT/anchor.txt
# and the sweeps' tables, a knob each, the fastest setting in bold,
#   python3 tools/devrun/sweep_table.py OUT/sweep_mma.txt (sweep_panel.txt,
#   sweep.txt)
set -uo pipefail
name=${1:?usage: next_call.sh NAME PART}
part=${2:?usage: next_call.sh NAME PART (1 measures, 2 checks)}
out=${OUT:-/tmp/devrun_out}
mkdir -p "$out"
b=.devrun/$name
t() {
    local s=$SECONDS
    "$@"
    echo "$* rc $? $((SECONDS - s)) s" | cut -c1-160 >>"$out/log.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/smi.txt" 2>&1
if [ "$part" = base ]; then
    # Session 21's one started call lost its machine and returned nothing,
    # so the kernels measured in session 17 go first, on their own (about
    # 200 s): the benchmark set beside the seed, tensor_lo_truncate on.
    # Every step is killed 5 s after its limit.
    t timeout -k 5 45 "$b/qr" suite --backend gpu --set benchmarks --seed 0 >"$out/suite0.txt" 2>&1
    SEED=$PWD/.devrun/qr_v2_submission.txt t timeout -k 5 150 \
        python3 -u .devrun/anchor_subset.py 20,32 40,176 40,352 640,512 >"$out/anchor.txt" 2>&1
elif [ "$part" = mma ]; then
    # Then the leaf panel alone (about 160 s): its GPU test and its sweep.
    QR_REQUIRE_GPU=1 t timeout -k 5 60 "$b/gpu_tests" register_panel_mma >"$out/tests_mma.log" 2>&1
    t timeout -k 5 100 "$b/bench_suite" --sweep --only "register panel mma" >"$out/sweep_mma.txt" 2>&1
elif [ "$part" = 1 ]; then
    # After `base` and `mma`, which ran the set beside the seed and the
    # leaf panel: the other new panels' and the warp kernel's tests, so that
    # a switch the sweep finds faster is known to be right, then their
    # sweep (the column panel compiles one module per block size of each
    # variant, about 1 s each), then the update's switches (few modules) in
    # the time left.
    QR_REQUIRE_GPU=1 t timeout -k 5 90 "$b/gpu_tests" register_panel --skip register_panel_mma \
        >"$out/tests_panel.log" 2>&1
    QR_REQUIRE_GPU=1 t timeout -k 5 30 "$b/gpu_tests" smem_warp >"$out/tests_warp.log" 2>&1
    t timeout -k 5 240 "$b/bench_suite" --sweep \
        --only "register panel columns,smem warp,register panel halves,register panel smem sum" >"$out/sweep_panel.txt" 2>&1
    left=$((585 - SECONDS))
    if [ "$left" -gt 30 ]; then
        t timeout -k 5 "$left" "$b/bench_suite" --sweep \
            --only "tensor update reverse,tensor tile pairs" >"$out/sweep.txt" 2>&1
    else
        echo "update sweep skipped: $left s left" >>"$out/log.txt"
    fi
else
    QR_REQUIRE_GPU=1 t timeout -k 5 480 "$b/gpu_tests" >"$out/gpu_tests.log" 2>&1
    for s in 1 2; do
        if [ $((585 - SECONDS)) -gt 40 ]; then
            t timeout -k 5 40 "$b/qr" suite --backend gpu --set benchmarks --seed "$s" >"$out/suite$s.txt" 2>&1
        fi
    done
    # Where time is left: one launch of each new kernel under ncu --set full
    # beside the kernel it would replace (the first panel launch of 640 x
    # 512: the leaf panel, the column panel, the row panel; the 20 x 32
    # factorization).
    prof() {
        local file=$1 kernel=$2 knob=$3 spec=$4
        if [ $((585 - SECONDS)) -gt 70 ]; then
            t timeout -k 5 65 ncu --set full --kernel-name "$kernel" --launch-count 1 \
                "$b/bench_suite" --sweep --only "$knob" --once "$spec" >"$out/$file" 2>&1
        fi
    }
    prof ncu_panelmma.txt regex:panelmma "register panel mma 64" 640,512,2,dense
    prof ncu_panelcol.txt regex:panelcol "register panel columns 64" 640,512,2,dense
    prof ncu_panelreg.txt regex:panelreg "register panel columns 0" 640,512,2,dense
    prof ncu_smem_warp.txt smem_warp_f32 "smem warp 32" 20,32,1,dense
    prof ncu_smem_registers.txt smem_registers_f32 "smem warp 0" 20,32,1,dense
fi
