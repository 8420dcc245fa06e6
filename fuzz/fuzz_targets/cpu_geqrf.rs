//! qr_cpu::CpuBackend on arbitrary small batches of arbitrary f32 bit patterns.
#![no_main]

#[path = "../../crates/qr-verify/tests/common/fuzz_check/cpu_geqrf.rs"]
#[allow(dead_code)]
mod cpu_geqrf;
#[path = "../../crates/qr-verify/tests/common/fuzz_check/decode.rs"]
#[allow(dead_code)]
mod decode;

libfuzzer_sys::fuzz_target!(|data: &[u8]| cpu_geqrf::check(data));
