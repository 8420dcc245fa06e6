#!/usr/bin/env bash
# The device calls left after the eighth session, in parts of one call
# each (CALL_S seconds, 570 unless set, each step while they allow; chain
# them while the machine is warm; with a full budget rescue, py, panel,
# seeds):
#   part py    (the one change in main not yet run on a GPU: the merged
#              review commit 86e95b9 of qr_rs's CUDA path): main's wheel's
#              CUDA pytest, `qr_rs.bench` on the dense cases briefly, the
#              host's time per call at 20 x 32 and 640 x 512;
#   part panel (issue 33): ncu's warp-state, scheduler and source-counter
#              sections (the stalls by instruction) of one register panel
#              and one update at 640 x 512 and one panel at 60 x 1024;
#   part q     (any change to the engine): every GPU test, orgqr, ormqr
#              and qr on the test set for seeds 0, 1 and 2, then `qr suite
#              --op geqrf` on the benchmark set beside the seed
#              (anchor_subset.py);
#   part rescue (issue 30): branch gpu-overflow-rescue staged as the third
#              argument (`prepare.sh RESCUE` on that branch): its overflow
#              GPU tests (`overflow_rule`, `overflow_flagged`), every GPU
#              test as time allows, the dense geqrf suite of main and of the
#              branch (the last pass must cost nothing measurable);
#   part seeds (issue 30, on today's build): the benchmark set's Q suites
#              not yet run on d1fed8d (ormqr seed 1; seed 2), timed briefly.
# Stage the builds (from the repository root): `prepare.sh MAIN --wheel` on
# main (MATURIN=... where maturin is not on PATH), `prepare.sh RESCUE` on
# gpu-overflow-rescue, main checked out again; then, with carry
# [".devrun"]:
#   bash tools/devrun/pending_call.sh rescue MAIN RESCUE
#   bash tools/devrun/pending_call.sh py MAIN
# Logs under $OUT: log.txt (the device, each step's status and seconds),
# part rescue: rescue_tests.log, rescue_suite.txt; part py: py.txt,
# pytest.log; part panel: ncu_panel.txt; part q:
# tests.log, q_tests.txt, suite_geqrf.txt, anchor.txt; part seeds:
# q_seeds.txt.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
part=${1:?usage: pending_call.sh rescue|py|panel|q|seeds MAIN [RESCUE]}
b=.devrun/${2:?usage: pending_call.sh rescue|py|panel|q|seeds MAIN [RESCUE]}
cap() { local r; r=$(rest); echo $(( r < $1 ? r : $1 )); }
export QR_GPU_CACHE_DIR=/tmp/qr-ptx PYTHONUNBUFFERED=1
# Correctness runs: a few repetitions of two inputs per case.
quick=(--budget 0.2 --max-inputs 2)
case $part in
q)
    # Every GPU test (138 s on the H100, eighth session), the Q operations
    # on the test set for three seeds (timed briefly: the gate is the
    # point), then, as time allows, the benchmark set beside the seed.
    QR_REQUIRE_GPU=1 t timeout -k 5 $(cap 360) "$b/gpu_tests" >"$out/tests.log" 2>&1
    for seed in 0 1 2; do
        for op in orgqr ormqr qr; do
            left 25 && t timeout -k 5 $(cap 40) "$b/qr" suite --backend gpu --set tests --op $op --seed $seed "${quick[@]}" >>"$out/q_tests.txt" 2>&1
        done
    done
    left 50 && t timeout -k 5 $(cap 60) "$b/qr" suite --backend gpu --set benchmarks --op geqrf --seed 0 >"$out/suite_geqrf.txt" 2>&1
    left 100 && (cd .devrun && SEED=qr_v2_submission.txt t timeout -k 5 $(cap 160) python3 anchor_subset.py 20,32 40,176 40,352 640,512 60,1024 8,2048 2,4096 >"$out/anchor.txt" 2>&1)
    ;;
rescue)
    r=.devrun/${3:?usage: pending_call.sh rescue MAIN RESCUE}
    QR_REQUIRE_GPU=1 t timeout -k 5 $(cap 120) "$r/gpu_tests" overflow >"$out/rescue_tests.log" 2>&1
    for build in "$b" "$r" "$b" "$r"; do
        echo "== $build" >>"$out/rescue_suite.txt"
        left 60 && t timeout -k 5 $(cap 40) "$build/qr" suite --backend gpu --set benchmarks --op geqrf --seed 0 --filter dense >>"$out/rescue_suite.txt" 2>&1
    done
    left 150 && QR_REQUIRE_GPU=1 t timeout -k 5 $(cap 300) "$r/gpu_tests" --skip overflow >>"$out/rescue_tests.log" 2>&1
    ;;
seeds)
    # What the benchmark set's Q suites lack on d1fed8d: ormqr seed 1, and
    # every operation's seed 2 (all passed on e210633, docs/PERF.md).
    for run in "ormqr 1" "orgqr 2" "qr 2" "ormqr 2"; do
        set -- $run
        left 30 && t timeout -k 5 $(cap 100) "$b/qr" suite --backend gpu --set benchmarks --op "$1" --seed "$2" "${quick[@]}" >>"$out/q_seeds.txt" 2>&1
    done
    ;;
py)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-main "$b"/qr_rs-*.whl >>"$out/log.txt" 2>&1
    (cd crates/qr-py && PYTHONPATH=/tmp/site-main t timeout -k 5 $(cap 60) python3 -m pytest -q -rs tests/test_gpu.py >"$out/pytest.log" 2>&1)
    left 60 && PYTHONPATH=/tmp/site-main t timeout -k 5 $(cap 120) python3 -m qr_rs.bench --device cuda --cases dense --ops geqrf,qr --budget 0.1 >>"$out/py.txt" 2>&1
    for shape in "20 32" "640 512"; do
        left 40 && PYTHONPATH=/tmp/site-main t timeout -k 5 $(cap 60) python3 tools/devrun/py_overhead.py $shape >>"$out/py.txt" 2>&1
    done
    ;;
panel)
    # Where a register panel's step waits (blocking-model.md, "Traffic and
    # the panel, measured"): the stall reasons by instruction.
    for run in "panelreg 640,512,2,dense" "trailing_tc 640,512,2,dense" "panelreg 60,1024,2,dense"; do
        set -- $run
        left 60 && t timeout -k 5 $(cap 150) ncu --clock-control none -k regex:"$1" -s 2 -c 1 \
            --section WarpStateStats --section SchedulerStats --section SourceCounters --section InstructionStats \
            "$b/qr" check --backend gpu --spec "$2" 2>&1 | grep -v '^[0-9]' >>"$out/ncu_panel.txt"
    done
    ;;
*) echo "unknown part $part" >&2; exit 2 ;;
esac
true
