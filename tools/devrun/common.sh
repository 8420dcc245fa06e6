# Sourced by the device-call scripts (verify_call.sh, flip_call.sh,
# q_profile.sh, pending_call.sh): `out`, the logs' folder ($OUT on the
# device; the device tool returns at most 8 files of it); `t CMD...`, which runs CMD and
# appends its status and seconds to log.txt; `left S`, whether more than S
# of the call's CALL_S seconds (570 unless set) are left; `rest`, those
# seconds less 5; and the device's name atop log.txt.
out=${OUT:-/tmp/devrun_out}
mkdir -p "$out"
t() {
    local s=$SECONDS
    "$@"
    echo "$* rc $? $((SECONDS - s)) s" | cut -c1-160 >>"$out/log.txt"
}
left() { [ $((${CALL_S:-570} - SECONDS)) -gt "$1" ]; }
# Seconds of the call left, less a margin of 5.
rest() { echo $((${CALL_S:-570} - SECONDS - 5)); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >>"$out/log.txt" 2>&1
