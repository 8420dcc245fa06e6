//! qr_cpu::CpuBackend's orgqr, ormqr (all four products) and qr on arbitrary
//! small batches of reflectors (from geqrf, arbitrary, or geqrf's overwritten)
//! and arbitrary C.
#![no_main]

#[path = "../../crates/qr-verify/tests/common/fuzz_check/cpu_geqrf.rs"]
#[allow(dead_code)]
mod cpu_geqrf;
#[path = "../../crates/qr-verify/tests/common/fuzz_check/cpu_q.rs"]
#[allow(dead_code)]
mod cpu_q;
#[path = "../../crates/qr-verify/tests/common/fuzz_check/decode.rs"]
#[allow(dead_code)]
mod decode;

libfuzzer_sys::fuzz_target!(|data: &[u8]| cpu_q::check(data));
