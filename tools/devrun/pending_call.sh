#!/usr/bin/env bash
# The device call of what the fifth session left unrun, most wanted first,
# each step while the call's CALL_S seconds (570 unless set) allow. Stage
# three builds first (prepare.sh on each branch, from the repository root):
#   git checkout main && prepare.sh MAIN --wheel
#   git checkout caller-stream-smem && prepare.sh SMEM --wheel
#   git checkout peers-dedup && prepare.sh PEERS
#   git checkout main
# then, with carry [".devrun"]:
#   [CALL_S=S] bash tools/devrun/pending_call.sh MAIN SMEM PEERS
# Logs under $OUT: log.txt (the device, each step's status and seconds),
# tests.log (main: graphs_beside_another_thread three times, then every
# GPU test), smem.txt (the branch's CUDA pytest, the geqrf suite and
# `qr_rs.bench` geqrf on the dense cases), peers.txt (the branch's peer
# tests and `qr bench` beside both peers at 40 x 176), sweep.txt (main's
# smem_warp_min_batch_per_sm rows), ncu.txt (HBM bytes and kernel times: orgqr at
# 2 x 4096, geqrf at 640 x 512 and 60 x 1024), ncu_q_apply.txt (ncu's full
# details of orgqr's on-chip kernel at 2 x 4096).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
main=.devrun/${1:?usage: pending_call.sh MAIN SMEM PEERS}
smem=.devrun/${2:?usage: pending_call.sh MAIN SMEM PEERS}
peers=.devrun/${3:?usage: pending_call.sh MAIN SMEM PEERS}
cap() { local r; r=$(rest); echo $(( r < $1 ? r : $1 )); }
export QR_GPU_CACHE_DIR=/tmp/qr-ptx PYTHONUNBUFFERED=1
for i in 1 2 3; do
    QR_REQUIRE_GPU=1 t timeout -k 5 40 "$main/gpu_tests" --exact graphs_beside_another_thread >>"$out/tests.log" 2>&1
done
left 60 && QR_REQUIRE_GPU=1 t timeout -k 5 $(cap 240) "$main/gpu_tests" >>"$out/tests.log" 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-smem "$smem"/qr_rs-*.whl >>"$out/log.txt" 2>&1
left 40 && (cd crates/qr-py && PYTHONPATH=/tmp/site-smem t timeout -k 5 $(cap 60) python3 -m pytest -q -rs tests/test_gpu.py >>"$out/smem.txt" 2>&1)
left 30 && t timeout -k 5 $(cap 30) "$smem/qr" suite --backend gpu --set benchmarks --op geqrf --seed 0 --filter dense >>"$out/smem.txt" 2>&1
left 40 && PYTHONPATH=/tmp/site-smem t timeout -k 5 $(cap 90) python3 -m qr_rs.bench --device cuda --cases dense --ops geqrf --budget 0.3 >>"$out/smem.txt" 2>&1
# orgqr at 2 x 4096 (issue 30's one shape over geqrf's time): each kernel's
# time, the geqrf that makes its input first.
left 40 && t timeout -k 5 $(cap 120) ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    --launch-count 700 --csv "$main/qr" suite --backend gpu --set benchmarks --op orgqr --filter 2,4096 --max-inputs 1 \
    >/tmp/ncu_orgqr.csv 2>&1
python3 tools/devrun/ncu_bytes.py orgqr-2x4096 /tmp/ncu_orgqr.csv >>"$out/ncu.txt" 2>&1
left 60 && t timeout -k 5 $(cap 150) ncu --set full -k q_apply_f32 --launch-count 1 \
    "$main/qr" suite --backend gpu --set benchmarks --op orgqr --filter 2,4096 --max-inputs 1 \
    >"$out/ncu_q_apply.txt" 2>&1
left 30 && QR_REQUIRE_GPU=1 t timeout -k 5 $(cap 60) "$peers/gpu_tests" peer_ >>"$out/peers.txt" 2>&1
left 30 && t timeout -k 5 $(cap 60) "$peers/qr" bench --backend gpu --shapes 40x176 --peers cusolver,cublas-batched >>"$out/peers.txt" 2>&1
left 40 && t timeout -k 5 $(cap 90) "$main/bench_suite" --sweep --only smem_warp_min_batch_per_sm >"$out/sweep.txt" 2>&1
for spec in 640,512,2,dense 60,1024,2,dense; do
    left 60 && t timeout -k 5 $(cap 150) ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
        --csv "$main/qr" check --backend gpu --spec "$spec" >"/tmp/ncu_$spec.csv" 2>&1
    python3 tools/devrun/ncu_bytes.py "$spec" "/tmp/ncu_$spec.csv" >>"$out/ncu.txt" 2>&1
done
true
