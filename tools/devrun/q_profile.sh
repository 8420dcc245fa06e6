#!/usr/bin/env bash
# The device call that profiles orgqr's and ormqr's on-chip kernel
# (q_apply_f32) with Nsight Compute, for the next speed step of the tile on
# chip (docs/history/2026-12-07-third-session.md, "Why the tile on chip is
# not faster still"): one launch each of orgqr at 640 x 512 and 60 x 1024
# and of ormqr at 40 x 352, the full section set, plus the source-level
# stall reasons. Stage with prepare.sh NAME, run with carry [".devrun"]:
#   bash tools/devrun/q_profile.sh NAME
# Logs under $OUT: log.txt, ncu_CASE.txt (ncu's details page).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
name=${1:?usage: q_profile.sh NAME}
b=.devrun/$name
for c in "orgqr 640,512,2,dense" "orgqr 60,1024,2,dense" "ormqr 40,352,1,dense"; do
    set -- $c
    t timeout -k 5 150 ncu --set full -k q_apply_f32 --launch-skip 1 --launch-count 1 \
        "$b/qr" suite --backend gpu --set benchmarks --op "$1" --filter "$2" --max-inputs 1 \
        >"$out/ncu_${1}_${2%%,*}x$(echo "$2" | cut -d, -f2).txt" 2>&1
done
true
