#!/usr/bin/env bash
# The device call that runs the Python package on the GPU: the qr_rs
# wheel staged by `prepare.sh NAME --wheel` installed into /tmp/site, its
# pytest suite (the CUDA tests run), `python -m qr_rs.bench --device cuda`
# on the benchmark set beside `qr suite --backend gpu --op geqrf` of the
# same build (the binding's overhead), the Shampoo-style step of
# crates/qr-py/examples, then the ormqr suite. Run with carry [".devrun"]:
#   bash tools/devrun/py_call.sh NAME
# Logs under $OUT: log.txt, pytest.log, bench.txt, suite_geqrf.txt,
# shampoo.txt, suite_ormqr.txt.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
name=${1:?usage: py_call.sh NAME}
b=.devrun/$name
export QR_GPU_CACHE_DIR=/tmp/qr-ptx PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$b"/qr_rs-*.whl >>"$out/log.txt" 2>&1
export PYTHONPATH=/tmp/site
python3 -c 'import qr_rs, torch; print(qr_rs.backend("cuda"), torch.__version__)' >>"$out/log.txt" 2>&1
(cd crates/qr-py && t timeout -k 5 ${PYTEST_S:-200} python3 -m pytest -q -rs -x tests >"$out/pytest.log" 2>&1)
left 120 && t timeout -k 5 ${BENCH_S:-150} python3 -m qr_rs.bench --device cuda --budget ${BENCH_BUDGET:-0.5} >"$out/bench.txt" 2>&1
left 60 && t timeout -k 5 60 "$b/qr" suite --backend gpu --set benchmarks --op geqrf --seed 0 >"$out/suite_geqrf.txt" 2>&1
left 40 && t timeout -k 5 40 python3 crates/qr-py/examples/shampoo_step.py >"$out/shampoo.txt" 2>&1
left 30 && t timeout -k 5 $((570 - SECONDS - 5)) "$b/qr" suite --backend gpu --set benchmarks --op ormqr --seed 0 >"$out/suite_ormqr.txt" 2>&1
true
