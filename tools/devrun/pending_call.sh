#!/usr/bin/env bash
# The device calls the sixth and seventh sessions left, in parts of one call
# each (CALL_S seconds, 570 unless set, each step while they allow; chain
# them while the machine is warm; with a full budget q, py, then seeds; a
# start that leaves under about 450 s takes short instead of q):
#   part q     (issues 30, 32): every GPU test, orgqr, ormqr and qr on the
#              test set for seeds 0, 1 and 2, then `qr suite --op geqrf` on
#              the benchmark set beside the seed (anchor_subset.py);
#   part short (issues 30, 32): part q for a short call: the plan edits'
#              GPU tests, the Q suites, then every GPU test as time allows;
#   part seeds (issue 30): orgqr, qr and ormqr on the benchmark set for
#              seeds 1 and 2, timed briefly;
#   part py    (issue 31): `qr suite --op geqrf` beside `qr_rs.bench` (a list
#              of inputs per pass, the stream held, as the suite) on the
#              dense cases from the branch py-host-path's wheel (after its
#              CUDA pytest), the host's
#              time per call of the main build's wheel and the branch's, the
#              Shampoo-style step, then ncu's HBM bytes of one geqrf at
#              640 x 512 and 60 x 1024 with the caches as the run leaves them,
#              and ncu's sections of two updates and two panels at 640 x 512.
# Stage the builds (from the repository root): `prepare.sh MAIN --wheel` on
# main, and for part py also `prepare.sh HOST --wheel` on py-host-path
# (MATURIN=... where maturin is not on PATH); then, with carry [".devrun"]:
#   bash tools/devrun/pending_call.sh q MAIN      (or CALL_S=... short MAIN)
#   bash tools/devrun/pending_call.sh py MAIN HOST
#   bash tools/devrun/pending_call.sh seeds MAIN
# Logs under $OUT: log.txt (the device, each step's status and seconds),
# part q: tests.log, q_tests.txt, suite_geqrf.txt, anchor.txt; part short:
# tests_edits.log (check each "1 passed": a filter hides the no-GPU
# failure), q_tests.txt, tests.log; part seeds:
# q_seeds.txt; part py: py.txt,
# pytest.log, ncu.txt, ncu_sections.txt.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
part=${1:?usage: pending_call.sh q|short|seeds|py MAIN [HOST]}
b=.devrun/${2:?usage: pending_call.sh q|short|seeds|py MAIN [HOST]}
cap() { local r; r=$(rest); echo $(( r < $1 ? r : $1 )); }
export QR_GPU_CACHE_DIR=/tmp/qr-ptx PYTHONUNBUFFERED=1
# Correctness runs: a few repetitions of two inputs per case.
quick=(--budget 0.2 --max-inputs 2)
# Every GPU test (about 320 s on the H100).
gpu_tests() { QR_REQUIRE_GPU=1 t timeout -k 5 $(cap 360) "$b/gpu_tests" >"$out/tests.log" 2>&1; }
# The Q operations on the test set for three seeds (never run on the GPU
# yet; timed briefly: the gate is the point).
q_suites() {
    for seed in 0 1 2; do
        for op in orgqr ormqr qr; do
            left 25 && t timeout -k 5 $(cap 40) "$b/qr" suite --backend gpu --set tests --op $op --seed $seed "${quick[@]}" >>"$out/q_tests.txt" 2>&1
        done
    done
}
case $part in
q)
    # Then, as time allows, the benchmark set beside the seed (issue 32's
    # side-by-side table).
    gpu_tests
    q_suites
    left 50 && t timeout -k 5 $(cap 60) "$b/qr" suite --backend gpu --set benchmarks --op geqrf --seed 0 >"$out/suite_geqrf.txt" 2>&1
    left 100 && (cd .devrun && SEED=qr_v2_submission.txt t timeout -k 5 $(cap 160) python3 anchor_subset.py 20,32 40,176 40,352 640,512 60,1024 8,2048 2,4096 >"$out/anchor.txt" 2>&1)
    ;;
short)
    # A call too short for part q: first the GPU tests of the plan edits
    # (the change in main not yet run on a GPU), then the Q suites, then
    # every GPU test as time allows.
    for test in graphs graphs_beside_another_thread batch_lanes tensor_row_split tensor_l2_hints chosen_plans_pass_the_test_set; do
        left 20 && QR_REQUIRE_GPU=1 t timeout -k 5 $(cap 60) "$b/gpu_tests" --exact "$test" >>"$out/tests_edits.log" 2>&1
    done
    q_suites
    left 30 && gpu_tests
    ;;
seeds)
    # Seeds 1 and 2 of the Q operations on the benchmark set.
    for seed in 1 2; do
        for op in orgqr qr ormqr; do
            left 30 && t timeout -k 5 $(cap 100) "$b/qr" suite --backend gpu --set benchmarks --op $op --seed $seed "${quick[@]}" >>"$out/q_seeds.txt" 2>&1
        done
    done
    ;;
py)
    host=.devrun/${3:?usage: pending_call.sh py MAIN HOST}
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-main "$b"/qr_rs-*.whl >>"$out/log.txt" 2>&1
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-host "$host"/qr_rs-*.whl >>"$out/log.txt" 2>&1
    t timeout -k 5 $(cap 60) "$b/qr" suite --backend gpu --set benchmarks --op geqrf --seed 0 --filter dense >>"$out/py.txt" 2>&1
    left 40 && (cd crates/qr-py && PYTHONPATH=/tmp/site-host t timeout -k 5 $(cap 60) python3 -m pytest -q -rs tests/test_gpu.py >"$out/pytest.log" 2>&1)
    left 60 && PYTHONPATH=/tmp/site-host t timeout -k 5 $(cap 200) python3 -m qr_rs.bench --device cuda --cases dense --ops geqrf,qr --budget 0.3 >>"$out/py.txt" 2>&1
    for site in /tmp/site-main /tmp/site-host; do
        echo "== $site" >>"$out/py.txt"
        left 30 && PYTHONPATH=$site t timeout -k 5 $(cap 40) python3 tools/devrun/py_overhead.py 20 32 >>"$out/py.txt" 2>&1
    done
    left 40 && PYTHONPATH=/tmp/site-host t timeout -k 5 $(cap 60) python3 crates/qr-py/examples/shampoo_step.py >>"$out/py.txt" 2>&1
    # The blocking model's traffic (docs/perf/blocking-model.md): HBM bytes
    # of one factorization with the caches left as the run leaves them.
    for spec in 640,512,2,dense 60,1024,2,dense; do
        left 60 && t timeout -k 5 $(cap 120) ncu --clock-control none --cache-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
            --csv "$b/qr" check --backend gpu --spec "$spec" >"/tmp/ncu_$spec.csv" 2>&1
        python3 tools/devrun/ncu_bytes.py "$spec" "/tmp/ncu_$spec.csv" >>"$out/ncu.txt" 2>&1
    done
    # Where one update and one panel of 640 x 512 spend their time (issue
    # 33): throughput against the peaks, occupancy and the warps' stalls,
    # four launches after the first four.
    left 60 && t timeout -k 5 $(cap 120) ncu --clock-control none -k regex:'trailing_tc|panelreg' -s 4 -c 4 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        "$b/qr" check --backend gpu --spec 640,512,2,dense >"$out/ncu_sections.txt" 2>&1
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
true
