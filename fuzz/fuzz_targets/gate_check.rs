//! qr_verify::gate::check on arbitrary (A, H, tau).
#![no_main]

#[path = "../../crates/qr-verify/tests/common/fuzz_check/decode.rs"]
#[allow(dead_code)]
mod decode;
#[path = "../../crates/qr-verify/tests/common/fuzz_check/gate_check.rs"]
#[allow(dead_code)]
mod gate_check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| gate_check::check(data));
