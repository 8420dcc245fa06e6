#!/usr/bin/env bash
# The kernels' checks under the host emulator (no GPU): the smem warp
# kernel, the register panels, the tensor-core update. Needs g++ (C++20)
# and python3 with numpy. `--quick` takes the checks' shorter shape lists
# (CI); without it every shape (a few minutes on 2 cores).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
quick=()
[ "${1:-}" = "--quick" ] && quick=(--quick)
python3 check_smem.py $([ ${#quick[@]} -gt 0 ] && echo --orders 1,2,5,17,32)
python3 check_panelreg.py "${quick[@]}"
python3 check_trailing_tc.py "${quick[@]}"
python3 check_q.py "${quick[@]}"
